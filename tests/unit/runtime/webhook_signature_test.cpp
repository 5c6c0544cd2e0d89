#include "runtime/webhook_signature.hpp"

#include <gtest/gtest.h>

#include <fstream>
#include <string>

#include "tests/support/temp_dir.hpp"

namespace sy::runtime {
namespace SY_UNITY_ID {

// The deprecated X-Switchyard-Signature. Computed independently of our code (one shell line):
//   printf '%s' '1700000000.{"job_id":"job_01HX","sequence":3,"state":"succeeded"}' |
//     openssl dgst -sha256 -hmac whsec_test
// The functions take the key, so these are the ten bytes "whsec_test" (a secret file holding
// that text would stand for the base64-decoded key instead: see webhook_key).
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

// --- Standard Webhooks (webhook-id, webhook-timestamp, webhook-signature)

// The specification's published test vector (also in the standardwebhooks libraries' tests).
constexpr const char* kSpecSecret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";
constexpr const char* kSpecId = "msg_p5jXN8AQM9LWM0D4loKWxJek";
constexpr int64_t kSpecTime = 1'614'265'330;
constexpr const char* kSpecBody = R"({"test": 2432232314})";
constexpr const char* kSpecSignature = "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=";

// Ours, computed independently with Python:
//   key = b"switchyard-standard-webhooks-key"   # the secret whsec_c3dpdGNo...a2V5
//   base64.b64encode(hmac.new(key, b'whd_42.1700000000.' + body, hashlib.sha256).digest())
constexpr const char* kKeySecret = "whsec_c3dpdGNoeWFyZC1zdGFuZGFyZC13ZWJob29rcy1rZXk=";
constexpr const char* kKey = "switchyard-standard-webhooks-key";
constexpr const char* kStandard = "v1,kADtZBsUJKQBEKRaZJvM5qsIRSndV+cKBV1NeCzkkaU=";

std::string key(std::string_view secret) {
  auto k = webhook_key(secret);
  EXPECT_TRUE(k.ok()) << k.error().message;
  return k.ok() ? *k : std::string{};
}

TEST(StandardWebhookSignature, MatchesTheSpecificationsVector) {
  EXPECT_EQ(standard_webhook_signature(key(kSpecSecret), kSpecId, kSpecTime, kSpecBody),
            kSpecSignature);
  EXPECT_TRUE(verify_standard_webhook(key(kSpecSecret), kSpecId, "1614265330", kSpecSignature,
                                      kSpecBody, kSpecTime)
                  .ok());
}

TEST(StandardWebhookSignature, MatchesThePythonVector) {
  EXPECT_EQ(key(kKeySecret), kKey);
  EXPECT_EQ(standard_webhook_signature(kKey, "whd_42", kTime, kBody), kStandard);
  // Without the prefix a secret is its own bytes:
  //   base64.b64encode(hmac.new(b"whsec-test", b'whd_42.1700000000.' + body, ...).digest())
  EXPECT_EQ(key("whsec-test"), "whsec-test");
  EXPECT_EQ(standard_webhook_signature(key("whsec-test"), "whd_42", kTime, kBody),
            "v1,R9ViTnK6X6dYOXN7NdkMqxnnTwNW2eY5rRGooE5zJWQ=");
  // The deprecated header with the same key, for a receiver that still checks it:
  //   hmac.new(key, b'1700000000.' + body, hashlib.sha256).hexdigest()
  EXPECT_EQ(webhook_signature(kKey, kTime, kBody),
            "t=1700000000,v1=11ed407b1f671e73f4abc985f45b75963e034f071fc4c15eba85e261ff2cab52");
}

TEST(StandardWebhookSignature, DependsOnKeyIdTimeAndBody) {
  const std::string base = standard_webhook_signature(kKey, "whd_42", kTime, kBody);
  EXPECT_NE(standard_webhook_signature("other", "whd_42", kTime, kBody), base);
  EXPECT_NE(standard_webhook_signature(kKey, "whd_43", kTime, kBody), base);
  EXPECT_NE(standard_webhook_signature(kKey, "whd_42", kTime + 1, kBody), base);
  EXPECT_NE(standard_webhook_signature(kKey, "whd_42", kTime, std::string(kBody) + " "), base);
}

TEST(StandardWebhookSignature, VerifiesWithinTheToleranceOnly) {
  auto verify = [](int64_t now, std::string_view ts = "1700000000") {
    return verify_standard_webhook(kKey, "whd_42", ts, kStandard, kBody, now, 300);
  };
  EXPECT_TRUE(verify(kTime + 300).ok());
  EXPECT_TRUE(verify(kTime - 300).ok());
  expect_rejected(verify(kTime + 301), "more than 300 s away");
  expect_rejected(verify(kTime - 301), "more than 300 s away");
  expect_rejected(verify(kTime, ""), "malformed webhook-timestamp");
  expect_rejected(verify(kTime, "17e8"), "malformed webhook-timestamp");
  expect_rejected(verify(kTime, " 1700000000"), "malformed webhook-timestamp");
}

TEST(StandardWebhookSignature, AcceptsAnyMatchingV1AmongSpaceSeparatedEntries) {
  const std::string other = standard_webhook_signature("old key", "whd_42", kTime, kBody);
  const std::string rotation = other + " v1a,abc " + kStandard;
  EXPECT_TRUE(verify_standard_webhook(kKey, "whd_42", "1700000000", rotation, kBody, kTime).ok());
  expect_rejected(verify_standard_webhook(kKey, "whd_42", "1700000000", other, kBody, kTime),
                  "no v1 signature matches");
  expect_rejected(verify_standard_webhook(kKey, "whd_43", "1700000000", kStandard, kBody, kTime),
                  "no v1 signature matches");
  expect_rejected(
      verify_standard_webhook(kKey, "whd_42", "1700000000", kStandard, R"({"job_id":"x"})", kTime),
      "no v1 signature matches");
  expect_rejected(verify_standard_webhook(kKey, "whd_42", "1700000000", "", kBody, kTime),
                  "no v1, signature");
  expect_rejected(verify_standard_webhook(kKey, "whd_42", "1700000000",
                                          std::string(kStandard).substr(3), kBody, kTime),
                  "no v1, signature");
}

TEST(WebhookKey, DecodesWhsecBase64AndKeepsOtherSecretsAsBytes) {
  EXPECT_EQ(key("whsec_AAEC"), std::string("\x00\x01\x02", 3));
  EXPECT_EQ(key("whsec_YQ=="), "a");
  EXPECT_EQ(key("whsec_YQ"), "a");  // padding may be left out
  EXPECT_EQ(key("whsec_YWI="), "ab");
  EXPECT_EQ(key("whsec_YWI"), "ab");
  EXPECT_EQ(key("whsec_+/+/"), "\xfb\xff\xbf");
  EXPECT_EQ(key("0123abcd"), "0123abcd");  // a hex secret of an earlier release: raw bytes
  EXPECT_EQ(key("WHSEC_YQ=="), "WHSEC_YQ==");
  for (const char* bad : {"whsec_", "whsec_Y", "whsec_YQ=", "whsec_Y===", "whsec_YQ==YQ==",
                          "whsec_a-b_", "whsec_YW I=", "whsec_=YWI"}) {
    auto k = webhook_key(bad);
    ASSERT_FALSE(k.ok()) << bad;
    EXPECT_EQ(k.error().code, "webhook_secret") << bad;
  }
}

TEST(WebhookKey, TheConfiguredSecretIsDecodedAndABadOneNamesItsFile) {
  config::settings cfg;
  test::temp_dir dir;
  cfg.data_dir = dir.path();
  cfg.webhook_secret_file = dir.sub("secret");
  cfg.webhook_secret = kKeySecret;
  auto k = load_or_create_webhook_key(cfg);
  ASSERT_TRUE(k.ok()) << k.error().message;
  EXPECT_EQ(*k, kKey);
  cfg.webhook_secret = "whsec_not base64!";
  k = load_or_create_webhook_key(cfg);
  ASSERT_FALSE(k.ok());
  EXPECT_EQ(k.error().code, "webhook_secret");
  EXPECT_NE(k.error().message.find(dir.sub("secret")), std::string::npos) << k.error().message;
  EXPECT_NE(k.error().message.find("base64"), std::string::npos) << k.error().message;
}

TEST(WebhookKey, ANewDataDirGetsAWhsecSecretAndAnOldHexOneStaysRaw) {
  config::settings cfg;
  test::temp_dir dir;
  cfg.data_dir = dir.path();
  auto k = load_or_create_webhook_key(cfg);
  ASSERT_TRUE(k.ok()) << k.error().message;
  EXPECT_EQ(k->size(), 32u);
  std::string secret;
  std::getline(std::ifstream(dir.sub("webhook_secret")), secret);
  EXPECT_EQ(secret.rfind("whsec_", 0), 0u) << secret;
  EXPECT_EQ(key(secret), *k);
  auto again = load_or_create_webhook_key(cfg);  // the second start reads it back
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(*again, *k);

  const std::string hex(64, 'a');
  std::ofstream(dir.sub("webhook_secret"), std::ios::trunc) << hex << "\n";
  auto old = load_or_create_webhook_key(cfg);
  ASSERT_TRUE(old.ok());
  EXPECT_EQ(*old, hex);

  std::ofstream(dir.sub("webhook_secret"), std::ios::trunc) << "whsec_%%%\n";
  auto bad = load_or_create_webhook_key(cfg);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().message.find(dir.sub("webhook_secret")), std::string::npos);
}

}  // namespace SY_UNITY_ID
}  // namespace sy::runtime
