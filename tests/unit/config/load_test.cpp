#include "config/load.hpp"

#include <gtest/gtest.h>

namespace sy::config {
namespace SY_UNITY_ID {

TEST(LoadSettings, PrecedenceIsFileThenEnvThenFlags) {
  sources from;
  from.yaml_text = "per_model_concurrency: 5\nlease_ttl_ms: 5s\nlisten: 127.0.0.1:1\n";
  auto file_only = load_settings(from);
  ASSERT_TRUE(file_only.ok()) << file_only.error().message;
  EXPECT_EQ(file_only->per_model_concurrency, 5);
  EXPECT_EQ(file_only->lease_ttl_ms, 5'000);
  EXPECT_EQ(file_only->global_concurrency, 100);  // default where no layer sets it

  from.env = {{"SWITCHYARD_PER_MODEL_CONCURRENCY", "6"}, {"SWITCHYARD_LEASE_TTL_MS", "7000"}};
  auto with_env = load_settings(from);
  ASSERT_TRUE(with_env.ok()) << with_env.error().message;
  EXPECT_EQ(with_env->per_model_concurrency, 6);
  EXPECT_EQ(with_env->lease_ttl_ms, 7'000);
  EXPECT_EQ(with_env->listen, "127.0.0.1:1");  // the file still applies below the env

  from.flags = {{"per_model_concurrency", "7"}};
  auto with_flags = load_settings(from);
  ASSERT_TRUE(with_flags.ok()) << with_flags.error().message;
  EXPECT_EQ(with_flags->per_model_concurrency, 7);
  EXPECT_EQ(with_flags->lease_ttl_ms, 7'000);
}

TEST(LoadSettings, GatewayUrlFromEnvKeepsFileFields) {
  sources from;
  from.yaml_text = "gateway:\n  url: http://file:1\n  max_retries: 7\n";
  from.env = {{"SWITCHYARD_GATEWAY", "http://env:2"}};
  from.flags = {{"gateway.request_timeout_ms", "3s"}};
  auto s = load_settings(from);
  ASSERT_TRUE(s.ok()) << s.error().message;
  ASSERT_TRUE(s->gateway);
  EXPECT_EQ(s->gateway->url, "http://env:2");
  EXPECT_EQ(s->gateway->max_retries, 7);
  EXPECT_EQ(s->gateway->request_timeout_ms, 3'000);
}

TEST(LoadSettings, GatewayFieldWithoutUrlIsAnError) {
  sources from;
  from.env = {{"SWITCHYARD_GATEWAY_MAX_RETRIES", "1"}};
  auto s = load_settings(from);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.error().param, "gateway.url");
}

TEST(LoadSettings, FlagGatewayWithFileModelGatewaysIsAnError) {
  sources from;
  from.yaml_text = "model_gateways:\n  m: http://a:1\n";
  from.flags = {{"gateway", "http://b:2"}};
  auto s = load_settings(from);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.error().message.find("both gateway and model_gateways"), std::string::npos);
}

TEST(LoadSettings, BadEnvValueNamesTheVariable) {
  sources from;
  from.env = {{"SWITCHYARD_GLOBAL_CONCURRENCY", "many"}};
  auto s = load_settings(from);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.error().message.find("SWITCHYARD_GLOBAL_CONCURRENCY"), std::string::npos);
  EXPECT_EQ(s.error().param, "global_concurrency");
}

TEST(LoadSettings, NatsUrlFromEnvAndDurationsEverywhere) {
  sources from;
  from.env = {{"SWITCHYARD_NATS_URL", "nats://127.0.0.1:4222"},
              {"SWITCHYARD_HTTP_READ_TIMEOUT_MS", "1m"}};
  from.flags = {{"shutdown_timeout_ms", "250ms"}};
  auto s = load_settings(from);
  ASSERT_TRUE(s.ok()) << s.error().message;
  EXPECT_EQ(s->nats_url, "nats://127.0.0.1:4222");
  EXPECT_EQ(s->http_read_timeout_ms, 60'000);
  EXPECT_EQ(s->shutdown_timeout_ms, 250);
}

TEST(LoadSettings, ValidatesTheResult) {
  sources from;
  from.flags = {{"listen", "0.0.0.0:8080"}};
  auto s = load_settings(from);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.error().message.find("refusing to listen on 0.0.0.0:8080 without api_keys"),
            std::string::npos);
}

TEST(UnknownEnv, ListsOnlyUnknownSwitchyardNames) {
  env_map env = {{"SWITCHYARD_LISTEN", "x"},
                 {"SWITCHYARD_CONFIG", "f"},
                 {"SWITCHYARD_PER_MODEL_CONCURENCY", "3"},
                 {"PATH", "/bin"},
                 {"SWITCHYARD_GATEWAY_MAX_RETRIES", "1"},
                 {"SWITCHYARD_URL", "http://h:1"},  // read by the client commands
                 {"SWITCHYARD_API_KEY", "k"}};
  auto unknown = unknown_env_names(env);
  ASSERT_EQ(unknown.size(), 1u);
  EXPECT_EQ(unknown[0], "SWITCHYARD_PER_MODEL_CONCURENCY");
}

}  // namespace SY_UNITY_ID
}  // namespace sy::config
