#include "actors/submission.hpp"

#include <string>

#include <gtest/gtest.h>

namespace sy::actors {
namespace SY_UNITY_ID {

using nlohmann::json;

json valid() {
  return json::parse(R"({"endpoint": "/v1/chat/completions",
                         "body": {"model": "m1", "messages": [{"role": "user", "content": "hi"}]},
                         "metadata": {"team": "a"}, "max_attempts": 5})");
}

sy::error failure(const json& j, int cap = 100) {
  auto r = parse_submission(j, "t1", "", cap);
  EXPECT_FALSE(r.ok()) << j.dump();
  return r.ok() ? sy::error{} : r.error();
}

TEST(parse_submission, accepts_a_full_request) {
  auto r = parse_submission(valid(), "t1", "key-1");
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(r->tenant, "t1");
  EXPECT_EQ(r->idempotency_key, "key-1");
  EXPECT_EQ(r->endpoint, "/v1/chat/completions");
  EXPECT_EQ(r->model, "m1");
  // The body travels as compact text with its keys sorted, as it is stored.
  EXPECT_EQ(r->body, valid()["body"].dump());
  EXPECT_EQ(r->metadata, json({{"team", "a"}}));
  EXPECT_EQ(r->max_attempts, 5);
}

TEST(parse_submission, optional_fields_default) {
  auto r =
      parse_submission(json{{"endpoint", "/v1/embeddings"}, {"body", {{"model", "e"}}}}, "t", "");
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->max_attempts, 0);
  EXPECT_EQ(r->metadata, json::object());
  auto nulls = json{{"endpoint", "/v1/completions"},
                    {"body", {{"model", "e"}}},
                    {"metadata", nullptr},
                    {"max_attempts", nullptr}};
  EXPECT_TRUE(parse_submission(nulls, "t", "").ok());
}

TEST(parse_submission, rejects_non_object) {
  EXPECT_EQ(failure(json::array()).code, "invalid_request");
  EXPECT_EQ(failure(json("text")).code, "invalid_request");
}

TEST(parse_submission, rejects_bad_endpoint) {
  for (json bad : {json(nullptr), json("/v1/other"), json(3), json("/v1/chat/completions/")}) {
    auto j = valid();
    j["endpoint"] = bad;
    auto e = failure(j);
    EXPECT_EQ(e.code, "invalid_endpoint");
    EXPECT_EQ(e.param, "endpoint");
  }
  auto j = valid();
  j.erase("endpoint");
  EXPECT_EQ(failure(j).code, "invalid_endpoint");
}

TEST(parse_submission, rejects_missing_or_non_object_body) {
  auto j = valid();
  j["body"] = "text";
  EXPECT_EQ(failure(j).code, "invalid_body");
  j.erase("body");
  EXPECT_EQ(failure(j).param, "body");
}

TEST(parse_submission, requires_non_empty_string_model) {
  for (json model : {json(""), json(7), json(nullptr)}) {
    auto j = valid();
    j["body"]["model"] = model;
    auto e = failure(j);
    EXPECT_EQ(e.code, "missing_model");
    EXPECT_EQ(e.param, "body.model");
  }
  auto j = valid();
  j["body"].erase("model");
  EXPECT_EQ(failure(j).code, "missing_model");
}

TEST(parse_submission, refuses_streaming) {
  auto j = valid();
  j["body"]["stream"] = true;
  auto e = failure(j);
  EXPECT_EQ(e.code, "streaming_unsupported");
  EXPECT_EQ(e.param, "body.stream");
  j["body"]["stream"] = false;
  EXPECT_TRUE(parse_submission(j, "t", "").ok());
}

TEST(parse_submission, validates_metadata) {
  auto with = [](json metadata) {
    auto j = valid();
    j["metadata"] = std::move(metadata);
    return j;
  };
  EXPECT_EQ(failure(with(json::array())).code, "invalid_metadata");
  EXPECT_EQ(failure(with({{"k", 1}})).code, "invalid_metadata");
  EXPECT_EQ(failure(with({{"k", std::string(513, 'x')}})).param, "metadata");
  EXPECT_TRUE(parse_submission(with({{"k", std::string(512, 'x')}}), "t", "").ok());
  EXPECT_EQ(failure(with({{std::string(65, 'k'), "v"}})).code, "invalid_metadata");
  EXPECT_TRUE(parse_submission(with({{std::string(64, 'k'), "v"}}), "t", "").ok());
  json many = json::object();
  for (int i = 0; i < 16; ++i) many["k" + std::to_string(i)] = "v";
  EXPECT_TRUE(parse_submission(with(many), "t", "").ok());
  many["k16"] = "v";
  EXPECT_EQ(failure(with(many)).code, "invalid_metadata");
}

TEST(parse_submission, checks_webhook_url_with_the_deliverers_parser) {
  auto with = [](json url) {
    auto j = valid();
    j["webhook_url"] = std::move(url);
    return j;
  };
  EXPECT_TRUE(parse_submission(with("https://example.com/hook?x=1"), "t", "").ok());
  EXPECT_TRUE(parse_submission(with(nullptr), "t", "").ok());
  const std::string long_url = "https://example.com/" + std::string(2048, 'p');
  for (json bad :
       {json(3), json("ftp://example.com/"), json("http://"), json("http://a b/"),
        json("http://127.1/"), json("http://user:pw@example.com/"), json("http://example.com:0/"),
        json("http://example.com/#frag"), json(long_url)}) {
    auto e = failure(with(bad));
    EXPECT_EQ(e.code, "invalid_webhook_url") << bad;
    EXPECT_EQ(e.param, "webhook_url") << bad;
  }
}

TEST(parse_submission, validates_max_attempts) {
  for (json bad : {json(0), json(-1), json(11), json(2.5), json("3"), json(true)}) {
    auto j = valid();
    j["max_attempts"] = bad;
    auto e = failure(j, 10);
    EXPECT_EQ(e.code, "invalid_max_attempts") << bad.dump();
    EXPECT_EQ(e.param, "max_attempts");
  }
  auto j = valid();
  j["max_attempts"] = 10;
  EXPECT_EQ(parse_submission(j, "t", "", 10)->max_attempts, 10);
  j["max_attempts"] = 1;
  EXPECT_EQ(parse_submission(j, "t", "", 10)->max_attempts, 1);
}

TEST(parse_submission, names_an_unknown_parameter) {
  auto j = valid();
  j["priority"] = 1;
  auto e = failure(j);
  EXPECT_EQ(e.code, "unknown_parameter");
  EXPECT_EQ(e.param, "priority");
  EXPECT_NE(e.message.find("priority"), std::string::npos);
}

TEST(request_hash, is_stable_across_key_order) {
  auto a = parse_submission(json::parse(R"({"endpoint":"/v1/embeddings","max_attempts":2,
      "body":{"model":"e","input":["x","y"],"dimensions":8},"metadata":{"b":"2","a":"1"}})"),
                            "t1", "k");
  auto b = parse_submission(json::parse(R"({"metadata":{"a":"1","b":"2"},
      "body":{"dimensions":8,"input":["x","y"],"model":"e"},"max_attempts":2,
      "endpoint":"/v1/embeddings"})"),
                            "t2", "other-key");
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_EQ(request_hash(*a), request_hash(*b));
  EXPECT_EQ(request_hash(*a).size(), 64u);
}

TEST(request_hash, differs_for_different_requests) {
  auto base = *parse_submission(valid(), "t", "");
  auto other_body = base;
  auto edited = json::parse(other_body.body);
  edited["messages"][0]["content"] = "hello";
  other_body.body = edited.dump();
  auto other_attempts = base;
  other_attempts.max_attempts = 6;
  auto other_metadata = base;
  other_metadata.metadata["team"] = "b";
  auto other_endpoint = base;
  other_endpoint.endpoint = "/v1/completions";
  for (const auto& s : {other_body, other_attempts, other_metadata, other_endpoint})
    EXPECT_NE(request_hash(base), request_hash(s));
}

}  // namespace SY_UNITY_ID
}  // namespace sy::actors
