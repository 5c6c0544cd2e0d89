// The outbox relay deletes a record only after JetStream acknowledged its publish (issue 2,
// "Outbox relay"): while NATS is down the accepted job's records stay in LMDB, and once NATS is
// back they are published, deleted, and the job runs.

#include <gtest/gtest.h>

#include <chrono>
#include <set>
#include <string>

#include "actors/event_json.hpp"
#include "actors/outbox_relay.hpp"
#include "storage/lmdb_env.hpp"
#include "storage/ops.hpp"
#include "tests/integration/engine/engine_env.hpp"
#include "tests/integration/engine/js_probe.hpp"
#include "tests/support/stderr_capture.hpp"
#include "tests/support/wait.hpp"

namespace sy::test {
namespace SY_UNITY_ID {

using namespace std::chrono_literals;

/// The message ids of every record the outbox holds now.
std::set<std::string> outbox_ids(engine_env& env) {
  auto txn = env.store().begin_read();
  std::set<std::string> out;
  for (const auto& r : storage::read_outbox(txn, 0, 1'000))
    out.insert(actors::outbox_message(r, {}).msg_id);
  return out;
}

TEST(outbox_relay, a_record_stays_until_jetstream_acks_it_and_is_deleted_after) {
  // The relay logs its first failed publish; capture stderr to wait for that moment.
  stderr_capture log;
  engine_env env;
  env.settings().nats_events = "all";  // the creation event is an outbox record too
  env.start();
  http_client c(env.port());
  env.nats().kill9();
  ASSERT_TRUE(wait_for([&] { return !env.engine().ready(); }, 10s))
      << "the engine did not notice that NATS is gone";

  auto r = env.submit(c, "while nats is down", {{"key", "relay"}});
  ASSERT_EQ(r.status, 202) << r.body;
  std::string id = r.json()["id"];
  std::string task_id;
  {
    auto txn = env.store().begin_read();
    auto job = storage::get_job(txn, id);
    ASSERT_TRUE(job.has_value());
    task_id = job->task_id;
  }
  const std::string task_msg = actors::task_message_id(task_id, 1);
  const std::string event_msg = "event:" + id + ":1";

  // The relay has tried to publish the job's records and failed; they must still be there.
  ASSERT_TRUE(wait_for([&] { return log.contains("publishing to JetStream failed"); }, 10s));
  EXPECT_EQ(outbox_ids(env), (std::set<std::string>{task_msg, event_msg}));
  // A second job while NATS is still down: its records join the first job's, which the relay
  // keeps retrying and keeps.
  auto second = env.submit(c, "still down", {{"key", "relay-2"}});
  ASSERT_EQ(second.status, 202) << second.body;
  auto held = outbox_ids(env);
  EXPECT_EQ(held.size(), 4u);
  EXPECT_EQ(held.count(task_msg), 1u);
  EXPECT_EQ(held.count(event_msg), 1u);
  EXPECT_EQ(env.gateway().requests(), 0);

  ASSERT_TRUE(env.nats().restart().ok());
  auto done = env.wait_terminal(c, id, 30s);
  EXPECT_EQ(done["status"], "completed") << done.dump();
  EXPECT_EQ(env.wait_terminal(c, second.json()["id"], 30s)["status"], "completed");
  // Every record, the state changes of the runs included, was acked and then deleted.
  EXPECT_TRUE(wait_for([&] { return outbox_ids(env).empty(); }, 30s))
      << "the outbox still holds records after NATS came back";
  EXPECT_EQ(env.gateway().requests_by_key()["relay"], 1);
  // The two tasks reached SY_TASKS in ONE message (first publications of one model read in one
  // pass share it: DESIGN rule 3), exactly once: retried publishes of the same records carry the
  // same Nats-Msg-Id and JetStream dropped the copies.
  EXPECT_EQ(stream_last_seq(env.nats().url(), "SY_TASKS"), std::optional<uint64_t>(1));
}

}  // namespace SY_UNITY_ID
}  // namespace sy::test
