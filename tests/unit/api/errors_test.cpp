#include "api/errors.hpp"

#include <fstream>
#include <iterator>
#include <set>
#include <string>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

namespace sy::api {
namespace {

using nlohmann::json;
namespace http = boost::beast::http;

TEST(error_table, codes_are_unique_and_complete) {
  std::set<std::string_view> codes;
  for (const auto& row : all_errors()) {
    EXPECT_TRUE(codes.insert(row.code).second) << row.code;
    EXPECT_FALSE(row.default_message.empty()) << row.code;
    EXPECT_GE(row.status, 400u);
  }
  for (const char* code :
       {"invalid_json", "invalid_endpoint", "missing_model", "streaming_unsupported",
        "invalid_metadata", "invalid_max_attempts", "unknown_parameter", "unsupported_media_type",
        "body_too_large", "not_found", "method_not_allowed", "job_not_found",
        "idempotency_conflict", "invalid_api_key", "missing_api_key", "model_not_found",
        "storage_unavailable", "shutting_down", "internal_error"})
    EXPECT_EQ(lookup_error(code).code, code);
}

TEST(error_table, statuses_and_types) {
  EXPECT_EQ(lookup_error("invalid_json").status, 400u);
  EXPECT_EQ(lookup_error("unsupported_media_type").status, 415u);
  EXPECT_EQ(lookup_error("body_too_large").status, 413u);
  EXPECT_EQ(lookup_error("method_not_allowed").status, 405u);
  EXPECT_EQ(lookup_error("idempotency_conflict").status, 422u);
  EXPECT_EQ(lookup_error("model_not_found").status, 404u);
  EXPECT_EQ(lookup_error("invalid_api_key").type, "authentication_error");
  EXPECT_EQ(lookup_error("storage_unavailable").status, 503u);
  EXPECT_EQ(lookup_error("storage_unavailable").type, "server_error");
}

TEST(error_response, renders_the_openai_envelope) {
  auto res = error_response(make_error("missing_model", "model please", "body.model"), 11, true);
  EXPECT_EQ(res.result(), http::status::bad_request);
  EXPECT_EQ(res[http::field::content_type], "application/json");
  EXPECT_TRUE(res.keep_alive());
  auto j = json::parse(res.body());
  EXPECT_EQ(j, json({{"error",
                      {{"message", "model please"},
                       {"type", "invalid_request_error"},
                       {"param", "body.model"},
                       {"code", "missing_model"}}}}));
}

TEST(error_response, null_param_and_default_message) {
  auto j = json::parse(error_response(make_error("job_not_found", ""), 11, false).body());
  EXPECT_TRUE(j["error"]["param"].is_null());
  EXPECT_EQ(j["error"]["message"], "No such job.");
}

TEST(error_response, unknown_code_becomes_internal_error) {
  auto res = error_response(make_error("lmdb_corrupt", "secret detail", "x"), 11, false);
  EXPECT_EQ(res.result(), http::status::internal_server_error);
  EXPECT_FALSE(res.keep_alive());
  auto j = json::parse(res.body());
  EXPECT_EQ(j["error"]["code"], "internal_error");
  EXPECT_EQ(j["error"]["type"], "server_error");
  EXPECT_EQ(j["error"]["message"].get<std::string>().find("secret"), std::string::npos);
}

TEST(error_table, docs_list_every_code) {
  std::ifstream in(std::string(SY_SOURCE_DIR) + "/docs/api.md");
  ASSERT_TRUE(in.good());
  std::string docs((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  for (const auto& row : all_errors()) {
    std::string line = "| `" + std::string(row.code) + "` | " + std::to_string(row.status) + " | " +
                       std::string(row.type) + " |";
    EXPECT_NE(docs.find(line), std::string::npos) << "docs/api.md lacks: " << line;
  }
}

}  // namespace
}  // namespace sy::api
