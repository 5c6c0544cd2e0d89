#include "api/auth.hpp"

#include <gtest/gtest.h>

#include "config/sha256.hpp"

namespace sy::api {
namespace SY_UNITY_ID {

authenticator with_keys() {
  return authenticator(
      {{config::sha256_hex("sk-alpha"), "alpha"}, {config::sha256_hex("sk-beta"), "beta"}});
}

TEST(authenticator, no_keys_means_default_tenant) {
  authenticator auth({});
  EXPECT_EQ(*auth.tenant_for(""), "default");
  EXPECT_EQ(*auth.tenant_for("Bearer whatever"), "default");
}

TEST(authenticator, right_key_gives_its_tenant) {
  auto auth = with_keys();
  auto t = auth.tenant_for("Bearer sk-alpha");
  ASSERT_TRUE(t.ok()) << t.error().message;
  EXPECT_EQ(*t, "alpha");
  EXPECT_EQ(*auth.tenant_for("bearer  sk-beta "), "beta");
}

TEST(authenticator, wrong_key_is_invalid) {
  auto auth = with_keys();
  for (const char* h :
       {"Bearer sk-gamma", "Bearer sk-alph", "Basic sk-alpha", "sk-alpha", "Bearer", "Bearer "}) {
    auto t = auth.tenant_for(h);
    ASSERT_FALSE(t.ok()) << h;
    EXPECT_EQ(t.error().code, "invalid_api_key") << h;
  }
}

TEST(authenticator, missing_header_is_missing_api_key) {
  auto t = with_keys().tenant_for("");
  ASSERT_FALSE(t.ok());
  EXPECT_EQ(t.error().code, "missing_api_key");
}

TEST(authenticator, hashes_not_keys_are_configured) {
  // Presenting the stored hash itself must not authenticate.
  auto t = with_keys().tenant_for("Bearer " + config::sha256_hex("sk-alpha"));
  EXPECT_FALSE(t.ok());
}

TEST(authenticator, only_a_worker_key_passes_the_worker_check) {
  authenticator auth({{config::sha256_hex("sk-alpha"), "alpha", "client"},
                      {config::sha256_hex("wk-1"), "", "worker"}});
  EXPECT_TRUE(auth.worker("Bearer wk-1").ok());
  EXPECT_EQ(auth.worker("Bearer sk-alpha").error().code, "invalid_api_key");
  EXPECT_EQ(auth.worker("").error().code, "missing_api_key");
  EXPECT_EQ(auth.tenant_for("Bearer wk-1").error().code, "invalid_api_key");
  EXPECT_TRUE(authenticator({}).worker("").ok());  // no keys: loopback only, no auth
  EXPECT_EQ(auth.admin("Bearer wk-1").error().code, "invalid_api_key");
}

TEST(authenticator, only_an_admin_key_passes_the_admin_check) {
  authenticator auth(
      {{config::sha256_hex("wk-1"), "", "worker"}, {config::sha256_hex("ak-1"), "", "admin"}});
  EXPECT_TRUE(auth.admin("Bearer ak-1").ok());
  EXPECT_EQ(auth.admin("Bearer wk-1").error().code, "invalid_api_key");
  EXPECT_EQ(auth.admin("").error().code, "missing_api_key");
  EXPECT_EQ(auth.worker("Bearer ak-1").error().code, "invalid_api_key");
  EXPECT_EQ(auth.tenant_for("Bearer ak-1").error().code, "invalid_api_key");
}

}  // namespace SY_UNITY_ID
}  // namespace sy::api
