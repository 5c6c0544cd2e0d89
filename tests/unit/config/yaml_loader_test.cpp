#include "config/yaml_loader.hpp"

#include <gtest/gtest.h>

#include "config/sha256.hpp"
#include "tests/unit/config/temp_dir.hpp"

namespace sy::config {
namespace SY_UNITY_ID {

settings load(const std::string& yaml) {
  settings s;
  auto st = apply_yaml(s, yaml, "test.yaml");
  EXPECT_TRUE(st.ok()) << (st.ok() ? "" : st.error().message);
  return s;
}

sy::error load_error(const std::string& yaml) {
  settings s;
  auto st = apply_yaml(s, yaml, "test.yaml");
  EXPECT_FALSE(st.ok()) << yaml;
  return st.ok() ? sy::error{} : st.error();
}

TEST(YamlLoader, EmptyDocumentChangesNothing) {
  EXPECT_EQ(load("").listen, settings{}.listen);
  EXPECT_EQ(load("# only a comment\n").per_model_concurrency, 10);
}

TEST(YamlLoader, ScalarsAndDurations) {
  auto s = load(
      "listen: 127.0.0.1:9000\nper_model_concurrency: 4\nlease_ttl_ms: 2m\n"
      "http_read_timeout: 5s\nnats_url:\nmax_body_bytes: 2048\n");
  EXPECT_EQ(s.listen, "127.0.0.1:9000");
  EXPECT_EQ(s.per_model_concurrency, 4);
  EXPECT_EQ(s.lease_ttl_ms, 120'000);
  EXPECT_EQ(s.http_read_timeout_ms, 5'000);
  EXPECT_EQ(s.nats_url, "");
  EXPECT_EQ(s.max_body_bytes, 2048);
}

TEST(YamlLoader, GatewayAsUrlOrMapWithIssueSpellings) {
  auto as_url = load("gateway: http://127.0.0.1:8000\n");
  ASSERT_TRUE(as_url.gateway);
  EXPECT_EQ(as_url.gateway->url, "http://127.0.0.1:8000");
  EXPECT_EQ(as_url.gateway->max_retries, gateway_settings{}.max_retries);
  auto as_map = load(
      "gateway:\n  url: http://gw:1\n  request_timeout: 30s\n  max_retries: 5\n"
      "  initial_backoff: 200ms\n  max_backoff: 2m\n  max_connections: 8\n");
  ASSERT_TRUE(as_map.gateway);
  EXPECT_EQ(as_map.gateway->url, "http://gw:1");
  EXPECT_EQ(as_map.gateway->request_timeout_ms, 30'000);
  EXPECT_EQ(as_map.gateway->max_retries, 5);
  EXPECT_EQ(as_map.gateway->initial_backoff_ms, 200);
  EXPECT_EQ(as_map.gateway->max_backoff_ms, 120'000);
  EXPECT_EQ(as_map.gateway->max_connections, 8);
}

TEST(YamlLoader, ModelGateways) {
  auto s = load(
      "model_gateways:\n  gpt-4o: http://a:1\n  llama:\n    url: http://b:2/v1\n"
      "    request_timeout_ms: 1000\n");
  ASSERT_EQ(s.model_gateways.size(), 2u);
  EXPECT_EQ(s.model_gateways.at("gpt-4o").url, "http://a:1");
  EXPECT_EQ(s.model_gateways.at("llama").url, "http://b:2/v1");
  EXPECT_EQ(s.model_gateways.at("llama").request_timeout_ms, 1000);
  EXPECT_FALSE(s.gateway);
}

TEST(YamlLoader, GatewayHeadersAsValuesOrSecrets) {
  auto s = load(
      "secrets_dir: /run/secrets\n"
      "gateway:\n  url: https://api.example.com\n  api_key_name: openai\n"
      "  headers:\n    OpenAI-Organization: org-1\n    OpenAI-Project: {secret: project}\n");
  ASSERT_TRUE(s.gateway);
  EXPECT_EQ(s.secrets_dir, "/run/secrets");
  EXPECT_EQ(s.gateway->api_key_name, "openai");
  ASSERT_EQ(s.gateway->headers.size(), 2u);
  EXPECT_EQ(s.gateway->headers[0].name, "OpenAI-Organization");
  EXPECT_EQ(s.gateway->headers[0].value, "org-1");
  EXPECT_EQ(s.gateway->headers[0].secret_name, "");
  EXPECT_EQ(s.gateway->headers[1].name, "OpenAI-Project");
  EXPECT_EQ(s.gateway->headers[1].secret_name, "project");
  EXPECT_EQ(load_error("gateway:\n  url: http://a:1\n  headers: [a]\n").param, "gateway.headers");
  EXPECT_EQ(load_error("gateway:\n  url: http://a:1\n  headers:\n    X: {file: f}\n").param,
            "gateway.headers.X");
}

TEST(YamlLoader, ApiKeysByHashAndByKeyFile) {
  test::temp_dir dir;
  auto key_file = dir.write("tenant_b.key", "  plain-secret-b\n");
  std::string hash_a(64, 'A');
  auto s = load("api_keys:\n  - {sha256: " + hash_a + ", tenant: a}\n  - key_file: " + key_file +
                "\n    tenant: b\n");
  ASSERT_EQ(s.api_keys.size(), 2u);
  EXPECT_EQ(s.api_keys[0].sha256_hex, hash_a);
  EXPECT_EQ(s.api_keys[0].tenant, "a");
  EXPECT_EQ(s.api_keys[1].sha256_hex, sha256_hex("plain-secret-b"));
  EXPECT_EQ(s.api_keys[1].tenant, "b");
}

TEST(YamlLoader, ApiKeyErrors) {
  EXPECT_NE(load_error("api_keys:\n  - {key: plain, tenant: a}\n").message.find("hash-key"),
            std::string::npos);
  EXPECT_NE(load_error("api_keys:\n  - {tenant: a}\n").message.find("exactly one"),
            std::string::npos);
  auto missing = load_error("api_keys:\n  - {key_file: /nonexistent/k, tenant: a}\n");
  EXPECT_NE(missing.message.find("/nonexistent/k"), std::string::npos);
  EXPECT_NE(load_error("api_keys: {a: b}\n").message.find("expected a list"), std::string::npos);
  EXPECT_NE(
      load_error("api_keys:\n  - {sha256: x, tenant: a, scope: admin}\n").message.find("role"),
      std::string::npos);
}

TEST(YamlLoader, UnknownKeysAreErrorsWithAHint) {
  auto top = load_error("per_model_concurency: 3\n");
  EXPECT_EQ(top.code, "invalid_config");
  EXPECT_EQ(top.param, "per_model_concurency");
  EXPECT_NE(top.message.find("test.yaml"), std::string::npos);
  EXPECT_NE(top.message.find("unknown setting"), std::string::npos);
  EXPECT_NE(top.message.find("did you mean 'per_model_concurrency'"), std::string::npos);
  auto nested = load_error("gateway:\n  url: http://a:1\n  timeout: 3s\n");
  EXPECT_EQ(nested.param, "gateway.timeout");
  auto in_model = load_error("model_gateways:\n  m:\n    url: http://a:1\n    retries: 3\n");
  EXPECT_EQ(in_model.param, "model_gateways.m.retries");
  EXPECT_EQ(load_error("zzz: 1\n").message.find("did you mean"), std::string::npos);
}

TEST(YamlLoader, TypeErrorsNameTheSetting) {
  auto not_int = load_error("global_concurrency: lots\n");
  EXPECT_EQ(not_int.param, "global_concurrency");
  EXPECT_NE(not_int.message.find("'lots'"), std::string::npos);
  EXPECT_EQ(load_error("lease_ttl_ms: soon\n").param, "lease_ttl_ms");
  EXPECT_EQ(load_error("listen: [a, b]\n").param, "listen");
  EXPECT_EQ(load_error("gateway: [a]\n").param, "gateway");
  EXPECT_NE(load_error("lease_ttl: 1s\nlease_ttl_ms: 2000\n").message.find("twice"),
            std::string::npos);
}

TEST(YamlLoader, MalformedDocuments) {
  EXPECT_NE(load_error("listen: [unclosed\n").message.find("not valid YAML"), std::string::npos);
  EXPECT_NE(load_error("- a\n- b\n").message.find("expected a map"), std::string::npos);
}

TEST(YamlLoader, RuntimesAndWorkerKeys) {
  auto s = load(
      "runtimes:\n  thumbs: {lease_ttl: 45s, max_attempts: 5}\n  plain:\n"
      "api_keys:\n  - sha256: " +
      std::string(64, 'a') + "\n    role: worker\n");
  ASSERT_EQ(s.runtimes.size(), 2u);
  EXPECT_EQ(s.runtimes.at("thumbs").lease_ttl_ms, 45'000);
  EXPECT_EQ(s.runtimes.at("thumbs").max_attempts, 5);
  EXPECT_EQ(s.runtimes.at("plain"), runtime_settings{});
  ASSERT_EQ(s.api_keys.size(), 1u);
  EXPECT_EQ(s.api_keys[0].role, "worker");
  EXPECT_TRUE(s.api_keys[0].tenant.empty());
  EXPECT_EQ(load_error("runtimes: [a]\n").param, "runtimes");
  EXPECT_EQ(load_error("runtimes:\n  a: {lease: 1s}\n").param, "runtimes.a.lease");
  EXPECT_EQ(load_error("runtimes:\n  a: {max_attempts: 0}\n").param, "runtimes.a.max_attempts");
  EXPECT_EQ(load_error("runtimes:\n  a: {lease_ttl_ms: soon}\n").param, "runtimes.a.lease_ttl_ms");
}

}  // namespace SY_UNITY_ID
}  // namespace sy::config
