#include "api/errors.hpp"

#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <regex>
#include <set>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

namespace sy::api {
namespace SY_UNITY_ID {

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

std::string read_source(const std::string& path) {
  std::ifstream in(std::string(SY_SOURCE_DIR) + "/" + path);
  EXPECT_TRUE(in.good()) << path;
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

/// The codes of the constants of config/error_codes.hpp, in their order.
std::vector<std::string> header_constants() {
  const std::string text = read_source("config/error_codes.hpp");
  const std::regex constant(R"re(inline constexpr error_code (\w+)\{"(\w+)"\};)re");
  std::vector<std::string> codes;
  for (std::sregex_iterator it(text.begin(), text.end(), constant), end; it != end; ++it) {
    EXPECT_EQ((*it)[1].str(), (*it)[2].str()) << "a constant is named after its code";
    codes.push_back((*it)[2].str());
  }
  return codes;
}

/// The codes of the table under the docs/api.md heading `heading`, in their order.
std::vector<std::string> docs_codes(const std::string& heading) {
  const std::string docs = read_source("docs/api.md");
  const auto at = docs.find("\n## " + heading + "\n");
  EXPECT_NE(at, std::string::npos) << "docs/api.md lacks the section " << heading;
  if (at == std::string::npos) return {};
  const auto next = docs.find("\n## ", at + 1);
  const std::string section = docs.substr(at, next == std::string::npos ? next : next - at);
  const std::regex row(R"re(\n\| `(\w+)` \|)re");
  std::vector<std::string> codes;
  for (std::sregex_iterator it(section.begin(), section.end(), row), end; it != end; ++it)
    codes.push_back((*it)[1].str());
  return codes;
}

template <class Rows>
std::vector<std::string> codes_of(const Rows& rows) {
  std::vector<std::string> codes;
  for (const auto& row : rows) codes.emplace_back(row.code);
  return codes;
}

// Every constant of config/error_codes.hpp is in the catalogue and every code of the catalogue
// is a constant; no code is listed twice in a table, and none is both internal and visible.
TEST(error_catalogue, lists_every_constant_once) {
  const auto constants = header_constants();
  EXPECT_GT(constants.size(), 70u);  // the pattern still matches how the header declares codes
  const std::set<std::string> declared(constants.begin(), constants.end());
  EXPECT_EQ(declared.size(), constants.size()) << "a constant is declared twice";

  std::set<std::string> listed;
  std::set<std::string> visible;
  for (const auto& table :
       {codes_of(all_errors()), codes_of(all_result_errors()), codes_of(all_internal_errors())}) {
    const std::set<std::string> unique(table.begin(), table.end());
    EXPECT_EQ(unique.size(), table.size()) << "a table of api/errors.cpp lists a code twice";
    listed.insert(unique.begin(), unique.end());
  }
  for (const auto& code : codes_of(all_errors())) visible.insert(code);
  for (const auto& code : codes_of(all_result_errors())) visible.insert(code);
  for (const auto& code : codes_of(all_internal_errors()))
    EXPECT_FALSE(visible.count(code)) << code << " is internal and visible at once";

  for (const auto& code : constants)
    EXPECT_TRUE(listed.count(code)) << "api/errors.cpp does not list the constant " << code;
  for (const auto& code : listed)
    EXPECT_TRUE(declared.count(code)) << "api/errors.cpp lists " << code << ", not a constant";
}

// docs/api.md's three tables list the catalogue's codes, in its order, and nothing else.
TEST(error_catalogue, docs_list_the_same_codes) {
  EXPECT_EQ(docs_codes("Errors"), codes_of(all_errors()));
  EXPECT_EQ(docs_codes("Codes in jobs and batches"), codes_of(all_result_errors()));
  EXPECT_EQ(docs_codes("Codes that never reach a client"), codes_of(all_internal_errors()));
}

// Records carry codes as strings; the sources fill them from the constants, never from a literal
// (scripts/dev/errc-convert --check finds and rewrites one).
TEST(error_catalogue, sources_write_codes_through_the_constants) {
  const std::regex literal(
      R"re((?:line_error|job_error|batch_error)\{\s*"|\w*code\s*[!=]?=\s*"[a-z_]+")re");
  for (const char* dir : {"api", "actors", "runtime", "storage"}) {
    for (const auto& entry :
         std::filesystem::recursive_directory_iterator(std::string(SY_SOURCE_DIR) + "/" + dir)) {
      const auto ext = entry.path().extension();
      if (ext != ".cpp" && ext != ".hpp") continue;
      std::ifstream f(entry.path());
      const std::string text((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
      std::smatch m;
      EXPECT_FALSE(std::regex_search(text, m, literal))
          << entry.path().string() << " writes a code literal: " << m.str();
    }
  }
}

}  // namespace SY_UNITY_ID
}  // namespace sy::api
