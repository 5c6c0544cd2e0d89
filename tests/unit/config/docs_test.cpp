// docs/configuration.md and config/switchyard.example.yaml are written by hand from the table;
// these tests keep them from drifting away from it.

#include <gtest/gtest.h>

#include "config/detail/text.hpp"
#include "config/limits.hpp"
#include "config/load.hpp"
#include "config/settings_table.hpp"

namespace sy::config {
namespace SY_UNITY_ID {

std::string read_source(const std::string& relative) {
  auto text = detail::read_file(std::string(SY_SOURCE_DIR) + "/" + relative, relative);
  EXPECT_TRUE(text.ok()) << relative;
  return text.ok() ? *text : std::string{};
}

bool has(const std::string& text, const std::string& needle) {
  return text.find(needle) != std::string::npos;
}

TEST(ConfigurationDoc, ListsEveryOptionWithFlagEnvAndDefault) {
  const std::string doc = read_source("docs/configuration.md");
  for (const auto& option : text_options()) {
    std::string row = "| `" + option.name + "` | `" + option.flag + " " +
                      std::string(type_name(option.type)) + "` | `" + option.env + "` | `" +
                      option.default_text + "` |";
    EXPECT_TRUE(has(doc, row)) << "missing or stale row: " << row;
  }
  for (const auto& def : settings_table()) {
    EXPECT_TRUE(has(doc, "| `" + std::string(def.name) + "` |")) << def.name;
  }
  for (const auto& def : gateway_table()) {
    EXPECT_TRUE(has(doc, "| `" + std::string(def.name) + "` |")) << def.name;
  }
}

TEST(ExampleYaml, LoadsValidatesAndMentionsEverySetting) {
  sources from;
  from.yaml_text = read_source("config/switchyard.example.yaml");
  from.yaml_origin = "switchyard.example.yaml";
  auto s = load_settings(from);
  ASSERT_TRUE(s.ok()) << s.error().message;
  ASSERT_TRUE(s->gateway);
  EXPECT_EQ(s->gateway->url, "http://127.0.0.1:8000");
  EXPECT_EQ(s->gateway->request_timeout_ms, 60'000);
  for (const auto& def : settings_table()) {
    EXPECT_TRUE(has(from.yaml_text, std::string(def.name) + ":")) << def.name;
  }
}

TEST(LimitsDoc, ListsEveryLimitWithItsErrorOnItsRow) {
  const std::string doc = read_source("docs/limits.md");
  for (const auto& limit : limits::all_limits()) {
    const std::string start = "| `" + std::string(limit.name) + "` | ";
    const auto at = doc.find(start);
    ASSERT_NE(at, std::string::npos) << "docs/limits.md lacks a row for " << limit.name;
    const std::string row = doc.substr(at, doc.find('\n', at) - at);
    std::string value = std::to_string(limit.value);
    if (value.size() > 3) value.insert(value.size() - 3, ",");  // 2,048
    EXPECT_TRUE(has(row, "| " + value + " ")) << row;
    EXPECT_TRUE(has(row, std::string(limit.error_code).substr(0, 20))) << row;
  }
}

}  // namespace SY_UNITY_ID
}  // namespace sy::config
