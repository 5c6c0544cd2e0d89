#include "config/s3_scope.hpp"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace sy::config {
namespace SY_UNITY_ID {

using nlohmann::json;

s3_prefix ok(const std::string& uri) {
  auto p = parse_s3_prefix(uri);
  EXPECT_TRUE(p.ok()) << uri << ": " << (p.ok() ? "" : p.error().message);
  return p.ok() ? *p : s3_prefix{};
}

TEST(s3_scope, canonical_prefixes_are_accepted_as_given) {
  auto p = ok("s3://data-bucket/tenants/acme/in/");
  EXPECT_EQ(p.bucket, "data-bucket");
  EXPECT_EQ(p.prefix, "tenants/acme/in/");
  EXPECT_EQ(p.uri(), "s3://data-bucket/tenants/acme/in/");
  EXPECT_EQ(ok("s3://b.with.dots/x/").bucket, "b.with.dots");
  EXPECT_EQ(ok("s3://abc/A_b-c.d!(e)'f/").prefix, "A_b-c.d!(e)'f/");
}

TEST(s3_scope, every_rule_refuses_what_breaks_it) {
  const std::vector<std::pair<std::string, std::string>> refused = {
      {"S3://bucket/p/", "scheme"},     // a scheme in odd case
      {"s3:/bucket/p/", "scheme"},      //
      {"https://bucket/p/", "scheme"},  //
      {"bucket/p/", "scheme"},          //
      {"s3:///p/", "bucket is empty"},  // empty bucket
      {"s3://ab/p/", "3 to 63"},        // too short
      {"s3://" + std::string(64, 'b') + "/p/", "3 to 63"},
      {"s3://Bucket/p/", "lowercase"},   // another bucket's spelling
      {"s3://bu_cket/p/", "lowercase"},  //
      {"s3://-bucket/p/", "starts and ends"},
      {"s3://bucket./p/", "starts and ends"},
      {"s3://bu..cket/p/", "no '..'"},
      {"s3://192.168.1.1/p/", "IP address"},
      {"s3://bucket", "prefix is empty"},   // a whole bucket
      {"s3://bucket/", "prefix is empty"},  //
      {"s3://bucket/p", "end with '/'"},    // a prefix without its trailing slash
      {"s3://bucket/tenants/acme", "end with '/'"},
      {"s3://bucket//p/", "starts with '/'"},
      {"s3://bucket/a//b/", "empty segment"},  // double slashes
      {"s3://bucket/../other/", "'..'"},       // parent segments
      {"s3://bucket/a/../b/", "'..'"},         //
      {"s3://bucket/a/..b/", "'..'"},          // '..' anywhere, not only as a segment
      {"s3://bucket/a/%2e%2e/b/", "percent"},  // percent-encoded '..'
      {"s3://bucket/a/%2E%2E/b/", "percent"},
      {"s3://bucket/a%2f/", "percent"},
      {"s3://bucket/./a/", "'.' segment"},
      {"s3://bucket/a/./b/", "'.' segment"},
      {"s3://bucket/a/*/", "wildcards"},  // wildcard widening
      {"s3://bucket/a*/", "wildcards"},
      {"s3://bucket/a?/", "wildcards"},
      {"s3://bucket/a b/", "safe set"},
      {"s3://bucket/a\\b/", "safe set"},
      {std::string("s3://bucket/a\0b/", 16), "safe set"},
      {"s3://bucket/a\nb/", "safe set"},
      {"s3://bucket/caf\xc3\xa9/", "safe set"},
  };
  for (const auto& [uri, why] : refused) {
    auto p = parse_s3_prefix(uri);
    ASSERT_FALSE(p.ok()) << uri << " was accepted";
    EXPECT_EQ(p.error().code, "invalid_grants") << uri;
    EXPECT_NE(p.error().message.find(why), std::string::npos) << uri << ": " << p.error().message;
  }
}

TEST(s3_scope, within_is_a_directory_prefix_of_the_same_bucket) {
  const auto allowed = ok("s3://data/tenants/acme/");
  EXPECT_TRUE(s3_within(ok("s3://data/tenants/acme/"), allowed));
  EXPECT_TRUE(s3_within(ok("s3://data/tenants/acme/in/2026/"), allowed));
  EXPECT_FALSE(s3_within(ok("s3://data/tenants/acme-evil/"), allowed));  // not "starts with"
  EXPECT_FALSE(s3_within(ok("s3://data/tenants/"), allowed));            // wider
  EXPECT_FALSE(s3_within(ok("s3://data/tenants/other/"), allowed));      // another tenant
  EXPECT_FALSE(s3_within(ok("s3://data2/tenants/acme/"), allowed));      // another bucket
}

TEST(s3_scope, the_session_policy_grants_object_actions_inside_the_prefixes_only) {
  s3_grants g;
  g.read = {ok("s3://data/in/"), ok("s3://data/in/")};  // a duplicate is granted once
  g.write = {ok("s3://data/out/")};
  g.scratch = {ok("s3://tmp/t1/")};
  const json expected = json::parse(R"({
    "Version": "2012-10-17",
    "Statement": [
      {"Effect": "Allow", "Action": ["s3:GetObject"], "Resource": ["arn:aws:s3:::data/in/*"]},
      {"Effect": "Allow", "Action": ["s3:PutObject"], "Resource": ["arn:aws:s3:::data/out/*"]},
      {"Effect": "Allow", "Action": ["s3:GetObject", "s3:PutObject", "s3:DeleteObject"],
       "Resource": ["arn:aws:s3:::tmp/t1/*"]},
      {"Effect": "Allow", "Action": ["s3:ListBucket"], "Resource": ["arn:aws:s3:::data"],
       "Condition": {"StringLike": {"s3:prefix": ["in/*", "out/*"]}}},
      {"Effect": "Allow", "Action": ["s3:ListBucket"], "Resource": ["arn:aws:s3:::tmp"],
       "Condition": {"StringLike": {"s3:prefix": ["t1/*"]}}}
    ]})");
  EXPECT_EQ(s3_session_policy(g), expected) << s3_session_policy(g).dump(2);
  // Nothing granted: no statement at all (an empty policy allows nothing).
  EXPECT_EQ(s3_session_policy({})["Statement"], json::array());
}

TEST(s3_scope, a_submissions_grants_parse_by_kind_and_name_the_bad_entry) {
  auto g = parse_s3_grants(
      json{{"read", {"s3://data/a/in/", "s3://data/a/ref/"}}, {"scratch", {"s3://tmp/a/"}}});
  ASSERT_TRUE(g.ok()) << g.error().message;
  EXPECT_EQ(g->read.size(), 2u);
  EXPECT_TRUE(g->write.empty());
  EXPECT_EQ(g->scratch, std::vector<s3_prefix>{ok("s3://tmp/a/")});
  EXPECT_EQ(s3_grants_json(*g), (json{{"read", {"s3://data/a/in/", "s3://data/a/ref/"}},
                                      {"write", json::array()},
                                      {"scratch", {"s3://tmp/a/"}}}));
  EXPECT_TRUE(parse_s3_grants(json::object())->empty());
  const std::pair<json, std::string> bad[] = {
      {json::array(), "grants"},
      {json{{"list", json::array()}}, "grants.list"},
      {json{{"read", "s3://data/a/"}}, "grants.read"},
      {json{{"write", {1}}}, "grants.write[0]"},
      {json{{"write", {"s3://data/a/", "s3://data/a/.."}}}, "grants.write[1]"},
      {json{{"scratch", json(std::vector<std::string>(33, "s3://data/a/"))}}, "grants.scratch"},
  };
  for (const auto& [doc, param] : bad) {
    auto r = parse_s3_grants(doc);
    ASSERT_FALSE(r.ok()) << doc.dump();
    EXPECT_EQ(r.error().code, "invalid_grants") << doc.dump();
    EXPECT_EQ(r.error().param, param) << doc.dump();
  }
}

TEST(s3_scope, a_grant_outside_every_allowed_prefix_is_named) {
  s3_grants g;
  g.read = {ok("s3://data/acme/in/")};
  g.write = {ok("s3://data/acme/out/")};
  const std::vector<s3_prefix> allowed = {ok("s3://data/acme/")};
  EXPECT_EQ(s3_grant_outside(g, allowed), "");
  g.scratch = {ok("s3://data/acmeco/tmp/")};  // starts with the same letters: not inside
  EXPECT_EQ(s3_grant_outside(g, allowed), "s3://data/acmeco/tmp/");
  EXPECT_EQ(s3_grant_outside(g, {}), "s3://data/acme/in/");
  EXPECT_EQ(s3_grant_outside({}, {}), "");
}

}  // namespace SY_UNITY_ID
}  // namespace sy::config
