// Prefer: wait on POST /v1/jobs, and polling by re-submission (same Idempotency-Key and body).

#include <gtest/gtest.h>

#include "tests/integration/engine/engine_env.hpp"
#include "tests/support/wait.hpp"

namespace sy::test {
namespace SY_UNITY_ID {

using nlohmann::json;

TEST(prefer_wait, answers_200_with_the_result_when_the_job_finishes_in_time) {
  engine_env env;
  env.start();
  http_client c(env.port());
  auto r =
      env.submit(c, "quick one", json{{"latency_ms", 50}}, {{"Prefer", "respond-async, wait=10"}});
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(r.headers["preference-applied"], "wait=10");
  auto j = r.json();
  EXPECT_EQ(j["status"], "completed");
  EXPECT_EQ(j["result"]["status_code"], 200);
  EXPECT_NE(j["result"]["body"].dump().find("quick one"), std::string::npos);
  EXPECT_EQ(r.headers["location"], "/v1/jobs/" + j["id"].get<std::string>());
  EXPECT_TRUE(r.headers["retry-after"].empty());
}

TEST(prefer_wait, answers_202_when_the_job_is_slower_than_the_wait) {
  engine_env env;
  env.start();
  http_client c(env.port());
  auto r = env.submit(c, "slow one", json{{"latency_ms", 4000}}, {{"Prefer", "wait=1"}});
  ASSERT_EQ(r.status, 202) << r.body;
  EXPECT_EQ(r.headers["preference-applied"], "wait=1");
  EXPECT_EQ(r.headers["retry-after"], "1");
  auto j = r.json();
  EXPECT_TRUE(j["status"] == "queued" || j["status"] == "in_progress") << j.dump();
  // The wait did not cancel anything: the job still completes.
  EXPECT_EQ(env.wait_terminal(c, j["id"])["status"], "completed");
}

TEST(prefer_wait, is_capped_by_max_wait_ms_and_bad_values_are_ignored) {
  engine_env env;
  env.settings().max_wait_ms = 1'000;
  env.start();
  http_client c(env.port());
  auto capped = env.submit(c, "capped", json{{"latency_ms", 4000}}, {{"Prefer", "wait=30"}});
  ASSERT_EQ(capped.status, 202) << capped.body;
  EXPECT_EQ(capped.headers["preference-applied"], "wait=1");
  auto bad = env.submit(c, "bad", json{{"latency_ms", 4000}}, {{"Prefer", "wait=soon"}});
  ASSERT_EQ(bad.status, 202) << bad.body;
  EXPECT_EQ(bad.headers.count("preference-applied"), 0u);
}

TEST(prefer_wait, applies_to_an_idempotent_resubmission) {
  engine_env env;
  env.start();
  http_client c(env.port());
  json fake = {{"latency_ms", 1500}};
  auto first = env.submit(c, "same", fake, {{"Idempotency-Key", "wait-key"}});
  ASSERT_EQ(first.status, 202) << first.body;
  auto again =
      env.submit(c, "same", fake, {{"Idempotency-Key", "wait-key"}, {"Prefer", "wait=20"}});
  ASSERT_EQ(again.status, 200) << again.body;
  EXPECT_EQ(again.json()["id"], first.json()["id"]);
  EXPECT_EQ(again.json()["status"], "completed");
  EXPECT_EQ(env.gateway().requests(), 1);
}

TEST(polling, resubmission_answers_202_while_running_then_200_with_the_result) {
  engine_env env;
  env.start();
  http_client c(env.port());
  json fake = {{"latency_ms", 1500}};
  std::map<std::string, std::string> key = {{"Idempotency-Key", "poll-1"}};
  auto first = env.submit(c, "poll me", fake, key);
  ASSERT_EQ(first.status, 202) << first.body;
  auto second = env.submit(c, "poll me", fake, key);
  ASSERT_EQ(second.status, 202) << second.body;
  EXPECT_EQ(second.json()["id"], first.json()["id"]);
  EXPECT_EQ(second.headers["retry-after"], "1");
  http_reply last;
  ASSERT_TRUE(wait_for(
      [&] {
        last = env.submit(c, "poll me", fake, key);
        return last.status != 202;
      },
      std::chrono::seconds(20)));
  ASSERT_EQ(last.status, 200) << last.body;
  auto j = last.json();
  EXPECT_EQ(j["id"], first.json()["id"]);
  EXPECT_EQ(j["status"], "completed");
  EXPECT_NE(j["result"]["body"].dump().find("poll me"), std::string::npos);
  EXPECT_EQ(env.gateway().requests(), 1);  // polling never ran the job again
}

}  // namespace SY_UNITY_ID
}  // namespace sy::test
