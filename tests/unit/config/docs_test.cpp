// docs/configuration.md and config/switchyard.example.yaml are written by hand from the table;
// these tests keep them from drifting away from it.

#include <gtest/gtest.h>

#include "config/detail/text.hpp"
#include "config/load.hpp"
#include "config/settings_table.hpp"

namespace sy::config {
namespace {

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

}  // namespace
}  // namespace sy::config
