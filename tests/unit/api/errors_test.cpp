#include "api/errors.hpp"

#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <regex>
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
  auto res =
      error_response(make_error(errc::missing_model, "model please", "body.model"), 11, true);
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
  auto j = json::parse(error_response(make_error(errc::job_not_found, ""), 11, false).body());
  EXPECT_TRUE(j["error"]["param"].is_null());
  EXPECT_EQ(j["error"]["message"], "No such job.");
}

TEST(error_response, unknown_code_becomes_internal_error) {
  auto res = error_response(make_error(errc::storage_corrupt, "secret detail", "x"), 11, false);
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

TEST(result_error_table, codes_are_unique_and_docs_list_every_code) {
  std::ifstream in(std::string(SY_SOURCE_DIR) + "/docs/api.md");
  std::string docs((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::set<std::string_view> codes;
  for (const auto& row : all_result_errors()) {
    EXPECT_TRUE(codes.insert(row.code).second) << row.code;
    const std::string line = "| `" + std::string(row.code) + "` | " + std::string(row.where) + " |";
    EXPECT_NE(docs.find(line), std::string::npos) << "docs/api.md lacks: " << line;
  }
}

/// Every code literal of `pattern`'s first group in the sources under `dirs`, with its file.
std::multimap<std::string, std::string> codes_in(const std::vector<std::string>& dirs,
                                                 const std::regex& pattern) {
  std::multimap<std::string, std::string> found;
  for (const auto& dir : dirs) {
    for (const auto& entry :
         std::filesystem::recursive_directory_iterator(std::string(SY_SOURCE_DIR) + "/" + dir)) {
      const auto ext = entry.path().extension();
      if (ext != ".cpp" && ext != ".hpp") continue;
      std::ifstream f(entry.path());
      std::string text((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
      for (std::sregex_iterator it(text.begin(), text.end(), pattern), end; it != end; ++it)
        found.emplace((*it)[1].str(), entry.path().filename().string());
    }
  }
  return found;
}

// The catalogue is complete: every error code the API and the engine build is in the HTTP table
// (an unlisted one would reach a client as internal_error) or named below as one that never
// reaches a client; every code written into a job or a batch is in the result table.
TEST(error_catalogue, every_code_the_sources_build_is_listed) {
  const std::set<std::string> never_answered = {
      "nats_unavailable",  // the intake's fetch loop: logged and retried, never replied
      "listen_failed",     // startup: the HTTP listener could not bind (exit with a message)
      "invalid_listen",    // startup: a malformed listen address
      "storage_error",     // startup: the batch directories could not be made
      "webhook_secret",    // startup: the webhook secret file is unusable
  };
  std::set<std::string_view> http;
  for (const auto& row : all_errors()) http.insert(row.code);
  const std::regex built(R"re(make_error\(\s*"([a-z_]+)")re");
  for (const auto& [code, file] : codes_in({"api", "actors"}, built))
    EXPECT_TRUE(http.count(code) || never_answered.count(code))
        << file << " builds error code '" << code << "', which api/errors.cpp does not list";

  std::set<std::string_view> results;
  for (const auto& row : all_result_errors()) results.insert(row.code);
  const std::regex written(
      R"re((?:make_line_error\(\s*line_no_?,|line_error\{|attempt_end::(?:rejected|retry),|)re"
      R"re(job_error\{|stop_batch_op op\{id,|batch_error\{|error_line\(\w+,\s*[\w>.-]+,)\s*"([a-z_]+)")re");
  const auto found = codes_in({"api", "actors", "runtime", "storage"}, written);
  EXPECT_GT(found.size(), 10u);  // the pattern still matches how the sources write codes
  for (const auto& [code, file] : found)
    EXPECT_TRUE(results.count(code))
        << file << " writes code '" << code << "' into a job or batch; the result table lacks it";
}

}  // namespace
}  // namespace sy::api
