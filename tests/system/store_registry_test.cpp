// One store per set of streams (runtime/store_registration.hpp, docs/jetstream.md "Several
// engines"): a second engine with another data dir on the same streams refuses to start naming
// the first, runs beside it with prefixes of its own, takes the streams over at once after a
// clean stop and after the lease when the first was killed; an engine whose streams another
// store takes stops; two processes never share one data dir.

#include <gtest/gtest.h>

#include <csignal>
#include <filesystem>

#include <nlohmann/json.hpp>

#include "runtime/jetstream.hpp"
#include "runtime/nats_server.hpp"
#include "tests/support/wait.hpp"
#include "tests/system/system_env.hpp"

namespace sy::test {
namespace SY_UNITY_ID {

using namespace std::chrono_literals;

struct shared_nats {
  temp_dir dir;
  std::unique_ptr<runtime::nats_server> server;
  shared_nats() {
    runtime::nats_server_options o;
    o.store_dir = dir.sub("nats");
    auto started = runtime::nats_server::start(o);
    if (!started) throw std::runtime_error(started.error().message);
    server = std::move(*started);
  }
  std::string url() const { return server->url(); }
};

bool contains(const std::string& text, const std::string& needle) {
  return text.find(needle) != std::string::npos;
}

TEST(store_registry, a_second_store_on_the_same_streams_refuses_to_start_and_runs_with_its_own) {
  shared_nats nats;
  system_env first;
  first.start_gateway(0);
  first.start_engine({"--nats", nats.url()});
  http_client c1(first.port());
  auto job = first.submit(c1, "first-1");
  ASSERT_FALSE(job.empty());
  EXPECT_EQ(first.wait_terminal(c1, job), "completed");

  system_env second;
  second.start_gateway(0);
  auto refused = second.run_engine_to_exit({"--nats", nats.url()});
  EXPECT_EQ(refused.code, 1) << refused.log;
  EXPECT_TRUE(contains(refused.log, "streams_in_use")) << refused.log;
  const auto first_dir = std::filesystem::absolute(first.dir().sub("data")).string();
  EXPECT_TRUE(contains(refused.log, first_dir)) << "the message names the other engine's data dir\n"
                                                << refused.log;
  EXPECT_TRUE(contains(refused.log, "stream_prefix and subject_prefix")) << refused.log;

  // Two processes on one data dir: the second is refused before it opens the store.
  auto same_dir = first.run_engine_to_exit({"--nats", nats.url()});
  EXPECT_EQ(same_dir.code, 1) << same_dir.log;
  EXPECT_TRUE(contains(same_dir.log, "data_dir_in_use")) << same_dir.log;
  EXPECT_TRUE(first.engine().running());

  // With streams of its own it runs beside the first, each running its own jobs once.
  second.start_engine({"--nats", nats.url(), "--stream-prefix", "SY2", "--subject-prefix", "sy2"});
  http_client c2(second.port());
  std::vector<std::string> ones, twos;
  for (int i = 0; i < 5; ++i) {
    ones.push_back(first.submit(c1, "one-" + std::to_string(i)));
    twos.push_back(second.submit(c2, "two-" + std::to_string(i)));
  }
  for (const auto& id : ones) EXPECT_EQ(first.wait_terminal(c1, id), "completed") << id;
  for (const auto& id : twos) EXPECT_EQ(second.wait_terminal(c2, id), "completed") << id;
  EXPECT_EQ(first.gateway_counts().size(), 6u);
  EXPECT_EQ(second.gateway_counts().size(), 5u);
}

TEST(store_registry, the_streams_pass_at_once_after_a_clean_stop_and_after_the_lease_after_a_kill) {
  shared_nats nats;
  const std::vector<std::string> flags = {"--nats", nats.url(), "--registration-lease-ms", "1000"};
  system_env first, second;
  first.start_gateway(0);
  second.start_gateway(0);
  first.start_engine(flags);
  first.engine().signal(SIGTERM);
  ASSERT_NE(first.engine().wait(30s), -1);

  // Released at the clean stop: the second claims the streams without waiting.
  second.start_engine(flags);
  EXPECT_TRUE(contains(second.engine_log(), "the streams are claimed for this store"));
  EXPECT_FALSE(contains(second.engine_log(), "waiting to see whether it still renews"))
      << second.engine_log();
  second.kill_engine();

  // Killed: its entry stops changing, and after its lease the first takes the streams over.
  first.start_engine(flags);
  EXPECT_TRUE(contains(first.engine_log(), "waiting to see whether it still renews"))
      << first.engine_log();
  EXPECT_TRUE(contains(first.engine_log(), "took the streams over")) << first.engine_log();
  http_client c(first.port());
  auto job = first.submit(c, "after-takeover");
  ASSERT_FALSE(job.empty());
  EXPECT_EQ(first.wait_terminal(c, job), "completed");
}

TEST(store_registry, an_engine_whose_streams_another_store_takes_over_stops) {
  shared_nats nats;
  system_env env;
  env.start_gateway(0);
  env.start_engine({"--nats", nats.url(), "--registration-lease-ms", "1500"});
  auto js = runtime::js_client::connect(nats.url(), "store-registry-test", {}, 5'000);
  ASSERT_TRUE(js.ok()) << js.error().message;
  auto entry = (*js)->kv_get("SY_REGISTRY", "store");
  ASSERT_TRUE(entry.ok()) << entry.error().message;
  ASSERT_TRUE(entry->has_value()) << "the engine did not register its store";
  EXPECT_TRUE(contains((*entry)->value, std::filesystem::absolute(env.dir().sub("data")).string()))
      << (*entry)->value;
  const nlohmann::json other = {{"store_id", "another-store"},
                                {"host", "elsewhere"},
                                {"pid", 4242},
                                {"data_dir", "/srv/other"},
                                {"lease_ms", 60'000}};
  ASSERT_TRUE((*js)->kv_update("SY_REGISTRY", "store", other.dump(), (*entry)->revision).ok());
  ASSERT_TRUE(wait_for([&] { return !env.engine().running(); }, 20s))
      << "the engine kept running on streams another store holds";
  EXPECT_TRUE(contains(env.engine_log(), "another store's engine holds the streams"))
      << env.engine_log();
  EXPECT_TRUE(contains(env.engine_log(), "/srv/other")) << env.engine_log();
  // The other store's entry is left as it is.
  auto after = (*js)->kv_get("SY_REGISTRY", "store");
  ASSERT_TRUE(after.ok() && after->has_value());
  EXPECT_TRUE(contains((*after)->value, "another-store"));
}

}  // namespace SY_UNITY_ID
}  // namespace sy::test
