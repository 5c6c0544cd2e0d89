#include <gtest/gtest.h>

#include <chrono>
#include <string>
#include <vector>

#include "tests/integration/nats/nats_env.hpp"

namespace sy::runtime {
namespace SY_UNITY_ID {

using namespace std::chrono_literals;
using test::fetch_one;
using test::nats_env;

std::vector<pub_msg> tasks(js_client& c, const std::string& model, int n,
                           const std::string& id_prefix = "t") {
  std::vector<pub_msg> out;
  for (int i = 0; i < n; ++i) {
    out.push_back(
        {c.task_subject(model), id_prefix + std::to_string(i), "payload-" + std::to_string(i)});
  }
  return out;
}

TEST(JetStream, EnsureLayoutTwiceIsFineAndCreatesTheStreams) {
  nats_env env;
  ASSERT_TRUE(env.client->ensure_layout());  // second time (the env did the first)
  for (const char* kind : {"TASKS", "EVENTS", "DLQ"}) {
    auto n = env.client->stream_message_count(env.client->stream_name(kind));
    ASSERT_TRUE(n) << kind << ": " << n.error().message;
    EXPECT_EQ(*n, 0u);
  }
  // A client with another duplicate window updates the streams instead of failing.
  js_layout changed;
  changed.duplicate_window_ms = 60000;
  auto other = env.connect(changed);
  EXPECT_TRUE(other->ensure_layout());
  EXPECT_FALSE(env.client->stream_message_count("SY_NOPE"));
}

TEST(JetStream, PublishBatchThenFetchGetsThemInOrder) {
  nats_env env;
  auto& c = *env.client;
  auto sub = c.subscribe_tasks("gpt-4o");
  ASSERT_TRUE(sub) << sub.error().message;
  EXPECT_EQ((*sub)->consumer(), "tasks_gpt-4o");
  auto acked = c.publish_batch(tasks(c, "gpt-4o", 3), 5000);
  EXPECT_EQ(acked, std::vector<bool>(3, true));

  std::vector<js_message> got;
  const auto start = std::chrono::steady_clock::now();
  while (got.size() < 3 && test::ms_since(start) < 5000) {
    auto batch = (*sub)->fetch(10, 1000);
    ASSERT_TRUE(batch) << batch.error().message;
    for (auto& m : *batch) got.push_back(std::move(m));
  }
  ASSERT_EQ(got.size(), 3u);
  for (size_t i = 0; i < got.size(); ++i) {
    EXPECT_EQ(got[i].data(), "payload-" + std::to_string(i));
    EXPECT_EQ(got[i].subject(), "sy.tasks.gpt-4o");
    EXPECT_EQ(got[i].delivered(), 1u);
    EXPECT_GT(got[i].stream_sequence(), 0u);
    EXPECT_TRUE(got[i].ack());
  }
  // Work-queue retention: acked messages leave the stream.
  EXPECT_TRUE(test::wait_until(
      [&] {
        auto n = c.stream_message_count("SY_TASKS");
        return n && *n == 0;
      },
      5s));
}

TEST(JetStream, DuplicateMsgIdIsDroppedByTheStream) {
  nats_env env;
  auto& c = *env.client;
  auto sub = c.subscribe_tasks("m");
  ASSERT_TRUE(sub);
  const std::string subj = c.task_subject("m");
  auto first = c.publish_batch({{subj, "same-id", "one"}, {subj, "same-id", "two"}}, 5000);
  EXPECT_EQ(first, std::vector<bool>(2, true));  // a dropped duplicate still counts as acked
  auto again = c.publish_batch({{subj, "same-id", "three"}}, 5000);
  EXPECT_EQ(again, std::vector<bool>(1, true));

  auto n = c.stream_message_count("SY_TASKS");
  ASSERT_TRUE(n);
  EXPECT_EQ(*n, 1u);
  auto batch = (*sub)->fetch(10, 500);
  ASSERT_TRUE(batch);
  ASSERT_EQ(batch->size(), 1u);
  EXPECT_EQ(batch->front().data(), "one");
}

TEST(JetStream, FetchTimeoutReturnsEmpty) {
  nats_env env;
  auto sub = env.client->subscribe_tasks("idle");
  ASSERT_TRUE(sub);
  const auto start = std::chrono::steady_clock::now();
  auto batch = (*sub)->fetch(5, 200);
  ASSERT_TRUE(batch) << batch.error().message;
  EXPECT_TRUE(batch->empty());
  EXPECT_GE(test::ms_since(start), 150);
}

TEST(JetStream, ModelsHaveSeparateQueues) {
  nats_env env;
  auto& c = *env.client;
  auto a = c.subscribe_tasks("a.b");
  auto b = c.subscribe_tasks("a_b");
  ASSERT_TRUE(a && b);
  EXPECT_NE((*a)->consumer(), (*b)->consumer());
  EXPECT_EQ(c.publish_batch(tasks(c, "a.b", 2, "ab"), 5000), std::vector<bool>(2, true));
  auto from_b = (*b)->fetch(10, 300);
  ASSERT_TRUE(from_b);
  EXPECT_TRUE(from_b->empty());
  auto from_a = fetch_one(**a, 3s);
  ASSERT_TRUE(from_a);
  EXPECT_EQ(from_a->subject(), "sy.tasks.a_2Eb");
}

TEST(JetStream, SubscribeTwiceBindsTheSameDurableConsumer) {
  nats_env env;
  auto& c = *env.client;
  auto first = c.subscribe_tasks("shared");
  ASSERT_TRUE(first);
  EXPECT_EQ(c.publish_batch(tasks(c, "shared", 1), 5000), std::vector<bool>(1, true));
  first->reset();  // dropping a subscription must not delete the durable consumer
  auto second = c.subscribe_tasks("shared");
  ASSERT_TRUE(second) << second.error().message;
  auto m = fetch_one(**second, 3s);
  ASSERT_TRUE(m);
  EXPECT_EQ(m->data(), "payload-0");
  EXPECT_FALSE(c.subscribe_tasks(""));
}

TEST(JetStream, CorePublishLandsInTheEventsStream) {
  nats_env env;
  auto& c = *env.client;
  ASSERT_TRUE(c.publish({"sy.jobs.job_1.completed", "ev-1", "{}"}));
  ASSERT_TRUE(c.publish({"sy.jobs.job_1.completed", "ev-1", "{}"}));  // deduplicated
  ASSERT_TRUE(c.publish({"sy.jobs.job_2.queued", "", "{}"}));
  EXPECT_TRUE(test::wait_until(
      [&] {
        auto n = c.stream_message_count("SY_EVENTS");
        return n && *n == 2;
      },
      5s));
}

}  // namespace SY_UNITY_ID
}  // namespace sy::runtime
