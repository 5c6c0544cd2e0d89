// kill -9 of the engine mid-flight, then a restart over the same data: every accepted job
// completes, and no job that had completed before the crash is sent to the gateway again.

#include <gtest/gtest.h>

#include <csignal>
#include <set>

#include "tests/support/wait.hpp"
#include "tests/system/system_env.hpp"

namespace sy::test {
namespace {

TEST(system, kill9_mid_flight_loses_nothing_and_duplicates_nothing) {
  system_env env;
  env.start_gateway(/*latency_ms=*/150);
  env.start_engine();
  std::vector<std::string> ids;
  {
    http_client c(env.port());
    for (int i = 0; i < 60; ++i) {
      auto id = env.submit(c, "crash-" + std::to_string(i));
      ASSERT_FALSE(id.empty()) << env.engine_log();
      ids.push_back(id);
    }
    // Let some finish while others are in flight, then crash.
    ASSERT_TRUE(wait_for([&] { return env.gateway_counts().size() >= 15; }));
  }
  std::set<std::string> done_before;
  {
    http_client c(env.port());
    for (size_t i = 0; i < ids.size(); ++i)
      if (c.get("/v1/jobs/" + ids[i]).json().value("status", "") == "completed")
        done_before.insert("crash-" + std::to_string(i));
  }
  env.kill_engine();
  ASSERT_LT(done_before.size(), ids.size()) << "the crash came too late to test anything";

  env.start_engine();
  http_client c(env.port());
  for (const auto& id : ids) EXPECT_EQ(env.wait_terminal(c, id), "completed") << id;
  auto counts = env.gateway_counts();
  for (size_t i = 0; i < ids.size(); ++i) {
    auto key = "crash-" + std::to_string(i);
    EXPECT_GE(counts[key], 1) << key;
    if (done_before.count(key)) {
      EXPECT_EQ(counts[key], 1) << key << " ran again after completing";
    }
  }
}

TEST(system, sigterm_stops_cleanly_and_a_restart_finishes_the_work) {
  system_env env;
  env.start_gateway(/*latency_ms=*/100);
  env.start_engine({"--shutdown-timeout-ms", "200"});
  std::vector<std::string> ids;
  {
    http_client c(env.port());
    for (int i = 0; i < 30; ++i) ids.push_back(env.submit(c, "term-" + std::to_string(i)));
  }
  env.engine().signal(SIGTERM);
  int status = env.engine().wait(std::chrono::seconds(30));
  ASSERT_NE(status, -1) << "switchyard did not exit after SIGTERM";
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << env.engine_log();
  env.start_engine();
  http_client c(env.port());
  for (const auto& id : ids) EXPECT_EQ(env.wait_terminal(c, id), "completed") << id;
}

}  // namespace
}  // namespace sy::test
