// Task-list jobs end to end (docs/task-lists.md): one POST with `tasks` → 201 with every task
// queryable → the tasks run like single jobs through JetStream and the fake gateway → counts,
// pages, lookups, cancel, deadlines, fairness, bad input.

#include <gtest/gtest.h>

#include <set>

#include "tests/integration/engine/engine_env.hpp"
#include "tests/support/metric_samples.hpp"
#include "tests/support/wait.hpp"

namespace sy::test {
namespace SY_UNITY_ID {

using nlohmann::json;

/// A chat task whose fake answer is keyed `key` (the fake counts requests by key).
json chat_task(const std::string& key, json fake = json::object(), std::string custom_id = "") {
  fake["key"] = key;
  json t = {{"body",
             {{"model", "test-model"},
              {"messages", {{{"role", "user"}, {"content", "task " + key}}}},
              {"fake", fake}}}};
  if (!custom_id.empty()) t["custom_id"] = custom_id;
  return t;
}

json list_job(json tasks, json extra = json::object()) {
  json req = {{"endpoint", "/v1/chat/completions"}, {"tasks", std::move(tasks)}};
  for (auto it = extra.begin(); it != extra.end(); ++it) req[it.key()] = it.value();
  return req;
}

json keyed_tasks(int n, const std::string& prefix, json fake = json::object()) {
  json tasks = json::array();
  for (int i = 0; i < n; ++i) tasks.push_back(chat_task(prefix + std::to_string(i), fake));
  return tasks;
}

/// Every task of the job, page by page (`limit` per page).
std::vector<json> all_tasks(http_client& c, const std::string& id, int limit = 100,
                            const std::string& filter = "") {
  std::vector<json> out;
  std::string after;
  for (int pages = 0; pages < 1000; ++pages) {
    std::string target = "/v1/jobs/" + id + "/tasks?limit=" + std::to_string(limit) + filter;
    if (!after.empty()) target += "&after=" + after;
    auto r = c.get(target);
    EXPECT_EQ(r.status, 200) << r.body;
    auto page = r.json();
    for (auto& t : page["data"]) out.push_back(t);
    if (!page["has_more"].get<bool>()) break;
    after = page["last_id"];
  }
  return out;
}

TEST(task_list, a_small_list_is_created_201_with_its_tasks_queryable_at_once_and_runs_once_each) {
  engine_env env;
  env.start();
  http_client c(env.port());
  json tasks = json::array();
  for (int i = 0; i < 5; ++i)
    tasks.push_back(chat_task("t" + std::to_string(i), {}, "row-" + std::to_string(i)));
  auto r = c.post_json("/v1/jobs", list_job(tasks));
  ASSERT_EQ(r.status, 201) << r.body;
  auto job = r.json();
  const std::string id = job["id"];
  EXPECT_EQ(job["object"], "job");
  EXPECT_EQ(job["model"], "test-model");
  EXPECT_EQ(job["task_counts"]["total"], 5);
  EXPECT_EQ(job["task_counts"]["queued"], 5);
  EXPECT_EQ(r.headers["location"], "/v1/jobs/" + id);

  // Queryable at once, in index order, with the client's ids.
  auto listed = c.get("/v1/jobs/" + id + "/tasks");
  ASSERT_EQ(listed.status, 200) << listed.body;
  auto data = listed.json()["data"];
  ASSERT_EQ(data.size(), 5u);
  for (int i = 0; i < 5; ++i) {
    EXPECT_EQ(data[i]["index"], i);
    EXPECT_EQ(data[i]["custom_id"], "row-" + std::to_string(i));
    EXPECT_EQ(data[i]["object"], "job.task");
    EXPECT_EQ(data[i]["job_id"], id);
  }

  auto done = env.wait_terminal(c, id);
  ASSERT_EQ(done["status"], "completed") << done.dump();
  EXPECT_EQ(done["task_counts"], json({{"total", 5},
                                       {"queued", 0},
                                       {"in_progress", 0},
                                       {"completed", 5},
                                       {"failed", 0},
                                       {"cancelled", 0}}));
  for (const auto& t : all_tasks(c, id)) {
    EXPECT_EQ(t["status"], "completed") << t.dump();
    EXPECT_EQ(t["attempts"], 1);
    EXPECT_EQ(t["result"]["status_code"], 200);
    // The fake echoes the last user message: the gateway saw this task's own body.
    EXPECT_NE(t["result"]["body"].dump().find("task t" + std::to_string(t["index"].get<int>())),
              std::string::npos)
        << t.dump();
  }
  auto by_key = env.gateway().requests_by_key();
  EXPECT_EQ(by_key.size(), 5u);
  for (const auto& [k, n] : by_key) EXPECT_EQ(n, 1) << k;
}

TEST(task_list, a_task_is_found_by_its_id_or_custom_id) {
  engine_env env;
  env.start();
  http_client c(env.port());
  auto r = c.post_json("/v1/jobs", list_job({chat_task("a", {}, "first"), chat_task("b")}));
  ASSERT_EQ(r.status, 201) << r.body;
  const std::string id = r.json()["id"];
  auto tasks = all_tasks(c, id);
  ASSERT_EQ(tasks.size(), 2u);
  const std::string task_id = tasks[1]["id"];
  auto by_id = c.get("/v1/jobs/" + id + "/tasks/" + task_id);
  ASSERT_EQ(by_id.status, 200) << by_id.body;
  EXPECT_EQ(by_id.json()["index"], 1);
  EXPECT_TRUE(by_id.json()["custom_id"].is_null());
  auto by_custom = c.get("/v1/jobs/" + id + "/tasks/first");
  ASSERT_EQ(by_custom.status, 200) << by_custom.body;
  EXPECT_EQ(by_custom.json()["index"], 0);

  auto missing = c.get("/v1/jobs/" + id + "/tasks/nope");
  EXPECT_EQ(missing.status, 404);
  EXPECT_EQ(missing.json()["error"]["code"], "task_not_found");
  auto bad_cursor = c.get("/v1/jobs/" + id + "/tasks?after=nope");
  EXPECT_EQ(bad_cursor.status, 404);
  EXPECT_EQ(bad_cursor.json()["error"]["code"], "task_not_found");
  // A single-request job has no task list.
  auto single = env.submit(c, "single");
  auto no_list = c.get("/v1/jobs/" + single.json()["id"].get<std::string>() + "/tasks");
  EXPECT_EQ(no_list.status, 404);
  EXPECT_EQ(no_list.json()["error"]["code"], "job_not_found");
  EXPECT_EQ(c.get("/v1/jobs/job_nope/tasks/x").json()["error"]["code"], "job_not_found");
}

TEST(task_list, pages_follow_the_index_order_and_a_status_filter) {
  engine_env env;
  env.start();
  http_client c(env.port());
  json tasks = keyed_tasks(7, "p");
  tasks[2] = chat_task("bad", {{"status", 400}});
  tasks[5] = chat_task("bad2", {{"status", 400}});
  auto r = c.post_json("/v1/jobs", list_job(tasks));
  ASSERT_EQ(r.status, 201) << r.body;
  const std::string id = r.json()["id"];
  ASSERT_EQ(env.wait_terminal(c, id)["status"], "completed");
  auto paged = all_tasks(c, id, 3);
  ASSERT_EQ(paged.size(), 7u);
  for (int i = 0; i < 7; ++i) EXPECT_EQ(paged[i]["index"], i);
  auto failed = all_tasks(c, id, 1, "&status=failed");
  ASSERT_EQ(failed.size(), 2u);
  EXPECT_EQ(failed[0]["index"], 2);
  EXPECT_EQ(failed[1]["index"], 5);
  EXPECT_EQ(failed[0]["error"]["code"], "gateway_rejected");
  EXPECT_EQ(failed[0]["result"]["status_code"], 400);
}

TEST(task_list, each_task_retries_on_its_own_and_the_counts_add_up) {
  engine_env env;
  env.start();
  http_client c(env.port());
  json tasks = keyed_tasks(4, "ok");
  tasks.push_back(chat_task("flaky", {{"fail_times", 2}, {"status", 503}}));
  tasks.push_back(chat_task("down", {{"status", 503}}));
  tasks.push_back(chat_task("rejected", {{"status", 422}}));
  auto r = c.post_json("/v1/jobs", list_job(tasks, {{"max_attempts", 3}}));
  ASSERT_EQ(r.status, 201) << r.body;
  const std::string id = r.json()["id"];
  auto done = env.wait_terminal(c, id);
  ASSERT_EQ(done["status"], "completed") << done.dump();
  EXPECT_EQ(done["task_counts"]["completed"], 5);
  EXPECT_EQ(done["task_counts"]["failed"], 2);
  auto by_key = env.gateway().requests_by_key();
  EXPECT_EQ(by_key["flaky"], 3);
  EXPECT_EQ(by_key["down"], 3);
  EXPECT_EQ(by_key["rejected"], 1);
  auto flaky = c.get("/v1/jobs/" + id + "/tasks/" + all_tasks(c, id)[4]["id"].get<std::string>());
  EXPECT_EQ(flaky.json()["status"], "completed");
  EXPECT_EQ(flaky.json()["attempts"], 3);
  auto down = all_tasks(c, id)[5];
  EXPECT_EQ(down["status"], "failed");
  EXPECT_EQ(down["error"]["code"], "gateway_error");
  EXPECT_EQ(down["attempts"], 3);
}

TEST(task_list, max_inflight_caps_the_jobs_tasks_in_flight) {
  engine_env env;
  env.settings().per_model_concurrency = 8;
  env.start();
  env.gateway().set_latency_ms(50);
  http_client c(env.port());
  auto r = c.post_json("/v1/jobs", list_job(keyed_tasks(12, "w"), {{"max_inflight", 2}}));
  ASSERT_EQ(r.status, 201) << r.body;
  EXPECT_EQ(r.json()["max_inflight"], 2);
  ASSERT_EQ(env.wait_terminal(c, r.json()["id"])["status"], "completed");
  EXPECT_LE(env.gateway().peak_in_flight(), 2);
  EXPECT_EQ(env.gateway().requests(), 12);
}

/// `switchyard_outbox_published_total{kind="task"}` as /metrics reads it now (0 if absent).
double task_messages_published(http_client& c) {
  return value(c.get("/metrics").body, "switchyard_outbox_published_total", {R"(kind="task")"});
}

TEST(task_list, a_fast_lists_window_moves_by_chains_without_a_message_per_task) {
  // Each finishing attempt leases the list's next task with its outcome and runs it (DESIGN
  // rule 3: the lease is committed first), once the model is known to answer fast.
  engine_env env;
  env.settings().per_model_concurrency = 8;
  env.start();
  http_client c(env.port());
  const double before = task_messages_published(c);
  auto r = c.post_json("/v1/jobs", list_job(keyed_tasks(60, "chain"), {{"max_inflight", 2}}));
  ASSERT_EQ(r.status, 201) << r.body;
  ASSERT_EQ(env.wait_terminal(c, r.json()["id"])["status"], "completed");
  EXPECT_EQ(env.gateway().requests(), 60) << "every task ran once";
  EXPECT_LE(env.gateway().peak_in_flight(), 2) << "a chain stays inside the window";
  const double published = task_messages_published(c) - before;
  EXPECT_GE(published, 2) << "the first window is published";
  EXPECT_LT(published, 20) << "the window moved by messages, not by chains";
  for (const auto& t : all_tasks(c, r.json()["id"])) {
    EXPECT_EQ(t["status"], "completed") << t.dump();
    EXPECT_EQ(t["attempts"], 1) << t.dump();
  }
}

TEST(task_list, a_small_job_is_not_starved_by_a_large_list_on_the_same_model) {
  engine_env env;
  env.settings().per_model_concurrency = 4;
  env.settings().task_window = 8;
  env.start();
  env.gateway().set_latency_ms(20);
  http_client c(env.port());
  // 1,000 tasks at 4 in flight and 20 ms each: about 5 s alone.
  auto big = c.post_json("/v1/jobs", list_job(keyed_tasks(1000, "big")));
  ASSERT_EQ(big.status, 201) << big.body;
  const std::string big_id = big.json()["id"];
  wait_for([&] { return env.gateway().requests() >= 20; }, std::chrono::seconds(10));
  auto small = c.post_json("/v1/jobs", list_job(keyed_tasks(10, "small")));
  ASSERT_EQ(small.status, 201) << small.body;
  auto small_done = env.wait_terminal(c, small.json()["id"]);
  ASSERT_EQ(small_done["status"], "completed") << small_done.dump();
  // The big list was still far from done: the small job went through beside it.
  auto big_now = c.get("/v1/jobs/" + big_id).json();
  EXPECT_EQ(big_now["status"], "in_progress") << big_now.dump();
  EXPECT_LT(big_now["task_counts"]["completed"].get<int>(), 800) << big_now.dump();
  // The window held: the big list never had more than 8 tasks queued or running.
  EXPECT_LE(big_now["task_counts"]["in_progress"].get<int>(), 8);
  EXPECT_EQ(env.wait_terminal(c, big_id, std::chrono::seconds(60))["status"], "completed");
  EXPECT_EQ(env.gateway().requests(), 1010);
}

TEST(task_list, cancel_stops_every_task_and_the_tasks_never_run_read_cancelled) {
  engine_env env;
  env.settings().per_model_concurrency = 2;
  env.settings().task_window = 4;
  env.start();
  env.gateway().set_latency_ms(2'000);
  http_client c(env.port());
  auto r = c.post_json("/v1/jobs", list_job(keyed_tasks(20, "c")));
  ASSERT_EQ(r.status, 201) << r.body;
  const std::string id = r.json()["id"];
  ASSERT_TRUE(wait_for([&] { return env.gateway().in_flight() == 2; }, std::chrono::seconds(10)));
  auto cancelled = c.post_json("/v1/jobs/" + id + "/cancel", json::object());
  ASSERT_EQ(cancelled.status, 200) << cancelled.body;
  EXPECT_EQ(cancelled.json()["status"], "cancelled");
  EXPECT_EQ(cancelled.json()["task_counts"]["cancelled"], 20);
  EXPECT_EQ(cancelled.json()["task_counts"]["queued"], 0);
  EXPECT_EQ(cancelled.json()["task_counts"]["in_progress"], 0);
  // The running requests are aborted, the window's queued messages are dropped as stale, and
  // nothing more is sent.
  ASSERT_TRUE(wait_for([&] { return env.gateway().in_flight() == 0; }, std::chrono::seconds(10)));
  ASSERT_TRUE(wait_for(
      [&] {
        auto backlog = env.js().task_backlog("test-model");
        return backlog && *backlog == 0;
      },
      std::chrono::seconds(10)));
  auto tasks = all_tasks(c, id);
  ASSERT_EQ(tasks.size(), 20u);
  for (const auto& t : tasks) {
    EXPECT_EQ(t["status"], "cancelled") << t.dump();
    EXPECT_EQ(t["error"]["code"], "cancelled") << t.dump();
  }
  EXPECT_EQ(env.gateway().requests(), 2);
  EXPECT_EQ(env.count(storage::db::queued), 0u);
  EXPECT_EQ(env.count(storage::db::list_live), 0u);
  EXPECT_EQ(env.count(storage::db::leases), 0u);
  auto again = c.post_json("/v1/jobs/" + id + "/cancel", json::object());
  EXPECT_EQ(again.status, 200);
}

TEST(task_list, the_jobs_timeout_bounds_the_whole_list) {
  engine_env env;
  env.settings().per_model_concurrency = 2;
  env.start();
  env.gateway().set_latency_ms(3'000);
  http_client c(env.port());
  auto r = c.post_json("/v1/jobs", list_job(keyed_tasks(6, "d"), {{"timeout", 0.5}}));
  ASSERT_EQ(r.status, 201) << r.body;
  auto done = env.wait_terminal(c, r.json()["id"], std::chrono::seconds(20));
  ASSERT_EQ(done["status"], "expired") << done.dump();
  EXPECT_EQ(done["error"]["code"], "deadline_exceeded");
  EXPECT_EQ(done["task_counts"]["failed"], 6);
  for (const auto& t : all_tasks(c, r.json()["id"])) {
    EXPECT_EQ(t["status"], "failed") << t.dump();
    EXPECT_EQ(t["error"]["code"], "deadline_exceeded") << t.dump();
  }
  ASSERT_TRUE(wait_for([&] { return env.gateway().in_flight() == 0; }, std::chrono::seconds(10)));
}

TEST(task_list, an_idempotent_resubmission_finds_the_same_list) {
  engine_env env;
  env.start();
  http_client c(env.port());
  auto first = c.post_json("/v1/jobs", list_job(keyed_tasks(3, "i")), {{"Idempotency-Key", "k1"}});
  ASSERT_EQ(first.status, 201) << first.body;
  auto again = c.post_json("/v1/jobs", list_job(keyed_tasks(3, "i")), {{"Idempotency-Key", "k1"}});
  EXPECT_TRUE(again.status == 200 || again.status == 202) << again.body;
  EXPECT_EQ(again.json()["id"], first.json()["id"]);
  auto other = c.post_json("/v1/jobs", list_job(keyed_tasks(4, "i")), {{"Idempotency-Key", "k1"}});
  EXPECT_EQ(other.status, 422) << other.body;
  EXPECT_EQ(other.json()["error"]["code"], "idempotency_conflict");
  ASSERT_EQ(env.wait_terminal(c, first.json()["id"])["status"], "completed");
  EXPECT_EQ(env.gateway().requests(), 3);
}

TEST(task_list, bad_lists_are_refused_with_the_index_and_store_nothing) {
  engine_env env;
  env.settings().sync_tasks_max = 5;
  env.settings().max_tasks_per_job = 8;
  env.start();
  http_client c(env.port());
  auto expect_error = [&](const json& req, int status, const std::string& code,
                          const std::string& param) {
    auto r = c.post_json("/v1/jobs", req);
    EXPECT_EQ(r.status, status) << req.dump() << " → " << r.body;
    EXPECT_EQ(r.json()["error"]["code"], code) << r.body;
    EXPECT_EQ(r.json()["error"]["param"], param) << r.body;
  };
  expect_error(list_job(json::array()), 400, "invalid_tasks", "tasks");
  expect_error(list_job(json::object()), 400, "invalid_tasks", "tasks");
  json with_body = list_job(keyed_tasks(1, "x"));
  with_body["body"] = chat_task("y")["body"];
  expect_error(with_body, 400, "invalid_tasks", "tasks");
  expect_error(list_job({chat_task("a"), 7}), 400, "invalid_tasks", "tasks[1]");
  expect_error(list_job({chat_task("a"), json::object()}), 400, "invalid_body", "tasks[1].body");
  json no_model = chat_task("a");
  no_model["body"].erase("model");
  expect_error(list_job({chat_task("a"), chat_task("b"), no_model}), 400, "missing_model",
               "tasks[2].body.model");
  expect_error(list_job({chat_task("a", {}, "same"), chat_task("b", {}, "same")}), 400,
               "duplicate_custom_id", "tasks[1].custom_id");
  json bad_custom = chat_task("a");
  bad_custom["custom_id"] = 5;
  expect_error(list_job({bad_custom}), 400, "invalid_tasks", "tasks[0].custom_id");
  json unknown = chat_task("a");
  unknown["priority"] = 1;
  expect_error(list_job({unknown}), 400, "unknown_parameter", "tasks[0].priority");
  expect_error(list_job(keyed_tasks(9, "big")), 400, "too_many_tasks", "tasks");
  expect_error(list_job(keyed_tasks(2, "m"), {{"max_inflight", 0}}), 400, "invalid_max_inflight",
               "max_inflight");
  json single = {
      {"endpoint", "/v1/chat/completions"}, {"body", chat_task("s")["body"]}, {"max_inflight", 2}};
  expect_error(single, 400, "invalid_max_inflight", "max_inflight");
  EXPECT_EQ(env.count(storage::db::jobs), 0u);
  EXPECT_EQ(env.count(storage::db::tasks), 0u);
  EXPECT_EQ(env.count(storage::db::task_custom), 0u);
  EXPECT_EQ(env.gateway().requests(), 0);
}

TEST(task_list, a_task_for_a_model_without_a_gateway_is_refused_by_index) {
  engine_env env;
  config::gateway_settings gw = *env.settings().gateway;
  env.settings().gateway.reset();
  env.settings().model_gateways = {{"test-model", gw}};
  env.start();
  http_client c(env.port());
  json other = chat_task("b");
  other["body"]["model"] = "no-such-model";
  auto r = c.post_json("/v1/jobs", list_job({chat_task("a"), other}));
  EXPECT_EQ(r.status, 404) << r.body;
  EXPECT_EQ(r.json()["error"]["code"], "model_not_found");
  EXPECT_EQ(r.json()["error"]["param"], "tasks[1].body.model");
  EXPECT_EQ(env.count(storage::db::jobs), 0u);
}

TEST(task_list, a_list_over_several_models_runs_each_on_its_own_queue) {
  engine_env env;
  config::gateway_settings gw = *env.settings().gateway;
  env.settings().gateway.reset();
  env.settings().model_gateways = {{"m-a", gw}, {"m-b", gw}};
  env.start();
  http_client c(env.port());
  json tasks = json::array();
  for (int i = 0; i < 6; ++i) {
    json t = chat_task("k" + std::to_string(i));
    t["body"]["model"] = i % 2 ? "m-a" : "m-b";
    tasks.push_back(t);
  }
  auto r = c.post_json("/v1/jobs", list_job(tasks));
  ASSERT_EQ(r.status, 201) << r.body;
  EXPECT_TRUE(r.json()["model"].is_null());
  ASSERT_EQ(env.wait_terminal(c, r.json()["id"])["status"], "completed");
  std::set<std::string> models;
  for (const auto& q : env.gateway().received())
    models.insert(json::parse(q.body).value("model", ""));
  EXPECT_EQ(models, (std::set<std::string>{"m-a", "m-b"}));
}

}  // namespace SY_UNITY_ID
}  // namespace sy::test
