// The result line of a gateway answer: 2xx goes to the output file with the body's usage, a JSON
// body is kept as sent (minified when it spans lines), any other body becomes a JSON string.

#include "actors/batch_response.hpp"

#include <gtest/gtest.h>

#include <string>

#include <nlohmann/json.hpp>

namespace sy::actors {
namespace SY_UNITY_ID {

using json = nlohmann::json;

runtime::gateway_outcome answer(int status, std::string body, std::string request_id = "") {
  runtime::gateway_outcome out;
  out.got_response = true;
  out.status_code = status;
  out.body = std::move(body);
  out.request_id = std::move(request_id);
  return out;
}

TEST(response_line, a_2xx_json_body_is_spliced_in_as_sent) {
  auto line = response_line(7, "batch_req_1", "req-1", answer(200, R"({"b": 1,"a":[2]})", "gw-9"));
  EXPECT_EQ(line.slot, 7u);
  EXPECT_TRUE(line.ok);
  EXPECT_EQ(line.text, R"({"id":"batch_req_1","custom_id":"req-1","response":{"status_code":200,)"
                       R"("request_id":"gw-9","body":{"b": 1,"a":[2]}},"error":null})");
  EXPECT_FALSE(line.usage);  // no usage in the body
}

TEST(response_line, the_request_id_is_the_lines_own_when_the_gateway_sent_none) {
  auto line = response_line(0, "batch_req_1", "c", answer(200, "{}"));
  EXPECT_EQ(json::parse(line.text)["response"]["request_id"], "batch_req_1");
}

TEST(response_line, a_body_spanning_lines_is_minified) {
  auto line = response_line(0, "id", "c", answer(200, "{\n  \"a\": 1,\r\n  \"b\": [1, 2]\n}"));
  EXPECT_EQ(line.text.find('\n'), std::string::npos);
  EXPECT_NE(line.text.find(R"("body":{"a":1,"b":[1,2]})"), std::string::npos);
}

TEST(response_line, a_body_that_is_not_json_is_kept_as_a_string) {
  auto line = response_line(0, "id", "c\"q", answer(502, "bad gateway\n"));
  EXPECT_FALSE(line.ok);
  EXPECT_FALSE(line.usage);
  auto parsed = json::parse(line.text);
  EXPECT_EQ(parsed["custom_id"], "c\"q");
  EXPECT_EQ(parsed["response"]["status_code"], 502);
  EXPECT_EQ(parsed["response"]["body"], "bad gateway\n");
  EXPECT_TRUE(parsed["error"].is_null());
}

TEST(response_line, a_non_2xx_json_body_goes_to_the_error_file_without_usage) {
  auto line = response_line(
      0, "id", "c", answer(429, R"({"error":{"message":"slow down"},"usage":{"total_tokens":5}})"));
  EXPECT_FALSE(line.ok);
  EXPECT_FALSE(line.usage);
  EXPECT_EQ(json::parse(line.text)["response"]["body"]["error"]["message"], "slow down");
}

TEST(response_line, reads_chat_completion_usage) {
  auto line = response_line(0, "id", "c", answer(200, R"({"usage":{
      "prompt_tokens":10,"completion_tokens":4,"total_tokens":14,
      "prompt_tokens_details":{"cached_tokens":3},
      "completion_tokens_details":{"reasoning_tokens":2}}})"));
  ASSERT_TRUE(line.usage);
  // input, output, total, cached, reasoning
  EXPECT_EQ(*line.usage, (storage::token_usage{10, 4, 14, 3, 2}));
}

TEST(response_line, reads_responses_api_usage_and_sums_a_missing_total) {
  auto line = response_line(0, "id", "c", answer(201, R"({"usage":{
      "input_tokens":6,"output_tokens":5,
      "input_tokens_details":{"cached_tokens":1},
      "output_tokens_details":{"reasoning_tokens":4}}})"));
  ASSERT_TRUE(line.usage);
  EXPECT_EQ(*line.usage, (storage::token_usage{6, 5, 11, 1, 4}));
}

TEST(response_line, a_usage_of_another_shape_counts_zero) {
  auto line = response_line(0, "id", "c", answer(200, R"({"usage":{"prompt_tokens":"ten"}})"));
  ASSERT_TRUE(line.usage);
  EXPECT_EQ(*line.usage, storage::token_usage{});
  EXPECT_FALSE(response_line(0, "id", "c", answer(200, R"({"usage":7})")).usage);
  EXPECT_FALSE(response_line(0, "id", "c", answer(200, "[1,2]")).usage);
}

}  // namespace SY_UNITY_ID
}  // namespace sy::actors
