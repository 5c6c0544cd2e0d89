// Faults in the engine's surroundings: NATS down, the gateway refusing or dropping connections,
// an engine restart with work in flight.

#include <gtest/gtest.h>

#include "storage/ops.hpp"
#include "tests/integration/engine/engine_env.hpp"
#include "tests/support/wait.hpp"

namespace sy::test {
namespace SY_UNITY_ID {

TEST(faults, submissions_are_accepted_while_nats_is_down_and_run_after) {
  engine_env env;
  env.start();
  http_client c(env.port());
  env.nats().kill9();
  std::vector<std::string> ids;
  for (int i = 0; i < 5; ++i) {
    auto r = env.submit(c, "while down " + std::to_string(i));
    ASSERT_EQ(r.status, 202) << r.body;
    ids.push_back(r.json()["id"]);
  }
  ASSERT_TRUE(env.nats().restart().ok());
  for (const auto& id : ids)
    EXPECT_EQ(env.wait_terminal(c, id, std::chrono::seconds(40))["status"], "completed");
  EXPECT_EQ(env.gateway().requests(), 5);
}

TEST(faults, gateway_down_for_a_while_then_back) {
  engine_env env;
  env.settings().requeue_initial_backoff_ms = 100;
  env.settings().default_max_attempts = 20;
  env.start();
  env.gateway().set_refusing(true);
  http_client c(env.port());
  std::string id = env.submit(c, "patience").json()["id"];
  // Wait until at least two attempts failed against the refusing gateway.
  ASSERT_TRUE(wait_for([&] { return c.get("/v1/jobs/" + id).json()["attempts"] >= 2; }));
  EXPECT_NE(c.get("/v1/jobs/" + id).json()["status"], "failed");
  env.gateway().set_refusing(false);
  auto done = env.wait_terminal(c, id);
  EXPECT_EQ(done["status"], "completed") << done.dump();
}

TEST(faults, dropped_connections_are_retried) {
  engine_env env;
  env.start();
  env.gateway().drop_next(1);
  http_client c(env.port());
  auto done = env.wait_terminal(c, env.submit(c, "drop").json()["id"]);
  EXPECT_EQ(done["status"], "completed") << done.dump();
}

TEST(faults, shutdown_gives_running_work_back_and_a_restart_finishes_it) {
  engine_env env;
  env.start();
  std::string id;
  {
    http_client c(env.port());
    env.gateway().set_latency_ms(60'000);  // the attempt hangs at the gateway
    id = env.submit(c, "stuck").json()["id"];
    ASSERT_TRUE(wait_for([&] { return env.gateway().requests() == 1; }));
  }
  env.settings().shutdown_timeout_ms = 100;
  env.stop();  // past the grace period the attempt is aborted and released, uncounted
  env.gateway().set_latency_ms(0);
  env.start();
  http_client c(env.port());
  auto done = env.wait_terminal(c, id);
  EXPECT_EQ(done["status"], "completed") << done.dump();
  EXPECT_EQ(done["attempts"], 1);
  EXPECT_EQ(env.gateway().requests(), 2);
}

TEST(faults, a_task_whose_message_was_lost_is_requeued_by_the_reconcile_sweeper) {
  engine_env env;
  env.settings().reconcile_after_ms = 300;
  // A job committed in LMDB whose JetStream message never arrived (as after a machine crash
  // that lost JetStream's unsynced tail): the outbox record is gone, the stream is empty.
  auto& store = env.open_store();
  runtime::system_clock_source clock;
  storage::create_job_op op;
  op.job.id = "job_lostmessage";
  op.job.tenant = "default";
  op.job.endpoint = "/v1/chat/completions";
  op.job.model = "test-model";
  op.job.body = R"({"model":"test-model","messages":[{"role":"user","content":"lost"}]})";
  op.job.task_id = "lost-task";
  op.job.created_at_ms = clock.now_ms() - 10'000;
  op.task.id = "lost-task";
  op.task.job_id = op.job.id;
  op.task.tenant = "default";
  op.task.model = "test-model";
  {
    auto txn = store.begin_write();
    ASSERT_TRUE(txn.ok());
    ASSERT_TRUE(storage::apply(*txn, op).ok());
    for (const auto& r : storage::read_outbox(*txn, 0, 10)) storage::del_outbox(*txn, r.seq);
    ASSERT_TRUE(txn->commit().ok());
  }
  env.start();
  http_client c(env.port());
  auto done = env.wait_terminal(c, "job_lostmessage");
  EXPECT_EQ(done["status"], "completed") << done.dump();
  EXPECT_EQ(env.gateway().requests(), 1);
}

}  // namespace SY_UNITY_ID
}  // namespace sy::test
