#include "runtime/es256.hpp"

#include <gtest/gtest.h>

#include <string>

namespace sy::runtime {
namespace SY_UNITY_ID {

using nlohmann::json;

TEST(base64url, rfc4648_vectors_without_padding) {
  const std::pair<std::string, std::string> vectors[] = {
      {"", ""},           {"f", "Zg"},          {"fo", "Zm8"},          {"foo", "Zm9v"},
      {"foob", "Zm9vYg"}, {"fooba", "Zm9vYmE"}, {"foobar", "Zm9vYmFy"}, {"\xfb\xff", "-_8"}};
  for (const auto& [plain, encoded] : vectors) {
    EXPECT_EQ(base64url_encode(plain), encoded);
    EXPECT_EQ(base64url_decode(encoded), plain) << encoded;
  }
  for (const char* bad : {"Zg==", "Zm9v+", "Zm9v/", "Z", "Zh", "Zm9 v"})
    EXPECT_FALSE(base64url_decode(bad).has_value()) << bad;
}

class es256 : public ::testing::Test {
 protected:
  void SetUp() override {
    auto k = es256_key::generate();
    ASSERT_TRUE(k.ok()) << k.error().message;
    key_.emplace(std::move(*k));
  }
  const es256_key& key() const { return *key_; }
  std::string token(const json& claims = {{"sub", "task:t1"}, {"attempt", 2}}) const {
    auto t = key().sign({{"typ", "JWT"}}, claims);
    EXPECT_TRUE(t.ok());
    return t.ok() ? *t : std::string{};
  }
  std::optional<es256_key> key_;
};

TEST_F(es256, a_signed_token_verifies_and_carries_its_claims_and_header) {
  const auto t = token();
  auto claims = key().verify(t);
  ASSERT_TRUE(claims.ok()) << claims.error().message;
  EXPECT_EQ((*claims)["sub"], "task:t1");
  EXPECT_EQ((*claims)["attempt"], 2);
  const auto header = json::parse(*base64url_decode(t.substr(0, t.find('.'))));
  EXPECT_EQ(header, (json{{"alg", "ES256"}, {"kid", key().kid()}, {"typ", "JWT"}}));
  // The signature is JWS's raw r‖s (64 bytes), not DER.
  EXPECT_EQ(base64url_decode(t.substr(t.rfind('.') + 1))->size(), 64u);
}

TEST_F(es256, a_changed_or_forged_token_is_refused) {
  const auto t = token();
  const auto dot1 = t.find('.');
  const auto dot2 = t.rfind('.');
  auto refused = [&](const std::string& bad, const std::string& why) {
    auto r = key().verify(bad);
    ASSERT_FALSE(r.ok()) << why;
    EXPECT_EQ(r.error().code, "invalid_capability_token") << why;
    EXPECT_NE(r.error().message.find(why), std::string::npos) << r.error().message;
  };
  // Other claims under the same signature (attempt 3 instead of 2).
  refused(
      t.substr(0, dot1 + 1) + base64url_encode(R"({"attempt":3,"sub":"task:t1"})") + t.substr(dot2),
      "does not verify");
  // One bit of the signature flipped.
  std::string flipped = t;
  flipped[dot2 + 5] = flipped[dot2 + 5] == 'A' ? 'B' : 'A';
  refused(flipped, "does not verify");
  // alg none and an HMAC algorithm: refused before any signature check.
  const auto claims = t.substr(dot1 + 1, dot2 - dot1 - 1);
  for (const char* alg : {"none", "HS256", "ES384", "es256"}) {
    const json h = {{"alg", alg}, {"kid", key().kid()}};
    refused(base64url_encode(h.dump()) + "." + claims + "." + t.substr(dot2 + 1),
            "is not signed with ES256");
  }
  refused(base64url_encode(json{{"alg", "none"}}.dump()) + "." + claims + ".",
          "is not signed with ES256");
  // Another key's token, even with its own valid signature.
  auto other = es256_key::generate();
  ASSERT_TRUE(other.ok());
  refused(*other->sign({}, {{"sub", "task:t1"}}), "another key");
  refused("a.b", "compact JWS");
  refused(t + ".x", "compact JWS");
  refused(t.substr(0, dot2) + ".AAAA", "64 bytes");
  refused(t.substr(0, dot2) + ".!!!!", "base64url");
}

TEST_F(es256, the_pem_round_trip_keeps_the_key_so_old_tokens_verify_after_a_restart) {
  const auto t = token();
  const auto pem = key().to_pem();
  ASSERT_NE(pem.find("BEGIN PRIVATE KEY"), std::string::npos) << pem;
  auto again = es256_key::from_pem(pem);
  ASSERT_TRUE(again.ok()) << again.error().message;
  EXPECT_EQ(again->kid(), key().kid());
  EXPECT_TRUE(again->verify(t).ok());
  EXPECT_TRUE(key().verify(*again->sign({}, {{"sub", "x"}})).ok());
  EXPECT_FALSE(es256_key::from_pem("not a key").ok());
}

TEST_F(es256, a_verifier_built_from_the_public_jwk_accepts_the_tokens_and_cannot_sign) {
  const auto jwk = key().public_jwk();
  EXPECT_EQ(jwk["kty"], "EC");
  EXPECT_EQ(jwk["crv"], "P-256");
  EXPECT_EQ(jwk["alg"], "ES256");
  EXPECT_FALSE(jwk.contains("d"));  // never the private half
  auto verifier = es256_key::from_jwk(jwk);
  ASSERT_TRUE(verifier.ok()) << verifier.error().message;
  EXPECT_EQ(verifier->kid(), key().kid());
  EXPECT_FALSE(verifier->has_private());
  EXPECT_TRUE(verifier->verify(token()).ok());
  EXPECT_FALSE(verifier->sign({}, {}).ok());
  // A point that is not on the curve is refused.
  json off = jwk;
  off["y"] = off["x"];
  EXPECT_FALSE(es256_key::from_jwk(off).ok());
}

}  // namespace SY_UNITY_ID
}  // namespace sy::runtime
