// End to end through the real engine: HTTP submit → LMDB → outbox → JetStream → dispatcher →
// fake gateway → fenced result → GET.

#include <gtest/gtest.h>

#include <set>

#include "config/sha256.hpp"
#include "tests/integration/engine/engine_env.hpp"
#include "tests/support/test_certs.hpp"
#include "tests/support/wait.hpp"

namespace sy::test {
namespace SY_UNITY_ID {

TEST(jobs, submit_then_read_the_completed_result) {
  engine_env env;
  env.start();
  http_client c(env.port());
  auto r = env.submit(c, "hello there");
  ASSERT_EQ(r.status, 202) << r.body;
  auto j = r.json();
  std::string id = j["id"];
  EXPECT_EQ(id.rfind("job_", 0), 0u);
  EXPECT_EQ(j["object"], "job");
  EXPECT_EQ(j["status"], "queued");
  EXPECT_EQ(r.headers["location"], "/v1/jobs/" + id);
  EXPECT_FALSE(r.headers["retry-after"].empty());

  auto done = env.wait_terminal(c, id);
  ASSERT_EQ(done["status"], "completed") << done.dump();
  EXPECT_EQ(done["attempts"], 1);
  EXPECT_EQ(done["result"]["status_code"], 200);
  // The fake echoes the last user message: the gateway really saw this job's body.
  EXPECT_NE(done["result"]["body"].dump().find("hello there"), std::string::npos);
  EXPECT_EQ(env.gateway().requests(), 1);
}

TEST(jobs, many_jobs_all_complete_exactly_once) {
  engine_env env;
  env.start();
  http_client c(env.port());
  std::vector<std::string> ids;
  for (int i = 0; i < 60; ++i) {
    auto r = env.submit(c, "n" + std::to_string(i), {{"key", "k" + std::to_string(i)}});
    ASSERT_EQ(r.status, 202) << r.body;
    ids.push_back(r.json()["id"]);
  }
  for (const auto& id : ids) ASSERT_EQ(env.wait_terminal(c, id)["status"], "completed");
  auto by_key = env.gateway().requests_by_key();
  EXPECT_EQ(by_key.size(), 60u);
  for (const auto& [k, n] : by_key) EXPECT_EQ(n, 1) << k;
}

TEST(jobs, per_model_concurrency_is_never_exceeded) {
  engine_env env;
  env.settings().per_model_concurrency = 3;
  env.start();
  env.gateway().set_latency_ms(100);
  http_client c(env.port());
  std::vector<std::string> ids;
  for (int i = 0; i < 12; ++i) ids.push_back(env.submit(c, "x").json()["id"]);
  for (const auto& id : ids) ASSERT_EQ(env.wait_terminal(c, id)["status"], "completed");
  EXPECT_LE(env.gateway().peak_in_flight(), 3);
  EXPECT_GE(env.gateway().peak_in_flight(), 2);  // and it does run work in parallel
}

TEST(jobs, global_concurrency_holds_across_models) {
  engine_env env;
  config::gateway_settings gw = *env.settings().gateway;
  env.settings().gateway.reset();
  env.settings().model_gateways = {{"m-a", gw}, {"m-b", gw}};
  env.settings().per_model_concurrency = 4;
  env.settings().global_concurrency = 4;
  env.start();
  env.gateway().set_latency_ms(100);
  http_client c(env.port());
  std::vector<std::string> ids;
  for (int i = 0; i < 16; ++i) {
    nlohmann::json req = {
        {"endpoint", "/v1/chat/completions"},
        {"body", {{"model", i % 2 ? "m-a" : "m-b"}, {"messages", nlohmann::json::array()}}}};
    auto r = c.post_json("/v1/jobs", req);
    ASSERT_EQ(r.status, 202) << r.body;
    ids.push_back(r.json()["id"]);
  }
  for (const auto& id : ids) ASSERT_EQ(env.wait_terminal(c, id)["status"], "completed");
  EXPECT_LE(env.gateway().peak_in_flight(), 4);
  // Both models ran under the shared budget.
  std::set<std::string> models;
  for (const auto& r : env.gateway().received())
    models.insert(nlohmann::json::parse(r.body).value("model", ""));
  EXPECT_EQ(models.size(), 2u);
}

TEST(jobs, gateway_4xx_is_final_with_its_answer_recorded) {
  engine_env env;
  env.start();
  http_client c(env.port());
  auto r = env.submit(c, "bad", {{"status", 400}});
  auto done = env.wait_terminal(c, r.json()["id"]);
  ASSERT_EQ(done["status"], "failed") << done.dump();
  EXPECT_EQ(done["result"]["status_code"], 400);
  EXPECT_EQ(done["error"]["code"], "gateway_rejected");
  EXPECT_EQ(done["attempts"], 1);
  EXPECT_EQ(env.gateway().requests(), 1);
}

TEST(jobs, retryable_failures_requeue_until_success) {
  engine_env env;
  env.start();
  http_client c(env.port());
  auto r = env.submit(c, "flaky", {{"key", "flaky"}, {"fail_times", 2}, {"status", 503}});
  auto done = env.wait_terminal(c, r.json()["id"]);
  ASSERT_EQ(done["status"], "completed") << done.dump();
  EXPECT_EQ(done["attempts"], 3);
  EXPECT_EQ(env.gateway().requests_by_key()["flaky"], 3);
}

TEST(jobs, max_attempts_exhausted_fails_with_the_last_error) {
  engine_env env;
  env.start();
  http_client c(env.port());
  auto r = env.submit(c, "down", {{"status", 500}}, {}, {{"max_attempts", 2}});
  auto done = env.wait_terminal(c, r.json()["id"]);
  ASSERT_EQ(done["status"], "failed") << done.dump();
  EXPECT_EQ(done["attempts"], 2);
  EXPECT_EQ(done["error"]["code"], "gateway_error");
  EXPECT_NE(done["error"]["message"].get<std::string>().find("500"), std::string::npos);
}

TEST(jobs, a_job_runs_against_an_https_gateway_and_an_untrusted_one_fails_saying_why) {
  engine_env env;
  temp_dir dir;
  std::string error;
  const auto pki = make_test_pki(dir.sub("pki"), error);
  ASSERT_EQ(error, "");
  fakes::fake_gateway_options o;
  o.tls_cert_file = pki.server_cert;
  o.tls_key_file = pki.server_key;
  fakes::fake_gateway tls_gateway(o);
  ASSERT_EQ(tls_gateway.start(), "");
  config::gateway_settings trusted = *env.settings().gateway;
  trusted.url = tls_gateway.url_for_host("localhost");
  trusted.tls_ca_cert_file = pki.ca_cert;
  config::gateway_settings untrusted = trusted;
  untrusted.tls_ca_cert_file = pki.other_ca_cert;
  untrusted.max_retries = 0;
  env.settings().gateway.reset();
  env.settings().model_gateways["test-model"] = trusted;
  env.settings().model_gateways["elsewhere"] = untrusted;
  env.start();
  http_client c(env.port());
  auto ok = env.submit(c, "over tls");
  ASSERT_EQ(ok.status, 202) << ok.body;
  auto done = env.wait_terminal(c, ok.json()["id"]);
  EXPECT_EQ(done["status"], "completed") << done.dump();
  EXPECT_EQ(tls_gateway.requests(), 1);

  const nlohmann::json body = {{"model", "elsewhere"},
                               {"messages", {{{"role", "user"}, {"content", "x"}}}}};
  auto refused = c.post_json(
      "/v1/jobs", {{"endpoint", "/v1/chat/completions"}, {"body", body}, {"max_attempts", 1}});
  ASSERT_EQ(refused.status, 202) << refused.body;
  auto failed = env.wait_terminal(c, refused.json()["id"]);
  EXPECT_EQ(failed["status"], "failed") << failed.dump();
  EXPECT_NE(failed.dump().find("certificate verify failed"), std::string::npos) << failed.dump();
  EXPECT_EQ(tls_gateway.requests(), 1);
}

// While this store's claim on the streams is not held (runtime/store_registration.hpp), the
// engine says it is not ready and takes no task; it still accepts submissions.
TEST(jobs, without_its_stores_claim_on_the_streams_the_engine_is_not_ready_and_runs_nothing) {
  engine_env env;
  env.start();
  http_client c(env.port());
  EXPECT_EQ(c.get("/readyz").status, 200);
  env.js().set_consuming(false);
  EXPECT_EQ(c.get("/readyz").status, 503);
  auto r = env.submit(c, "held back");
  ASSERT_EQ(r.status, 202) << r.body;
  EXPECT_FALSE(wait_for([&] { return env.gateway().requests() > 0; }, std::chrono::seconds(1)))
      << "a task was taken without the claim";
  env.js().set_consuming(true);
  EXPECT_EQ(c.get("/readyz").status, 200);
  EXPECT_EQ(env.wait_terminal(c, r.json()["id"])["status"], "completed");
  EXPECT_EQ(env.gateway().requests(), 1);
}

TEST(jobs, unknown_model_is_refused_and_nothing_is_stored) {
  engine_env env;
  config::gateway_settings gw = *env.settings().gateway;
  env.settings().gateway.reset();
  env.settings().model_gateways["only-this"] = gw;
  env.start();
  http_client c(env.port());
  auto r = env.submit(c, "x");
  EXPECT_EQ(r.status, 404) << r.body;
  EXPECT_EQ(r.json()["error"]["code"], "model_not_found");
  auto txn = env.store().begin_read();
  int jobs = 0;
  txn.scan(storage::db::jobs, "", [&](auto, auto) { return ++jobs, true; });
  EXPECT_EQ(jobs, 0);
}

TEST(jobs, another_tenants_job_is_not_found) {
  engine_env env;
  env.settings().api_keys = {{config::sha256_hex("key-a"), "a"},
                             {config::sha256_hex("key-b"), "b"}};
  env.start();
  http_client c(env.port());
  auto r = env.submit(c, "mine", nullptr, {{"Authorization", "Bearer key-a"}});
  ASSERT_EQ(r.status, 202) << r.body;
  std::string id = r.json()["id"];
  EXPECT_EQ(c.get("/v1/jobs/" + id, {{"Authorization", "Bearer key-a"}}).status, 200);
  auto other = c.get("/v1/jobs/" + id, {{"Authorization", "Bearer key-b"}});
  EXPECT_EQ(other.status, 404);
  EXPECT_EQ(other.json()["error"]["code"], "job_not_found");
  EXPECT_EQ(c.get("/v1/jobs/" + id).status, 401);
  EXPECT_EQ(env.submit(c, "x", nullptr, {{"Authorization", "Bearer nope"}}).status, 401);
}

}  // namespace SY_UNITY_ID
}  // namespace sy::test
