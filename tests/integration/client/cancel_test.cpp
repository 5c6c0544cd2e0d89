// POST /v1/jobs/{id}/cancel against the real engine.

#include <gtest/gtest.h>

#include "tests/integration/engine/engine_env.hpp"
#include "tests/support/wait.hpp"

namespace sy::test {
namespace SY_UNITY_ID {

using nlohmann::json;

http_reply cancel(http_client& c, const std::string& id) {
  return c.request("POST", "/v1/jobs/" + id + "/cancel");
}

TEST(cancel, a_queued_job_is_cancelled_and_never_reaches_the_gateway) {
  engine_env env;
  env.settings().global_concurrency = 1;
  env.settings().per_model_concurrency = 1;
  env.start();
  http_client c(env.port());
  std::string front = env.submit(c, "front", {{"key", "front"}, {"latency_ms", 1500}}).json()["id"];
  ASSERT_TRUE(wait_for([&] { return env.gateway().requests() == 1; }));
  auto queued = env.submit(c, "queued", {{"key", "victim"}});
  ASSERT_EQ(queued.status, 202);
  std::string id = queued.json()["id"];
  auto r = cancel(c, id);
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(r.json()["id"], id);
  EXPECT_EQ(r.json()["status"], "cancelled");
  EXPECT_FALSE(r.json()["finished_at"].is_null());
  // A job submitted after the cancelled one runs; the cancelled one, ahead of it, never does.
  std::string after = env.submit(c, "after", {{"key", "after"}}).json()["id"];
  EXPECT_EQ(env.wait_terminal(c, front)["status"], "completed");
  EXPECT_EQ(env.wait_terminal(c, after)["status"], "completed");
  auto by_key = env.gateway().requests_by_key();
  EXPECT_EQ(by_key.count("victim"), 0u);
  EXPECT_EQ(by_key["after"], 1);
  EXPECT_EQ(c.get("/v1/jobs/" + id).json()["status"], "cancelled");
}

TEST(cancel, a_running_job_has_its_request_aborted) {
  engine_env env;
  env.settings().gateway->request_timeout_ms = 60'000;
  env.start();
  http_client c(env.port());
  std::string id = env.submit(c, "long", {{"latency_ms", 30'000}}).json()["id"];
  ASSERT_TRUE(wait_for([&] { return env.gateway().requests() == 1; }));
  ASSERT_TRUE(wait_for([&] { return c.get("/v1/jobs/" + id).json()["status"] == "in_progress"; }));
  auto r = cancel(c, id);
  ASSERT_EQ(r.status, 200) << r.body;
  auto status = r.json()["status"];
  EXPECT_TRUE(status == "cancelling" || status == "cancelled") << status;
  // Far sooner than the gateway's 30 s answer: the in-flight request was aborted.
  auto done = env.wait_terminal(c, id, std::chrono::seconds(10));
  EXPECT_EQ(done["status"], "cancelled") << done.dump();
  EXPECT_TRUE(done["result"].is_null());
  EXPECT_EQ(env.gateway().requests(), 1);  // and not retried
  // Cancelling again is harmless.
  auto again = cancel(c, id);
  ASSERT_EQ(again.status, 200) << again.body;
  EXPECT_EQ(again.json()["status"], "cancelled");
}

TEST(cancel, a_finished_job_is_409_and_an_unknown_one_404) {
  engine_env env;
  env.start();
  http_client c(env.port());
  std::string id = env.submit(c, "done").json()["id"];
  ASSERT_EQ(env.wait_terminal(c, id)["status"], "completed");
  auto r = cancel(c, id);
  ASSERT_EQ(r.status, 409) << r.body;
  EXPECT_EQ(r.json()["error"]["code"], "job_not_cancellable");
  EXPECT_EQ(c.get("/v1/jobs/" + id).json()["status"], "completed");
  auto missing = cancel(c, "job_01NOSUCHJOB0000000000000");
  EXPECT_EQ(missing.status, 404);
  EXPECT_EQ(missing.json()["error"]["code"], "job_not_found");
  EXPECT_EQ(c.request("GET", "/v1/jobs/" + id + "/cancel").status, 405);
}

}  // namespace SY_UNITY_ID
}  // namespace sy::test
