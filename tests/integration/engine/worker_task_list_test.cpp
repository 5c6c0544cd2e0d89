// Task lists of worker tasks (docs/workers.md, "Task lists"): a job for a runtime holding a list
// of inputs — inline, staged (longer than sync_tasks_max) or open with appends — whose tasks are
// leased, run and completed by workers one by one, with the job's grants in every token. Real
// engine, NATS and LMDB; the worker is this test speaking HTTP to the internal listener.

#include <gtest/gtest.h>

#include <set>

#include "runtime/es256.hpp"
#include "tests/integration/engine/engine_env.hpp"
#include "tests/integration/engine/worker_calls.hpp"
#include "tests/support/wait.hpp"

namespace sy::test {
namespace SY_UNITY_ID {

using nlohmann::json;

void configure(engine_env& env) {
  env.settings().runtimes["demo"] = config::runtime_settings{10'000, 3};
  env.settings().tenant_storage_prefixes["default"] = {"s3://data/default/"};
}

json inputs(int n, const std::string& tag) {
  json out = json::array();
  for (int i = 0; i < n; ++i)
    out.push_back({{"custom_id", tag + std::to_string(i)}, {"input", {{"n", i}, {"tag", tag}}}});
  return out;
}

/// Leases until `n` tasks are in hand (or the deadline), completing each with its input's n * 10.
std::vector<json> run_tasks(http_client& w, size_t n) {
  std::vector<json> done;
  wait_for(
      [&] {
        auto r = w.post_json("/v1/task/lease",
                             {{"runtime", "demo"}, {"max_tasks", 10}, {"wait_ms", 1'000}});
        EXPECT_EQ(r.status, 200) << r.body;
        const json answer = r.json();  // not a range over a temporary's member
        for (const auto& t : answer["tasks"]) {
          auto out = w.post_json("/v1/task/complete",
                                 {{"output", {{"n10", t["input"]["n"].get<int>() * 10}}}},
                                 {{cap, t["capability_token"].get<std::string>()}});
          EXPECT_EQ(out.status, 200) << out.body;
          done.push_back(t);
        }
        return done.size() >= n;
      },
      std::chrono::seconds(30));
  return done;
}

TEST(worker_task_list, an_inline_list_runs_each_task_on_a_worker_with_the_jobs_grants) {
  engine_env env;
  configure(env);
  env.start();
  http_client c(env.port());
  http_client w(env.internal_port());
  const json grants = {{"read", {"s3://data/default/in/"}}};
  auto r =
      c.post_json("/v1/jobs", {{"runtime", "demo"}, {"tasks", inputs(3, "a")}, {"grants", grants}});
  ASSERT_EQ(r.status, 201) << r.body;
  const std::string id = r.json()["id"];
  EXPECT_EQ(r.json()["runtime"], "demo");
  EXPECT_EQ(r.json()["task_counts"]["total"], 3);
  auto leased = run_tasks(w, 3);
  ASSERT_EQ(leased.size(), 3u);
  std::set<int> seen;
  for (const auto& t : leased) {
    EXPECT_EQ(t["job_id"], id);
    EXPECT_EQ(t["input"]["tag"], "a");
    seen.insert(t["input"]["n"].get<int>());
    auto claims = token_claims(t["capability_token"]);
    EXPECT_EQ(claims["task_id"], t["task_id"]);
    EXPECT_EQ(claims["grants"]["read"], grants["read"]);
  }
  EXPECT_EQ(seen, (std::set<int>{0, 1, 2}));
  auto done = env.wait_terminal(c, id);
  EXPECT_EQ(done["status"], "completed") << done.dump();
  EXPECT_EQ(done["task_counts"]["completed"], 3);
  auto task = c.get("/v1/jobs/" + id + "/tasks/a2").json();
  EXPECT_EQ(task["runtime"], "demo");
  EXPECT_TRUE(task["model"].is_null());
  EXPECT_EQ(task["result"]["body"], (json{{"n10", 20}})) << task.dump();
}

TEST(worker_task_list, a_staged_list_and_an_open_list_run_on_workers_too) {
  engine_env env;
  configure(env);
  env.settings().sync_tasks_max = 2;  // 5 tasks: staged and ingested in chunks
  env.start();
  http_client c(env.port());
  http_client w(env.internal_port());
  auto staged = c.post_json("/v1/jobs", {{"runtime", "demo"}, {"tasks", inputs(5, "s")}});
  ASSERT_EQ(staged.status, 202) << staged.body;
  EXPECT_EQ(run_tasks(w, 5).size(), 5u);
  auto done = env.wait_terminal(c, staged.json()["id"]);
  EXPECT_EQ(done["status"], "completed") << done.dump();
  EXPECT_EQ(done["task_counts"]["completed"], 5);

  auto open = c.post_json("/v1/jobs", {{"runtime", "demo"}, {"open", true}});
  ASSERT_EQ(open.status, 202) << open.body;
  const std::string id = open.json()["id"];
  // An append of the wrong kind is refused; inputs are taken.
  auto wrong =
      c.post_json("/v1/jobs/" + id + "/tasks",
                  {{"tasks", {{{"body", {{"model", "m"}, {"messages", json::array()}}}}}}});
  EXPECT_EQ(wrong.status, 400) << wrong.body;
  EXPECT_EQ(wrong.json()["error"]["param"], "tasks[0].input");
  auto more =
      c.post_json("/v1/jobs/" + id + "/tasks", {{"tasks", inputs(2, "o")}, {"last_batch", true}});
  ASSERT_EQ(more.status, 200) << more.body;
  EXPECT_EQ(run_tasks(w, 2).size(), 2u);
  EXPECT_EQ(env.wait_terminal(c, id)["status"], "completed");
}

TEST(worker_task_list, lists_of_the_wrong_kind_are_refused_and_store_nothing) {
  engine_env env;
  configure(env);
  env.start();
  http_client c(env.port());
  auto body_task = c.post_json(
      "/v1/jobs", {{"runtime", "demo"},
                   {"tasks", {{{"body", {{"model", "m"}, {"messages", json::array()}}}}}}});
  EXPECT_EQ(body_task.status, 400) << body_task.body;
  EXPECT_EQ(body_task.json()["error"]["param"], "tasks[0].input");
  auto both =
      c.post_json("/v1/jobs", {{"runtime", "demo"}, {"input", 1}, {"tasks", inputs(1, "x")}});
  EXPECT_EQ(both.status, 400) << both.body;
  EXPECT_EQ(both.json()["error"]["param"], "input");
  auto chat_with_input =
      c.post_json("/v1/jobs", {{"endpoint", "/v1/chat/completions"}, {"tasks", inputs(1, "x")}});
  EXPECT_EQ(chat_with_input.status, 400) << chat_with_input.body;
  EXPECT_EQ(chat_with_input.json()["error"]["param"], "tasks[0].input");
  auto unknown = c.post_json("/v1/jobs", {{"runtime", "nope"}, {"tasks", inputs(1, "x")}});
  EXPECT_EQ(unknown.status, 404) << unknown.body;
  auto outside = c.post_json("/v1/jobs", {{"runtime", "demo"},
                                          {"tasks", inputs(1, "x")},
                                          {"grants", {{"write", {"s3://data/other/"}}}}});
  EXPECT_EQ(outside.status, 400) << outside.body;
  EXPECT_EQ(outside.json()["error"]["code"], "invalid_grants");
  EXPECT_EQ(c.get("/v1/jobs").json()["data"].size(), 0u);
}

}  // namespace SY_UNITY_ID
}  // namespace sy::test
