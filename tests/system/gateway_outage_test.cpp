// The gateway is down for a while, then back on the same port: jobs wait (re-queued with backoff)
// instead of failing, then complete.

#include <gtest/gtest.h>

#include "tests/support/wait.hpp"
#include "tests/system/system_env.hpp"

namespace sy::test {
namespace SY_UNITY_ID {

TEST(system, gateway_down_then_back) {
  system_env env;
  env.start_gateway(0);
  uint16_t port = env.gateway_port();
  env.start_engine();
  env.kill_gateway();
  http_client c(env.port());
  std::vector<std::string> ids;
  for (int i = 0; i < 10; ++i) ids.push_back(env.submit(c, "gw-" + std::to_string(i)));
  // Wait until attempts have failed against the dead gateway, and none of them failed the job.
  ASSERT_TRUE(
      wait_for([&] { return c.get("/v1/jobs/" + ids[0]).json().value("attempts", 0) >= 2; }));
  for (const auto& id : ids) EXPECT_NE(c.get("/v1/jobs/" + id).json()["status"], "failed");
  env.start_gateway(0, port);
  for (const auto& id : ids) EXPECT_EQ(env.wait_terminal(c, id), "completed") << id;
}

}  // namespace SY_UNITY_ID
}  // namespace sy::test
