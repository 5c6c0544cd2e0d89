// Managing task lists (docs/task-lists.md): rerun of a finished list's failed and cancelled
// tasks as a new run, and DELETE of a job with everything that belongs to it.

#include <gtest/gtest.h>

#include "tests/integration/engine/engine_env.hpp"
#include "tests/integration/engine/nats_subscriber.hpp"
#include "tests/support/wait.hpp"

namespace sy::test {
namespace SY_UNITY_ID {

using nlohmann::json;

json task(const std::string& key, json fake = json::object()) {
  fake["key"] = key;
  return {{"custom_id", key},
          {"body",
           {{"model", "test-model"},
            {"messages", {{{"role", "user"}, {"content", "task " + key}}}},
            {"fake", fake}}}};
}

json list_job(json tasks, json extra = json::object()) {
  json req = {{"endpoint", "/v1/chat/completions"}, {"tasks", std::move(tasks)}};
  for (auto it = extra.begin(); it != extra.end(); ++it) req[it.key()] = it.value();
  return req;
}

TEST(task_list_manage, rerun_runs_the_failed_tasks_again_as_a_new_run) {
  engine_env env;
  env.start();
  http_client c(env.port());
  json tasks = {task("ok0"), task("ok1"), task("flaky0", {{"fail_times", 1}, {"status", 503}}),
                task("flaky1", {{"fail_times", 1}, {"status", 422}})};
  auto r = c.post_json("/v1/jobs", list_job(tasks, {{"max_attempts", 1}}));
  ASSERT_EQ(r.status, 201) << r.body;
  const std::string id = r.json()["id"];
  auto first = env.wait_terminal(c, id);
  ASSERT_EQ(first["status"], "completed") << first.dump();
  EXPECT_EQ(first["task_counts"]["failed"], 2);
  EXPECT_EQ(first["run"], 1);

  auto rerun = c.post_json("/v1/jobs/" + id + "/rerun", json::object());
  ASSERT_EQ(rerun.status, 200) << rerun.body;
  EXPECT_EQ(rerun.json()["run"], 2);
  EXPECT_EQ(rerun.json()["task_counts"]["failed"], 0);
  auto second = env.wait_terminal(c, id);
  ASSERT_EQ(second["status"], "completed") << second.dump();
  EXPECT_EQ(second["task_counts"]["completed"], 4);
  EXPECT_EQ(second["task_counts"]["failed"], 0);
  auto sent = env.gateway().requests_by_key();
  EXPECT_EQ(sent["ok0"], 1);  // a completed task is not run again
  EXPECT_EQ(sent["ok1"], 1);
  EXPECT_EQ(sent["flaky0"], 2);
  EXPECT_EQ(sent["flaky1"], 2);
  auto flaky = c.get("/v1/jobs/" + id + "/tasks/flaky1").json();
  EXPECT_EQ(flaky["status"], "completed");
  EXPECT_TRUE(flaky["error"].is_null());
  // A fresh event stream replays both runs: it ends at the job's last terminal event, not at
  // the first run's.
  const std::string events = c.get("/v1/jobs/" + id + "/events").body;
  size_t completed_events = 0;
  for (auto at = events.find("event: completed\n"); at != std::string::npos;
       at = events.find("event: completed\n", at + 1))
    ++completed_events;
  EXPECT_EQ(completed_events, 2u) << events;
  EXPECT_EQ(events.rfind("event: "), events.rfind("event: completed\n")) << events;
}

TEST(task_list_manage, rerun_after_a_cancel_runs_what_the_cancel_stopped) {
  engine_env env;
  env.settings().per_model_concurrency = 1;
  env.settings().task_window = 2;
  env.start();
  env.gateway().set_latency_ms(300);
  http_client c(env.port());
  json tasks = json::array();
  for (int i = 0; i < 8; ++i) tasks.push_back(task("c" + std::to_string(i)));
  auto r = c.post_json("/v1/jobs", list_job(tasks));
  const std::string id = r.json()["id"];
  ASSERT_TRUE(
      wait_for([&] { return c.get("/v1/jobs/" + id).json()["task_counts"]["completed"] == 1; }));
  ASSERT_EQ(c.post_json("/v1/jobs/" + id + "/cancel", json::object()).status, 200);
  ASSERT_TRUE(wait_for([&] { return env.gateway().in_flight() == 0; }, std::chrono::seconds(10)));
  env.gateway().set_latency_ms(0);
  auto rerun = c.post_json("/v1/jobs/" + id + "/rerun", json::object());
  ASSERT_EQ(rerun.status, 200) << rerun.body;
  EXPECT_EQ(rerun.json()["task_counts"]["queued"], 7);
  auto done = env.wait_terminal(c, id);
  ASSERT_EQ(done["status"], "completed") << done.dump();
  EXPECT_EQ(done["task_counts"]["completed"], 8);
  EXPECT_EQ(env.gateway().requests_by_key()["c0"], 1);
}

TEST(task_list_manage, rerun_is_refused_while_a_run_is_live_and_for_single_jobs) {
  engine_env env;
  env.start();
  env.gateway().set_latency_ms(2'000);
  http_client c(env.port());
  auto r = c.post_json("/v1/jobs", list_job({task("slow")}));
  auto live =
      c.post_json("/v1/jobs/" + r.json()["id"].get<std::string>() + "/rerun", json::object());
  EXPECT_EQ(live.status, 409) << live.body;
  EXPECT_EQ(live.json()["error"]["code"], "job_not_rerunnable");
  auto single = env.submit(c, "single");
  auto no =
      c.post_json("/v1/jobs/" + single.json()["id"].get<std::string>() + "/rerun", json::object());
  EXPECT_EQ(no.status, 409);
  EXPECT_EQ(c.post_json("/v1/jobs/job_nope/rerun", json::object()).status, 404);
}

TEST(task_list_manage, delete_stops_a_running_list_and_removes_everything_of_it) {
  engine_env env;
  env.settings().per_model_concurrency = 2;
  env.start();
  env.gateway().set_latency_ms(2'000);
  http_client c(env.port());
  json tasks = json::array();
  for (int i = 0; i < 10; ++i) tasks.push_back(task("d" + std::to_string(i)));
  auto r = c.post_json("/v1/jobs", list_job(tasks), {{"Idempotency-Key", "del-1"}});
  const std::string id = r.json()["id"];
  ASSERT_TRUE(wait_for([&] { return env.gateway().in_flight() == 2; }));
  auto del = c.request("DELETE", "/v1/jobs/" + id, "");
  ASSERT_EQ(del.status, 200) << del.body;
  EXPECT_EQ(del.json(), (json{{"id", id}, {"object", "job.deleted"}, {"deleted", true}}));
  EXPECT_EQ(c.get("/v1/jobs/" + id).status, 404);
  EXPECT_EQ(c.get("/v1/jobs/" + id + "/tasks").status, 404);
  auto again = c.request("DELETE", "/v1/jobs/" + id, "");
  EXPECT_EQ(again.status, 404);
  EXPECT_EQ(again.json()["error"]["code"], "job_not_found");
  // The aborted attempts' outcomes find nothing to write; nothing of the job is left.
  ASSERT_TRUE(wait_for([&] { return env.gateway().in_flight() == 0; }, std::chrono::seconds(10)));
  ASSERT_TRUE(wait_for([&] { return env.count(storage::db::leases) == 0; }));
  EXPECT_EQ(env.count(storage::db::jobs), 0u);
  EXPECT_EQ(env.count(storage::db::tasks), 0u);
  EXPECT_EQ(env.count(storage::db::task_custom), 0u);
  EXPECT_EQ(env.count(storage::db::list_live), 0u);
  EXPECT_EQ(env.count(storage::db::queued), 0u);
  EXPECT_EQ(env.count(storage::db::events), 0u);
  EXPECT_EQ(env.count(storage::db::job_index), 0u);
  EXPECT_EQ(env.count(storage::db::retention), 0u);
  // The key is free again: the same request makes a new job.
  auto anew = c.post_json("/v1/jobs", list_job(tasks), {{"Idempotency-Key", "del-1"}});
  EXPECT_EQ(anew.status, 201) << anew.body;
  EXPECT_NE(anew.json()["id"], id);
}

TEST(task_list_manage, delete_removes_a_finished_single_job) {
  engine_env env;
  env.start();
  http_client c(env.port());
  auto r = env.submit(c, "one");
  const std::string id = r.json()["id"];
  ASSERT_EQ(env.wait_terminal(c, id)["status"], "completed");
  EXPECT_EQ(c.request("DELETE", "/v1/jobs/" + id, "").status, 200);
  EXPECT_EQ(c.get("/v1/jobs/" + id).status, 404);
  EXPECT_EQ(env.count(storage::db::tasks), 0u);
  EXPECT_EQ(env.count(storage::db::retention), 0u);
}

TEST(task_list_manage, a_task_that_exhausts_its_attempts_is_a_dead_letter) {
  engine_env env;
  env.start();
  http_client c(env.port());
  auto r = c.post_json(
      "/v1/jobs", list_job({task("fine"), task("down", {{"status", 503}})}, {{"max_attempts", 2}}));
  ASSERT_EQ(r.status, 201) << r.body;
  auto done = env.wait_terminal(c, r.json()["id"]);
  ASSERT_EQ(done["status"], "completed") << done.dump();
  EXPECT_EQ(done["task_counts"]["failed"], 1);
  const auto dlq = env.js().stream_name("DLQ");
  ASSERT_TRUE(wait_for([&] {
    auto n = env.js().stream_message_count(dlq);
    return n && *n == 1;
  })) << "no dead letter in "
      << dlq;
}

TEST(task_list_manage, task_events_publish_each_tasks_transitions_on_nats) {
  engine_env env;
  env.start();
  http_client c(env.port());
  auto r = c.post_json(
      "/v1/jobs", {{"endpoint", "/v1/chat/completions"}, {"open", true}, {"task_events", true}});
  ASSERT_EQ(r.status, 202) << r.body;
  const std::string id = r.json()["id"];
  nats_subscriber sub(env.nats().url(), "sy.jobs." + id + ".task.>");
  auto appended = c.post_json(
      "/v1/jobs/" + id + "/tasks",
      {{"tasks", {task("ev-ok"), task("ev-bad", {{"status", 400}})}}, {"last_batch", true}});
  ASSERT_EQ(appended.status, 200) << appended.body;
  std::map<std::string, std::vector<std::string>> states;  // custom_id → states in order
  for (int i = 0; i < 4; ++i) {
    auto m = sub.next(5'000);
    ASSERT_TRUE(m) << "only " << i << " task events";
    auto ev = json::parse(m->second);
    EXPECT_EQ(ev["job_id"], id);
    EXPECT_EQ(m->first, "sy.jobs." + id + ".task." + ev["state"].get<std::string>());
    states[ev["custom_id"]].push_back(ev["state"]);
    if (ev["state"] == "failed") {
      EXPECT_EQ(ev["error"]["code"], "gateway_rejected");
    }
    if (ev["state"] == "completed") {
      EXPECT_EQ(ev["result"]["status_code"], 200);
    }
  }
  EXPECT_EQ(states["ev-ok"], (std::vector<std::string>{"in_progress", "completed"}));
  EXPECT_EQ(states["ev-bad"], (std::vector<std::string>{"in_progress", "failed"}));
  // Without task_events a list publishes its own transitions only.
  nats_subscriber quiet(env.nats().url(), "sy.jobs.*.task.>");
  auto plain = c.post_json("/v1/jobs", list_job({task("quiet")}));
  ASSERT_EQ(env.wait_terminal(c, plain.json()["id"])["status"], "completed");
  EXPECT_FALSE(quiet.next(300));
  json single = {
      {"endpoint", "/v1/chat/completions"}, {"body", task("s")["body"]}, {"task_events", true}};
  EXPECT_EQ(c.post_json("/v1/jobs", single).json()["error"]["code"], "invalid_tasks");
}

}  // namespace SY_UNITY_ID
}  // namespace sy::test
