#include "api/job_json.hpp"

#include <gtest/gtest.h>

namespace sy::api {
namespace SY_UNITY_ID {

using nlohmann::json;

storage::job_record queued_job() {
  storage::job_record job;
  job.id = "job_01HZX";
  job.tenant = "t";
  job.endpoint = "/v1/chat/completions";
  job.model = "m1";
  job.metadata = {{"k", "v"}};
  job.max_attempts = 3;
  job.created_at_ms = 1'700'000'000'123;
  return job;
}

TEST(job_json, queued_job_has_nulls) {
  auto j = json::parse(job_json(queued_job()));
  EXPECT_EQ(j["id"], "job_01HZX");
  EXPECT_EQ(j["object"], "job");
  EXPECT_EQ(j["status"], "queued");
  EXPECT_EQ(j["model"], "m1");
  EXPECT_EQ(j["created_at"], 1'700'000'000);
  EXPECT_TRUE(j["started_at"].is_null());
  EXPECT_TRUE(j["completed_at"].is_null());
  EXPECT_TRUE(j["finished_at"].is_null());
  EXPECT_TRUE(j["result"].is_null());
  EXPECT_TRUE(j["error"].is_null());
  EXPECT_EQ(j["metadata"], json({{"k", "v"}}));
  EXPECT_FALSE(j.contains("tenant"));
  EXPECT_TRUE(j["webhook_url"].is_null());
  EXPECT_TRUE(j["expires_at"].is_null());
}

TEST(job_json, webhook_and_deadline_and_cancelling) {
  auto job = queued_job();
  job.status = storage::job_status::cancelling;
  job.webhook_url = "https://example.com/hook";
  job.deadline_ms = 1'700'000'600'500;
  auto j = json::parse(job_json(job));
  EXPECT_EQ(j["status"], "cancelling");
  EXPECT_EQ(j["webhook_url"], "https://example.com/hook");
  EXPECT_EQ(j["expires_at"], 1'700'000'600);
  EXPECT_TRUE(j["finished_at"].is_null());  // cancelling is not terminal
}

TEST(job_json, completed_job_has_parsed_result) {
  auto job = queued_job();
  job.status = storage::job_status::completed;
  job.attempts = 1;
  job.started_at_ms = 1'700'000'001'000;
  job.finished_at_ms = 1'700'000'002'999;
  job.result = storage::gateway_result{200, R"({"choices":[]})"};
  auto j = json::parse(job_json(job));
  EXPECT_EQ(j["status"], "completed");
  EXPECT_EQ(j["started_at"], 1'700'000'001);
  EXPECT_EQ(j["completed_at"], 1'700'000'002);
  EXPECT_EQ(j["finished_at"], 1'700'000'002);
  EXPECT_EQ(j["result"]["status_code"], 200);
  EXPECT_EQ(j["result"]["body"], json({{"choices", json::array()}}));
}

TEST(job_json, failed_job_keeps_text_body_and_error) {
  auto job = queued_job();
  job.status = storage::job_status::failed;
  job.finished_at_ms = 1'700'000'005'000;
  job.result = storage::gateway_result{400, "bad request, not json"};
  job.error = storage::job_error{"gateway_error", "the gateway said 400"};
  auto j = json::parse(job_json(job));
  EXPECT_EQ(j["result"]["body"], "bad request, not json");
  EXPECT_EQ(j["error"], json({{"code", "gateway_error"}, {"message", "the gateway said 400"}}));
  EXPECT_EQ(j["finished_at"], 1'700'000'005);
}

}  // namespace SY_UNITY_ID
}  // namespace sy::api
