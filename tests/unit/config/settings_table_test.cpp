#include "config/settings_table.hpp"

#include <set>

#include <gtest/gtest.h>

namespace sy::config {
namespace SY_UNITY_ID {

// These bindings compile only while `settings` has exactly 77 fields and `gateway_settings` 14:
// adding a field breaks the build here, pointing at the table that must declare it.
size_t settings_field_count() {
  [[maybe_unused]] auto [a1, a2, a3, a4, a5, a6, a7, a8, a9, a10, a11, a12, a13, a14, a15, a16, a17,
                         a18, a19, a20, a21, a22, a23, a24, a25, a26, a27, a28, a29, a30, a31, a32,
                         a33, a34, a35, a36, a37, a38, a39, a40, a41, a42, a43, a44, a45, a46, a47,
                         a48, a49, a50, a51, a52, a53, a54, a55, a56, a57, a58, a59, a60, a61, a62,
                         a63, a64, a65, a66, a67, a68, a69, a70, a71, a72, a73, a74, a75, a76,
                         a77] = settings{};
  return 77;
}
size_t gateway_field_count() {
  [[maybe_unused]] auto [a1, a2, a3, a4, a5, a6, a7, a8, a9, a10, a11, a12, a13, a14] =
      gateway_settings{};
  return 14;
}

TEST(SettingsTable, DeclaresEveryFieldOnce) {
  // webhook_secret and sts_secret_access_key are not settings: validate() loads them from
  // webhook_secret_file and sts_secret_access_key_file.
  EXPECT_EQ(settings_table().size() + 2, settings_field_count());
  // api_key is not a setting: it is loaded from api_key_file or api_key_name by validate().
  EXPECT_EQ(gateway_table().size() + 1, gateway_field_count());
  std::set<std::string_view> names, flags;
  size_t structured = 0;
  for (const auto& def : settings_table()) {
    EXPECT_TRUE(names.insert(def.name).second) << def.name;
    if (!def.flag.empty()) {
      EXPECT_TRUE(flags.insert(def.flag).second) << def.flag;
    }
    EXPECT_FALSE(def.description.empty()) << def.name;
    bool is_structured = std::holds_alternative<std::monostate>(def.field);
    structured += is_structured ? 1 : 0;
    EXPECT_EQ(is_structured,
              def.type == value_type::gateway || def.type == value_type::gateway_map ||
                  def.type == value_type::runtime_map || def.type == value_type::api_keys ||
                  def.type == value_type::prefix_map)
        << def.name;
  }
  EXPECT_EQ(structured, 5u);
}

/// Setting each scalar through the table changes that field and no other: every entry is wired
/// to its own member.
TEST(SettingsTable, EveryScalarEntryWritesItsOwnField) {
  const settings defaults{};
  for (const auto& def : settings_table()) {
    if (std::holds_alternative<std::monostate>(def.field)) continue;
    settings s;
    std::string value = def.type == value_type::text ? "changed"
                        : def.type == value_type::boolean
                            ? (format_value(defaults, def) == "true" ? "false" : "true")
                            : std::to_string(def.max);
    ASSERT_TRUE(assign(s, def, value, "test").ok()) << def.name;
    EXPECT_NE(format_value(s, def), format_value(defaults, def)) << def.name;
    for (const auto& other : settings_table()) {
      if (&other != &def) {
        EXPECT_EQ(format_value(s, other), format_value(defaults, other)) << other.name;
      }
    }
  }
}

TEST(SettingsTable, EveryGatewayEntryWritesItsOwnField) {
  const gateway_settings defaults{};
  for (const auto& def : gateway_table()) {
    if (def.type == value_type::headers) continue;  // a map, loaded by the YAML loader
    gateway_settings g;
    std::string value = def.type == value_type::text      ? "changed"
                        : def.type == value_type::boolean ? "true"
                                                          : std::to_string(def.max);
    ASSERT_TRUE(assign(g, def, value, "test").ok()) << def.name;
    EXPECT_NE(format_value(g, def), format_value(defaults, def)) << def.name;
  }
}

TEST(SettingsTable, DefaultsAreInsideTheirBounds) {
  const settings s{};
  for (const auto& def : settings_table()) {
    auto value = number_value(s, def);
    if (!value) continue;
    EXPECT_GE(*value, def.min) << def.name;
    EXPECT_LE(*value, def.max) << def.name;
  }
  const gateway_settings g{};
  for (const auto& def : gateway_table()) {
    auto value = number_value(g, def);
    if (value) {
      EXPECT_TRUE(*value >= def.min && *value <= def.max) << def.name;
    }
  }
}

TEST(SettingsTable, UnitsAreInTheNames) {
  for (const auto& def : settings_table()) {
    EXPECT_EQ(def.type == value_type::duration_ms, std::string_view(def.name).ends_with("_ms"))
        << def.name;
  }
}

TEST(SettingsTable, FindsDurationsWithoutTheSuffix) {
  EXPECT_EQ(find_gateway_field("request_timeout"), find_gateway_field("request_timeout_ms"));
  EXPECT_EQ(find_gateway_field("initial_backoff")->name, "initial_backoff_ms");
  EXPECT_EQ(find_gateway_field("max_backoff")->name, "max_backoff_ms");
  EXPECT_EQ(find_setting("lease_ttl")->name, "lease_ttl_ms");
  EXPECT_EQ(find_setting("max_body"), nullptr);  // only durations drop their unit
  EXPECT_EQ(find_setting("nope"), nullptr);
}

TEST(TextOptions, NamesAreDerivedAndUnique) {
  EXPECT_EQ(env_name("per_model_concurrency"), "SWITCHYARD_PER_MODEL_CONCURRENCY");
  EXPECT_EQ(env_name("gateway.max_retries"), "SWITCHYARD_GATEWAY_MAX_RETRIES");
  std::set<std::string> envs, flags;
  for (const auto& option : text_options()) {
    EXPECT_TRUE(envs.insert(option.env).second) << option.env;
    EXPECT_TRUE(flags.insert(option.flag).second) << option.flag;
    EXPECT_FALSE(option.default_text.empty()) << option.name;
  }
  for (const char* required : {"--listen", "--data-dir", "--nats", "--gateway",
                               "--per-model-concurrency", "--gateway-request-timeout-ms"}) {
    EXPECT_TRUE(flags.contains(required)) << required;
  }
  EXPECT_TRUE(envs.contains("SWITCHYARD_NATS_URL"));
  EXPECT_EQ(find_text_option("lease_ttl_ms")->default_text, "30s");
  EXPECT_EQ(find_text_option("listen")->default_text, "127.0.0.1:8080");
  EXPECT_EQ(find_text_option("nats_url")->default_text, "(none)");
}

TEST(Assign, ReportsWhereAndWhat) {
  settings s;
  auto bad = assign(s, *find_setting("per_model_concurrency"), "ten", "--per-model-concurrency");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error().param, "per_model_concurrency");
  EXPECT_NE(bad.error().message.find("--per-model-concurrency"), std::string::npos);
  EXPECT_NE(bad.error().message.find("'ten'"), std::string::npos);
  EXPECT_FALSE(assign(s, *find_setting("http_threads"), "99999999999", "x").ok());
  EXPECT_FALSE(assign(s, *find_setting("lease_ttl_ms"), "soon", "x").ok());
  ASSERT_TRUE(assign(s, *find_setting("lease_ttl_ms"), "2m", "x").ok());
  EXPECT_EQ(s.lease_ttl_ms, 120'000);
}

}  // namespace SY_UNITY_ID
}  // namespace sy::config
