#include "runtime/json_text.hpp"

#include <random>

#include <gtest/gtest.h>

namespace sy::runtime {
namespace SY_UNITY_ID {

using json = nlohmann::json;

std::string nlohmann_text(const std::string& s) {
  return json(s).dump(-1, ' ', false, json::error_handler_t::replace);
}

std::string ours(std::string_view s) {
  std::string out;
  append_json_string(out, s);
  return out;
}

TEST(json_text, escapes_like_nlohmann_for_every_kind_of_byte) {
  std::string controls;
  for (int c = 0; c < 0x20; ++c) controls.push_back(static_cast<char>(c));
  const std::vector<std::string> cases = {
      "",
      "plain ascii",
      controls,
      "quote \" backslash \\ slash / del \x7F",
      "caf\xC3\xA9 \xE2\x82\xAC \xF0\x9F\x98\x80",  // 2-, 3- and 4-byte sequences
      "lone continuation \x80 and \xBF",
      "overlong \xC0\xAF \xC1\xBF \xE0\x80\x80 \xF0\x80\x80\x80",
      "surrogate \xED\xA0\x80, beyond U+10FFFF \xF4\x90\x80\x80, \xF5\x80 \xFF",
      "broken in the middle \xE2\x82x then \xF0\x9F\x98 then \xC3",
      "truncated at the end \xE2\x82",
      std::string("nul \0 inside", 12),
  };
  for (const auto& s : cases)
    EXPECT_EQ(ours(s), nlohmann_text(s)) << "case of " << s.size() << " bytes";
}

TEST(json_text, escapes_like_nlohmann_for_random_bytes) {
  // Bytes drawn mostly from the interesting ranges: controls, ASCII, lead and continuation bytes.
  std::mt19937 rng(12345);
  const std::string alphabet =
      "ab\"\\\n\x01\x1F\x7F\x80\x8F\x90\x9F\xA0\xBF\xC0\xC2\xDF\xE0\xE1\xED\xEF\xF0\xF1\xF4\xF5"
      "\xFF";
  std::uniform_int_distribution<size_t> pick(0, alphabet.size() - 1), len(0, 12);
  for (int n = 0; n < 20'000; ++n) {
    std::string s;
    for (size_t k = len(rng); k > 0; --k) s.push_back(alphabet[pick(rng)]);
    ASSERT_EQ(ours(s), nlohmann_text(s)) << "case " << n;
  }
}

TEST(json_text, writes_commas_between_members_and_elements_only) {
  json_text out;
  out.begin_object()
      .field("a", "x")
      .field("n", int64_t{-42})
      .key("list")
      .begin_array()
      .number(1)
      .begin_object()
      .end_object()
      .string("s")
      .null()
      .boolean(false)
      .end_array()
      .key("nested")
      .begin_object()
      .key("empty")
      .begin_array()
      .end_array()
      .end_object()
      .key("dom")
      .value(json{{"k", {1, 2}}})
      .end_object();
  EXPECT_EQ(out.str(), R"({"a":"x","n":-42,"list":[1,{},"s",null,false],"nested":{"empty":[]},)"
                       R"("dom":{"k":[1,2]}})");
}

TEST(json_text, shows_a_json_body_as_json_and_anything_else_as_a_string) {
  json_text a, b;
  a.begin_object().key("body").json_or_string("{ \"x\" : [1, 2] }").end_object();
  b.begin_object().key("body").json_or_string("upstream said: no").end_object();
  EXPECT_EQ(a.str(), R"({"body":{"x":[1,2]}})");
  EXPECT_EQ(b.str(), R"({"body":"upstream said: no"})");
}

TEST(json_text, utf8_length_counts_code_points_of_valid_utf8_only) {
  EXPECT_EQ(utf8_length(""), 0u);
  EXPECT_EQ(utf8_length("abc"), 3u);
  EXPECT_EQ(utf8_length("\xC3\xA9\xE2\x82\xAC\xF0\x9F\x98\x80"), 3u);  // é € 😀
  EXPECT_FALSE(utf8_length("\xC3"));                                   // cut short
  EXPECT_FALSE(utf8_length("\xC0\xAF"));                               // overlong
  EXPECT_FALSE(utf8_length("\xED\xA0\x80"));                           // a surrogate
  EXPECT_FALSE(utf8_length("\xF4\x90\x80\x80"));                       // above U+10FFFF
  EXPECT_FALSE(utf8_length("a\x80"));                                  // a lone continuation byte
}

TEST(json_depth_within, counts_objects_and_arrays_outside_strings) {
  EXPECT_TRUE(json_depth_within("", 0));
  EXPECT_TRUE(json_depth_within("1", 0));
  EXPECT_FALSE(json_depth_within("{}", 0));
  EXPECT_TRUE(json_depth_within("{}", 1));
  EXPECT_TRUE(json_depth_within(R"({"a":[1,{"b":[]}]})", 4));
  EXPECT_FALSE(json_depth_within(R"({"a":[1,{"b":[]}]})", 3));
  EXPECT_TRUE(json_depth_within("[[]][[]][[]]", 2));  // siblings do not add up
  EXPECT_TRUE(json_depth_within(R"(["[[[[", "\"[[[", "\\", []])", 2));
  EXPECT_FALSE(json_depth_within(R"(["\\", [[]]])", 2));  // the string ended at its quote
  EXPECT_TRUE(json_depth_within("]]]]}}}}[", 1));         // stray closers never go negative
  EXPECT_FALSE(json_depth_within(std::string(1'000'000, '['), 128));
}

TEST(json_or_string, shows_text_nested_past_the_limit_as_a_string) {
  const std::string deep = std::string(100'000, '[') + std::string(100'000, ']');
  json_text out;
  out.json_or_string(deep);
  EXPECT_EQ(out.str(), "\"" + deep + "\"");
  json_text shallow;
  shallow.json_or_string("[ [1] ]");
  EXPECT_EQ(shallow.str(), "[[1]]");
}

}  // namespace SY_UNITY_ID
}  // namespace sy::runtime
