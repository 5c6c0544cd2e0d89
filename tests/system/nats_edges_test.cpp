// The edges of a process's life against an external NATS (issue 38): an engine starting on a
// server whose JetStream state was reset, and an engine stopped while its server is dead.

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <thread>

#include "runtime/nats_server.hpp"
#include "tests/support/wait.hpp"
#include "tests/system/system_env.hpp"

namespace sy::test {
namespace SY_UNITY_ID {

bool log_has(const system_env& env, const std::string& text) {
  return env.engine_log().find(text) != std::string::npos;
}

// The engine's streams are wiped from the server's store while it is stopped (the registry's
// bucket is kept, with the delete marker of the engine's last clean stop), and the server then
// answers slowly just as the engine binds its consumers: every JetStream request of that start
// times out once. The engine makes the streams again, binds once the server answers, and the
// reconcile sweeper publishes again what LMDB holds: every job accepted before runs once.
// Before issue 38 it exited with "Creating consumer intake failed: wrong last sequence" — the
// intake's timeout, reported with a text nats.c had left from the registry's claim.
TEST(system, an_engine_on_a_jetstream_reset_repairs_it_and_runs_every_job_once) {
  system_env env;
  auto nats = env.start_nats();
  ASSERT_TRUE(nats.ok()) << nats.error().message;
  env.start_gateway(/*latency_ms=*/0);
  const std::vector<std::string> flags = {"--nats", (*nats)->url(), "--reconcile-after-ms", "1000"};
  env.start_engine(flags);
  http_client c(env.port());
  const auto before = env.submit(c, "edge-before");
  ASSERT_EQ(env.wait_terminal(c, before), "completed");
  // A clean stop: the registry keeps a delete marker for the entry.
  env.engine().signal(SIGTERM);
  ASSERT_NE(env.engine().wait(std::chrono::seconds(30)), -1);

  // Jobs accepted while NATS is down: in LMDB only, never published.
  ASSERT_TRUE((*nats)->stop().ok());
  env.start_engine(flags);
  http_client c1(env.port());
  std::vector<std::string> ids;
  for (int i = 0; i < 5; ++i) {
    auto id = env.submit(c1, "edge-reset-" + std::to_string(i));
    ASSERT_FALSE(id.empty());
    ids.push_back(id);
  }
  env.engine().signal(SIGTERM);
  ASSERT_NE(env.engine().wait(std::chrono::seconds(30)), -1);

  // The reset: the engine's streams (and their consumers) are gone from the server's store.
  const auto streams =
      std::filesystem::path(env.dir().sub("external-nats")) / "jetstream" / "$G" / "streams";
  for (const char* s : {"SY_TASKS", "SY_INTAKE", "SY_EVENTS", "SY_DLQ"})
    std::filesystem::remove_all(streams / s);
  ASSERT_TRUE(std::filesystem::exists(streams / "KV_SY_REGISTRY"));
  ASSERT_TRUE((*nats)->restart().ok());

  // Freeze the server once the engine has claimed the streams, until its intake's bind has
  // failed (or, if the freeze came too late, succeeded): that bind's request times out.
  const pid_t nats_pid = (*nats)->pid();
  const std::string log = env.dir().sub("engine-2.log");
  std::thread freezer([&] {
    auto text = [&] {
      std::ifstream in(log);
      return std::string(std::istreambuf_iterator<char>(in), {});
    };
    wait_for([&] { return text().find("the streams are claimed") != std::string::npos; },
             std::chrono::seconds(30));
    ::kill(nats_pid, SIGSTOP);
    wait_for(
        [&] {
          auto t = text();
          return t.find("Creating consumer intake failed") != std::string::npos ||
                 t.find("\"bound\":true") != std::string::npos;
        },
        std::chrono::seconds(30));
    ::kill(nats_pid, SIGCONT);
  });
  try {
    env.start_engine(flags);
  } catch (...) {
    freezer.join();
    throw;
  }
  freezer.join();
  http_client c2(env.port());
  for (const auto& id : ids) EXPECT_EQ(env.wait_terminal(c2, id), "completed") << id;
  EXPECT_TRUE(env.engine().running());
  EXPECT_FALSE(log_has(env, "wrong last sequence")) << env.engine_log();
  auto counts = env.gateway_counts();
  EXPECT_EQ(counts.size(), ids.size() + 1);
  for (const auto& [k, n] : counts) EXPECT_EQ(n, 1) << k;
}

// SIGTERM with the external NATS dead: the engine exits 0 within shutdown_timeout_ms + 5 s, and
// what it accepted is still in LMDB — a job in flight and a job accepted while NATS was down
// both run after a restart against a fresh server.
TEST(system, sigterm_with_nats_dead_exits_within_the_shutdown_timeout_and_keeps_the_jobs) {
  system_env env;
  auto nats = env.start_nats();
  ASSERT_TRUE(nats.ok()) << nats.error().message;
  env.start_gateway(/*latency_ms=*/3000);
  constexpr int64_t shutdown_timeout_ms = 1000;
  env.start_engine(
      {"--nats", (*nats)->url(), "--shutdown-timeout-ms", std::to_string(shutdown_timeout_ms)});
  http_client c(env.port());
  const auto running = env.submit(c, "dead-running");
  ASSERT_FALSE(running.empty());
  ASSERT_TRUE(wait_for([&] { return env.gateway_counts().count("dead-running") == 1; }));
  (*nats)->kill9();
  const auto accepted = env.submit(c, "dead-accepted");
  ASSERT_FALSE(accepted.empty()) << "submissions must be accepted while NATS is down";

  const auto t0 = std::chrono::steady_clock::now();
  env.engine().signal(SIGTERM);
  const int wstatus = env.engine().wait(std::chrono::seconds(60));
  const auto took = std::chrono::steady_clock::now() - t0;
  ASSERT_NE(wstatus, -1) << "still running 60 s after SIGTERM";
  EXPECT_TRUE(WIFEXITED(wstatus) && WEXITSTATUS(wstatus) == 0) << env.engine_log();
  EXPECT_LE(took, std::chrono::milliseconds(shutdown_timeout_ms + 5000))
      << std::chrono::duration_cast<std::chrono::milliseconds>(took).count() << " ms";

  runtime::nats_server_options fresh;
  fresh.store_dir = env.dir().sub("fresh-nats");
  auto nats2 = runtime::nats_server::start(fresh);
  ASSERT_TRUE(nats2.ok()) << nats2.error().message;
  // The running job's message was lost with the old server: the reconcile sweeper publishes it
  // again (DESIGN rule 6), soon with this threshold.
  env.start_engine({"--nats", (*nats2)->url(), "--reconcile-after-ms", "1000"});
  http_client c2(env.port());
  EXPECT_EQ(c2.get("/v1/jobs/" + running).status, 200);
  EXPECT_EQ(c2.get("/v1/jobs/" + accepted).status, 200);
  EXPECT_EQ(env.wait_terminal(c2, running), "completed");
  EXPECT_EQ(env.wait_terminal(c2, accepted), "completed");
  EXPECT_EQ(env.gateway_counts()["dead-accepted"], 1);
}

}  // namespace SY_UNITY_ID
}  // namespace sy::test
