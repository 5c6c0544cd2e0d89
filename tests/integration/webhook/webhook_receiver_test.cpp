// The receiver's HTTP control surface and its standalone binary, as system tests use them.

#include <sys/wait.h>
#include <chrono>
#include <csignal>
#include <map>
#include <regex>

#include "tests/integration/webhook/webhook_env.hpp"
#include "tests/support/http_client.hpp"
#include "tests/support/process.hpp"
#include "tests/support/temp_dir.hpp"
#include "tests/support/wait.hpp"

namespace sy::testing {
namespace SY_UNITY_ID {

using runtime::webhook_client;

TEST_F(WebhookTest, ReceiverIsSteeredAndObservedOverHttp) {
  test::http_client control(receiver.port());
  auto r = control.post_json("/_receiver/control", {{"fail_next", 1}, {"status", 502}});
  ASSERT_EQ(r.status, 200) << r.body;

  webhook_client client(ioc.get_executor(), loopback_policy(), kWebhookKey);
  EXPECT_EQ(deliver(client, receiver.url() + "/a", body("job_h", 7)).status_code, 502);
  EXPECT_TRUE(deliver(client, receiver.url() + "/a", body("job_h", 7)).delivered);

  r = control.get("/_receiver/deliveries");
  ASSERT_EQ(r.status, 200) << r.body;
  const auto j = r.json();
  EXPECT_EQ(j["delivered"], 2);
  EXPECT_EQ(j["bad_signatures"], 0);
  ASSERT_EQ(j["deliveries"].size(), 2u);
  EXPECT_EQ(j["deliveries"][0]["status"], 502);
  EXPECT_EQ(j["deliveries"][1]["status"], 200);
  EXPECT_EQ(j["deliveries"][1]["path"], "/a");
  EXPECT_EQ(j["deliveries"][1]["body"]["job_id"], "job_h");
  EXPECT_EQ(j["deliveries"][1]["headers"]["user-agent"], "switchyard-webhook");
  ASSERT_EQ(j["counts"].size(), 1u);
  EXPECT_EQ(j["counts"][0], (nlohmann::json{{"job_id", "job_h"}, {"sequence", 7}, {"count", 2}}));

  r = control.post_json("/_receiver/control", {{"reset", true}});
  ASSERT_EQ(r.status, 200);
  EXPECT_EQ(receiver.delivered(), 0);
  EXPECT_TRUE(receiver.counts().empty());
  EXPECT_EQ(control.request("POST", "/_receiver/control", "not json").status, 400);
  EXPECT_EQ(control.get("/_receiver/nope").status, 404);
  EXPECT_EQ(control.get("/hook").status, 405);  // webhooks are POSTs
}

TEST_F(WebhookTest, ReceiverRefusesUnsignedDeliveries) {
  test::http_client plain(receiver.port());
  auto r = plain.post_json("/hook", {{"job_id", "job_u"}, {"sequence", 1}});
  EXPECT_EQ(r.status, 401);
  r = plain.post_json("/hook", {{"job_id", "job_u"}, {"sequence", 1}},
                      {{"X-Switchyard-Signature", "t=1,v1=00"}});
  EXPECT_EQ(r.status, 401);
  EXPECT_EQ(receiver.bad_signatures(), 2);
  EXPECT_EQ(receiver.count("job_u", 1), 0);
  ASSERT_EQ(receiver.deliveries().size(), 2u);
  EXPECT_FALSE(receiver.deliveries()[0].signature_ok);
}

TEST_F(WebhookTest, ReceiverChecksTheLegacyHeadersOnlyWhenPresent) {
  test::http_client plain(receiver.port());
  const std::string b = body("job_l", 1);
  const int64_t now = std::chrono::duration_cast<std::chrono::seconds>(
                          std::chrono::system_clock::now().time_since_epoch())
                          .count();
  const std::map<std::string, std::string> standard = {
      {"Content-Type", "application/json"},
      {"webhook-id", "whd_9"},
      {"webhook-timestamp", std::to_string(now)},
      {"webhook-signature", runtime::standard_webhook_signature(kWebhookKey, "whd_9", now, b)}};
  EXPECT_EQ(plain.request("POST", "/hook", b, standard).status, 200);
  auto with = [&](std::map<std::string, std::string> extra) {
    extra.insert(standard.begin(), standard.end());
    return plain.request("POST", "/hook", b, extra).status;
  };
  EXPECT_EQ(with({{"X-Switchyard-Signature", runtime::webhook_signature(kWebhookKey, now, b)},
                  {"X-Switchyard-Delivery", "whd_9"}}),
            200);
  EXPECT_EQ(with({{"X-Switchyard-Signature", "t=1,v1=00"}}), 401);
  EXPECT_EQ(with({{"X-Switchyard-Delivery", "whd_other"}}), 401);
  // Another id, a stale timestamp or an altered body no longer match webhook-signature.
  auto changed = standard;
  changed["webhook-id"] = "whd_10";
  EXPECT_EQ(plain.request("POST", "/hook", b, changed).status, 401);
  changed = standard;
  changed["webhook-timestamp"] = std::to_string(now - 3600);
  changed["webhook-signature"] =
      runtime::standard_webhook_signature(kWebhookKey, "whd_9", now - 3600, b);
  EXPECT_EQ(plain.request("POST", "/hook", b, changed).status, 401);
  EXPECT_EQ(plain.request("POST", "/hook", b + " ", standard).status, 401);
  EXPECT_EQ(receiver.delivered(), 2);
  EXPECT_EQ(receiver.bad_signatures(), 5);
}

TEST_F(WebhookTest, StandaloneReceiverBinary) {
  test::temp_dir dir;
  test::child_process proc({SY_BINARY_DIR "/tests/fakes/fake_webhook_receiver", "--port", "0",
                            "--secret", kWebhookSecret},
                           dir.sub("receiver.log"));
  std::smatch m;
  const std::regex re("listening ([0-9]+)");
  std::string text;
  ASSERT_TRUE(test::wait_for([&] {
    text = proc.log();
    return std::regex_search(text, m, re);
  })) << proc.log();
  const auto port = static_cast<uint16_t>(std::stoi(m[1]));

  webhook_client client(ioc.get_executor(), loopback_policy(), kWebhookKey);
  const std::string url = "http://127.0.0.1:" + std::to_string(port) + "/x";
  EXPECT_TRUE(deliver(client, url, body("job_b", 1)).delivered);
  webhook_client wrong(ioc.get_executor(), loopback_policy(), "wrong-key");
  EXPECT_EQ(deliver(wrong, url, body("job_b", 1)).status_code, 401);

  test::http_client control(port);
  const auto j = control.get("/_receiver/deliveries").json();
  EXPECT_EQ(j["delivered"], 1);
  EXPECT_EQ(j["bad_signatures"], 1);
  EXPECT_EQ(j["counts"][0]["count"], 1);

  proc.signal(SIGTERM);
  const int status = proc.wait(std::chrono::seconds(10));
  ASSERT_NE(status, -1) << "did not stop on SIGTERM";
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << status;
}

}  // namespace SY_UNITY_ID
}  // namespace sy::testing
