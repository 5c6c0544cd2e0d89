#include "runtime/webhook_signature.hpp"

#include <gtest/gtest.h>

#include <string>

namespace sy::runtime {
namespace SY_UNITY_ID {

// Computed independently of our code (one shell line):
//   printf '%s' '1700000000.{"job_id":"job_01HX","sequence":3,"state":"succeeded"}' |
//     openssl dgst -sha256 -hmac whsec_test
constexpr const char* kSecret = "whsec_test";
constexpr int64_t kTime = 1'700'000'000;
constexpr const char* kBody = R"({"job_id":"job_01HX","sequence":3,"state":"succeeded"})";
constexpr const char* kExpected =
    "t=1700000000,v1=1448b3bd82830c0cd42b6c008c0ea7728429f5559128df3e6af3620579f9b7df";

void expect_rejected(const status& st, const std::string& why) {
  ASSERT_FALSE(st.ok()) << "accepted, expected: " << why;
  EXPECT_EQ(st.error().code, "invalid_webhook_signature");
  EXPECT_NE(st.error().message.find(why), std::string::npos) << st.error().message;
}

TEST(WebhookSignature, MatchesTheOpensslCliVector) {
  EXPECT_EQ(webhook_signature(kSecret, kTime, kBody), kExpected);
}

TEST(WebhookSignature, EmptyBodyVector) {
  // printf '%s' '1700000000.' | openssl dgst -sha256 -hmac whsec_test
  EXPECT_EQ(webhook_signature(kSecret, kTime, ""),
            "t=1700000000,v1=5967f3c560522fa40cf2876ebc3c3a08551dd6959aaade3b413460591895bdcc");
}

TEST(WebhookSignature, DependsOnSecretTimeAndBody) {
  const std::string base = webhook_signature(kSecret, kTime, kBody);
  EXPECT_NE(webhook_signature("whsec_other", kTime, kBody), base);
  EXPECT_NE(webhook_signature(kSecret, kTime + 1, kBody), base);
  EXPECT_NE(webhook_signature(kSecret, kTime, std::string(kBody) + " "), base);
}

TEST(WebhookSignature, VerifiesWithinTheTolerance) {
  EXPECT_TRUE(verify_webhook_signature(kSecret, kExpected, kBody, kTime).ok());
  EXPECT_TRUE(verify_webhook_signature(kSecret, kExpected, kBody, kTime + 300, 300).ok());
  EXPECT_TRUE(verify_webhook_signature(kSecret, kExpected, kBody, kTime - 300, 300).ok());
  expect_rejected(verify_webhook_signature(kSecret, kExpected, kBody, kTime + 301, 300),
                  "more than 300 s away");
  expect_rejected(verify_webhook_signature(kSecret, kExpected, kBody, kTime - 301, 300),
                  "more than 300 s away");
}

TEST(WebhookSignature, RejectsAnotherBodyOrSecret) {
  expect_rejected(verify_webhook_signature(kSecret, kExpected, R"({"job_id":"x"})", kTime),
                  "no v1 signature matches");
  expect_rejected(verify_webhook_signature("whsec_other", kExpected, kBody, kTime),
                  "no v1 signature matches");
  // A replayed signature with a fresh timestamp does not verify: t is signed too.
  const std::string moved =
      "t=1700000100,v1=1448b3bd82830c0cd42b6c008c0ea7728429f5559128df3e6af3620579f9b7df";
  expect_rejected(verify_webhook_signature(kSecret, moved, kBody, kTime + 100),
                  "no v1 signature matches");
}

TEST(WebhookSignature, AcceptsAnyMatchingV1AndIgnoresUnknownKeys) {
  const std::string v1 = std::string(kExpected).substr(std::string(kExpected).find("v1="));
  const std::string header = "t=1700000000, v1=" + std::string(64, '0') + ", v2=abc, " + v1;
  EXPECT_TRUE(verify_webhook_signature(kSecret, header, kBody, kTime).ok());
}

TEST(WebhookSignature, RejectsMalformedHeaders) {
  const std::string v1 = "v1=1448b3bd82830c0cd42b6c008c0ea7728429f5559128df3e6af3620579f9b7df";
  expect_rejected(verify_webhook_signature(kSecret, "", kBody, kTime), "malformed header");
  expect_rejected(verify_webhook_signature(kSecret, v1, kBody, kTime), "no t= timestamp");
  expect_rejected(verify_webhook_signature(kSecret, "t=1700000000", kBody, kTime),
                  "no v1= signature");
  expect_rejected(verify_webhook_signature(kSecret, "t=17e8," + v1, kBody, kTime),
                  "malformed timestamp");
  expect_rejected(verify_webhook_signature(kSecret, "t=1,t=1700000000," + v1, kBody, kTime),
                  "malformed timestamp");
  expect_rejected(
      verify_webhook_signature(kSecret, "t=1700000000,v1=" + std::string(63, 'a'), kBody, kTime),
      "no v1 signature matches");
}

}  // namespace SY_UNITY_ID
}  // namespace sy::runtime
