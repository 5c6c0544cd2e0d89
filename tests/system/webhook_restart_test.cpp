// Webhook deliveries survive kill -9: the engine is killed while every delivery is still being
// refused, the receiver recovers, the engine restarts over the same data — and every transition
// of every job reaches the receiver, correctly signed.

#include <gtest/gtest.h>

#include <csignal>
#include <filesystem>
#include <fstream>
#include <regex>

#include "tests/support/wait.hpp"
#include "tests/system/system_env.hpp"

namespace sy::test {
namespace SY_UNITY_ID {

using namespace std::chrono_literals;
constexpr const char* secret = "system-test-secret";

TEST(system, webhook_deliveries_pending_at_a_kill9_are_delivered_after_restart) {
  system_env env;
  env.start_gateway(/*latency_ms=*/0);
  child_process receiver(
      {SY_BINARY_DIR "/tests/fakes/fake_webhook_receiver", "--port", "0", "--secret", secret},
      env.dir().sub("receiver.log"));
  std::smatch m;
  std::regex re("listening ([0-9]+)");
  std::string text;
  ASSERT_TRUE(wait_for([&] {
    text = receiver.log();
    return std::regex_search(text, m, re);
  })) << receiver.log();
  const uint16_t rport = static_cast<uint16_t>(std::stoi(m[1]));
  http_client rc(rport);
  ASSERT_EQ(rc.post_json("/_receiver/control", {{"fail_next", 1'000'000}, {"status", 503}}).status,
            200);

  const auto secret_file = env.dir().sub("webhook.secret");
  { std::ofstream(secret_file) << secret << "\n"; }
  std::vector<std::string> flags = {
      "--webhook-secret-file",        secret_file, "--webhook-allow-loopback", "true",
      "--webhook-initial-backoff-ms", "100",       "--webhook-max-backoff-ms", "300",
      "--webhook-max-attempts",       "100"};
  env.start_engine(flags);
  std::vector<std::string> ids;
  {
    http_client c(env.port());
    for (int i = 0; i < 10; ++i) {
      nlohmann::json req = {{"endpoint", "/v1/chat/completions"},
                            {"body",
                             {{"model", "m"},
                              {"messages", {{{"role", "user"}, {"content", "w"}}}},
                              {"fake", {{"key", "w" + std::to_string(i)}}}}},
                            {"webhook_url", "http://127.0.0.1:" + std::to_string(rport) + "/hook"}};
      auto r = c.post_json("/v1/jobs", req);
      ASSERT_EQ(r.status, 202) << r.body;
      ids.push_back(r.json()["id"]);
    }
    for (const auto& id : ids) ASSERT_EQ(env.wait_terminal(c, id), "completed");
  }
  // Every transition was attempted at least once and refused: all of them are pending.
  ASSERT_TRUE(wait_for([&] { return rc.get("/_receiver/deliveries").json()["delivered"] >= 20; }));
  env.kill_engine();
  ASSERT_EQ(rc.post_json("/_receiver/control", {{"reset", true}}).status, 200);

  env.start_engine(flags);
  std::map<std::pair<std::string, int64_t>, int64_t> counts;
  ASSERT_TRUE(wait_for(
      [&] {
        auto j = rc.get("/_receiver/deliveries").json();
        counts.clear();
        for (const auto& e : j["counts"])
          counts[{e["job_id"].get<std::string>(), e["sequence"].get<int64_t>()}] =
              e["count"].get<int64_t>();
        return counts.size() >= ids.size() * 2;
      },
      30s))
      << env.engine_log();
  auto j = rc.get("/_receiver/deliveries").json();
  EXPECT_EQ(j["bad_signatures"], 0);
  for (const auto& id : ids) {
    EXPECT_GE((counts[{id, 2}]), 1) << id << " in_progress not delivered";
    EXPECT_GE((counts[{id, 3}]), 1) << id << " completed not delivered";
  }
  EXPECT_EQ(counts.size(), ids.size() * 2) << "a delivery for an unknown transition";
  receiver.signal(SIGTERM);
}

}  // namespace SY_UNITY_ID
}  // namespace sy::test
