// The edges of a process's life (issue 38): a second engine beside a first, one of whose
// addresses the first holds, exits at once, names the address, and never served a request. It
// binds every listener right after opening its store, before NATS or the engine start
// (docs/architecture.md, "Startup"), so there is nothing to stop when a bind fails.

#include <gtest/gtest.h>

#include <filesystem>

#include "tests/system/system_env.hpp"

namespace sy::test {
namespace SY_UNITY_ID {

using namespace std::chrono_literals;

bool contains(const std::string& text, const std::string& needle) {
  return text.find(needle) != std::string::npos;
}

/// Runs a second engine, with a data dir of its own, beside `first` with `flag` set to
/// `taken` (an address the first engine listens on), and checks that it refused to start
/// without serving anything.
void expect_refused_at_once(system_env& first, const std::string& flag, const std::string& taken) {
  system_env second;
  second.start_gateway(0);
  // Well under the 10 s a failed start took when the engine and the public listener were
  // already running: a bind failure now comes before anything has started.
  auto run = second.run_engine_to_exit({flag, taken}, 5s);
  EXPECT_EQ(run.code, 1) << "it did not exit within 5 s with status 1\n" << run.log;
  EXPECT_TRUE(contains(run.log, "cannot listen on " + taken)) << run.log;
  EXPECT_TRUE(contains(run.log, "Address already in use")) << run.log;
  EXPECT_TRUE(contains(run.log, "listen_failed")) << run.log;

  // It never served: neither listener's address was published nor `listening` logged, and
  // nothing behind the listeners (the private nats-server, the engine) was started.
  EXPECT_FALSE(std::filesystem::exists(second.dir().sub("data/listen.addr")));
  EXPECT_FALSE(std::filesystem::exists(second.dir().sub("data/internal.addr")));
  EXPECT_FALSE(contains(run.log, R"("msg":"listening")")) << run.log;
  EXPECT_FALSE(contains(run.log, "private nats-server started")) << run.log;
  EXPECT_FALSE(contains(run.log, R"("component":"engine")")) << run.log;

  // The first engine goes on serving.
  ASSERT_TRUE(first.engine().running()) << first.engine_log();
  http_client c(first.port());
  auto job = first.submit(c, "after-" + flag);
  ASSERT_FALSE(job.empty());
  EXPECT_EQ(first.wait_terminal(c, job), "completed");
}

TEST(process_edges, an_engine_whose_internal_address_is_taken_exits_at_once_serving_nothing) {
  system_env first;
  first.start_gateway(0);
  first.start_engine();
  ASSERT_NE(first.internal_port(), 0);
  expect_refused_at_once(first, "--internal-listen",
                         "127.0.0.1:" + std::to_string(first.internal_port()));
}

TEST(process_edges, an_engine_whose_public_address_is_taken_exits_at_once_serving_nothing) {
  system_env first;
  first.start_gateway(0);
  first.start_engine();
  expect_refused_at_once(first, "--listen", "127.0.0.1:" + std::to_string(first.port()));
}

}  // namespace SY_UNITY_ID
}  // namespace sy::test
