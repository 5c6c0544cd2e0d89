#include "api/detail/sync.hpp"

#include <gtest/gtest.h>

namespace sy::api::detail {
namespace SY_UNITY_ID {

namespace http = boost::beast::http;
using nlohmann::json;
using storage::job_status;

request make_req() {
  request req{http::verb::post, "/v1/chat/completions", 11};
  req.keep_alive(true);
  return req;
}

storage::job_record job_in(job_status s) {
  storage::job_record job;
  job.id = "job_01SYNC";
  job.status = s;
  return job;
}

TEST(sync_submission, builds_a_job_from_the_openai_request) {
  json body = {{"model", "m1"}, {"messages", json::array()}, {"stream", false}};
  auto s = sync_submission("/v1/chat/completions", body, "t", "k1");
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(s->endpoint, "/v1/chat/completions");
  EXPECT_EQ(s->body, body.dump());
  EXPECT_EQ(s->model, "m1");
  EXPECT_EQ(s->tenant, "t");
  EXPECT_EQ(s->idempotency_key, "k1");
  EXPECT_EQ(s->max_attempts, 0);
}

TEST(sync_submission, validates_model_and_stream) {
  auto no_model = sync_submission("/v1/embeddings", json{{"input", "x"}}, "t", "");
  ASSERT_FALSE(no_model.ok());
  EXPECT_EQ(no_model.error().code, "missing_model");
  EXPECT_EQ(no_model.error().param, "model");
  auto stream = sync_submission("/v1/completions", json{{"model", "m"}, {"stream", true}}, "t", "");
  ASSERT_FALSE(stream.ok());
  EXPECT_EQ(stream.error().code, "streaming_unsupported");
  EXPECT_EQ(stream.error().param, "stream");
  EXPECT_EQ(sync_submission("/v1/completions", json::array(), "t", "").error().code,
            "invalid_request");
}

TEST(sync_response, completed_passes_the_gateway_answer_through) {
  auto job = job_in(job_status::completed);
  job.result = storage::gateway_result{200, R"({"id":"chatcmpl-1"} )"};
  auto res = sync_response(job, sync_cut::none, make_req());
  EXPECT_EQ(res.result_int(), 200u);
  EXPECT_EQ(res.body(), R"({"id":"chatcmpl-1"} )");  // the bytes, not a re-rendering
  EXPECT_EQ(res[http::field::content_type], "application/json");
  EXPECT_EQ(res["X-Switchyard-Job-Id"], "job_01SYNC");
}

TEST(sync_response, failed_with_an_answer_passes_its_status_through) {
  auto job = job_in(job_status::failed);
  job.result = storage::gateway_result{422, R"({"error":{"message":"bad"}})"};
  auto res = sync_response(job, sync_cut::none, make_req());
  EXPECT_EQ(res.result_int(), 422u);
  EXPECT_EQ(res.body(), R"({"error":{"message":"bad"}})");
}

TEST(sync_response, failed_without_an_answer_is_502) {
  auto job = job_in(job_status::failed);
  job.error = storage::job_error{"gateway_unreachable", "connection refused"};
  auto res = sync_response(job, sync_cut::none, make_req());
  EXPECT_EQ(res.result_int(), 502u);
  auto e = json::parse(res.body())["error"];
  EXPECT_EQ(e["code"], "gateway_unreachable");
  EXPECT_NE(e["message"].get<std::string>().find("connection refused"), std::string::npos);
  EXPECT_EQ(res["X-Switchyard-Job-Id"], "job_01SYNC");
}

TEST(sync_response, expired_cancelled_and_timeout) {
  auto expired = sync_response(job_in(job_status::expired), sync_cut::none, make_req());
  EXPECT_EQ(expired.result_int(), 504u);
  EXPECT_EQ(json::parse(expired.body())["error"]["code"], "job_expired");
  auto cancelled = sync_response(job_in(job_status::cancelled), sync_cut::none, make_req());
  EXPECT_EQ(cancelled.result_int(), 409u);
  EXPECT_EQ(json::parse(cancelled.body())["error"]["code"], "job_cancelled");
  auto late = sync_response(job_in(job_status::in_progress), sync_cut::timeout, make_req());
  EXPECT_EQ(late.result_int(), 504u);
  auto e = json::parse(late.body())["error"];
  EXPECT_EQ(e["code"], "sync_timeout");
  EXPECT_NE(e["message"].get<std::string>().find("job_01SYNC"), std::string::npos);
  EXPECT_EQ(late[http::field::location], "/v1/jobs/job_01SYNC");
  EXPECT_EQ(late["X-Switchyard-Job-Id"], "job_01SYNC");
}

}  // namespace SY_UNITY_ID
}  // namespace sy::api::detail
