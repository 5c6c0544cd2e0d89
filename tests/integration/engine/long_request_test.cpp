// A gateway request that lasts several lease TTLs and several JetStream ack waits: the attempt's
// heartbeat must keep both alive (docs/architecture.md, "Message flow of one job"), or the reaper
// would re-queue the task as attempt 2 and JetStream would deliver the message again.

#include <gtest/gtest.h>

#include <chrono>
#include <string>
#include <vector>

#include "storage/lmdb_env.hpp"
#include "tests/integration/engine/engine_env.hpp"
#include "tests/integration/engine/js_probe.hpp"
#include "tests/support/wait.hpp"

namespace sy::test {
namespace SY_UNITY_ID {

using namespace std::chrono_literals;

TEST(long_request, extends_its_lease_and_its_message_and_runs_exactly_once) {
  engine_env env;
  env.settings().lease_ttl_ms = 1'000;  // the heartbeat runs every third of it
  env.settings().ack_wait_ms = 1'000;   // the consumer's AckWait (the transport lease)
  env.settings().reaper_interval_ms = 100;
  env.settings().gateway->request_timeout_ms = 20'000;
  env.start();
  http_client c(env.port());
  auto r = env.submit(c, "take your time", {{"latency_ms", 4'000}, {"key", "long"}});
  ASSERT_EQ(r.status, 202) << r.body;
  std::string id = r.json()["id"];

  ASSERT_TRUE(wait_for([&] { return env.gateway().requests() == 1; }, 10s));
  const auto sent_at = std::chrono::steady_clock::now();
  std::string task_id;
  int64_t first_expiry = 0;
  {
    auto txn = env.store().begin_read();
    auto job = storage::get_job(txn, id);
    ASSERT_TRUE(job.has_value());
    task_id = job->task_id;
    auto lease = storage::get_lease(txn, task_id);
    ASSERT_TRUE(lease.has_value()) << "the lease is committed before the request goes out";
    first_expiry = lease->expires_at_ms;
  }
  // While the gateway still works, the lease is pushed out well past its first expiry: the
  // heartbeat commits it, rather than the reaper merely not having looked yet.
  EXPECT_TRUE(wait_for(
      [&] {
        auto txn = env.store().begin_read();
        auto lease = storage::get_lease(txn, task_id);
        return lease && lease->attempt == 1 && lease->expires_at_ms >= first_expiry + 1'500;
      },
      10s));

  auto done = env.wait_terminal(c, id, 20s);
  const auto took = std::chrono::steady_clock::now() - sent_at;
  ASSERT_EQ(done["status"], "completed") << done.dump();
  // The request outlived the lease TTL and the ack wait several times over.
  EXPECT_GE(took, 3s);
  // No lease expiry: the reaper would have ended attempt 1 and queued attempt 2, which the
  // gateway would have seen as a second request.
  EXPECT_EQ(done["attempts"], 1) << done.dump();
  EXPECT_EQ(env.gateway().requests_by_key()["long"], 1);
  EXPECT_EQ(env.gateway().requests(), 1);
  // No redelivery: without progress acks JetStream delivers the unacked message again after
  // every ack wait, and each delivery advances the consumer's sequence.
  // The message is acked after the terminal commit, so the ack may still be on its way to the
  // server when the job reads terminal: wait for it (a missing ack never arrives in 10 s).
  std::optional<consumer_stats> stats;
  EXPECT_TRUE(wait_for(
      [&] {
        stats = consumer_info(env.nats().url(), "SY_TASKS", "tasks_test-model");
        return stats && stats->ack_pending == 0;
      },
      10s))
      << "the task message was never acknowledged";
  ASSERT_TRUE(stats.has_value());
  EXPECT_EQ(stats->delivered, 1u) << "JetStream delivered the task message more than once";
  EXPECT_EQ(stats->redelivered, 0);
  EXPECT_EQ(stats->ack_pending, 0);
  // The job's history is one run: an expired lease would have added a re-queue in between.
  std::vector<std::string> states;
  {
    auto txn = env.store().begin_read();
    for (const auto& ev : storage::read_events(txn, id, 0))
      states.emplace_back(storage::to_string(ev.state));
  }
  EXPECT_EQ(states, (std::vector<std::string>{"queued", "in_progress", "completed"}));
}

}  // namespace SY_UNITY_ID
}  // namespace sy::test
