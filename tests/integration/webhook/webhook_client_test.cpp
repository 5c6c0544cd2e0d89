// The webhook client against the receiver: what is sent, and how each kind of failure is
// reported (retryable or permanent).

#include <nlohmann/json.hpp>

#include <boost/asio/co_spawn.hpp>

#include <memory>
#include <optional>

#include "tests/integration/webhook/webhook_env.hpp"
#include "tests/support/wait.hpp"

namespace sy::testing {
namespace SY_UNITY_ID {

using runtime::webhook_client;

int64_t now_s() {
  return std::chrono::duration_cast<std::chrono::seconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

TEST_F(WebhookTest, DeliversASignedPost) {
  webhook_client client(ioc.get_executor(), loopback_policy(), kWebhookKey);
  const std::string b = body("job_01A", 3);
  auto out = deliver(client, receiver.url() + "/hooks/jobs?tenant=t1", b, "dlv_01A_3");
  EXPECT_TRUE(out.delivered) << out.error;
  EXPECT_FALSE(out.permanent);
  EXPECT_EQ(out.status_code, 200);
  EXPECT_EQ(out.error, "");

  ASSERT_EQ(receiver.delivered(), 1);
  EXPECT_EQ(receiver.bad_signatures(), 0);
  EXPECT_EQ(receiver.count("job_01A", 3), 1);
  const auto d = receiver.deliveries().at(0);
  EXPECT_EQ(d.path, "/hooks/jobs?tenant=t1");
  EXPECT_EQ(d.headers.at("content-type"), "application/json");
  EXPECT_EQ(d.headers.at("user-agent"), "switchyard-webhook");
  EXPECT_EQ(d.headers.at("host"), "127.0.0.1:" + std::to_string(receiver.port()));
  EXPECT_EQ(d.raw_body, b);
  EXPECT_EQ(d.body["state"], "succeeded");
  // Standard Webhooks: the engine's own verifier agrees with the receiver's independent one.
  EXPECT_EQ(d.headers.at("webhook-id"), "dlv_01A_3");
  const std::string& ts = d.headers.at("webhook-timestamp");
  const std::string& sig = d.headers.at("webhook-signature");
  EXPECT_EQ(sig.rfind("v1,", 0), 0u) << sig;
  EXPECT_TRUE(
      runtime::verify_standard_webhook(kWebhookKey, "dlv_01A_3", ts, sig, b, now_s(), 60).ok())
      << ts << " " << sig;
  // The deprecated headers, on by default (webhook_legacy_signature), with the same timestamp.
  EXPECT_EQ(d.headers.at("x-switchyard-delivery"), "dlv_01A_3");
  const std::string& legacy = d.headers.at("x-switchyard-signature");
  EXPECT_EQ(legacy.rfind("t=" + ts + ",v1=", 0), 0u) << legacy;
  EXPECT_TRUE(runtime::verify_webhook_signature(kWebhookKey, legacy, b, now_s(), 60).ok())
      << legacy;
}

TEST_F(WebhookTest, WithoutLegacyHeadersOnlyTheStandardOnesAreSent) {
  webhook_client client(ioc.get_executor(), loopback_policy(), kWebhookKey, nullptr, false);
  const std::string b = body("job_01B", 2);
  ASSERT_TRUE(deliver(client, receiver.url(), b, "whd_7").delivered);
  ASSERT_EQ(receiver.delivered(), 1);
  EXPECT_EQ(receiver.bad_signatures(), 0);
  const auto d = receiver.deliveries().at(0);
  EXPECT_EQ(d.headers.count("x-switchyard-signature"), 0u);
  EXPECT_EQ(d.headers.count("x-switchyard-delivery"), 0u);
  EXPECT_EQ(d.headers.at("webhook-id"), "whd_7");
  EXPECT_TRUE(runtime::verify_standard_webhook(kWebhookKey, "whd_7",
                                               d.headers.at("webhook-timestamp"),
                                               d.headers.at("webhook-signature"), b, now_s(), 60)
                  .ok());
}

TEST_F(WebhookTest, SignsWithTheInjectedClockAtSendTime) {
  fakes::webhook_receiver any_time(receiver_options(-1));
  ASSERT_EQ(any_time.start(), "");
  auto clock = std::make_shared<runtime::manual_clock>(1'700'000'000'999);
  webhook_client client(ioc.get_executor(), loopback_policy(), kWebhookKey, clock);
  const std::string b = body("job_t", 1);
  ASSERT_TRUE(deliver(client, any_time.url(), b, "whd_1").delivered);
  clock->advance(3'600'000);  // a retry an hour later is signed with the new time, same id
  ASSERT_TRUE(deliver(client, any_time.url(), b, "whd_1").delivered);
  const auto d = any_time.deliveries();
  ASSERT_EQ(d.size(), 2u);
  EXPECT_EQ(d[0].headers.at("webhook-id"), "whd_1");
  EXPECT_EQ(d[1].headers.at("webhook-id"), "whd_1");
  EXPECT_EQ(d[0].headers.at("webhook-timestamp"), "1700000000");
  EXPECT_EQ(d[1].headers.at("webhook-timestamp"), "1700003600");
  EXPECT_EQ(d[0].headers.at("webhook-signature"),
            runtime::standard_webhook_signature(kWebhookKey, "whd_1", 1'700'000'000, b));
  EXPECT_EQ(d[1].headers.at("webhook-signature"),
            runtime::standard_webhook_signature(kWebhookKey, "whd_1", 1'700'003'600, b));
  EXPECT_EQ(d[0].headers.at("x-switchyard-signature"),
            runtime::webhook_signature(kWebhookKey, 1'700'000'000, b));
  EXPECT_EQ(d[1].headers.at("x-switchyard-signature"),
            runtime::webhook_signature(kWebhookKey, 1'700'003'600, b));
  EXPECT_EQ(any_time.bad_signatures(), 0);
}

TEST_F(WebhookTest, ARawSecretIsItsOwnKey) {
  fakes::webhook_receiver_options o;
  o.secret = "a raw secret, not base64";
  fakes::webhook_receiver raw(o);
  ASSERT_EQ(raw.start(), "");
  webhook_client client(ioc.get_executor(), loopback_policy(), o.secret);
  EXPECT_TRUE(deliver(client, raw.url(), body("job_raw", 1)).delivered);
  EXPECT_EQ(raw.bad_signatures(), 0);
}

TEST_F(WebhookTest, WrongSecretIsRefusedByTheReceiver) {
  webhook_client client(ioc.get_executor(), loopback_policy(), "wrong-key");
  auto out = deliver(client, receiver.url(), body("job_w", 1));
  EXPECT_FALSE(out.delivered);
  EXPECT_FALSE(out.permanent);
  EXPECT_EQ(out.status_code, 401);
  EXPECT_EQ(receiver.bad_signatures(), 1);
  EXPECT_EQ(receiver.delivered(), 0);
  EXPECT_EQ(receiver.count("job_w", 1), 0);
}

TEST_F(WebhookTest, ErrorStatusIsARetryableFailure) {
  webhook_client client(ioc.get_executor(), loopback_policy(), kWebhookKey);
  receiver.fail_next(1, 503);
  auto out = deliver(client, receiver.url(), body("job_e", 1));
  EXPECT_FALSE(out.delivered);
  EXPECT_FALSE(out.permanent);
  EXPECT_EQ(out.status_code, 503);
  EXPECT_EQ(out.error.rfind("the receiver answered 503", 0), 0u) << out.error;
  // The retry (the deliverer's job) then succeeds; the receiver saw the same event twice.
  auto retry = deliver(client, receiver.url(), body("job_e", 1));
  EXPECT_TRUE(retry.delivered) << retry.error;
  EXPECT_EQ(receiver.count("job_e", 1), 2);
}

TEST_F(WebhookTest, RedirectIsNotFollowed) {
  webhook_client client(ioc.get_executor(), loopback_policy(), kWebhookKey);
  receiver.fail_next(1, 307);
  auto out = deliver(client, receiver.url(), body("job_r", 1));
  EXPECT_FALSE(out.delivered);
  EXPECT_FALSE(out.permanent);
  EXPECT_EQ(out.status_code, 307);
  EXPECT_NE(out.error.find("answered 307"), std::string::npos) << out.error;
  EXPECT_EQ(receiver.delivered(), 1);
}

TEST_F(WebhookTest, ConnectionRefusedIsARetryableFailure) {
  webhook_client client(ioc.get_executor(), loopback_policy(), kWebhookKey);
  const uint16_t port = closed_port();
  auto out = deliver(client, "http://127.0.0.1:" + std::to_string(port) + "/hook", body("j", 1));
  EXPECT_FALSE(out.delivered);
  EXPECT_FALSE(out.permanent);
  EXPECT_EQ(out.status_code, 0);
  EXPECT_EQ(out.error,
            "connect to 127.0.0.1:" + std::to_string(port) + " failed: Connection refused");
}

TEST_F(WebhookTest, SlowReceiverTimesOut) {
  webhook_client client(ioc.get_executor(), loopback_policy(300), kWebhookKey);
  receiver.set_delay_ms(5'000);
  const auto start = std::chrono::steady_clock::now();
  auto out = deliver(client, receiver.url(), body("job_slow", 1));
  EXPECT_LT(elapsed_ms(start), 3'000);
  EXPECT_FALSE(out.delivered);
  EXPECT_FALSE(out.permanent);
  EXPECT_EQ(out.status_code, 0);
  EXPECT_EQ(out.error, "timed out after 300 ms waiting for the answer from 127.0.0.1:" +
                           std::to_string(receiver.port()))
      << out.error;
  // The receiver did get it: at-least-once means the retry will be a duplicate.
  EXPECT_EQ(receiver.count("job_slow", 1), 1);
}

TEST_F(WebhookTest, InvalidUrlIsAPermanentFailure) {
  webhook_client client(ioc.get_executor(), loopback_policy(), kWebhookKey);
  auto out = deliver(client, "ftp://127.0.0.1/hook", body("j", 1));
  EXPECT_FALSE(out.delivered);
  EXPECT_TRUE(out.permanent);
  EXPECT_NE(out.error.find("must start with http:// or https://"), std::string::npos);
  out = deliver(client, receiver.url(), body("j", 1), "bad\r\nX-Injected: 1");
  EXPECT_TRUE(out.permanent);
  EXPECT_NE(out.error.find("control characters"), std::string::npos);
  EXPECT_EQ(receiver.connections(), 0);
}

TEST_F(WebhookTest, ConcurrentDeliveries) {
  webhook_client client(ioc.get_executor(), loopback_policy(), kWebhookKey);
  std::vector<std::string> bodies;
  for (int i = 0; i < 8; ++i) bodies.push_back(body("job_c", i));
  auto outs = deliver_all(client, receiver.url(), bodies);
  for (const auto& o : outs) EXPECT_TRUE(o.delivered) << o.error;
  EXPECT_EQ(receiver.delivered(), 8);
  for (int i = 0; i < 8; ++i) EXPECT_EQ(receiver.count("job_c", i), 1) << i;
  EXPECT_EQ(receiver.bad_signatures(), 0);
}

TEST_F(WebhookTest, ClientMayBeDestroyedDuringADelivery) {
  auto client =
      std::make_unique<webhook_client>(ioc.get_executor(), loopback_policy(), kWebhookKey);
  receiver.set_delay_ms(200);
  std::optional<runtime::webhook_outcome> out;
  boost::asio::co_spawn(ioc, client->deliver(receiver.url(), body("job_d", 1), "d"),
                        [&](std::exception_ptr, runtime::webhook_outcome o) { out = o; });
  client.reset();
  ioc.run_for(std::chrono::seconds(20));
  ASSERT_TRUE(out.has_value());
  EXPECT_TRUE(out->delivered) << out->error;
}

}  // namespace SY_UNITY_ID
}  // namespace sy::testing
