#include <gtest/gtest.h>

#include <chrono>
#include <thread>

#include "tests/integration/nats/nats_env.hpp"

namespace sy::runtime {
namespace SY_UNITY_ID {

using namespace std::chrono_literals;
using test::fetch_one;
using test::ms_since;
using test::nats_env;

js_layout short_ack_wait(int64_t ms = 500) {
  js_layout l;
  l.ack_wait_ms = ms;
  return l;
}

/// An env with a subscription on model "m" and one published task, already fetched once.
struct delivered_once {
  nats_env env;
  std::unique_ptr<pull_subscription> sub;
  std::optional<js_message> msg;

  explicit delivered_once(int64_t ack_wait_ms = 500) : env(short_ack_wait(ack_wait_ms)) {
    auto s = env.client->subscribe_tasks("m");
    if (!s) throw std::runtime_error(s.error().message);
    sub = std::move(*s);
    auto acked = env.client->publish_batch({{env.client->task_subject("m"), "id-1", "x"}}, 5000);
    if (acked != std::vector<bool>{true}) throw std::runtime_error("publish not acked");
    msg = fetch_one(*sub, 3s);
    if (!msg || msg->delivered() != 1) throw std::runtime_error("first delivery missing");
  }
};

TEST(JetStreamAck, NakWithDelayRedeliversAfterTheDelay) {
  delivered_once d;
  const auto start = std::chrono::steady_clock::now();
  ASSERT_TRUE(d.msg->nak_with_delay(300));
  auto early = d.sub->fetch(1, 150);  // well inside the delay: nothing
  ASSERT_TRUE(early);
  EXPECT_TRUE(early->empty());
  auto again = fetch_one(*d.sub, 3s);
  ASSERT_TRUE(again);
  EXPECT_GE(ms_since(start), 250);
  EXPECT_EQ(again->delivered(), 2u);
  EXPECT_EQ(again->data(), "x");
  EXPECT_TRUE(again->ack());
}

TEST(JetStreamAck, UnackedMessageIsRedeliveredAfterAckWait) {
  delivered_once d;
  const auto start = std::chrono::steady_clock::now();
  auto again = fetch_one(*d.sub, 4s);  // the first delivery is neither acked nor nak'ed
  ASSERT_TRUE(again);
  EXPECT_GE(ms_since(start), 400);
  EXPECT_EQ(again->delivered(), 2u);
}

TEST(JetStreamAck, InProgressExtendsTheAckWait) {
  // A 1 s ack wait leaves room for scheduling delays on a loaded machine: the progress ack is
  // sent at ~300 ms (700 ms early) and the quiet window ends ~200 ms before the extended wait.
  delivered_once d(1000);
  auto quiet = d.sub->fetch(1, 300);
  ASSERT_TRUE(quiet);
  ASSERT_TRUE(quiet->empty());
  ASSERT_TRUE(d.msg->in_progress());
  const auto progressed = std::chrono::steady_clock::now();
  // Ends at >= 1100 ms: past the original ack wait, yet no redelivery thanks to the progress ack.
  auto still_quiet = d.sub->fetch(1, 800);
  ASSERT_TRUE(still_quiet);
  EXPECT_TRUE(still_quiet->empty());
  auto again = fetch_one(*d.sub, 4s);  // the extended wait does run out eventually
  ASSERT_TRUE(again);
  EXPECT_GE(ms_since(progressed), 900);
  EXPECT_EQ(again->delivered(), 2u);
}

TEST(JetStreamAck, TermStopsRedelivery) {
  delivered_once d;
  ASSERT_TRUE(d.msg->term());
  auto none = d.sub->fetch(1, 1200);  // more than twice the ack wait
  ASSERT_TRUE(none);
  EXPECT_TRUE(none->empty());
  // On a work-queue stream a terminated message is removed like an acked one.
  auto n = d.env.client->stream_message_count("SY_TASKS");
  ASSERT_TRUE(n);
  EXPECT_EQ(*n, 0u);
}

TEST(JetStreamAck, ResubscribingWithANewAckWaitUpdatesTheConsumer) {
  nats_env env;  // default 30 s ack wait
  ASSERT_TRUE(env.client->subscribe_tasks("m"));
  auto fast = env.connect(short_ack_wait());
  auto sub = fast->subscribe_tasks("m");
  ASSERT_TRUE(sub) << sub.error().message;
  ASSERT_EQ(fast->publish_batch({{fast->task_subject("m"), "id", "x"}}, 5000),
            std::vector<bool>{true});
  auto first = fetch_one(**sub, 3s);
  ASSERT_TRUE(first);
  auto again = fetch_one(**sub, 3s);  // redelivered after 500 ms, not 30 s
  ASSERT_TRUE(again);
  EXPECT_EQ(again->delivered(), 2u);
}

TEST(JetStreamAck, AckedMessageIsNotRedelivered) {
  delivered_once d;
  ASSERT_TRUE(d.msg->ack());
  auto none = d.sub->fetch(1, 1000);
  ASSERT_TRUE(none);
  EXPECT_TRUE(none->empty());
}

TEST(JetStreamAck, AckFromAnotherThreadAfterTheClientIsGone) {
  delivered_once d;
  js_message m = std::move(*d.msg);
  d.env.client.reset();  // the message keeps its subscription and connection alive
  status st = make_error(errc::internal_error, "");
  std::thread([&] { st = m.ack(); }).join();
  EXPECT_TRUE(st) << st.error().message;
}

// The same protocol through a delivery (a value detached from the nats.c message), acknowledged
// by the client on its reply subject: what the engine's attempts do.

TEST(JetStreamDeliveryAck, ADeliveryCarriesTheMessageAsAValue) {
  delivered_once d;
  const delivery v = d.msg->to_delivery();
  d.msg.reset();  // the nats.c message is gone; the value still acknowledges
  EXPECT_EQ(v.data, "x");
  EXPECT_EQ(v.subject, d.env.client->task_subject("m"));
  EXPECT_EQ(v.reply.rfind("$JS.ACK.", 0), 0u) << v.reply;
  EXPECT_EQ(v.delivered, 1u);
  EXPECT_GT(v.stream_seq, 0u);
  ASSERT_TRUE(d.env.client->ack(v));
  auto none = d.sub->fetch(1, 1000);  // twice the ack wait: acked, so never redelivered
  ASSERT_TRUE(none);
  EXPECT_TRUE(none->empty());
}

TEST(JetStreamDeliveryAck, NakWithDelayRedeliversAfterTheDelay) {
  delivered_once d;
  const auto start = std::chrono::steady_clock::now();
  ASSERT_TRUE(d.env.client->nak(d.msg->to_delivery(), 300));
  auto early = d.sub->fetch(1, 150);
  ASSERT_TRUE(early);
  EXPECT_TRUE(early->empty());
  auto again = fetch_one(*d.sub, 3s);
  ASSERT_TRUE(again);
  EXPECT_GE(ms_since(start), 250);
  EXPECT_EQ(again->delivered(), 2u);
  ASSERT_TRUE(d.env.client->nak(again->to_delivery(), 0));  // no delay: at once
  auto third = fetch_one(*d.sub, 3s);
  ASSERT_TRUE(third);
  EXPECT_EQ(third->delivered(), 3u);
}

TEST(JetStreamDeliveryAck, InProgressExtendsTheAckWaitAndTermEndsIt) {
  delivered_once d(1000);
  const delivery v = d.msg->to_delivery();
  auto quiet = d.sub->fetch(1, 300);
  ASSERT_TRUE(quiet);
  ASSERT_TRUE(quiet->empty());
  ASSERT_TRUE(d.env.client->in_progress(v));
  auto still_quiet = d.sub->fetch(1, 800);  // past the original ack wait
  ASSERT_TRUE(still_quiet);
  EXPECT_TRUE(still_quiet->empty());
  ASSERT_TRUE(d.env.client->term(v));
  auto none = d.sub->fetch(1, 1500);  // past the extended wait too: terminated
  ASSERT_TRUE(none);
  EXPECT_TRUE(none->empty());
  EXPECT_FALSE(d.env.client->ack(delivery{}));  // no reply subject: a clear error
}

}  // namespace SY_UNITY_ID
}  // namespace sy::runtime
