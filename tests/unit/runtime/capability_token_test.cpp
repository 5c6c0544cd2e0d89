#include "runtime/capability_token.hpp"

#include <gtest/gtest.h>

#include "tests/support/temp_dir.hpp"

namespace sy::runtime {
namespace SY_UNITY_ID {

using nlohmann::json;

constexpr int64_t t0_ms = 1'800'000'000'000;
constexpr int64_t lead_ms = 60'000;
constexpr int64_t ttl_ms = 600'000;

class capability_token : public ::testing::Test {
 protected:
  void SetUp() override {
    auto r = key_ring::open({dir_.sub("keys"), "", lead_ms, ttl_ms}, t0_ms);
    ASSERT_TRUE(r.ok()) << r.error().message;
    ring_.emplace(std::move(*r));
  }
  capability_claims claims() const {
    capability_claims c;
    c.iss = "switchyard";
    c.aud = "switchyard-task";
    c.jti = "j1";
    c.tenant = "acme";
    c.job_id = "job_1";
    c.task_id = "task_1";
    c.runtime = "resize";
    c.attempt = 2;
    c.iat_s = t0_ms / 1000;
    c.nbf_s = t0_ms / 1000;
    c.exp_s = t0_ms / 1000 + 300;
    c.grants.read = {*config::parse_s3_prefix("s3://data/acme/in/")};
    c.grants.scratch = {*config::parse_s3_prefix("s3://tmp/acme/task_1/")};
    return c;
  }
  token_expectations expect(int64_t now_ms = t0_ms) const {
    return {"switchyard", "switchyard-task", now_ms, 30};
  }
  std::string mint(const capability_claims& c, int64_t now_ms = t0_ms) const {
    auto t = mint_token(*ring_, c, now_ms);
    EXPECT_TRUE(t.ok());
    return t.ok() ? *t : std::string{};
  }
  test::temp_dir dir_;
  std::optional<key_ring> ring_;
};

TEST_F(capability_token, a_minted_token_checks_and_gives_back_its_claims) {
  auto c = check_token(mint(claims()), *ring_, expect());
  ASSERT_TRUE(c.ok()) << c.error().message;
  EXPECT_EQ(c->task_id, "task_1");
  EXPECT_EQ(c->attempt, 2);
  EXPECT_EQ(c->tenant, "acme");
  EXPECT_EQ(c->runtime, "resize");
  ASSERT_EQ(c->grants.read.size(), 1u);
  EXPECT_EQ(c->grants.read[0].uri(), "s3://data/acme/in/");
  EXPECT_TRUE(c->grants.write.empty());
  EXPECT_EQ(c->grants.scratch[0].uri(), "s3://tmp/acme/task_1/");
  const auto j = claims_json(claims());
  EXPECT_EQ(j["sub"], "task:task_1");
  for (const char* k : {"iss", "aud", "sub", "iat", "nbf", "exp", "jti", "tenant", "job_id",
                        "task_id", "attempt", "runtime", "grants"})
    EXPECT_TRUE(j.contains(k)) << k;
}

TEST_F(capability_token, expiry_not_before_issuer_and_audience_are_checked) {
  const auto t = mint(claims());
  const int64_t exp_ms = claims().exp_s * 1000;
  EXPECT_TRUE(check_token(t, *ring_, expect(exp_ms + 29'000)).ok());  // within the skew
  auto late = check_token(t, *ring_, expect(exp_ms + 30'000));
  ASSERT_FALSE(late.ok());
  EXPECT_EQ(late.error().code, "invalid_capability_token");
  EXPECT_NE(late.error().message.find("expired"), std::string::npos);
  auto early = claims();
  early.nbf_s += 120;
  EXPECT_NE(check_token(mint(early), *ring_, expect()).error().message.find("not valid yet"),
            std::string::npos);
  auto other_iss = expect();
  other_iss.iss = "someone-else";
  EXPECT_FALSE(check_token(t, *ring_, other_iss).ok());
  auto other_aud = expect();
  other_aud.aud = "query-service";
  EXPECT_FALSE(check_token(t, *ring_, other_aud).ok());
}

TEST_F(capability_token, a_token_replayed_for_another_task_or_with_a_forged_sub_is_refused) {
  auto c = claims();
  const auto t = mint(c);
  // Another task's claims pasted under this token's signature.
  auto other = claims_json(c);
  other["task_id"] = "task_2";
  other["sub"] = "task:task_2";
  const auto dot1 = t.find('.');
  const auto dot2 = t.rfind('.');
  const auto pasted = t.substr(0, dot1 + 1) + base64url_encode(other.dump()) + t.substr(dot2);
  EXPECT_FALSE(check_token(pasted, *ring_, expect()).ok());
  // A sub that does not match task_id, even when properly signed.
  auto forged = claims_json(c);
  forged["sub"] = "task:task_2";
  auto signed_forged = ring_->signer(t0_ms).sign({{"typ", "JWT"}}, forged);
  ASSERT_TRUE(signed_forged.ok());
  EXPECT_NE(check_token(*signed_forged, *ring_, expect()).error().message.find("sub"),
            std::string::npos);
}

TEST_F(capability_token, tokens_verify_across_a_rotation_until_their_key_is_retired) {
  const auto before = mint(claims());
  ASSERT_TRUE(ring_->rotate(t0_ms));
  auto c = claims();
  c.exp_s = (t0_ms + lead_ms) / 1000 + 300;
  const auto after = mint(c, t0_ms + lead_ms);  // signed by the new key
  EXPECT_NE(after.substr(0, after.find('.')), before.substr(0, before.find('.')));  // other kid
  EXPECT_TRUE(check_token(before, *ring_, expect(t0_ms + lead_ms)).ok());
  EXPECT_TRUE(check_token(after, *ring_, expect(t0_ms + lead_ms)).ok());
  // Once the old key is no longer published, its tokens fail on the key, whatever their exp.
  auto long_lived = claims();
  long_lived.exp_s += 10'000;
  const auto old_long = mint(long_lived);
  const int64_t retired = t0_ms + lead_ms + ttl_ms;
  auto refused = check_token(old_long, *ring_, expect(retired));
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.error().message.find("not published"), std::string::npos);
}

TEST_F(capability_token, grants_that_are_not_canonical_are_refused_even_when_signed) {
  auto j = claims_json(claims());
  j["grants"]["read"] = {"s3://data/acme/../other/"};
  auto t = ring_->signer(t0_ms).sign({{"typ", "JWT"}}, j);
  ASSERT_TRUE(t.ok());
  EXPECT_NE(check_token(*t, *ring_, expect()).error().message.find("grants"), std::string::npos);
}

}  // namespace SY_UNITY_ID
}  // namespace sy::runtime
