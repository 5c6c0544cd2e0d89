// The NATS intake end to end: submissions published with a real NATS client into SY_INTAKE
// become jobs in the real engine, are answered on the Sy-Reply-To subject, and never loop.

#include <utility>

#include <atomic>
#include <set>

#include <gtest/gtest.h>

#include "api/nats_intake.hpp"
#include "config/limits.hpp"
#include "config/sha256.hpp"
#include "tests/integration/engine/engine_env.hpp"
#include "tests/integration/intake/intake_publisher.hpp"
#include "tests/support/wait.hpp"

namespace sy::test {
namespace SY_UNITY_ID {

using nlohmann::json;
using namespace std::chrono_literals;

constexpr const char* job_subject = "sy.submit.job";

json chat(const std::string& content, json fake = nullptr) {
  json body = {{"model", "test-model"}, {"messages", {{{"role", "user"}, {"content", content}}}}};
  if (!fake.is_null()) body["fake"] = std::move(fake);
  return {{"endpoint", "/v1/chat/completions"}, {"body", body}};
}

/// A job service whose storage is always unavailable: the transient path.
class unavailable_service final : public actors::job_service {
 public:
  std::atomic<int> submits{0};
  runtime::system_clock_source time;
  const runtime::clock& clock() const override { return time; }
  boost::asio::awaitable<result<actors::submit_outcome>> submit(
      actors::admitted<actors::submission>) override {
    ++submits;
    co_return make_error(errc::storage_unavailable, "Storage is down (test).");
  }
  result<storage::job_record> get(const std::string&, const std::string&) override {
    return make_error(errc::job_not_found, "none");
  }
  boost::asio::awaitable<result<storage::job_record>> wait_terminal(
      std::string, std::string, std::chrono::milliseconds) override {
    co_return make_error(errc::job_not_found, "none");
  }
  boost::asio::awaitable<result<actors::event_batch>> next_events(
      std::string, std::string, uint64_t, std::chrono::milliseconds) override {
    co_return make_error(errc::job_not_found, "none");
  }
  boost::asio::awaitable<result<storage::job_record>> cancel(std::string, std::string) override {
    co_return make_error(errc::job_not_found, "none");
  }
  result<actors::job_page> list(const std::string&, std::optional<storage::job_status>,
                                std::optional<storage::job_kind>, int,
                                const std::string&) override {
    return actors::job_page{};
  }
};

class intake_test : public ::testing::Test {
 protected:
  /// Starts (or restarts) the engine and the intake next to it.
  void start() {
    env_.start();
    start_intake(env_.engine());
  }
  void start_intake(actors::job_service& service, api::nats_intake_options o = {}) {
    intake_.reset();  // before the core it submits through
    core_ = std::make_unique<actors::core::local_client>(service);
    auto intake = api::nats_intake::start(env_.settings(), *core_, js(), o);
    ASSERT_TRUE(intake) << intake.error().message;
    intake_ = std::move(intake.value());
  }
  /// Stops the intake, then the engine (the order `switchyard serve` uses).
  void stop() {
    intake_.reset();
    env_.stop();
  }
  /// The test's own JetStream client (the layout exists before the engine first starts).
  runtime::js_client& js() {
    if (!js_) {
      auto c = runtime::js_client::connect(env_.nats().url(), "intake-test", {}, 5'000);
      if (!c) throw std::runtime_error(c.error().message);
      js_ = std::move(c.value());
      if (auto st = js_->ensure_layout(); !st) throw std::runtime_error(st.error().message);
    }
    return *js_;
  }
  /// Every job in the store, whatever its tenant (job_service::list is per tenant).
  size_t job_count() {
    size_t n = 0;
    auto txn = env_.store().begin_read();
    txn.scan(storage::db::jobs, "", [&](std::string_view, std::string_view) { return ++n, true; });
    return n;
  }
  intake_publisher& pub() {
    if (!pub_) pub_ = std::make_unique<intake_publisher>(env_.nats().url());
    return *pub_;
  }
  /// True once the intake stream holds nothing and its consumer has nothing pending or unacked.
  bool drained() {
    auto stored = js().stream_message_count("SY_INTAKE");
    auto backlog = js().intake_backlog();
    return stored && *stored == 0 && backlog && *backlog == 0;
  }
  /// Publishes `payload` and returns the reply (fails the test when none comes).
  intake_publisher::reply submit(const std::string& payload, const std::string& msg_id = {},
                                 const std::map<std::string, std::string>& headers = {}) {
    auto ack = pub().publish(job_subject, payload, msg_id, headers);
    EXPECT_TRUE(ack.stored) << ack.error;
    auto r = pub().next_reply();
    if (!r) ADD_FAILURE() << "no reply to " << payload;
    return r.value_or(intake_publisher::reply{});
  }
  /// Asserts that a rejected submission was answered with `code` and terminated.
  void expect_rejected(const intake_publisher::reply& r, const std::string& status,
                       const std::string& code) {
    EXPECT_EQ(r.status, status);
    ASSERT_TRUE(r.body.is_object()) << r.body;
    EXPECT_EQ(r.body["error"]["code"], code) << r.body;
    EXPECT_TRUE(r.body["error"]["message"].is_string());
    EXPECT_TRUE(r.body["error"].contains("param"));
    EXPECT_TRUE(r.body["error"]["type"].is_string());
    EXPECT_TRUE(wait_for([&] { return drained(); }, 10s)) << "the message was not terminated";
  }

  engine_env env_;
  unavailable_service down_;  // outlives the intake that may use it
  std::unique_ptr<runtime::js_client> js_;
  std::unique_ptr<intake_publisher> pub_;
  std::unique_ptr<actors::core::local_client> core_;  ///< declared before the intake: outlives it
  std::unique_ptr<api::nats_intake> intake_;
};

TEST_F(intake_test, ValidSubmissionCreatesAJobThatCompletesAndTheReplyCarriesIt) {
  start();
  auto r = submit(chat("hello over nats").dump(), "intake-valid-1");
  EXPECT_EQ(r.status, "202");
  ASSERT_EQ(r.body.value("object", ""), "job") << r.body;
  const std::string id = r.body["id"];
  EXPECT_EQ(id.rfind("job_", 0), 0u);
  EXPECT_EQ(r.body["model"], "test-model");
  EXPECT_EQ(r.body["endpoint"], "/v1/chat/completions");

  http_client c(env_.port());
  auto job = env_.wait_terminal(c, id);
  EXPECT_EQ(job["status"], "completed") << job;
  EXPECT_EQ(job["result"]["body"]["object"], "chat.completion") << job;
  EXPECT_TRUE(wait_for([&] { return drained(); }, 10s)) << "the submission was not acked";
  // Counted just after the ack.
  EXPECT_TRUE(wait_for([&] { return intake_->counters().accepted == 1; }, 10s));
  auto n = intake_->counters();
  EXPECT_EQ(n.received, 1u);
  EXPECT_EQ(n.accepted, 1u);
}

TEST_F(intake_test, SameMsgIdTwiceMakesOneJobAndBothRepliesCarryIt) {
  start();
  const std::string payload = chat("once").dump();
  auto first = submit(payload, "intake-dup-1");
  ASSERT_EQ(first.body.value("object", ""), "job") << first.body;

  // SY_INTAKE's own window is the server's minimum (100 ms): a copy inside it is dropped by
  // JetStream (duplicate ack, no reply); a later copy reaches the engine, which deduplicates it.
  intake_publisher::pub_ack ack;
  ASSERT_TRUE(wait_for(
      [&] {
        ack = pub().publish(job_subject, payload, "intake-dup-1");
        return ack.stored && !ack.duplicate;
      },
      5s))
      << ack.error;
  auto second = pub().next_reply();
  ASSERT_TRUE(second);
  EXPECT_EQ(second->body["id"], first.body["id"]) << second->body;

  // The same key over HTTP names the same job too: one idempotency space per tenant.
  http_client c(env_.port());
  auto http = c.post_json("/v1/jobs", json::parse(payload), {{"Idempotency-Key", "intake-dup-1"}});
  EXPECT_EQ(http.json()["id"], first.body["id"]) << http.body;

  EXPECT_EQ(job_count(), 1u);
  EXPECT_TRUE(wait_for([&] { return drained(); }, 10s));
}

TEST_F(intake_test, SameMsgIdWithAnotherRequestIsAConflict) {
  start();
  auto first = submit(chat("a").dump(), "intake-conflict");
  ASSERT_EQ(first.body.value("object", ""), "job") << first.body;
  intake_publisher::pub_ack ack;
  ASSERT_TRUE(wait_for(
      [&] {
        ack = pub().publish(job_subject, chat("b").dump(), "intake-conflict");
        return ack.stored && !ack.duplicate;
      },
      5s));
  auto second = pub().next_reply();
  ASSERT_TRUE(second);
  expect_rejected(*second, "422", "idempotency_conflict");
}

TEST_F(intake_test, InvalidJsonIsAnsweredAndTerminated) {
  start();
  expect_rejected(submit("{\"endpoint\": ", "intake-badjson"), "400", "invalid_json");
  // The reply goes out before the intake counts the rejection: wait for the count.
  EXPECT_TRUE(wait_for([&] { return intake_->counters().rejected == 1; }, 10s));
  auto n = intake_->counters();
  EXPECT_EQ(n.received, 1u);
  EXPECT_EQ(n.rejected, 1u);
  EXPECT_EQ(n.deferred, 0u);
  EXPECT_EQ(job_count(), 0u);
}

TEST_F(intake_test, HostileSubmissionsAreAnsweredAndTerminatedAndTheIntakeGoesOn) {
  start();
  // 200,000 levels of nesting (a stack overflow for any recursive walk), one level past the
  // limit, and a model one byte over its limit: each answered 400, nothing stored.
  const std::string head = R"({"endpoint":"/v1/chat/completions","body":{"model":"m","x":)";
  expect_rejected(submit(head + std::string(200'000, '[') + "}}", "intake-deep"), "400",
                  "json_too_deep");
  const size_t arrays = limits::json_max_depth - 1;  // object 1, body 2, arrays from 3
  expect_rejected(submit(head + std::string(arrays, '[') + std::string(arrays, ']') + "}}",
                         "intake-one-too-deep"),
                  "400", "json_too_deep");
  json long_model = chat("x");
  long_model["body"]["model"] = std::string(limits::model_max_bytes + 1, 'm');
  auto r = submit(long_model.dump(), "intake-long-model");
  expect_rejected(r, "400", "string_above_max_length");
  EXPECT_EQ(r.body["error"]["param"], "body.model");
  EXPECT_EQ(job_count(), 0u);
  // The intake still serves: a valid submission after them completes.
  auto ok = submit(chat("after the hostile ones").dump(), "intake-after-hostile");
  EXPECT_EQ(ok.status, "202") << ok.body;
}

TEST_F(intake_test, MissingModelIsAnsweredAndTerminated) {
  json doc = {{"endpoint", "/v1/chat/completions"}, {"body", {{"messages", json::array()}}}};
  start();
  auto r = submit(doc.dump(), "intake-nomodel");
  expect_rejected(r, "400", "missing_model");
  EXPECT_EQ(r.body["error"]["param"], "body.model");
  EXPECT_EQ(r.body["error"]["type"], "invalid_request_error");
  EXPECT_EQ(job_count(), 0u);
}

TEST_F(intake_test, BadMsgIdAndUnknownSubjectAreAnsweredAndTerminated) {
  start();
  expect_rejected(submit(chat("x").dump(), std::string(256, 'k')), "400",
                  "invalid_idempotency_key");
  auto ack = pub().publish("sy.submit.batch", chat("x").dump(), "intake-other-kind");
  ASSERT_TRUE(ack.stored) << ack.error;
  auto r = pub().next_reply();
  ASSERT_TRUE(r);
  expect_rejected(*r, "404", "not_found");
}

TEST_F(intake_test, ApiKeysAreCheckedWhenConfigured) {
  env_.settings().api_keys = {{config::sha256_hex("sk-good"), "acme"}};
  start();
  auto wrong = submit(chat("x").dump(), "intake-auth-1", {{"Authorization", "Bearer sk-bad"}});
  expect_rejected(wrong, "401", "invalid_api_key");
  EXPECT_EQ(wrong.body["error"]["type"], "authentication_error");
  expect_rejected(submit(chat("x").dump(), "intake-auth-2"), "401", "missing_api_key");

  auto good = submit(chat("x").dump(), "intake-auth-3", {{"authorization", "Bearer sk-good"}});
  ASSERT_EQ(good.body.value("object", ""), "job") << good.body;
  auto job = env_.engine().get("acme", good.body["id"]);
  EXPECT_TRUE(job) << "the job belongs to the key's tenant";
  EXPECT_FALSE(env_.engine().get("default", good.body["id"]));
}

TEST_F(intake_test, WithoutSyReplyToTheJobIsCreatedAndNothingIsSent) {
  start();
  auto ack = pub().publish(job_subject, chat("quiet").dump(), "intake-quiet", {}, false);
  ASSERT_TRUE(ack.stored) << ack.error;
  ASSERT_TRUE(wait_for([&] { return intake_->counters().accepted == 1 && drained(); }, 10s));
  EXPECT_FALSE(pub().next_reply(200ms)) << "a reply was sent without Sy-Reply-To";
  EXPECT_EQ(job_count(), 1u);
}

TEST_F(intake_test, AnInvalidSyReplyToIsNotAnsweredButTheJobIsCreated) {
  start();
  auto ack = pub().publish(job_subject, chat("bad reply").dump(), "intake-badreply",
                           {{"Sy-Reply-To", "reply..to"}}, false);
  ASSERT_TRUE(ack.stored) << ack.error;
  ASSERT_TRUE(wait_for([&] { return intake_->counters().accepted == 1 && drained(); }, 10s));
  EXPECT_EQ(job_count(), 1u);
}

TEST_F(intake_test, MessagesPublishedWhileTheEngineIsStoppedAreProcessedAfterItStarts) {
  start();
  stop();
  for (int i = 0; i < 3; ++i) {
    auto ack = pub().publish(job_subject, chat("offline " + std::to_string(i)).dump(),
                             "intake-offline-" + std::to_string(i));
    ASSERT_TRUE(ack.stored) << ack.error;
  }
  auto stored = js().stream_message_count("SY_INTAKE");
  ASSERT_TRUE(stored);
  EXPECT_EQ(*stored, 3u);

  start();
  http_client c(env_.port());
  std::set<std::string> ids;
  for (int i = 0; i < 3; ++i) {
    auto r = pub().next_reply();
    ASSERT_TRUE(r) << "reply " << i;
    ASSERT_EQ(r->body.value("object", ""), "job") << r->body;
    ids.insert(r->body["id"].get<std::string>());
  }
  EXPECT_EQ(ids.size(), 3u);
  EXPECT_EQ(job_count(), 3u);
  for (const auto& id : ids) EXPECT_EQ(env_.wait_terminal(c, id)["status"], "completed");
  EXPECT_TRUE(wait_for([&] { return drained(); }, 10s));
}

TEST_F(intake_test, TransientErrorsAreRetriedThenAnsweredOnTheLastDelivery) {
  api::nats_intake_options o;
  o.retry_delay_ms = 20;
  start_intake(down_, o);
  const int max_deliver = js().layout().intake_max_deliver;
  auto r = submit(chat("later").dump(), "intake-transient");
  // Only the last allowed delivery is answered, so this reply comes after every retry.
  EXPECT_EQ(down_.submits.load(), max_deliver);
  expect_rejected(r, "503", "storage_unavailable");
  // The reply goes out before the intake counts the rejection (and before its term): wait.
  EXPECT_TRUE(wait_for([&] { return intake_->counters().rejected == 1; }, 10s));
  auto n = intake_->counters();
  EXPECT_EQ(n.received, static_cast<uint64_t>(max_deliver));
  EXPECT_EQ(n.deferred, static_cast<uint64_t>(max_deliver - 1));
  EXPECT_EQ(n.rejected, 1u);
}

}  // namespace SY_UNITY_ID
}  // namespace sy::test
