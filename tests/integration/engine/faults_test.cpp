// Faults in the engine's surroundings: NATS down, the gateway refusing or dropping connections,
// an engine restart with work in flight.

#include <gtest/gtest.h>

#include "storage/ops.hpp"
#include "tests/integration/engine/engine_env.hpp"
#include "tests/support/wait.hpp"

namespace sy::test {
namespace {

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

}  // namespace
}  // namespace sy::test
