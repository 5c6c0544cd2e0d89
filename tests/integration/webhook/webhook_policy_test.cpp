// The network policy at delivery time: a target whose addresses are all denied fails
// permanently without any connection being made.

#include "tests/integration/webhook/webhook_env.hpp"

namespace sy::testing {
namespace SY_UNITY_ID {

using runtime::webhook_client;
using runtime::webhook_policy;

webhook_policy with_allow(webhook_policy p, const std::string& allow) {
  auto list = config::parse_network_list(allow);
  EXPECT_TRUE(list.ok());
  p.allow = *list;
  return p;
}

TEST_F(WebhookTest, MetadataAddressIsPermanentlyRefusedWithoutConnecting) {
  webhook_client client(ioc.get_executor(), loopback_policy(10'000), kWebhookKey);
  const auto start = std::chrono::steady_clock::now();
  auto out = deliver(client, "http://169.254.169.254/latest/meta-data/", body("j", 1));
  // A connect attempt to a link-local address would hang until the 10 s timeout or fail with a
  // network error; the policy answers before any of that. (Half the timeout: a loaded machine's
  // scheduling cannot make an answer that never connected look like one that waited.)
  EXPECT_LT(elapsed_ms(start), 5'000);
  EXPECT_FALSE(out.delivered);
  EXPECT_TRUE(out.permanent);
  EXPECT_EQ(out.status_code, 0);
  EXPECT_EQ(out.error,
            "no address of 169.254.169.254 may receive webhooks: 169.254.169.254 is in the denied "
            "network 169.254.0.0/16 (webhook_deny_networks)");
  out = deliver(client, "http://[::ffff:169.254.169.254]/", body("j", 1));
  EXPECT_TRUE(out.permanent);
  EXPECT_NE(out.error.find("169.254.0.0/16"), std::string::npos) << out.error;
}

TEST_F(WebhookTest, LoopbackIsRefusedUnlessAllowed) {
  webhook_policy no_loopback = loopback_policy();
  no_loopback.allow_loopback = false;
  webhook_client client(ioc.get_executor(), no_loopback, kWebhookKey);
  auto out = deliver(client, receiver.url(), body("j", 1));
  EXPECT_FALSE(out.delivered);
  EXPECT_TRUE(out.permanent);
  EXPECT_NE(out.error.find("127.0.0.1 is a loopback address and webhook_allow_loopback is false"),
            std::string::npos)
      << out.error;
  // A name is judged by what it resolves to, at every delivery (this is what defeats DNS
  // rebinding to an internal address after the submission-time check).
  out = deliver(client, "http://localhost:" + std::to_string(receiver.port()) + "/", body("j", 1));
  EXPECT_TRUE(out.permanent);
  EXPECT_NE(out.error.find("no address of localhost may receive webhooks"), std::string::npos)
      << out.error;
  EXPECT_NE(out.error.find("loopback"), std::string::npos) << out.error;

  // Nothing reached the receiver; the same target with loopback allowed does reach it, so the
  // connection counter is live.
  EXPECT_EQ(receiver.connections(), 0);
  webhook_client allowed(ioc.get_executor(), loopback_policy(), kWebhookKey);
  EXPECT_TRUE(deliver(allowed, receiver.url(), body("j", 1)).delivered);
  EXPECT_EQ(receiver.connections(), 1);
}

TEST_F(WebhookTest, AllowListIsEnforced) {
  webhook_client outside(ioc.get_executor(), with_allow(loopback_policy(), "10.0.0.0/8"),
                         kWebhookKey);
  auto out = deliver(outside, receiver.url(), body("j", 1));
  EXPECT_FALSE(out.delivered);
  EXPECT_TRUE(out.permanent);
  EXPECT_NE(out.error.find("127.0.0.1 is outside webhook_allow_networks (10.0.0.0/8)"),
            std::string::npos)
      << out.error;
  EXPECT_EQ(receiver.connections(), 0);

  webhook_client inside(ioc.get_executor(), with_allow(loopback_policy(), "10.0.0.0/8,127.0.0.0/8"),
                        kWebhookKey);
  out = deliver(inside, receiver.url(), body("j", 1));
  EXPECT_TRUE(out.delivered) << out.error;
  EXPECT_EQ(receiver.delivered(), 1);
}

TEST_F(WebhookTest, DenyListIsEnforced) {
  webhook_policy p = loopback_policy();
  auto deny = config::parse_network_list("127.0.0.0/8");
  ASSERT_TRUE(deny.ok());
  p.deny = *deny;
  webhook_client client(ioc.get_executor(), p, kWebhookKey);
  auto out = deliver(client, receiver.url(), body("j", 1));
  EXPECT_TRUE(out.permanent);
  EXPECT_NE(out.error.find("denied network 127.0.0.0/8"), std::string::npos) << out.error;
  EXPECT_EQ(receiver.connections(), 0);
}

TEST_F(WebhookTest, SubmissionCheckMatchesDeliveryPolicy) {
  const webhook_policy p = loopback_policy();
  EXPECT_TRUE(runtime::check_webhook_url(receiver.url() + "/hook", p).ok());
  auto st = runtime::check_webhook_url("http://169.254.169.254/", p);
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.error().code, "invalid_webhook_url");
  EXPECT_EQ(st.error().param, "webhook_url");
  EXPECT_NE(st.error().message.find("169.254.0.0/16"), std::string::npos);
  webhook_policy strict = p;
  strict.allow_loopback = false;
  EXPECT_FALSE(runtime::check_webhook_url(receiver.url(), strict).ok());
  EXPECT_FALSE(runtime::check_webhook_url("http://user@example.com/", p).ok());
}

}  // namespace SY_UNITY_ID
}  // namespace sy::testing
