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
using test::wait_until;

std::vector<pub_msg> batch(js_client& c, const std::string& prefix, int n) {
  std::vector<pub_msg> out;
  for (int i = 0; i < n; ++i) {
    out.push_back({c.task_subject("m"), prefix + std::to_string(i), prefix + std::to_string(i)});
  }
  return out;
}

TEST(JetStreamRestart, StreamKeepsMessagesAndClientReconnects) {
  nats_env env;
  auto& c = *env.client;
  auto sub = c.subscribe_tasks("m");
  ASSERT_TRUE(sub);
  ASSERT_EQ(c.publish_batch(batch(c, "before-", 3), 5000), std::vector<bool>(3, true));

  env.server->kill9();
  EXPECT_TRUE(wait_until([&] { return !c.connected(); }, 5s));
  ASSERT_TRUE(env.server->restart());
  ASSERT_TRUE(wait_until([&] { return c.connected(); }, 10s));

  auto n = c.stream_message_count("SY_TASKS");
  ASSERT_TRUE(n) << n.error().message;
  EXPECT_EQ(*n, 3u);
  ASSERT_TRUE(c.ensure_layout());  // safe after a reconnect
  EXPECT_EQ(c.publish_batch(batch(c, "after-", 2), 5000), std::vector<bool>(2, true));

  std::vector<std::string> got;
  while (got.size() < 5) {
    auto m = fetch_one(**sub, 5s);  // the old subscription works again
    ASSERT_TRUE(m) << "got only " << got.size();
    got.emplace_back(m->data());
    ASSERT_TRUE(m->ack());
  }
  EXPECT_EQ(got,
            (std::vector<std::string>{"before-0", "before-1", "before-2", "after-0", "after-1"}));
}

TEST(JetStreamRestart, PublishBatchWhileDownFailsFastThenSucceeds) {
  nats_env env;
  auto& c = *env.client;
  env.server->kill9();
  ASSERT_TRUE(wait_until([&] { return !c.connected(); }, 5s));

  const auto start = std::chrono::steady_clock::now();
  auto down = c.publish_batch(batch(c, "x-", 4), 5000);
  EXPECT_EQ(down, std::vector<bool>(4, false));
  // Fast: well before the 5 s it would wait for acks that cannot come. Half of it, not a tight
  // figure, so that a loaded machine's scheduling cannot fail a publish that did not wait.
  EXPECT_LT(test::ms_since(start), 2'500);

  ASSERT_TRUE(env.server->restart());
  ASSERT_TRUE(wait_until([&] { return c.connected(); }, 10s));
  EXPECT_EQ(c.publish_batch(batch(c, "x-", 4), 5000), std::vector<bool>(4, true));
  auto n = c.stream_message_count("SY_TASKS");
  ASSERT_TRUE(n);
  EXPECT_EQ(*n, 4u);
}

}  // namespace SY_UNITY_ID
}  // namespace sy::runtime
