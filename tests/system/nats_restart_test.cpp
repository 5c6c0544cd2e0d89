// The NATS server restarts while jobs are in flight, or is down when the engine starts: nothing
// is lost, and because LMDB fences every delivery, no job reaches the gateway twice. A `--nats`
// list with a server that is down connects to the one that is up.

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <nats/nats.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <filesystem>

#include "runtime/nats_server.hpp"
#include "tests/support/wait.hpp"
#include "tests/system/system_env.hpp"

namespace sy::test {
namespace SY_UNITY_ID {

TEST(system, nats_restart_mid_flight) {
  system_env env;
  auto nats = env.start_nats();
  ASSERT_TRUE(nats.ok()) << nats.error().message;
  env.start_gateway(/*latency_ms=*/100);
  env.start_engine({"--nats", (*nats)->url()});
  http_client c(env.port());
  std::vector<std::string> ids;
  for (int i = 0; i < 20; ++i) ids.push_back(env.submit(c, "nr-" + std::to_string(i)));
  ASSERT_TRUE(wait_for([&] { return !env.gateway_counts().empty(); }));
  (*nats)->kill9();
  for (int i = 20; i < 30; ++i) {
    auto id = env.submit(c, "nr-" + std::to_string(i));
    ASSERT_FALSE(id.empty()) << "submissions must be accepted while NATS is down";
    ids.push_back(id);
  }
  ASSERT_TRUE((*nats)->restart().ok());
  for (const auto& id : ids) EXPECT_EQ(env.wait_terminal(c, id), "completed") << id;
  auto counts = env.gateway_counts();
  EXPECT_EQ(counts.size(), ids.size());
  for (const auto& [k, n] : counts) EXPECT_EQ(n, 1) << k;
}

// An external NATS that is down when the engine starts does not stop it: it serves, accepts
// jobs (committed to LMDB), reports itself not ready, and once NATS is up it makes the streams,
// publishes what it accepted and runs every job once.
TEST(system, an_engine_started_while_its_nats_is_down_runs_the_jobs_once_nats_is_up) {
  system_env env;
  auto nats = env.start_nats();
  ASSERT_TRUE(nats.ok()) << nats.error().message;
  ASSERT_TRUE((*nats)->stop().ok());  // its port and (empty) store are reused by restart()
  env.start_gateway(/*latency_ms=*/0);
  env.start_engine({"--nats", (*nats)->url()});
  http_client c(env.port());
  EXPECT_EQ(c.get("/readyz").status, 503);
  std::vector<std::string> ids;
  for (int i = 0; i < 10; ++i) {
    auto id = env.submit(c, "down-" + std::to_string(i));
    ASSERT_FALSE(id.empty()) << "submissions must be accepted while NATS is down";
    ids.push_back(id);
  }
  EXPECT_TRUE(env.gateway_counts().empty());
  ASSERT_TRUE((*nats)->restart().ok());
  for (const auto& id : ids) EXPECT_EQ(env.wait_terminal(c, id), "completed") << id;
  EXPECT_TRUE(wait_for([&] { return c.get("/readyz").status == 200; }));
  auto counts = env.gateway_counts();
  EXPECT_EQ(counts.size(), ids.size());
  for (const auto& [k, n] : counts) EXPECT_EQ(n, 1) << k;
}

// The external NATS comes back without its store (a disaster for JetStream, not for LMDB): the
// engine makes the streams again, binds its consumer again, and the reconcile sweeper publishes
// again the task whose message was lost with the store. Each job runs once.
TEST(system, nats_back_without_its_store_loses_no_job) {
  system_env env;
  auto nats = env.start_nats();
  ASSERT_TRUE(nats.ok()) << nats.error().message;
  env.start_gateway(/*latency_ms=*/1500);
  // One slot: the second job's message waits in the stream while the first runs.
  env.start_engine({"--nats", (*nats)->url(), "--per-model-concurrency", "1",
                    "--global-concurrency", "1", "--reconcile-after-ms", "1000"});
  http_client c(env.port());
  auto running = env.submit(c, "wipe-running");
  ASSERT_TRUE(wait_for([&] { return env.gateway_counts().count("wipe-running") == 1; }));
  auto waiting = env.submit(c, "wipe-waiting");
  ASSERT_FALSE(running.empty());
  ASSERT_FALSE(waiting.empty());
  (*nats)->kill9();
  std::filesystem::remove_all(
      env.dir().sub("external-nats"));  // the waiting job's message is gone with it
  ASSERT_TRUE((*nats)->restart().ok());
  EXPECT_EQ(env.wait_terminal(c, running), "completed");
  EXPECT_EQ(env.wait_terminal(c, waiting), "completed");
  auto counts = env.gateway_counts();
  EXPECT_EQ(counts["wipe-running"], 1);
  EXPECT_EQ(counts["wipe-waiting"], 1);
}

/// A loopback port that was free a moment ago: nothing listens there.
uint16_t closed_port() {
  int s = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  EXPECT_EQ(::bind(s, reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
  socklen_t len = sizeof a;
  ::getsockname(s, reinterpret_cast<sockaddr*>(&a), &len);
  ::close(s);
  return ntohs(a.sin_port);
}

// `--nats` names several servers, comma-separated, one of them down (issue 43): every URL is a
// server of the connection (not the whole text one URL, which never connected), so the engine
// connects to the live one whichever nats.c tries first, becomes ready and runs a job; the NATS
// micro service, connected from the same setting, answers too.
TEST(system, a_nats_list_with_a_dead_server_first_connects_to_the_live_one) {
  system_env env;
  auto nats = env.start_nats();
  ASSERT_TRUE(nats.ok()) << nats.error().message;
  env.start_gateway(/*latency_ms=*/0);
  const std::string list =
      "nats://127.0.0.1:" + std::to_string(closed_port()) + "," + (*nats)->url();
  env.start_engine({"--nats", list});
  http_client c(env.port());
  ASSERT_TRUE(wait_for([&] { return c.get("/readyz").status == 200; })) << env.engine_log();
  const auto id = env.submit(c, "list-1");
  ASSERT_FALSE(id.empty()) << env.engine_log();
  EXPECT_EQ(env.wait_terminal(c, id), "completed");
  EXPECT_EQ(env.gateway_counts()["list-1"], 1);

  natsConnection* nc = nullptr;
  ASSERT_EQ(natsConnection_ConnectTo(&nc, (*nats)->url().c_str()), NATS_OK);
  EXPECT_TRUE(wait_for([&] {
    natsMsg* reply = nullptr;
    const bool answered =
        natsConnection_RequestString(&reply, nc, "$SRV.PING.switchyard", "", 1000) == NATS_OK;
    natsMsg_Destroy(reply);
    return answered;
  })) << "the micro service did not answer";
  natsConnection_Destroy(nc);
}

}  // namespace SY_UNITY_ID
}  // namespace sy::test
