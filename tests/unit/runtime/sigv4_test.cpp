#include "runtime/sigv4.hpp"

#include <gtest/gtest.h>

#include <string>

// Cases from AWS's SigV4 test suite (awslabs/aws-c-auth, tests/aws-signing-test-suite/v4): the
// same credentials, region, service and time in each; the expected canonical requests and
// signatures are the suite's.

namespace sy::runtime {
namespace SY_UNITY_ID {

constexpr int64_t suite_time = 1440938160;  // 2015-08-30T12:36:00Z

aws_credentials suite_credentials(std::string token = {}) {
  return {"AKIDEXAMPLE", "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY", std::move(token)};
}

sigv4_scope suite_scope(bool content_sha256 = false) {
  return {"us-east-1", "service", suite_time, content_sha256};
}

std::string header(const sigv4_result& r, const std::string& name) {
  for (const auto& [n, v] : r.headers)
    if (n == name) return v;
  return {};
}

TEST(sigv4, get_vanilla) {
  auto r = sigv4_sign({"GET", "/", {}, {{"Host", "example.amazonaws.com"}}, ""},
                      suite_credentials(), suite_scope());
  EXPECT_EQ(r.canonical_request,
            "GET\n/\n\nhost:example.amazonaws.com\nx-amz-date:20150830T123600Z\n\n"
            "host;x-amz-date\n"
            "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  EXPECT_EQ(r.signature, "5fa00fa31553b73ebf1942676e86291e8372ff2a2260956d9b8aae1d763fbf31");
  EXPECT_EQ(header(r, "Authorization"),
            "AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20150830/us-east-1/service/aws4_request, "
            "SignedHeaders=host;x-amz-date, "
            "Signature=5fa00fa31553b73ebf1942676e86291e8372ff2a2260956d9b8aae1d763fbf31");
}

TEST(sigv4, get_vanilla_query_order_key_case) {
  auto r = sigv4_sign({"GET",
                       "/",
                       {{"Param2", "value2"}, {"Param1", "value1"}},
                       {{"Host", "example.amazonaws.com"}},
                       ""},
                      suite_credentials(), suite_scope());
  EXPECT_EQ(r.canonical_request.substr(0, r.canonical_request.find("host:")),
            "GET\n/\nParam1=value1&Param2=value2\n");
  EXPECT_EQ(r.signature, "b97d918cfa904a5beff61c982a1b6f458b799221646efd99d3219ec94cdf2500");
}

TEST(sigv4, get_header_value_trim) {
  auto r = sigv4_sign({"GET",
                       "/",
                       {},
                       {{"Host", "example.amazonaws.com"},
                        {"My-Header1", " value1"},
                        {"My-Header2", " \"a   b   c\""}},
                       ""},
                      suite_credentials(), suite_scope());
  EXPECT_NE(r.canonical_request.find("my-header1:value1\nmy-header2:\"a b c\"\n"),
            std::string::npos)
      << r.canonical_request;
  EXPECT_EQ(r.signature, "acc3ed3afb60bb290fc8d2dd0098b9911fcaa05412b367055dee359757a9c736");
}

TEST(sigv4, get_vanilla_with_session_token) {
  auto r = sigv4_sign(
      {"GET", "/", {}, {{"Host", "example.amazonaws.com"}}, ""},
      suite_credentials("6e86291e8372ff2a2260956d9b8aae1d763fbf315fa00fa31553b73ebf194267"),
      suite_scope());
  EXPECT_EQ(r.signature, "07ec1639c89043aa0e3e2de82b96708f198cceab042d4a97044c66dd9f74e7f8");
  EXPECT_EQ(header(r, "X-Amz-Security-Token"),
            "6e86291e8372ff2a2260956d9b8aae1d763fbf315fa00fa31553b73ebf194267");
}

TEST(sigv4, post_sts_header_before) {
  auto r = sigv4_sign(
      {"POST", "/", {}, {{"Host", "example.amazonaws.com"}}, ""},
      suite_credentials("AQoDYXdzEPT//////////"
                        "wEXAMPLEtc764bNrC9SAPBSM22wDOk4x4HIZ8j4FZTwdQWLWsKWHGBuFqwAeMicRXmxfpSPfIe"
                        "oIYRqTflfKD8YUuwthAx7mSEI/qkPpKPi/"
                        "kMcGdQrmGdeehM4IC1NtBmUpp2wUE8phUZampKsburEDy0KPkyQDYwT7WZ0wq5VSXDvp75YU9H"
                        "FvlRd8Tx6q6fE8YQcHNVXAkiY9q6d+xo0rKwT38xVqr7ZD0u0iPPkUL64lIZbqBAz+"
                        "scqKmlzm8FDrypNC9Yjc8fPOLn9FX9KSYvKTr4rvx3iSIlTJabIQwj2ICCR/oLxBA=="),
      suite_scope());
  EXPECT_EQ(r.signature, "85d96828115b5dc0cfc3bd16ad9e210dd772bbebba041836c64533a82be05ead");
}

// The shape of an STS AssumeRole call: a form body, its hash signed in a header.
TEST(sigv4, post_x_www_form_urlencoded) {
  auto r = sigv4_sign({"POST",
                       "/",
                       {},
                       {{"Content-Type", "application/x-www-form-urlencoded"},
                        {"Host", "example.amazonaws.com"},
                        {"Content-Length", "13"}},
                       "Param1=value1"},
                      suite_credentials(), suite_scope(/*content_sha256=*/true));
  EXPECT_EQ(
      r.canonical_request,
      "POST\n/\n\ncontent-length:13\ncontent-type:application/x-www-form-urlencoded\n"
      "host:example.amazonaws.com\n"
      "x-amz-content-sha256:9095672bbd1f56dfc5b65f3e153adc8731a4a654192329106275f4c7b24d0b6e\n"
      "x-amz-date:20150830T123600Z\n\n"
      "content-length;content-type;host;x-amz-content-sha256;x-amz-date\n"
      "9095672bbd1f56dfc5b65f3e153adc8731a4a654192329106275f4c7b24d0b6e");
  EXPECT_EQ(r.string_to_sign,
            "AWS4-HMAC-SHA256\n20150830T123600Z\n20150830/us-east-1/service/aws4_request\n"
            "b1edd1d03544c25390e32085d55b57acc9a3961bb59415ff86c45c3d89d16cfb");
  EXPECT_EQ(r.signature, "d3875051da38690788ef43de4db0d8f280229d82040bfac253562e56c3f20e0b");
}

TEST(sigv4, uri_encoding_keeps_only_unreserved_characters) {
  EXPECT_EQ(sigv4_uri_encode("a-b_c.d~e"), "a-b_c.d~e");
  EXPECT_EQ(sigv4_uri_encode("a b/c+d=e"), "a%20b%2Fc%2Bd%3De");
  EXPECT_EQ(sigv4_uri_encode("/a b/c", true), "/a%20b/c");
  EXPECT_EQ(sigv4_uri_encode("\xc3\xa9"), "%C3%A9");
}

}  // namespace SY_UNITY_ID
}  // namespace sy::runtime
