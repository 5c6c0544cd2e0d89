// STS AssumeRole (runtime/sts.hpp): the signed form request and the reading of STS's answer.
// The signature itself is SigV4, checked against AWS's vectors in sigv4_test.cpp; here, what
// the request carries and how answers are read, including the refusals.

#include "runtime/sts.hpp"

#include <gtest/gtest.h>

#include <map>
#include <string>

namespace sy::runtime {
namespace SY_UNITY_ID {

sts_target target() {
  return {"sts.example:7480", "us-east-1", "arn:aws:iam:::role/minter", {"AKID", "SECRET", ""}};
}

TEST(sts, the_assume_role_request_is_a_signed_percent_encoded_form) {
  const std::string policy = R"({"Statement":[{"Effect":"Allow","Resource":"a b+c"}]})";
  auto r = assume_role_request(target(), {"sy-1-task_x", policy, 900}, 1'700'000'000);
  EXPECT_EQ(r.method, "POST");
  EXPECT_EQ(r.target, "/");
  // Fields in order, every value percent-encoded; a space is %20, '+' is %2B, never '+'.
  EXPECT_EQ(r.body.rfind("Action=AssumeRole&DurationSeconds=900&Policy=%7B%22Statement%22", 0), 0u)
      << r.body;
  EXPECT_NE(r.body.find("a%20b%2Bc"), std::string::npos) << r.body;
  EXPECT_NE(r.body.find("&RoleArn=arn%3Aaws%3Aiam%3A%3A%3Arole%2Fminter&RoleSessionName="
                        "sy-1-task_x&Version=2011-06-15"),
            std::string::npos)
      << r.body;
  std::map<std::string, std::string> h(r.headers.begin(), r.headers.end());
  EXPECT_EQ(h["Host"], "sts.example:7480");
  EXPECT_EQ(h["X-Amz-Date"], "20231114T221320Z");
  EXPECT_EQ(h["Authorization"].rfind("AWS4-HMAC-SHA256 Credential=AKID/20231114/us-east-1/sts/"
                                     "aws4_request, SignedHeaders=",
                                     0),
            0u)
      << h["Authorization"];
  // Signed at another time, or with another secret: another signature.
  auto later = assume_role_request(target(), {"sy-1-task_x", policy, 900}, 1'700'000'001);
  std::map<std::string, std::string> h2(later.headers.begin(), later.headers.end());
  EXPECT_NE(h2["Authorization"], h["Authorization"]);
}

TEST(sts, a_complete_answer_gives_the_credentials_and_entities_are_decoded) {
  const std::string body =
      "<AssumeRoleResponse><AssumeRoleResult><Credentials>"
      "<AccessKeyId>ASIA1</AccessKeyId><SecretAccessKey>s&amp;cret</SecretAccessKey>"
      "<SessionToken>tok&lt;en&gt;</SessionToken><Expiration>2026-11-27T01:00:00Z</Expiration>"
      "</Credentials></AssumeRoleResult></AssumeRoleResponse>";
  auto m = parse_assume_role_response(200, body);
  ASSERT_TRUE(m.ok()) << m.error().message;
  EXPECT_EQ(m->credentials.access_key_id, "ASIA1");
  EXPECT_EQ(m->credentials.secret_access_key, "s&cret");
  EXPECT_EQ(m->credentials.session_token, "tok<en>");
  EXPECT_EQ(m->expiration, "2026-11-27T01:00:00Z");
}

TEST(sts, refusals_and_incomplete_answers_say_what_failed) {
  auto refused = parse_assume_role_response(
      403, "<ErrorResponse><Error><Code>AccessDenied</Code></Error></ErrorResponse>");
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.error().code, "credentials_unavailable");
  EXPECT_NE(refused.error().message.find("HTTP 403 AccessDenied"), std::string::npos)
      << refused.error().message;
  auto bare = parse_assume_role_response(500, "");
  ASSERT_FALSE(bare.ok());
  EXPECT_NE(bare.error().message.find("HTTP 500"), std::string::npos);
  for (const char* incomplete :
       {"", "<Credentials><AccessKeyId>A</AccessKeyId></Credentials>",
        "<Credentials><AccessKeyId>A</AccessKeyId><SecretAccessKey>S</SecretAccessKey>"
        "<SessionToken>T</SessionToken></Credentials>",
        "<Credentials><AccessKeyId>A</AccessKeyId><SecretAccessKey>S"}) {
    auto m = parse_assume_role_response(200, incomplete);
    ASSERT_FALSE(m.ok()) << incomplete;
    EXPECT_EQ(m.error().code, "credentials_unavailable");
  }
}

}  // namespace SY_UNITY_ID
}  // namespace sy::runtime
