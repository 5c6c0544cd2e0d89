// The admission layer's own rules (api/admission.hpp, docs/limits.md "One admission path"): the
// strict parse (duplicate keys at any depth with their path, -0, overflowing numbers, UTF-8 and
// control characters, the empty body), the size limit at its boundary, control characters in
// names, and the "no echo" caps on what an error answer quotes.

#include <cmath>
#include <fstream>
#include <iterator>
#include <sstream>
#include <string>

#include <gtest/gtest.h>

#include "api/admission.hpp"
#include "api/errors.hpp"
#include "config/client_text.hpp"

namespace sy::api {
namespace SY_UNITY_ID {

using nlohmann::json;

admission with_limit(int64_t max_body_bytes) {
  config::settings s;
  s.max_body_bytes = max_body_bytes;
  return admission(s);
}

TEST(admission, a_key_twice_is_refused_with_its_path_at_any_depth) {
  const auto admit = with_limit(1 << 20);
  const std::pair<const char*, const char*> cases[] = {
      {R"({"a":1,"a":2})", "a"},
      {R"({"body":{"model":"m","model":"n"}})", "body.model"},
      {R"({"body":{"messages":[{"role":"user"},{"role":"a","role":"b"}]}})",
       "body.messages[1].role"},
      {R"([{"x":1},{"y":{"z":1,"z":1}}])", "[1].y.z"},
  };
  for (const auto& [text, path] : cases) {
    auto r = admit.json(text);
    ASSERT_FALSE(r.ok()) << text;
    EXPECT_EQ(r.error().code, "invalid_request") << text;
    EXPECT_EQ(r.error().param, path) << text;
  }
  // The same key in two different objects is fine.
  EXPECT_TRUE(admit.json(R"({"a":{"k":1},"b":{"k":1},"c":[{"k":1},{"k":2}]})").ok());
}

TEST(admission, the_parse_refuses_what_is_not_strict_json) {
  const auto admit = with_limit(1 << 20);
  for (const std::string& text :
       {std::string(), std::string("{\"a\":1e999999}"), std::string("{\"a\":-1e999999}"),
        std::string("{\"a\":\"\xff\"}"), std::string("{\"a\":\"x\ty\"}"),
        std::string("{\"a\":1} x"), std::string("{\"a\":NaN}")}) {
    auto r = admit.json(text);
    ASSERT_FALSE(r.ok()) << text;
    EXPECT_EQ(r.error().code, "invalid_json") << text;
  }
}

TEST(admission, negative_zero_is_zero) {
  const auto admit = with_limit(1 << 20);
  auto r = admit.json(R"({"i":-0,"f":-0.0,"e":-0e5})");
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ((*r)["i"], 0);
  EXPECT_FALSE(std::signbit((*r)["f"].get<double>()));
  EXPECT_FALSE(std::signbit((*r)["e"].get<double>()));
  EXPECT_EQ(r->dump(), R"({"e":0.0,"f":0.0,"i":0})");
}

TEST(admission, exactly_the_limit_is_judged_on_its_content_one_more_byte_is_too_large) {
  const std::string doc = R"({"pad":")" + std::string(100, 'x') + "\"}";
  const auto admit = with_limit(static_cast<int64_t>(doc.size()));
  EXPECT_TRUE(admit.json(doc).ok());
  auto over = admit.json(doc + " ");
  ASSERT_FALSE(over.ok());
  EXPECT_EQ(over.error().code, "body_too_large");
  EXPECT_EQ(lookup_error("body_too_large").status, 413u);
}

TEST(admission, a_job_with_a_control_character_in_a_name_is_invalid_value) {
  const auto admit = with_limit(1 << 20);
  const std::pair<std::string, const char*> cases[] = {
      {R"({"endpoint":"/v1/chat/completions","body":{"model":"m\u0000"}})", "body.model"},
      {R"({"endpoint":"/v1/chat/completions","body":{"model":"m\u007f"}})", "body.model"},
      {R"({"endpoint":"/v1/chat/completions","body":{"model":"m\u0085"}})", "body.model"},
      {R"({"endpoint":"/v1/chat/completions","tasks":[{"custom_id":"\n","body":{"model":"m"}}]})",
       "tasks[0].custom_id"},
      {R"({"runtime":"r\u001b","input":1})", "runtime"},
  };
  for (const auto& [text, param] : cases) {
    client_request r;
    r.body = text;
    auto job = admit.job(r);
    ASSERT_FALSE(job.ok()) << text;
    EXPECT_EQ(job.error().code, "invalid_value") << text;
    EXPECT_EQ(job.error().param, param) << text;
  }
  client_request fine;
  const std::string text = R"({"endpoint":"/v1/chat/completions","body":{"model":"m\u00a0é"}})";
  fine.body = text;
  EXPECT_TRUE(admit.job(fine).ok());
}

TEST(admission, the_idempotency_key_is_named_as_the_surface_names_it) {
  const auto admit = with_limit(1 << 20);
  const std::string text = R"({"endpoint":"/v1/chat/completions","body":{"model":"m"}})";
  client_request r;
  r.body = text;
  r.idempotency_key = "a\x01";
  r.idempotency_param = "Nats-Msg-Id";
  auto job = admit.job(r);
  ASSERT_FALSE(job.ok());
  EXPECT_EQ(job.error().code, "invalid_idempotency_key");
  EXPECT_EQ(job.error().param, "Nats-Msg-Id");
  r.idempotency_key = "k-1";
  auto ok = admit.job(r);
  ASSERT_TRUE(ok.ok()) << ok.error().message;
  EXPECT_EQ((*ok)->idempotency_key, "k-1");
}

TEST(no_echo, a_quote_is_cut_on_a_character_boundary_with_its_length) {
  EXPECT_EQ(quote_client("short"), "short");
  std::string text = std::string(255, 'a') + "é" + std::string(1000, 'b');  // é spans 255..256
  auto q = quote_client(text);
  EXPECT_EQ(q, std::string(255, 'a') + "… (1257 bytes)");
  EXPECT_FALSE(has_control_character("plain é \u00a0"));
  EXPECT_TRUE(has_control_character(std::string("a\0b", 3)));
  EXPECT_TRUE(has_control_character("\xc2\x9f"));
}

TEST(no_echo, an_error_answer_stays_small_whatever_it_quotes) {
  const std::string huge(900'000, 'k');
  auto body = error_body(make_error(errc::unknown_parameter, "Unknown: " + huge, huge));
  EXPECT_LT(body.size(), 16u * 1024);
  auto j = json::parse(body);
  EXPECT_LE(j["error"]["param"].get<std::string>().size(), 256u + 32u);
  EXPECT_EQ(j["error"]["code"], "unknown_parameter");
}

std::string read_doc(const std::string& path) {
  std::ifstream in(std::string(SY_SOURCE_DIR) + "/" + path);
  EXPECT_TRUE(in.good()) << path;
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

// docs/limits.md's "Surfaces" table has a row for each surface admission lists, naming each of
// its limits; and no row for a surface admission does not know.
TEST(admission, the_surfaces_table_of_the_docs_is_admissions_own_list) {
  const std::string doc = read_doc("docs/limits.md");
  const auto table_at = doc.find("## Surfaces");
  ASSERT_NE(table_at, std::string::npos);
  const std::string table = doc.substr(table_at, doc.find("\n## ", table_at + 1) - table_at);
  size_t rows = 0;
  for (const auto& s : admission_surfaces()) {
    const std::string start = "| `" + std::string(s.name) + "` | ";
    const auto at = table.find(start);
    ASSERT_NE(at, std::string::npos) << "docs/limits.md lacks a row for " << s.name;
    const std::string row = table.substr(at, table.find('\n', at) - at);
    std::istringstream names{std::string(s.limits)};
    for (std::string limit; names >> limit;)
      EXPECT_NE(row.find("`" + limit + "`"), std::string::npos) << s.name << " lacks " << limit;
    ++rows;
  }
  size_t doc_rows = 0;
  for (size_t at = table.find("\n| `"); at != std::string::npos; at = table.find("\n| `", at + 1))
    ++doc_rows;
  EXPECT_EQ(doc_rows, rows) << "docs/limits.md lists a surface admission does not";
}

}  // namespace SY_UNITY_ID
}  // namespace sy::api
