// The NATS server restarts while jobs are in flight: nothing is lost, and because LMDB fences
// every delivery, no job reaches the gateway twice.

#include <gtest/gtest.h>

#include "runtime/nats_server.hpp"
#include "tests/support/wait.hpp"
#include "tests/system/system_env.hpp"

namespace sy::test {
namespace {

TEST(system, nats_restart_mid_flight) {
  system_env env;
  runtime::nats_server_options o;
  o.store_dir = env.dir().sub("external-nats");
  auto nats = runtime::nats_server::start(o);
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

}  // namespace
}  // namespace sy::test
