// External workers as a user runs them (docs/workers.md): the built engine, and the example
// workers (examples/workers/: Python, and Node in the last test) as real processes. A worker killed
// with SIGKILL mid-task loses nothing (its lease runs out and the task runs again, once more); an
// engine killed with SIGKILL while a worker holds a lease keeps the lease and the signing keys,
// so the worker's result is recorded after the restart; many jobs over several workers each
// complete exactly once.

#include <sys/wait.h>

#include <csignal>
#include <fstream>

#include <gtest/gtest.h>

#include "tests/support/wait.hpp"
#include "tests/system/system_env.hpp"

namespace sy::test {
namespace SY_UNITY_ID {

using nlohmann::json;

class workers_system : public ::testing::Test {
 protected:
  void SetUp() override {
    config_ = env_.dir().sub("switchyard.yaml");
    std::ofstream(config_) << "runtimes:\n  demo: {lease_ttl_ms: 1500, max_attempts: 10}\n";
    env_.start_gateway(0);
    env_.start_engine({"--config", config_});
  }

  /// An example worker (Python, or Node with `node`) against the engine's internal listener.
  std::unique_ptr<child_process> worker(int max_tasks, int concurrency = 1, bool node = false) {
    std::vector<std::string> argv = {
        node ? "/usr/bin/env" : "/usr/bin/python3",
        std::string(SY_SOURCE_DIR) +
            (node ? "/examples/workers/node/worker.mjs" : "/examples/workers/python/worker.py"),
        "--url",
        "http://127.0.0.1:" + std::to_string(env_.internal_port()),
        "--runtime",
        "demo",
        "--concurrency",
        std::to_string(concurrency),
        "--max-tasks",
        std::to_string(max_tasks),
        "--wait-ms",
        "1000"};
    if (node) argv.insert(argv.begin() + 1, "node");
    return std::make_unique<child_process>(
        argv, env_.dir().sub("worker-" + std::to_string(workers_++) + ".log"));
  }

  std::string submit(http_client& c, json input) {
    auto r = c.post_json("/v1/jobs", {{"runtime", "demo"}, {"input", std::move(input)}});
    EXPECT_TRUE(r.status == 201 || r.status == 202) << r.body;
    return r.json().value("id", "");
  }

  json job(http_client& c, const std::string& id) { return c.get("/v1/jobs/" + id).json(); }

  system_env env_;
  std::string config_;
  int workers_ = 0;
};

TEST_F(workers_system, a_leased_task_carries_the_jobs_trace_to_the_worker) {
  http_client c(env_.port());
  const std::string trace = "4bf92f3577b34da6a3ce929d0e0e4736";
  auto created = c.post_json("/v1/jobs", {{"runtime", "demo"}, {"input", {{"text", "traced"}}}},
                             {{"traceparent", "00-" + trace + "-00f067aa0ba902b7-01"}});
  ASSERT_EQ(created.status, 202) << created.body;
  http_client w(env_.internal_port());
  json tasks;
  ASSERT_TRUE(wait_for([&] {
    auto r = w.post_json("/v1/task/lease", {{"runtime", "demo"}, {"wait_ms", 1'000}});
    tasks = r.json()["tasks"];
    return r.status == 200 && tasks.size() == 1;
  }));
  const std::string tp = tasks[0].value("traceparent", "");
  ASSERT_EQ(tp.size(), 55U) << tasks.dump();
  EXPECT_EQ(tp.substr(0, 35), "00-" + trace);
  EXPECT_NE(tp.substr(36, 16), "00f067aa0ba902b7");  // the attempt's own span, under the job's
  auto r = w.post_json("/v1/task/complete", {{"output", "done"}},
                       {{"X-Switchyard-Task-Capability", tasks[0]["capability_token"]}});
  EXPECT_EQ(r.status, 200) << r.body;
}

TEST_F(workers_system, a_worker_killed_mid_task_loses_nothing_and_the_task_runs_once_more) {
  http_client c(env_.port());
  const std::string id = submit(c, {{"text", "slow"}, {"sleep_ms", 2'000}});
  auto first = worker(1);
  ASSERT_TRUE(wait_for([&] { return job(c, id)["status"] == "in_progress"; }));
  first->signal(SIGKILL);
  first->wait(std::chrono::seconds(10));
  auto second = worker(1);
  ASSERT_EQ(env_.wait_terminal(c, id), "completed") << second->log();
  auto done = job(c, id);
  EXPECT_EQ(done["attempts"], 2);  // the killed attempt, then one more
  EXPECT_EQ(done["result"]["body"]["text"], "SLOW");
  EXPECT_EQ(second->wait(std::chrono::seconds(20)), 0) << second->log();
}

TEST_F(workers_system,
       an_engine_killed_while_a_worker_holds_a_lease_records_its_result_after_restart) {
  http_client c(env_.port());
  const std::string id = submit(c, {{"text", "held"}});
  json tasks;
  {
    http_client w(env_.internal_port());
    ASSERT_TRUE(wait_for([&] {
      auto r = w.post_json("/v1/task/lease", {{"runtime", "demo"}, {"wait_ms", 1'000}});
      tasks = r.json()["tasks"];
      return r.status == 200 && tasks.size() == 1;
    }));
  }
  env_.kill_engine();
  env_.start_engine({"--config", config_});
  http_client w(env_.internal_port());
  // The lease and the key that signed the token survived the kill: the result is recorded.
  auto r = w.post_json("/v1/task/complete", {{"output", "after restart"}},
                       {{"X-Switchyard-Task-Capability", tasks[0]["capability_token"]}});
  ASSERT_EQ(r.status, 200) << r.body;
  http_client c2(env_.port());
  ASSERT_EQ(env_.wait_terminal(c2, id), "completed");
  auto done = job(c2, id);
  EXPECT_EQ(done["attempts"], 1);
  EXPECT_EQ(done["result"]["body"], "after restart");
}

TEST_F(workers_system, many_jobs_over_several_workers_each_complete_exactly_once) {
  http_client c(env_.port());
  std::vector<std::string> ids;
  for (int i = 0; i < 40; ++i) ids.push_back(submit(c, {{"text", "job " + std::to_string(i)}}));
  auto a = worker(20, 4);
  auto b = worker(20, 4);
  for (size_t i = 0; i < ids.size(); ++i) {
    ASSERT_EQ(env_.wait_terminal(c, ids[i]), "completed") << a->log() << b->log();
    auto done = job(c, ids[i]);
    EXPECT_EQ(done["attempts"], 1);
    EXPECT_EQ(done["result"]["body"]["text"], "JOB " + std::to_string(i));
  }
  // Each worker stops after its 20 tasks: 40 leases in all, none twice.
  EXPECT_EQ(a->wait(std::chrono::seconds(20)), 0) << a->log();
  EXPECT_EQ(b->wait(std::chrono::seconds(20)), 0) << b->log();
}

/// `switchyard keys rotate` against the running engine: the new key is published at once, and a
/// token signed by the old key still completes its attempt (the old key stays published).
TEST_F(workers_system, keys_rotate_publishes_a_new_key_and_old_tokens_still_verify) {
  http_client c(env_.port());
  http_client w(env_.internal_port());
  const std::string id = submit(c, {{"text", "rotate"}});
  json tasks;
  ASSERT_TRUE(wait_for([&] {
    auto r = w.post_json("/v1/task/lease", {{"runtime", "demo"}, {"wait_ms", 1'000}});
    tasks = r.json()["tasks"];
    return r.status == 200 && tasks.size() == 1;
  }));
  auto before = w.get("/internal/jwks/task").json()["keys"];
  ASSERT_EQ(before.size(), 1u);

  child_process rotate(
      {SY_BINARY_DIR "/switchyard", "keys", "rotate", "--data-dir", env_.dir().sub("data")},
      env_.dir().sub("rotate.log"));
  ASSERT_EQ(rotate.wait(std::chrono::seconds(30)), 0) << rotate.log();
  auto answer = json::parse(rotate.log().substr(rotate.log().find('{')));
  EXPECT_EQ(answer["rotated"], true);
  auto after = w.get("/internal/jwks/task").json()["keys"];
  ASSERT_EQ(after.size(), 2u) << after.dump();
  EXPECT_EQ(answer["jwks"]["keys"], after);
  EXPECT_TRUE(after[0]["kid"] == before[0]["kid"] || after[1]["kid"] == before[0]["kid"]);

  auto r = w.post_json("/v1/task/complete", {{"output", "done"}},
                       {{"X-Switchyard-Task-Capability", tasks[0]["capability_token"]}});
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(env_.wait_terminal(c, id), "completed");

  // Nothing listening there: the command fails and says so.
  child_process nowhere(
      {SY_BINARY_DIR "/switchyard", "keys", "rotate", "--url", "http://127.0.0.1:1"},
      env_.dir().sub("rotate-nowhere.log"));
  const int status = nowhere.wait(std::chrono::seconds(30));
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 1) << status;
  EXPECT_NE(nowhere.log().find("cannot reach the engine"), std::string::npos) << nowhere.log();
}

TEST_F(workers_system, the_node_example_worker_runs_jobs_too) {
  http_client c(env_.port());
  std::vector<std::string> ids;
  for (int i = 0; i < 6; ++i) ids.push_back(submit(c, {{"text", "node " + std::to_string(i)}}));
  auto w = worker(6, 2, true);
  for (size_t i = 0; i < ids.size(); ++i) {
    ASSERT_EQ(env_.wait_terminal(c, ids[i]), "completed") << w->log();
    EXPECT_EQ(job(c, ids[i])["result"]["body"]["text"], "NODE " + std::to_string(i));
  }
  EXPECT_EQ(w->wait(std::chrono::seconds(20)), 0) << w->log();
}

}  // namespace SY_UNITY_ID
}  // namespace sy::test
