#include "config/validate.hpp"

#include <gtest/gtest.h>

#include "config/api_keys.hpp"
#include "config/limits.hpp"
#include "config/sha256.hpp"
#include "tests/unit/config/temp_dir.hpp"

namespace sy::config {
namespace SY_UNITY_ID {

settings with_gateway() {
  settings s;
  s.gateway = gateway_settings{};
  s.gateway->url = "http://127.0.0.1:8000";
  return s;
}

/// Validation fails naming `param`, and the message contains `text`.
void expect_invalid(const settings& s, const std::string& param, const std::string& text = {}) {
  auto v = validate(s);
  ASSERT_FALSE(v.ok()) << "expected an error for " << param;
  EXPECT_EQ(v.error().code, "invalid_config");
  EXPECT_EQ(v.error().param, param) << v.error().message;
  EXPECT_NE(v.error().message.find(param), std::string::npos) << v.error().message;
  EXPECT_NE(v.error().message.find(text), std::string::npos) << v.error().message;
}

TEST(Validate, DefaultsAreValidAndWarnThatNoGatewayIsSet) {
  auto v = validate(settings{});
  ASSERT_TRUE(v.ok()) << v.error().message;
  auto w = warnings(*v);
  ASSERT_EQ(w.size(), 1u);
  EXPECT_NE(w[0].find("no gateway"), std::string::npos);
  EXPECT_TRUE(warnings(with_gateway()).empty());
}

TEST(Validate, GatewayModesAreExclusive) {
  auto s = with_gateway();
  s.model_gateways["m"].url = "http://127.0.0.1:1";
  expect_invalid(s, "gateway", "both gateway and model_gateways");
  s.gateway.reset();
  EXPECT_TRUE(validate(s).ok());
}

TEST(Validate, GatewayUrls) {
  auto s = with_gateway();
  s.gateway->url = "https://api.openai.com";
  EXPECT_TRUE(validate(s).ok());
  s.gateway->url = "ftp://x:1";
  expect_invalid(s, "gateway.url", "http(s)://host[:port]");
  s.gateway->url = "";
  expect_invalid(s, "gateway.url", "is required");
  s.gateway->url = "http://gw:8000/v1\r\nX-Injected:1";
  expect_invalid(s, "gateway.url", "control characters; character 18 is 0x0d");
  s.gateway->url = "http://gw:8000/v1\tx";
  expect_invalid(s, "gateway.url", "control characters");
  settings m;
  m.model_gateways["gpt-4o"].url = "localhost:8000";
  expect_invalid(m, "model_gateways.gpt-4o.url");
  m.model_gateways.clear();
  m.model_gateways[""].url = "http://a:1";
  expect_invalid(m, "model_gateways", "model name is empty");
}

TEST(Validate, EveryNumberIsBounded) {
  struct bad_value {
    int settings::*member;
    int value;
    const char* name;
  };
  for (auto [member, value, name] :
       {bad_value{&settings::per_model_concurrency, 0, "per_model_concurrency"},
        bad_value{&settings::global_concurrency, 10'001, "global_concurrency"},
        bad_value{&settings::default_max_attempts, 0, "default_max_attempts"},
        bad_value{&settings::default_max_attempts, 101, "default_max_attempts"},
        bad_value{&settings::http_threads, 0, "http_threads"}}) {
    settings s;
    s.*member = value;
    expect_invalid(s, name, "must be between");
  }
  for (auto member : {&settings::lease_ttl_ms, &settings::http_read_timeout_ms,
                      &settings::shutdown_timeout_ms, &settings::ack_wait_ms,
                      &settings::reaper_interval_ms, &settings::requeue_initial_backoff_ms,
                      &settings::max_body_bytes, &settings::lmdb_initial_map_bytes,
                      &settings::group_commit_max_ops, &settings::reconcile_after_ms}) {
    settings s;
    s.*member = 0;
    EXPECT_FALSE(validate(s).ok());
  }
}

TEST(Validate, GatewayNumbersAreBounded) {
  auto s = with_gateway();
  s.gateway->request_timeout_ms = 0;
  expect_invalid(s, "gateway.request_timeout_ms", "must be between 1 and");
  s = with_gateway();
  s.gateway->max_retries = -1;
  expect_invalid(s, "gateway.max_retries");
  s = with_gateway();
  s.gateway->max_connections = 0;
  expect_invalid(s, "gateway.max_connections");
  settings m;
  m.model_gateways["m"].url = "http://a:1";
  m.model_gateways["m"].max_backoff_ms = 0;
  expect_invalid(m, "model_gateways.m.max_backoff_ms");
}

TEST(Validate, RelationsBetweenSettings) {
  settings s;
  s.per_model_concurrency = 50;
  s.global_concurrency = 20;
  expect_invalid(s, "per_model_concurrency", "must not exceed global_concurrency (20)");
  s = settings{};
  s.requeue_initial_backoff_ms = 5'000;
  s.requeue_max_backoff_ms = 1'000;
  expect_invalid(s, "requeue_initial_backoff_ms", "requeue_max_backoff_ms");
  s = with_gateway();
  s.gateway->initial_backoff_ms = 3'000;
  s.gateway->max_backoff_ms = 2'000;
  expect_invalid(s, "gateway.initial_backoff_ms", "must not exceed max_backoff_ms");
}

TEST(Validate, GatewayApiKeyFileIsReadAndTrimmed) {
  test::temp_dir dir;
  auto s = with_gateway();
  s.gateway->api_key_file = dir.write("gw.key", "\n  sk-test-123 \n");
  auto v = validate(s);
  ASSERT_TRUE(v.ok()) << v.error().message;
  EXPECT_EQ(v->gateway->api_key, "sk-test-123");
  s.gateway->api_key_file = dir.path("missing.key");
  expect_invalid(s, "gateway.api_key_file", "missing.key");
  s.gateway->api_key_file = dir.write("empty.key", " \n");
  expect_invalid(s, "gateway.api_key_file", "is empty");
  // The key is sent as a header line: an inner line break would inject headers.
  s.gateway->api_key_file = dir.write("two.key", "sk-one\nX-Injected: 1\n");
  expect_invalid(s, "gateway.api_key_file", "line break or another control character");
  s.gateway->api_key_file = dir.write("tab.key", "sk-a\tb");
  expect_invalid(s, "gateway.api_key_file", "control character");
}

TEST(Validate, GatewayApiKeyNameIsReadFromTheSecretsDir) {
  test::temp_dir dir;
  (void)dir.write("openai", "sk-from-secret\n");
  auto s = with_gateway();
  s.gateway->api_key_name = "openai";
  expect_invalid(s, "gateway.api_key_name", "secrets_dir is not set");
  s.secrets_dir = dir.path("");
  auto v = validate(s);
  ASSERT_TRUE(v.ok()) << v.error().message;
  EXPECT_EQ(v->gateway->api_key, "sk-from-secret");
  s.gateway->api_key_name = "../openai";
  expect_invalid(s, "gateway.api_key_name", "the name of a file in secrets_dir");
  s.gateway->api_key_name = "missing";
  expect_invalid(s, "gateway.api_key_name", "missing");
  s.gateway->api_key_name = "openai";
  s.gateway->api_key_file = dir.path("openai");
  expect_invalid(s, "gateway.api_key_name", "not both");
  // The error about a bad secret names the file, never its content.
  s.gateway->api_key_file.clear();
  (void)dir.write("openai", "sk-one\nsk-two");
  auto bad = validate(s);
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error().message.find("sk-one"), std::string::npos) << bad.error().message;
}

TEST(Validate, GatewayHeadersAreCheckedAndTheirSecretsLoaded) {
  test::temp_dir dir;
  (void)dir.write("project", " proj-123 \n");
  auto s = with_gateway();
  s.secrets_dir = dir.path("");
  s.gateway->headers = {{.name = "OpenAI-Organization", .value = "org-1", .secret_name = {}},
                        {.name = "OpenAI-Project", .value = {}, .secret_name = "project"}};
  auto v = validate(s);
  ASSERT_TRUE(v.ok()) << v.error().message;
  EXPECT_EQ(v->gateway->headers[1].value, "proj-123");

  auto with_header = [&](std::string name, std::string value) {
    auto t = with_gateway();
    t.gateway->headers = {{.name = std::move(name), .value = std::move(value), .secret_name = {}}};
    return t;
  };
  expect_invalid(with_header("Bad Name", "x"), "gateway.headers.Bad Name", "not a valid header");
  expect_invalid(with_header("Content-Length", "1"), "gateway.headers.Content-Length",
                 "set by the engine");
  expect_invalid(with_header("host", "evil"), "gateway.headers.host", "set by the engine");
  auto injected = with_header("X-A", "secret-1\r\nX-Injected: 1");
  expect_invalid(injected, "gateway.headers.X-A", "control character");
  EXPECT_EQ(validate(injected).error().message.find("secret-1"), std::string::npos);
  auto twice = with_gateway();
  twice.gateway->headers = {{.name = "X-A", .value = "1", .secret_name = {}},
                            {.name = "x-a", .value = "2", .secret_name = {}}};
  expect_invalid(twice, "gateway.headers.x-a", "given twice");
  // Authorization is free to configure unless the gateway has an API key.
  auto auth = with_header("Authorization", "Basic abc");
  EXPECT_TRUE(validate(auth).ok());
  auth.gateway->api_key_file = dir.write("k", "sk");
  expect_invalid(auth, "gateway.headers.Authorization", "conflicts with the gateway's API key");
  auto missing = with_gateway();
  missing.gateway->headers = {{.name = "X-P", .value = {}, .secret_name = "project"}};
  expect_invalid(missing, "gateway.headers.X-P.secret", "secrets_dir is not set");
}

TEST(Validate, GatewayTlsSettingsAreForHttpsAndTheirFilesMustBeReadable) {
  test::temp_dir dir;
  auto s = with_gateway();
  s.gateway->tls_ca_cert_file = dir.write("ca.pem", "pem");
  expect_invalid(s, "gateway.tls_ca_cert_file", "is for https:// gateways");
  s.gateway->url = "https://gw.example:8443";
  EXPECT_TRUE(validate(s).ok());
  s.gateway->tls_ca_cert_file = dir.path("missing.pem");
  expect_invalid(s, "gateway.tls_ca_cert_file", "missing.pem");
  s.gateway->tls_ca_cert_file.clear();
  s.gateway->tls_client_cert_file = dir.write("client.pem", "pem");
  expect_invalid(s, "gateway.tls_client_key_file", "needs both");
  s.gateway->tls_client_key_file = dir.write("client.key", "pem");
  EXPECT_TRUE(validate(s).ok());
  s.gateway->tls_insecure_skip_verify = true;
  EXPECT_TRUE(validate(s).ok());
  s.gateway->url = "http://gw.example:8080";
  s.gateway->tls_client_cert_file.clear();
  s.gateway->tls_client_key_file.clear();
  expect_invalid(s, "gateway.tls_insecure_skip_verify", "is for https:// gateways");
}

TEST(Validate, ListenAddress) {
  settings s;
  s.listen = "8080";
  expect_invalid(s, "listen", "HOST:PORT");
  s.listen = "127.0.0.1:70000";
  expect_invalid(s, "listen", "HOST:PORT");
  for (const char* loopback : {"127.0.0.1:0", "127.3.2.1:80", "[::1]:8080", "localhost:1"}) {
    s.listen = loopback;
    EXPECT_TRUE(validate(s).ok()) << loopback;
  }
  s.listen = "0.0.0.0:8080";
  expect_invalid(s, "listen", "refusing to listen on 0.0.0.0:8080 without api_keys");
  s.listen = "[::]:8080";
  expect_invalid(s, "listen", "without api_keys");
  s.api_keys.push_back({sha256_hex("k"), "acme"});
  s.listen = "0.0.0.0:8080";
  EXPECT_TRUE(validate(s).ok());
}

TEST(Validate, ApiKeysAreNormalizedAndChecked) {
  settings s;
  std::string upper = sha256_hex("key-1");
  for (char& c : upper) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  s.api_keys.push_back({upper, "acme"});
  auto v = validate(s);
  ASSERT_TRUE(v.ok()) << v.error().message;
  EXPECT_EQ(v->api_keys[0].sha256_hex, sha256_hex("key-1"));
  EXPECT_EQ(tenant_for_key(v->api_keys, "key-1"), "acme");
  EXPECT_EQ(tenant_for_key(v->api_keys, "key-2"), std::nullopt);

  s.api_keys = {{"abc", "acme"}};
  expect_invalid(s, "api_keys[0].sha256", "64 hex");
  s.api_keys = {{std::string(64, 'g'), "acme"}};
  expect_invalid(s, "api_keys[0].sha256", "64 hex");
  s.api_keys = {{sha256_hex("a"), ""}};
  expect_invalid(s, "api_keys[0].tenant");
  s.api_keys = {{sha256_hex("a"), "has space"}};
  expect_invalid(s, "api_keys[0].tenant");
  // tenant_max_bytes: a tenant is part of LMDB keys (config/limits.hpp).
  s.api_keys = {{sha256_hex("a"), std::string(limits::tenant_max_bytes + 1, 't')}};
  expect_invalid(s, "api_keys[0].tenant");
  s.api_keys = {{sha256_hex("a"), std::string(limits::tenant_max_bytes, 't')}};
  EXPECT_TRUE(validate(s).ok());
  s.api_keys = {{sha256_hex("a"), "x"}, {sha256_hex("a"), "y"}};
  expect_invalid(s, "api_keys[1]", "configured twice");
}

TEST(Validate, TextSettings) {
  settings s;
  s.log_level = "verbose";
  expect_invalid(s, "log_level", "'verbose'");
  s.log_level = "info";
  s.nats_events = "some";
  expect_invalid(s, "nats_events", "'some'");
  s = settings{};
  s.data_dir = "";
  expect_invalid(s, "data_dir", "must not be empty");
  s = settings{};
  s.stream_prefix = "SY.X";
  expect_invalid(s, "stream_prefix");
  for (const char* bad : {"", "sy.", ".sy", "sy..x", "sy.*", "sy >"}) {
    s = settings{};
    s.subject_prefix = bad;
    expect_invalid(s, "subject_prefix");
  }
  s = settings{};
  s.subject_prefix = "acme.sy";
  EXPECT_TRUE(validate(s).ok());
  s.nats_url = "nats://a:4222, nats://b:4222";
  expect_invalid(s, "nats_url", "whitespace");
  // Every server of the list is checked; the error names the bad one (without its password).
  s.nats_url = "nats://a:4222,http://b:4222";
  expect_invalid(s, "nats_url", "'http://b:4222'");
  s.nats_url = "nats://a:4222,tls://u:secret@b:0";
  expect_invalid(s, "nats_url", "'tls://…@b:0'");
  s.nats_url = ",";
  expect_invalid(s, "nats_url", "names no NATS server");
  s.nats_url = "nats://a:4222,,tls://[::1]:4223,";
  EXPECT_TRUE(validate(s).ok());
  s = settings{};
  s.nats_server_bin = "";
  expect_invalid(s, "nats_server_bin");
}

TEST(Validate, IsIdempotent) {
  test::temp_dir dir;
  auto s = with_gateway();
  s.gateway->api_key_file = dir.write("k", "secret");
  auto once = validate(s);
  ASSERT_TRUE(once.ok());
  auto twice = validate(*once);
  ASSERT_TRUE(twice.ok());
  EXPECT_EQ(twice->gateway->api_key, "secret");
}

TEST(Validate, BatchCompletionWindows) {
  auto w = parse_completion_windows(" 24h, 1h ,90s");
  ASSERT_TRUE(w.ok());
  ASSERT_EQ(w->size(), 3u);
  EXPECT_EQ((*w)[0].text, "24h");
  EXPECT_EQ((*w)[0].ms, 86'400'000);
  EXPECT_EQ((*w)[1].text, "1h");
  EXPECT_EQ((*w)[2].ms, 90'000);
  auto s = with_gateway();
  s.batch_completion_windows = "24h,soon";
  expect_invalid(s, "batch_completion_windows", "soon");
  s.batch_completion_windows = " , ";
  expect_invalid(s, "batch_completion_windows");
  s.batch_completion_windows = "0s";
  expect_invalid(s, "batch_completion_windows");
}

// The default webhook_url goes through the parser every job's webhook_url goes through.
TEST(Validate, DefaultWebhookUrlIsParsedAsAJobsIs) {
  auto s = with_gateway();
  s.webhook_url = "https://hooks.example.com:8443/in?x=1";
  EXPECT_TRUE(validate(s).ok());
  s.webhook_url = "http://127.1/hook";  // a numeric host that is not a dotted quad
  expect_invalid(s, "webhook_url", "dotted-quad");
  s.webhook_url = "https://user@hooks.example.com/";
  expect_invalid(s, "webhook_url", "user info");
  s.webhook_url = "ftp://hooks.example.com/";
  expect_invalid(s, "webhook_url", "must start with http:// or https://");
}

TEST(Validate, StorageGrantsAndSts) {
  auto s = with_gateway();
  s.tenant_storage_prefixes["acme"] = {"s3://data/acme/"};
  EXPECT_TRUE(validate(s).ok());
  s.tenant_storage_prefixes["acme"].push_back("s3://data/acme");
  expect_invalid(s, "tenant_storage_prefixes.acme[1]", "does not end with '/'");
  s.tenant_storage_prefixes["acme"].pop_back();
  s.sts_endpoint = "http://127.0.0.1:7480";
  expect_invalid(s, "sts_endpoint", "needs sts_role_arn");
  s.sts_role_arn = "arn:aws:iam:::role/task";
  s.sts_access_key_id = "AKID";
  s.sts_secret_access_key_file = "/nonexistent/secret";
  expect_invalid(s, "sts_secret_access_key_file", "");
  s.sts_endpoint = "http://127.0.0.1:7480/path";
  expect_invalid(s, "sts_endpoint", "no path");
  s.sts_endpoint = "ftp://127.0.0.1";
  expect_invalid(s, "sts_endpoint", "no path");
}

TEST(Validate, RuntimesAndWorkerKeys) {
  auto s = with_gateway();
  s.runtimes["thumbs"] = runtime_settings{};
  EXPECT_TRUE(validate(s).ok());
  s.runtimes["bad.name"] = runtime_settings{};
  expect_invalid(s, "runtimes.bad.name", "letters, digits");
  s.runtimes.erase("bad.name");
  s.runtimes["thumbs"].lease_ttl_ms = 50;
  expect_invalid(s, "runtimes.thumbs.lease_ttl_ms", "between 100ms and 1h");
  s.runtimes["thumbs"].lease_ttl_ms = 1'000;
  s.api_keys = {{std::string(64, 'b'), "acme", "client"}, {std::string(64, 'c'), "", "worker"}};
  EXPECT_TRUE(validate(s).ok());
  s.api_keys[1].tenant = "acme";
  expect_invalid(s, "api_keys[1].tenant", "a worker key has no tenant");
  s.api_keys[1] = {std::string(64, 'c'), "", "admin"};
  EXPECT_TRUE(validate(s).ok());
  s.api_keys[1].tenant = "acme";
  expect_invalid(s, "api_keys[1].tenant", "an admin key has no tenant");
  s.api_keys[1] = {std::string(64, 'c'), "", "metrics"};  // GET /metrics only
  EXPECT_TRUE(validate(s).ok());
  s.api_keys[1].tenant = "acme";
  expect_invalid(s, "api_keys[1].tenant", "a metrics key has no tenant");
  s.api_keys[1] = {std::string(64, 'c'), "", "root"};
  expect_invalid(s, "api_keys[1].role", "client, worker, admin or metrics");
  s.api_keys.clear();
  s.internal_listen = "0.0.0.0:8081";
  expect_invalid(s, "internal_listen", "without api_keys");
  s.internal_listen = "";
  EXPECT_TRUE(validate(s).ok());  // no internal listener at all
}

TEST(ApiKeys, AWorkerKeyIsNeverAClientKey) {
  std::vector<api_key_entry> keys = {{sha256_hex("c"), "acme", "client"},
                                     {sha256_hex("w"), "", "worker"}};
  EXPECT_EQ(tenant_for_key(keys, "c"), "acme");
  EXPECT_FALSE(tenant_for_key(keys, "w"));
  EXPECT_TRUE(key_has_role(keys, "w", "worker"));
  EXPECT_FALSE(key_has_role(keys, "c", "worker"));
  EXPECT_FALSE(key_has_role(keys, "other", "worker"));
  EXPECT_FALSE(key_has_role(keys, "w", "admin"));
}

}  // namespace SY_UNITY_ID
}  // namespace sy::config
