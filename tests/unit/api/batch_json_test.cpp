// The OpenAI shapes of file and batch objects: nulls until reached, usage always complete.

#include "api/batch_json.hpp"

#include <gtest/gtest.h>

namespace sy::api {
namespace SY_UNITY_ID {

TEST(batch_json, a_new_batch_has_nulls_and_zero_usage) {
  storage::batch_record b;
  b.id = "batch_1";
  b.endpoint = "/v1/embeddings";
  b.input_file_id = "file-1";
  b.completion_window = "24h";
  b.created_at = 100;
  b.expires_at = 200;
  auto j = batch_to_json(b);
  EXPECT_EQ(j["object"], "batch");
  EXPECT_EQ(j["status"], "validating");
  for (const char* k :
       {"errors", "output_file_id", "error_file_id", "in_progress_at", "finalizing_at",
        "completed_at", "failed_at", "expired_at", "cancelling_at", "cancelled_at", "metadata"})
    EXPECT_TRUE(j[k].is_null()) << k;
  EXPECT_EQ(j["expires_at"], 200);
  EXPECT_EQ(j["request_counts"], (nlohmann::json{{"total", 0}, {"completed", 0}, {"failed", 0}}));
  EXPECT_EQ(j["usage"]["input_tokens_details"]["cached_tokens"], 0);
  EXPECT_EQ(j["usage"]["output_tokens_details"]["reasoning_tokens"], 0);
  EXPECT_EQ(j["usage"]["total_tokens"], 0);
}

TEST(batch_json, errors_usage_and_files_render) {
  storage::batch_record b;
  b.id = "batch_1";
  b.status = storage::batch_status::failed;
  b.errors = {{"invalid_url", "Line 2: bad", "url", 2}, {"empty_file", "empty", "", 0}};
  b.usage = storage::token_usage{5, 7, 12, 1, 2};
  b.metadata = {{"k", "v"}};
  b.output_file_id = "file-o";
  auto j = batch_to_json(b);
  EXPECT_EQ(j["errors"]["object"], "list");
  EXPECT_EQ(j["errors"]["data"][0]["line"], 2);
  EXPECT_EQ(j["errors"]["data"][0]["param"], "url");
  EXPECT_TRUE(j["errors"]["data"][1]["line"].is_null());
  EXPECT_TRUE(j["errors"]["data"][1]["param"].is_null());
  EXPECT_EQ(j["usage"], nlohmann::json::parse(R"({"input_tokens":5,"input_tokens_details":
      {"cached_tokens":1},"output_tokens":7,"output_tokens_details":{"reasoning_tokens":2},
      "total_tokens":12})"));
  EXPECT_EQ(j["metadata"]["k"], "v");
  EXPECT_EQ(j["output_file_id"], "file-o");
  storage::file_record f{"file-1", "t", "in.jsonl", "batch", 10, 100, 0};
  auto fj = file_to_json(f);
  EXPECT_EQ(fj["object"], "file");
  EXPECT_TRUE(fj["expires_at"].is_null());
  EXPECT_EQ(fj["status"], "processed");
  f.expires_at = 3700;
  EXPECT_EQ(file_to_json(f)["expires_at"], 3700);
}

}  // namespace SY_UNITY_ID
}  // namespace sy::api
