// Deadlines, retention and NATS state-change events through the real engine.

#include <gtest/gtest.h>

#include <nats/nats.h>

#include <chrono>

#include "storage/lmdb_env.hpp"
#include "tests/integration/engine/engine_env.hpp"
#include "tests/integration/engine/nats_subscriber.hpp"
#include "tests/support/wait.hpp"

namespace sy::test {
namespace SY_UNITY_ID {

using namespace std::chrono_literals;
using steady = std::chrono::steady_clock;

// The deadline tests run on the engine's manual clock: a timeout of an hour passes when the test
// advances the clock, not after an hour (or a second) of real time.

TEST(lifecycle, a_running_job_past_its_timeout_expires_and_its_request_is_aborted) {
  engine_env env;
  auto& clock = env.use_manual_clock();
  env.settings().lease_ttl_ms = 10'000'000;  // the leases outlive every advance below
  env.settings().global_concurrency = 1;     // the slow job holds the only slot until aborted
  env.start();
  http_client c(env.port());
  auto slow =
      env.submit(c, "slow", {{"latency_ms", 20'000}, {"key", "slow"}}, {}, {{"timeout", 3'600}});
  ASSERT_EQ(slow.status, 202) << slow.body;
  ASSERT_TRUE(wait_for([&] { return env.gateway().requests() == 1; }, 10s));
  auto next = env.submit(c, "next", {{"key", "next"}});
  ASSERT_EQ(next.status, 202) << next.body;
  const auto t0 = steady::now();
  // Not yet: a minute short of the hour, the request is still running.
  clock.advance(3'540'000);
  auto still = c.get("/v1/jobs/" + slow.json()["id"].get<std::string>());
  EXPECT_EQ(still.json()["status"], "in_progress") << still.body;
  clock.advance(61'000);
  auto expired = env.wait_terminal(c, slow.json()["id"], 10s);
  EXPECT_EQ(expired["status"], "expired") << expired.dump();
  EXPECT_EQ(expired["error"]["code"], "deadline_exceeded");
  EXPECT_NE(expired["error"]["message"].get<std::string>().find("timeout of 3600 s"),
            std::string::npos)
      << expired.dump();
  // The second job ran long before the slow answer (20 s) could have come: the slot was freed
  // because the in-flight request was aborted.
  auto done = env.wait_terminal(c, next.json()["id"], 10s);
  EXPECT_EQ(done["status"], "completed") << done.dump();
  EXPECT_LT(steady::now() - t0, 10s);
}

TEST(lifecycle, a_queued_job_past_its_timeout_expires_without_reaching_the_gateway) {
  engine_env env;
  auto& clock = env.use_manual_clock();
  env.settings().lease_ttl_ms = 10'000'000;  // the leases outlive every advance below
  env.settings().global_concurrency = 1;
  env.start();
  http_client c(env.port());
  auto blocker = env.submit(c, "blocker", {{"latency_ms", 3'000}, {"key", "blocker"}});
  ASSERT_TRUE(wait_for([&] { return env.gateway().requests() == 1; }, 10s));
  auto queued = env.submit(c, "queued", {{"key", "queued"}}, {}, {{"timeout", 600}});
  ASSERT_EQ(queued.status, 202) << queued.body;
  clock.advance(601'000);  // the reaper's next scan finds it past its deadline
  auto expired = env.wait_terminal(c, queued.json()["id"], 10s);
  EXPECT_EQ(expired["status"], "expired") << expired.dump();
  EXPECT_EQ(env.wait_terminal(c, blocker.json()["id"], 10s)["status"], "completed");
  EXPECT_EQ(env.gateway().requests_by_key().count("queued"), 0u);
}

TEST(lifecycle, bad_timeouts_are_rejected_and_change_nothing) {
  engine_env env;
  env.start();
  http_client c(env.port());
  for (nlohmann::json bad :
       {nlohmann::json(0), nlohmann::json(-1), nlohmann::json("10"), nlohmann::json(700'000)}) {
    auto r = env.submit(c, "x", nullptr, {}, {{"timeout", bad}});
    EXPECT_EQ(r.status, 400) << r.body;
    EXPECT_EQ(r.json()["error"]["code"], "invalid_timeout") << r.body;
    EXPECT_EQ(r.json()["error"]["param"], "timeout");
  }
  EXPECT_EQ(env.gateway().requests(), 0);
}

TEST(lifecycle, retention_deletes_finished_jobs_and_frees_their_idempotency_keys) {
  engine_env env;
  env.settings().retention_completed_ms = 1'000;
  env.start();
  http_client c(env.port());
  auto r = env.submit(c, "short-lived", {{"key", "a"}}, {{"Idempotency-Key", "idem-1"}});
  ASSERT_EQ(r.status, 202) << r.body;
  std::string id = r.json()["id"];
  EXPECT_EQ(env.wait_terminal(c, id)["status"], "completed");
  ASSERT_TRUE(wait_for([&] { return c.get("/v1/jobs/" + id).status == 404; }, 15s));
  {
    auto txn = env.store().begin_read();
    EXPECT_TRUE(storage::read_events(txn, id, 0).empty());
    EXPECT_FALSE(storage::get_idempotency(txn, "default", "idem-1").has_value());
  }
  auto again = env.submit(c, "short-lived", {{"key", "a"}}, {{"Idempotency-Key", "idem-1"}});
  ASSERT_EQ(again.status, 202) << again.body;
  EXPECT_NE(again.json()["id"], id);  // a new job: the old one and its key are gone
}

TEST(lifecycle, retain_inputs_false_drops_the_request_body_once_terminal) {
  engine_env env;
  env.settings().retain_inputs = false;
  env.start();
  http_client c(env.port());
  auto r = env.submit(c, "secret prompt");
  std::string id = r.json()["id"];
  auto done = env.wait_terminal(c, id);
  EXPECT_EQ(done["status"], "completed");
  EXPECT_NE(done["result"].dump().find("secret prompt"), std::string::npos);  // result kept
  auto txn = env.store().begin_read();
  auto job = storage::get_job(txn, id);
  ASSERT_TRUE(job.has_value());
  EXPECT_TRUE(job->body.empty());
  EXPECT_TRUE(job->input_dropped);
}

TEST(lifecycle, every_state_change_is_published_on_nats_when_asked) {
  engine_env env;
  env.settings().nats_events = "all";
  env.start();
  nats_subscriber sub(env.nats().url(), "sy.jobs.>");
  http_client c(env.port());
  auto r = env.submit(c, "watched");
  std::string id = r.json()["id"];
  std::vector<std::string> subjects;
  nlohmann::json last;
  const auto until = steady::now() + 15s;
  while (steady::now() < until && (subjects.empty() || !subjects.back().ends_with(".completed"))) {
    auto m = sub.next(1000);
    if (!m) continue;
    auto payload = nlohmann::json::parse(m->second);
    if (payload["job_id"] != id) continue;
    subjects.push_back(m->first);
    last = payload;
  }
  EXPECT_EQ(subjects,
            (std::vector<std::string>{"sy.jobs." + id + ".queued", "sy.jobs." + id + ".in_progress",
                                      "sy.jobs." + id + ".completed"}));
  EXPECT_EQ(last["sequence"], 3);
  EXPECT_EQ(last["previous_state"], "in_progress");
  EXPECT_EQ(last["result"]["status_code"], 200);
}

}  // namespace SY_UNITY_ID
}  // namespace sy::test
