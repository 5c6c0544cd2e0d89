// The client-facing limits of config/limits.hpp at their boundaries, on both sides: the JSON
// nesting depth (checked before parsing, so a document far deeper than the limit is refused
// without any recursion), the model name's length on the jobs, sync and NATS paths, and
// metadata counted in characters.

#include <string>

#include <gtest/gtest.h>

#include "actors/submission.hpp"
#include "api/admission.hpp"
#include "api/detail/intake_message.hpp"
#include "api/detail/responses.hpp"
#include "api/detail/sync.hpp"
#include "api/errors.hpp"
#include "config/limits.hpp"
#include "runtime/strict_json.hpp"

namespace sy::api::detail {
namespace SY_UNITY_ID {

using nlohmann::json;

/// A submission whose body holds a value nested so that the document is `depth` levels deep
/// (the submission object is 1, its body 2).
std::string nested_submission(int depth) {
  std::string inner;
  for (int i = 2; i < depth; ++i) inner += '[';
  inner += "1";
  for (int i = 2; i < depth; ++i) inner += ']';
  return R"({"endpoint":"/v1/chat/completions","body":{"model":"m","messages":[],"x":)" +
         (depth > 2 ? inner : std::string("1")) + "}}";
}

TEST(json_depth, the_limit_is_accepted_one_more_is_refused) {
  // The body's "x" value sits at depth 3 when it is an array: depth 2 + the arrays.
  auto at = runtime::parse_strict_json(nested_submission(limits::json_max_depth));
  ASSERT_TRUE(at.ok()) << at.error().message;
  auto sub = actors::parse_submission(std::move(*at), "t", "");
  ASSERT_TRUE(sub.ok()) << sub.error().message;
  EXPECT_EQ(actors::request_hash(*sub).size(), 64u);

  auto over = runtime::parse_strict_json(nested_submission(limits::json_max_depth + 1));
  ASSERT_FALSE(over.ok());
  EXPECT_EQ(over.error().code, "json_too_deep");
  EXPECT_NE(over.error().message.find(std::to_string(limits::json_max_depth)), std::string::npos);
  EXPECT_EQ(lookup_error("json_too_deep").status, 400u);
}

TEST(json_depth, far_beyond_the_limit_is_refused_without_recursion) {
  // 200,000 levels: enough to overflow any thread's stack in a recursive walk.
  for (const std::string& text :
       {std::string(200'000, '['), std::string(100'000, '[') + std::string(100'000, ']'),
        "{\"a\":" + std::string(200'000, '{')}) {
    auto r = runtime::parse_strict_json(text);
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.error().code, "json_too_deep");
  }
}

TEST(json_depth, brackets_inside_strings_do_not_count) {
  const std::string brackets(10'000, '[');
  auto r = runtime::parse_strict_json(R"({"a":")" + brackets + R"(","b":"\"[[[\\"})");
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ((*r)["a"], brackets);
}

TEST(json_depth, malformed_text_is_still_invalid_json) {
  auto r = runtime::parse_strict_json("{\"a\": [1, 2}");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code, "invalid_json");
}

json with_model(std::string model) {
  return {{"endpoint", "/v1/chat/completions"},
          {"body", {{"model", std::move(model)}, {"messages", json::array()}}}};
}

TEST(model_limit, jobs_accept_the_limit_and_refuse_one_byte_more) {
  EXPECT_TRUE(
      actors::parse_submission(with_model(std::string(limits::model_max_bytes, '/')), "t", "")
          .ok());
  auto over =
      actors::parse_submission(with_model(std::string(limits::model_max_bytes + 1, 'm')), "t", "");
  ASSERT_FALSE(over.ok());
  EXPECT_EQ(over.error().code, "string_above_max_length");
  EXPECT_EQ(over.error().param, "body.model");
  EXPECT_NE(over.error().message.find("256"), std::string::npos) << over.error().message;
  EXPECT_EQ(lookup_error("string_above_max_length").status, 400u);
}

TEST(model_limit, sync_calls_accept_the_limit_and_refuse_one_byte_more) {
  auto body = [](size_t n) {
    return json{{"model", std::string(n, 'm')}, {"messages", json::array()}};
  };
  EXPECT_TRUE(sync_submission("/v1/chat/completions", body(limits::model_max_bytes), "t", "").ok());
  auto over = sync_submission("/v1/chat/completions", body(limits::model_max_bytes + 1), "t", "");
  ASSERT_FALSE(over.ok());
  EXPECT_EQ(over.error().code, "string_above_max_length");
  EXPECT_EQ(over.error().param, "model");
}

TEST(trace_context, nats_intake_reads_traceparent_and_tracestate_headers) {
  const admission admit{config::settings{}};  // no API keys; max_body_bytes 1 MiB
  intake_input in;
  in.subject = "sy.submit.job";
  const std::string data = with_model("m").dump();
  in.data = data;
  in.traceparent = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
  in.tracestate = "k=v";
  auto s = to_submission(in, in.subject, admit);
  ASSERT_TRUE(s.ok());
  EXPECT_EQ((*s)->trace.trace_id, "4bf92f3577b34da6a3ce929d0e0e4736");
  EXPECT_EQ((*s)->trace.span_id, "00f067aa0ba902b7");
  EXPECT_EQ((*s)->trace.state, "k=v");
  in.traceparent = "00-not-a-trace-context";  // ignored: the job starts its own trace
  auto bad = to_submission(in, in.subject, admit);
  ASSERT_TRUE(bad.ok());
  EXPECT_FALSE((*bad)->trace.valid());
}

TEST(model_limit, nats_intake_applies_the_same_limits) {
  const admission admit{config::settings{}};  // max_body_bytes 1 MiB
  const std::string subject = "sy.submit.job";
  auto run = [&](const std::string& data) {
    intake_input in;
    in.subject = subject;
    in.data = data;
    return to_submission(in, subject, admit);
  };
  EXPECT_TRUE(run(with_model(std::string(limits::model_max_bytes, 'm')).dump()).ok());
  auto long_model = run(with_model(std::string(limits::model_max_bytes + 1, 'm')).dump());
  ASSERT_FALSE(long_model.ok());
  EXPECT_EQ(long_model.error().code, "string_above_max_length");
  auto deep = run(std::string(300'000, '['));
  ASSERT_FALSE(deep.ok());
  EXPECT_EQ(deep.error().code, "json_too_deep");
  // The HTTP body limit applies to a payload too, one byte past it.
  json big = with_model("m");
  big["body"]["input"] = "";
  big["body"]["input"] = std::string((size_t{1} << 20) - big.dump().size(), 'x');
  EXPECT_TRUE(run(big.dump()).ok());
  big["body"]["input"] = big["body"]["input"].get<std::string>() + "x";
  auto over = run(big.dump());
  ASSERT_FALSE(over.ok());
  EXPECT_EQ(over.error().code, "body_too_large");
}

TEST(metadata_limit, counts_characters_not_bytes) {
  auto with = [](json metadata) {
    auto j = with_model("m");
    j["metadata"] = std::move(metadata);
    return j;
  };
  std::string e512, e513, k64;
  for (int i = 0; i < 512; ++i) e512 += "\xC3\xA9";  // é: 2 bytes, 1 character
  e513 = e512 + "\xC3\xA9";
  for (int i = 0; i < 64; ++i) k64 += "\xC3\xA9";
  EXPECT_TRUE(actors::parse_submission(with({{"k", e512}}), "t", "").ok());
  EXPECT_FALSE(actors::parse_submission(with({{"k", e513}}), "t", "").ok());
  EXPECT_TRUE(actors::parse_submission(with({{k64, "v"}}), "t", "").ok());
  EXPECT_FALSE(actors::parse_submission(with({{k64 + "\xC3\xA9", "v"}}), "t", "").ok());
}

// Batches check their metadata with the same function (api/detail/file_routes.cpp): characters
// of any width count one, whatever their bytes.
TEST(metadata_limit, the_batches_check_counts_characters_of_any_width) {
  const std::string emoji = "\xF0\x9F\x98\x80";  // U+1F600: 4 bytes, 1 character
  std::string v512;
  for (size_t i = 0; i < limits::metadata_value_max_chars; ++i) v512 += emoji;
  std::string k64;
  for (size_t i = 0; i < limits::metadata_key_max_chars; ++i) k64 += "\xE2\x82\xAC";  // €
  EXPECT_TRUE(actors::check_metadata(json{{"k", v512}}).ok());
  auto over = actors::check_metadata(json{{"k", v512 + emoji}});
  ASSERT_FALSE(over.ok());
  EXPECT_EQ(over.error().code, "invalid_metadata");
  EXPECT_EQ(over.error().param, "metadata");
  EXPECT_TRUE(actors::check_metadata(json{{k64, "v"}}).ok());
  EXPECT_FALSE(actors::check_metadata(json{{k64 + "\xE2\x82\xAC", "v"}}).ok());
}

TEST(idempotency_key_limit, the_limit_is_accepted_one_more_is_refused) {
  const admission admit{config::settings{}};
  const std::string text = with_model("m").dump();
  auto with_key = [&](size_t n) {
    const std::string key(n, 'k');
    client_request r;
    r.body = text;
    r.idempotency_key = key;
    return admit.job(r);
  };
  EXPECT_TRUE(with_key(limits::idempotency_key_max_chars).ok());
  auto over = with_key(limits::idempotency_key_max_chars + 1);
  ASSERT_FALSE(over.ok());
  EXPECT_EQ(over.error().code, "invalid_idempotency_key");
}

TEST(webhook_url_limit, the_limit_is_accepted_one_more_is_refused) {
  auto with_url = [](size_t n) {
    const std::string head = "https://example.com/";
    json j = with_model("m");
    j["webhook_url"] = head + std::string(n - head.size(), 'p');
    return actors::parse_submission(std::move(j), "t", "");
  };
  EXPECT_TRUE(with_url(limits::webhook_url_max_bytes).ok());
  auto over = with_url(limits::webhook_url_max_bytes + 1);
  ASSERT_FALSE(over.ok());
  EXPECT_EQ(over.error().code, "invalid_webhook_url");
}

}  // namespace SY_UNITY_ID
}  // namespace sy::api::detail
