// Webhooks through the real engine: a delivery for every transition, signed, retried with
// backoff, dropped and counted after webhook_max_attempts, and held back by the network policy.

#include <gtest/gtest.h>

#include <chrono>
#include <map>
#include <set>
#include <stdexcept>
#include <vector>

#include "runtime/trace.hpp"
#include "storage/lmdb_env.hpp"
#include "tests/fakes/webhook_receiver.hpp"
#include "tests/integration/engine/engine_env.hpp"
#include "tests/support/multipart_form.hpp"
#include "tests/support/wait.hpp"

namespace sy::test {
namespace SY_UNITY_ID {

using namespace std::chrono_literals;
constexpr const char* secret = "whsec-test-0123456789";

struct webhook_env {
  /// `tolerance_s` as in webhook_receiver_options (negative: an engine on a manual clock signs
  /// with its own time, which the receiver then does not hold against it).
  static fakes::webhook_receiver_options options(const std::string& s, int64_t tolerance_s) {
    fakes::webhook_receiver_options o;
    o.secret = s;
    o.tolerance_s = tolerance_s;
    return o;
  }
  explicit webhook_env(const std::string& s = secret, int64_t tolerance_s = 300)
      : receiver(options(s, tolerance_s)) {
    EXPECT_EQ(receiver.start(), "");
    env.settings().webhook_secret = s;
    env.settings().webhook_allow_loopback = true;
    env.settings().webhook_initial_backoff_ms = 50;
    env.settings().webhook_max_backoff_ms = 200;
  }
  uint64_t counter(std::string_view name) {
    auto txn = env.store().begin_read();
    return storage::get_counter(txn, name);
  }
  fakes::webhook_receiver receiver;
  engine_env env;
};

TEST(webhooks, every_transition_is_delivered_signed_with_the_exact_payload) {
  webhook_env w;
  w.env.start();
  http_client c(w.env.port());
  auto r = w.env.submit(c, "hooked", nullptr, {}, {{"webhook_url", w.receiver.url() + "/hook"}});
  ASSERT_EQ(r.status, 202) << r.body;
  EXPECT_EQ(r.json()["webhook_url"], w.receiver.url() + "/hook");
  std::string id = r.json()["id"];
  ASSERT_EQ(w.env.wait_terminal(c, id)["status"], "completed");
  ASSERT_TRUE(w.receiver.wait_delivered(2, 10'000));
  ASSERT_TRUE(wait_for([&] { return w.counter("webhooks_delivered") == 2; }, 10s));
  auto got = w.receiver.deliveries();
  ASSERT_EQ(got.size(), 2u);
  EXPECT_EQ(w.receiver.bad_signatures(), 0);
  std::map<int64_t, nlohmann::json> by_seq;
  for (const auto& d : got) {
    EXPECT_TRUE(d.signature_ok);
    EXPECT_EQ(d.path, "/hook");
    EXPECT_EQ(d.headers.at("content-type"), "application/json");
    EXPECT_EQ(d.headers.at("webhook-id").rfind("whd_", 0), 0u);
    EXPECT_EQ(d.headers.at("x-switchyard-delivery"), d.headers.at("webhook-id"));
    by_seq[d.body["sequence"].get<int64_t>()] = d.body;
  }
  ASSERT_EQ(by_seq.count(2), 1u);
  ASSERT_EQ(by_seq.count(3), 1u);
  EXPECT_EQ(by_seq[2]["state"], "in_progress");
  EXPECT_EQ(by_seq[2]["previous_state"], "queued");
  EXPECT_EQ(by_seq[3]["job_id"], id);
  EXPECT_EQ(by_seq[3]["state"], "completed");
  EXPECT_EQ(by_seq[3]["attempt"], 1);
  EXPECT_EQ(by_seq[3]["result"]["status_code"], 200);
  EXPECT_NE(by_seq[3]["result"].dump().find("hooked"), std::string::npos);
}

TEST(webhooks, a_failing_receiver_is_retried_until_it_accepts) {
  webhook_env w;
  w.env.start();
  w.receiver.fail_next(3, 503);
  http_client c(w.env.port());
  auto r = w.env.submit(c, "retry me", nullptr, {}, {{"webhook_url", w.receiver.url()}});
  std::string id = r.json()["id"];
  ASSERT_EQ(w.env.wait_terminal(c, id)["status"], "completed");
  ASSERT_TRUE(wait_for([&] { return w.counter("webhooks_delivered") == 2; }, 15s));
  EXPECT_EQ(w.counter("webhooks_dropped"), 0u);
  // 3 refused + 2 accepted deliveries in all; each transition was accepted once.
  EXPECT_EQ(w.receiver.delivered(), 5);
  EXPECT_GE(w.receiver.count(id, 2) + w.receiver.count(id, 3), 5);
  auto txn = w.env.store().begin_read();
  EXPECT_TRUE(storage::read_due_webhooks(txn, INT64_MAX, 10).empty());
}

TEST(webhooks, a_whsec_secret_signs_with_its_decoded_key_and_the_legacy_headers_can_be_dropped) {
  // base64 of "engine-test-key-0123456789abcdef"; the receiver decodes it on its own.
  webhook_env w("whsec_ZW5naW5lLXRlc3Qta2V5LTAxMjM0NTY3ODlhYmNkZWY=");
  w.env.settings().webhook_legacy_signature = false;
  w.env.start();
  http_client c(w.env.port());
  auto r = w.env.submit(c, "standard", nullptr, {}, {{"webhook_url", w.receiver.url()}});
  ASSERT_EQ(r.status, 202) << r.body;
  ASSERT_EQ(w.env.wait_terminal(c, r.json()["id"])["status"], "completed");
  ASSERT_TRUE(w.receiver.wait_delivered(2, 10'000));
  EXPECT_EQ(w.receiver.bad_signatures(), 0);
  std::set<std::string> ids;
  for (const auto& d : w.receiver.deliveries()) {
    EXPECT_TRUE(d.signature_ok);
    EXPECT_EQ(d.headers.count("x-switchyard-signature"), 0u);
    EXPECT_EQ(d.headers.count("x-switchyard-delivery"), 0u);
    ids.insert(d.headers.at("webhook-id"));
  }
  EXPECT_EQ(ids.size(), 2u);  // one id per delivery
}

TEST(webhooks, a_whsec_secret_that_is_not_base64_stops_the_start_naming_its_file) {
  webhook_env w;
  w.env.settings().webhook_secret_file = "/etc/switchyard/webhook.secret";
  w.env.settings().webhook_secret = "whsec_not*base64";
  try {
    w.env.start();
    ADD_FAILURE() << "the engine started";
  } catch (const std::runtime_error& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("/etc/switchyard/webhook.secret"), std::string::npos) << what;
    EXPECT_NE(what.find("not standard base64"), std::string::npos) << what;
  }
}

TEST(webhooks, a_retry_keeps_its_id_and_is_signed_with_the_engine_clock) {
  webhook_env w(secret, -1);
  w.env.settings().webhook_initial_backoff_ms = 1;
  w.env.settings().webhook_max_backoff_ms = 1;
  w.env.settings().lease_ttl_ms = 10'000'000;
  w.env.settings().webhook_timeout_ms = 10'000'000;  // a delivery's deadline outlives the advances
  auto& clock = w.env.use_manual_clock(1'800'000'000'000);
  w.env.start();
  w.receiver.fail_next(1, 503);
  http_client c(w.env.port());
  auto r = w.env.submit(c, "clocked", nullptr, {}, {{"webhook_url", w.receiver.url()}});
  ASSERT_EQ(r.status, 202) << r.body;
  ASSERT_EQ(w.env.wait_terminal(c, r.json()["id"])["status"], "completed");
  std::map<std::string, std::vector<std::string>> timestamps;  // per webhook-id
  ASSERT_TRUE(wait_for(
      [&] {
        clock.advance(1'000);  // the backoff ends, and each attempt is signed a second later
        timestamps.clear();
        for (const auto& d : w.receiver.deliveries())
          timestamps[d.headers.at("webhook-id")].push_back(d.headers.at("webhook-timestamp"));
        return w.counter("webhooks_delivered") == 2;
      },
      10s));
  EXPECT_EQ(w.receiver.bad_signatures(), 0);
  ASSERT_EQ(timestamps.size(), 2u);
  size_t retried = 0;
  for (const auto& [id, ts] : timestamps) {
    for (const auto& t : ts) EXPECT_GE(std::stoll(t), 1'800'000'000) << id;
    if (ts.size() == 2) {
      ++retried;
      EXPECT_LT(std::stoll(ts[0]), std::stoll(ts[1])) << id;
    }
  }
  EXPECT_EQ(retried, 1u);  // the refused delivery came again under its id, signed later
}

TEST(webhooks, a_retry_waits_for_its_backoff_on_the_engine_clock) {
  webhook_env w(secret, -1);
  auto& clock = w.env.use_manual_clock();
  w.env.settings().lease_ttl_ms = 10'000'000;
  w.env.settings().webhook_initial_backoff_ms = 3'600'000;  // an hour: 30–60 min with jitter
  w.env.settings().webhook_max_backoff_ms = 3'600'000;
  w.env.start();
  w.receiver.fail_next(2, 503);  // each transition's first delivery is refused
  http_client c(w.env.port());
  auto r = w.env.submit(c, "later", nullptr, {}, {{"webhook_url", w.receiver.url()}});
  std::string id = r.json()["id"];
  ASSERT_EQ(w.env.wait_terminal(c, id)["status"], "completed");
  auto pending = [&] {
    auto txn = w.env.store().begin_read();
    return storage::read_due_webhooks(txn, INT64_MAX, 10);
  };
  ASSERT_TRUE(wait_for(
      [&] {
        auto p = pending();
        return p.size() == 2 && p[0].attempts == 1 && p[1].attempts == 1;
      },
      10s));
  EXPECT_EQ(w.receiver.delivered(), 2);
  for (const auto& p : pending()) {
    EXPECT_GE(p.next_at_ms, clock.now_ms() + 1'800'000);
    EXPECT_LE(p.next_at_ms, clock.now_ms() + 3'600'000);
  }
  clock.advance(3'600'000);  // the deliverer's wait ends and both are due
  ASSERT_TRUE(wait_for([&] { return w.counter("webhooks_delivered") == 2; }, 10s));
  EXPECT_EQ(w.receiver.delivered(), 4);
  EXPECT_TRUE(pending().empty());
}

TEST(webhooks, deliveries_are_dropped_and_counted_after_max_attempts_and_the_job_is_untouched) {
  webhook_env w;
  w.env.settings().webhook_max_attempts = 3;
  w.env.start();
  w.receiver.fail_next(1000, 500);
  http_client c(w.env.port());
  auto r = w.env.submit(c, "never accepted", nullptr, {}, {{"webhook_url", w.receiver.url()}});
  std::string id = r.json()["id"];
  ASSERT_TRUE(wait_for([&] { return w.counter("webhooks_dropped") == 2; }, 20s));
  EXPECT_EQ(w.receiver.count(id, 2), 3);
  EXPECT_EQ(w.receiver.count(id, 3), 3);
  EXPECT_EQ(w.counter("webhooks_delivered"), 0u);
  EXPECT_EQ(c.get("/v1/jobs/" + id).json()["status"], "completed");
}

TEST(webhooks, the_network_policy_refuses_denied_targets) {
  webhook_env w;
  w.env.settings().webhook_allow_loopback = false;
  w.env.start();
  http_client c(w.env.port());
  // A denied literal address, or a loopback name, is refused at submission; nothing is stored.
  for (std::string url :
       {w.receiver.url(), std::string("http://169.254.169.254/latest/meta-data"),
        std::string("http://[::1]:9/x"), "http://localhost:" + std::to_string(w.receiver.port())}) {
    auto r = w.env.submit(c, "x", nullptr, {}, {{"webhook_url", url}});
    EXPECT_EQ(r.status, 400) << url << " " << r.body;
    EXPECT_EQ(r.json()["error"]["code"], "invalid_webhook_url") << r.body;
    EXPECT_EQ(r.json()["error"]["param"], "webhook_url");
  }
  EXPECT_EQ(w.env.gateway().requests(), 0);
  EXPECT_EQ(w.receiver.connections(), 0);
}

TEST(webhooks, a_name_that_resolves_into_a_denied_network_is_dropped_at_delivery) {
  webhook_env w;
  // Loopback names pass submission, but the deny list covers what they resolve to.
  w.env.settings().webhook_deny_networks += ",127.0.0.0/8,::1/128";
  w.env.start();
  http_client c(w.env.port());
  auto r = w.env.submit(c, "named", nullptr, {},
                        {{"webhook_url", "http://localhost:" + std::to_string(w.receiver.port())}});
  ASSERT_EQ(r.status, 202) << r.body;
  ASSERT_EQ(w.env.wait_terminal(c, r.json()["id"])["status"], "completed");
  // Dropped at once (retrying cannot help), without a connection.
  ASSERT_TRUE(wait_for([&] { return w.counter("webhooks_dropped") == 2; }, 10s));
  EXPECT_EQ(w.counter("webhooks_delivered"), 0u);
  EXPECT_EQ(w.receiver.connections(), 0);
}

TEST(webhooks, the_configured_default_url_applies_to_jobs_without_one) {
  webhook_env w;
  w.env.settings().webhook_url = w.receiver.url() + "/default";
  w.env.start();
  http_client c(w.env.port());
  auto r = w.env.submit(c, "default hook");
  std::string id = r.json()["id"];
  ASSERT_EQ(w.env.wait_terminal(c, id)["status"], "completed");
  ASSERT_TRUE(w.receiver.wait_delivered(2, 10'000));
  for (const auto& d : w.receiver.deliveries()) EXPECT_EQ(d.path, "/default");
}

/// A batch input file of `n` chat lines for the fake gateway (`fake`: its directions per line).
std::string batch_lines(int n, const nlohmann::json& fake) {
  std::string out;
  for (int i = 0; i < n; ++i)
    out += nlohmann::json{{"custom_id", "c" + std::to_string(i)},
                          {"method", "POST"},
                          {"url", "/v1/chat/completions"},
                          {"body",
                           {{"model", "test-model"},
                            {"messages", {{{"role", "user"}, {"content", "hi"}}}},
                            {"fake", fake}}}}
               .dump() +
           "\n";
  return out;
}

TEST(webhooks, a_batch_posts_only_its_terminal_transition_as_openais_event) {
  webhook_env w;
  w.env.settings().webhook_url = w.receiver.url() + "/default";
  w.env.start();
  http_client c(w.env.port());
  auto create = [&](const nlohmann::json& fake, nlohmann::json extra) {
    auto file = upload(c, form({{"purpose", "batch"}}, "in.jsonl", batch_lines(3, fake)));
    EXPECT_EQ(file.status, 200) << file.body;
    extra["input_file_id"] = file.json()["id"];
    extra["endpoint"] = "/v1/chat/completions";
    extra["completion_window"] = "24h";
    auto b = c.post_json("/v1/batches", extra);
    EXPECT_EQ(b.status, 200) << b.body;
    return b.json();
  };
  // One with a webhook of its own that completes; one on the configured default, cancelled.
  auto done = create(nlohmann::json::object(), {{"webhook_url", w.receiver.url() + "/hook"}});
  auto slow = create({{"latency_ms", 5'000}}, nlohmann::json::object());
  EXPECT_EQ(slow["webhook_url"], w.receiver.url() + "/default");
  ASSERT_EQ(c.request("POST", "/v1/batches/" + slow["id"].get<std::string>() + "/cancel").status,
            200);
  ASSERT_TRUE(w.receiver.wait_delivered(2, 20'000));
  ASSERT_TRUE(wait_for([&] { return w.counter("webhooks_delivered") == 2; }, 10s));
  std::map<std::string, fakes::received_webhook> by_path;
  for (const auto& d : w.receiver.deliveries()) by_path[d.path] = d;
  ASSERT_EQ(w.receiver.deliveries().size(), 2u) << "only the terminal transitions are POSTed";
  const auto& hook = by_path.at("/hook");
  EXPECT_TRUE(hook.signature_ok);
  EXPECT_EQ(hook.body["object"], "event");
  EXPECT_EQ(hook.body["type"], "batch.completed");
  EXPECT_EQ(hook.body["data"], nlohmann::json({{"id", done["id"]}}));
  EXPECT_EQ(hook.body["id"], hook.headers.at("webhook-id"));
  EXPECT_TRUE(hook.body["created_at"].is_number_integer());
  EXPECT_EQ(hook.body.size(), 5u) << hook.raw_body;
  // The delivery is a span of the batch's trace, as a job's is of the job's.
  ASSERT_TRUE(hook.headers.count("traceparent")) << "no traceparent on a batch's webhook";
  EXPECT_EQ(hook.headers.at("traceparent").substr(3, 32),
            trace::of(done["id"].get<std::string>(), "", "").self.trace_id)
      << hook.headers.at("traceparent");
  const auto& cancelled = by_path.at("/default");
  EXPECT_TRUE(cancelled.signature_ok);
  EXPECT_EQ(cancelled.body["type"], "batch.cancelled");
  EXPECT_EQ(cancelled.body["data"]["id"], slow["id"]);
  EXPECT_EQ(c.get("/v1/batches/" + slow["id"].get<std::string>()).json()["status"], "cancelled");
}

}  // namespace SY_UNITY_ID
}  // namespace sy::test
