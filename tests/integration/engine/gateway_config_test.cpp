// Gateway settings as a user writes them, through validation into the engine: the API key and a
// header read from a secrets directory, fixed headers, one client (one keep-alive pool) for
// per-model entries that are equal, and a secret that appears in no log line and no job error.

#include <gtest/gtest.h>

#include <fstream>

#include "config/validate.hpp"
#include "runtime/log.hpp"
#include "tests/integration/engine/engine_env.hpp"
#include "tests/support/stderr_capture.hpp"
#include "tests/support/wait.hpp"

namespace sy::test {
namespace SY_UNITY_ID {

/// `env`'s settings validated as `switchyard serve` does (this loads the secrets).
void validate_settings(engine_env& env) {
  auto valid = config::validate(env.settings());
  ASSERT_TRUE(valid.ok()) << valid.error().message;
  env.settings() = std::move(*valid);
}

void write_file(const std::string& path, const std::string& content) {
  std::ofstream(path, std::ios::binary) << content;
}

nlohmann::json job_for(const std::string& model, const std::string& key) {
  const nlohmann::json body = {{"model", model},
                               {"messages", {{{"role", "user"}, {"content", "x"}}}},
                               {"fake", {{"key", key}}}};
  return {{"endpoint", "/v1/chat/completions"}, {"body", body}, {"max_attempts", 1}};
}

TEST(gateway_config, the_key_and_headers_from_the_secrets_dir_are_sent_and_never_logged) {
  const std::string api_key = "sk-secret-7f3a9c1e";
  const std::string project_secret = "proj-secret-b4d2";
  stderr_capture log;
  log::set_level("debug");
  engine_env env;
  temp_dir secrets;
  write_file(secrets.sub("gateway-key"), api_key + "\n");  // as mounted: a trailing newline
  write_file(secrets.sub("project"), project_secret);
  env.settings().secrets_dir = secrets.path();
  auto& gw = *env.settings().gateway;
  gw.api_key_name = "gateway-key";
  gw.headers = {{.name = "OpenAI-Organization", .value = "org-example", .secret_name = {}},
                {.name = "OpenAI-Project", .value = {}, .secret_name = "project"}};
  validate_settings(env);
  env.start();
  http_client c(env.port());

  auto ok = c.post_json("/v1/jobs", job_for("test-model", "answered"));
  ASSERT_EQ(ok.status, 202) << ok.body;
  EXPECT_EQ(env.wait_terminal(c, ok.json()["id"])["status"], "completed");
  auto received = env.gateway().received();
  ASSERT_EQ(received.size(), 1u);
  EXPECT_EQ(received[0].headers["authorization"], "Bearer " + api_key);
  EXPECT_EQ(received[0].headers["openai-organization"], "org-example");
  EXPECT_EQ(received[0].headers["openai-project"], project_secret);
  EXPECT_EQ(received[0].headers["user-agent"], "switchyard/0.1");

  // The gateway refuses the key: the job fails saying so, without the key.
  env.gateway().fail_next(1, 401);
  auto refused = c.post_json("/v1/jobs", job_for("test-model", "refused"));
  ASSERT_EQ(refused.status, 202) << refused.body;
  auto failed = env.wait_terminal(c, refused.json()["id"]);
  EXPECT_EQ(failed["status"], "failed") << failed.dump();
  EXPECT_NE(failed.dump().find("401"), std::string::npos) << failed.dump();
  const std::string events =
      c.get("/v1/jobs/" + std::string(refused.json()["id"]) + "/events").body;
  env.stop();
  log::set_level("info");
  for (const auto& secret : {api_key, project_secret}) {
    EXPECT_EQ(failed.dump().find(secret), std::string::npos) << "the job echoes a secret";
    EXPECT_EQ(events.find(secret), std::string::npos) << "an event echoes a secret";
    EXPECT_FALSE(log.contains(secret)) << "a log line holds a secret";
  }
  EXPECT_TRUE(log.contains("\"msg\":\"sending\""))
      << "the capture saw no debug line of an attempt: the check above proves little";
}

// Per-model entries with equal settings share one client: with max_connections 1 the two models'
// requests never run at once against the gateway, while an entry that differs has its own pool.
TEST(gateway_config, equal_per_model_entries_share_one_client_and_its_pool) {
  engine_env env;
  env.gateway().set_latency_ms(100);
  config::gateway_settings gw = *env.settings().gateway;
  gw.max_connections = 1;
  env.settings().gateway.reset();
  env.settings().model_gateways["model-a"] = gw;
  env.settings().model_gateways["model-b"] = gw;
  validate_settings(env);
  env.start();
  http_client c(env.port());
  std::vector<std::string> ids;
  for (int i = 0; i < 4; ++i) {
    for (const char* model : {"model-a", "model-b"}) {
      auto r = c.post_json("/v1/jobs", job_for(model, model + std::to_string(i)));
      ASSERT_EQ(r.status, 202) << r.body;
      ids.push_back(r.json()["id"]);
    }
  }
  for (const auto& id : ids) EXPECT_EQ(env.wait_terminal(c, id)["status"], "completed");
  EXPECT_EQ(env.gateway().requests(), 8);
  EXPECT_EQ(env.gateway().peak_in_flight(), 1) << "the two models used two pools";
  EXPECT_EQ(env.gateway().connections(), 1) << "one keep-alive connection for both models";
}

TEST(gateway_config, entries_that_differ_have_their_own_pools) {
  engine_env env;
  env.gateway().set_latency_ms(300);
  config::gateway_settings gw = *env.settings().gateway;
  gw.max_connections = 1;
  env.settings().gateway.reset();
  env.settings().model_gateways["model-a"] = gw;
  gw.headers = {{.name = "X-Team", .value = "b", .secret_name = {}}};
  env.settings().model_gateways["model-b"] = gw;
  validate_settings(env);
  env.start();
  http_client c(env.port());
  auto a = c.post_json("/v1/jobs", job_for("model-a", "a"));
  auto b = c.post_json("/v1/jobs", job_for("model-b", "b"));
  ASSERT_EQ(a.status, 202) << a.body;
  ASSERT_EQ(b.status, 202) << b.body;
  EXPECT_EQ(env.wait_terminal(c, a.json()["id"])["status"], "completed");
  EXPECT_EQ(env.wait_terminal(c, b.json()["id"])["status"], "completed");
  EXPECT_EQ(env.gateway().peak_in_flight(), 2);
  auto received = env.gateway().received();
  ASSERT_EQ(received.size(), 2u);
  int with_team = 0;
  for (auto& r : received) with_team += r.headers.count("x-team") != 0 ? 1 : 0;
  EXPECT_EQ(with_team, 1);
}

}  // namespace SY_UNITY_ID
}  // namespace sy::test
