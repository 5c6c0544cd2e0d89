#include <gtest/gtest.h>
#include <signal.h>
#include <stdlib.h>

#include <filesystem>

#include "runtime/nats_server.hpp"
#include "tests/integration/nats/nats_env.hpp"

namespace sy::runtime {
namespace SY_UNITY_ID {

class NatsServer : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/sy-nats-srv-XXXXXX";
    ASSERT_NE(::mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
    opts_.store_dir = dir_ + "/store";
    opts_.log_file = dir_ + "/nats.log";
  }
  void TearDown() override {
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
  }
  std::string dir_;
  nats_server_options opts_;
};

TEST_F(NatsServer, StartsOnAPickedPortAndStops) {
  auto s = nats_server::start(opts_);
  ASSERT_TRUE(s) << s.error().message;
  auto& srv = **s;
  EXPECT_GT(srv.port(), 0);
  EXPECT_EQ(srv.url(), "nats://127.0.0.1:" + std::to_string(srv.port()));
  EXPECT_TRUE(srv.running());
  pid_t pid = srv.pid();
  EXPECT_EQ(::kill(pid, 0), 0);
  ASSERT_TRUE(srv.stop());
  EXPECT_FALSE(srv.running());
  EXPECT_EQ(srv.pid(), -1);
  EXPECT_NE(::kill(pid, 0), 0);  // reaped, so the pid no longer exists
  EXPECT_TRUE(std::filesystem::exists(opts_.store_dir + "/jetstream"));
}

TEST_F(NatsServer, TwoServersGetDistinctPorts) {
  auto a = nats_server::start(opts_);
  auto opts_b = opts_;
  opts_b.store_dir = dir_ + "/store-b";
  auto b = nats_server::start(opts_b);
  ASSERT_TRUE(a && b);
  EXPECT_NE((*a)->port(), (*b)->port());
}

TEST_F(NatsServer, FixedPortAlreadyInUseFailsWithAClearError) {
  auto a = nats_server::start(opts_);
  ASSERT_TRUE(a);
  auto opts_b = opts_;
  opts_b.store_dir = dir_ + "/store-b";
  opts_b.log_file = dir_ + "/b.log";
  opts_b.port = (*a)->port();
  auto b = nats_server::start(opts_b);
  ASSERT_FALSE(b);
  EXPECT_EQ(b.error().code, "nats_server_start_failed");
  EXPECT_TRUE((*a)->running());
}

TEST_F(NatsServer, MissingBinaryFails) {
  opts_.binary = "/nonexistent/nats-server";
  auto s = nats_server::start(opts_);
  ASSERT_FALSE(s);
  EXPECT_EQ(s.error().code, "nats_server_start_failed");
}

TEST_F(NatsServer, Kill9ThenRestartKeepsThePort) {
  auto s = nats_server::start(opts_);
  ASSERT_TRUE(s);
  auto& srv = **s;
  int port = srv.port();
  pid_t old_pid = srv.pid();
  srv.kill9();
  EXPECT_FALSE(srv.running());
  ASSERT_TRUE(srv.restart());
  EXPECT_TRUE(srv.running());
  EXPECT_EQ(srv.port(), port);
  EXPECT_NE(srv.pid(), old_pid);
}

TEST_F(NatsServer, DetectsAChildThatDied) {
  auto s = nats_server::start(opts_);
  ASSERT_TRUE(s);
  ::kill((*s)->pid(), SIGKILL);
  EXPECT_TRUE(test::wait_until([&] { return !(*s)->running(); }, std::chrono::seconds(5)));
}

}  // namespace SY_UNITY_ID
}  // namespace sy::runtime
