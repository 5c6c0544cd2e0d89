// POST /v1/chat/completions, /v1/embeddings, /v1/completions: a job that the request waits for.

#include <gtest/gtest.h>

#include "tests/integration/engine/engine_env.hpp"

namespace sy::test {
namespace SY_UNITY_ID {

using nlohmann::json;

json chat(const std::string& content, json fake = nullptr) {
  json body = {{"model", "test-model"}, {"messages", {{{"role", "user"}, {"content", content}}}}};
  if (!fake.is_null()) body["fake"] = fake;
  return body;
}

TEST(sync_call, chat_completion_returns_the_gateway_body_and_the_job_id) {
  engine_env env;
  env.start();
  http_client c(env.port());
  auto r = c.post_json("/v1/chat/completions", chat("sync hello"));
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(r.headers["content-type"], "application/json");
  std::string id = r.headers["x-switchyard-job-id"];
  ASSERT_EQ(id.rfind("job_", 0), 0u) << id;
  auto j = r.json();
  EXPECT_EQ(j["object"], "chat.completion");
  EXPECT_NE(r.body.find("sync hello"), std::string::npos);
  // Exactly the bytes the gateway sent, which the job recorded.
  auto job = c.get("/v1/jobs/" + id).json();
  EXPECT_EQ(job["status"], "completed");
  EXPECT_EQ(job["endpoint"], "/v1/chat/completions");
  EXPECT_EQ(job["result"]["body"], j);
  EXPECT_EQ(env.gateway().requests(), 1);
}

TEST(sync_call, embeddings_and_completions_reach_their_endpoint) {
  engine_env env;
  env.start();
  http_client c(env.port());
  auto e = c.post_json("/v1/embeddings", {{"model", "test-model"}, {"input", "vectorize me"}});
  ASSERT_EQ(e.status, 200) << e.body;
  EXPECT_EQ(e.json()["object"], "list");
  EXPECT_FALSE(e.headers["x-switchyard-job-id"].empty());
  auto t = c.post_json("/v1/completions", {{"model", "test-model"}, {"prompt", "once upon"}});
  ASSERT_EQ(t.status, 200) << t.body;
  EXPECT_EQ(t.json()["object"], "text_completion");
  auto seen = env.gateway().received();
  ASSERT_EQ(seen.size(), 2u);
  EXPECT_NE(seen[0].target.find("/v1/embeddings"), std::string::npos);
  EXPECT_NE(seen[1].target.find("/v1/completions"), std::string::npos);
}

TEST(sync_call, a_gateway_4xx_is_passed_through) {
  engine_env env;
  env.start();
  http_client c(env.port());
  auto r = c.post_json("/v1/chat/completions", chat("bad", {{"status", 400}}));
  ASSERT_EQ(r.status, 400) << r.body;
  EXPECT_NE(r.body.find("fake failure 400"), std::string::npos) << r.body;
  std::string id = r.headers["x-switchyard-job-id"];
  ASSERT_FALSE(id.empty());
  EXPECT_EQ(c.get("/v1/jobs/" + id).json()["status"], "failed");
}

TEST(sync_call, an_unreachable_gateway_is_502_gateway_unreachable) {
  engine_env env;
  env.settings().default_max_attempts = 1;
  env.start();
  http_client c(env.port());
  auto r = c.post_json("/v1/chat/completions", chat("dropped", {{"drop", true}}));
  ASSERT_EQ(r.status, 502) << r.body;
  auto e = r.json()["error"];
  EXPECT_EQ(e["code"], "gateway_unreachable");
  EXPECT_EQ(e["type"], "server_error");
  EXPECT_FALSE(e["message"].get<std::string>().empty());
  EXPECT_FALSE(r.headers["x-switchyard-job-id"].empty());
}

TEST(sync_call, times_out_with_504_naming_the_job_which_keeps_running) {
  engine_env env;
  env.settings().sync_timeout_ms = 500;
  env.start();
  http_client c(env.port());
  auto r = c.post_json("/v1/chat/completions", chat("slow", {{"latency_ms", 2000}}));
  ASSERT_EQ(r.status, 504) << r.body;
  EXPECT_EQ(r.json()["error"]["code"], "sync_timeout");
  std::string id = r.headers["x-switchyard-job-id"];
  ASSERT_FALSE(id.empty());
  EXPECT_NE(r.json()["error"]["message"].get<std::string>().find(id), std::string::npos);
  EXPECT_EQ(r.headers["location"], "/v1/jobs/" + id);
  EXPECT_EQ(env.wait_terminal(c, id)["status"], "completed");
}

TEST(sync_call, validates_like_openai) {
  engine_env env;
  env.start();
  http_client c(env.port());
  auto streaming =
      c.post_json("/v1/chat/completions",
                  {{"model", "test-model"}, {"stream", true}, {"messages", json::array()}});
  ASSERT_EQ(streaming.status, 400) << streaming.body;
  EXPECT_EQ(streaming.json()["error"]["code"], "streaming_unsupported");
  EXPECT_EQ(streaming.json()["error"]["param"], "stream");
  auto no_model = c.post_json("/v1/embeddings", {{"input", "x"}});
  ASSERT_EQ(no_model.status, 400);
  EXPECT_EQ(no_model.json()["error"]["param"], "model");
  auto text = c.request("POST", "/v1/chat/completions", R"({"model":"test-model"})",
                        {{"Content-Type", "text/plain"}});
  EXPECT_EQ(text.status, 415);
  EXPECT_EQ(env.gateway().requests(), 0);
}

TEST(sync_call, idempotency_key_returns_the_same_job) {
  engine_env env;
  env.start();
  http_client c(env.port());
  std::map<std::string, std::string> key = {{"Idempotency-Key", "sync-1"}};
  auto a = c.post_json("/v1/chat/completions", chat("once"), key);
  auto b = c.post_json("/v1/chat/completions", chat("once"), key);
  ASSERT_EQ(a.status, 200) << a.body;
  ASSERT_EQ(b.status, 200) << b.body;
  EXPECT_EQ(a.headers["x-switchyard-job-id"], b.headers["x-switchyard-job-id"]);
  EXPECT_EQ(a.body, b.body);
  EXPECT_EQ(env.gateway().requests(), 1);
  auto other = c.post_json("/v1/chat/completions", chat("different"), key);
  EXPECT_EQ(other.status, 422);
}

}  // namespace SY_UNITY_ID
}  // namespace sy::test
