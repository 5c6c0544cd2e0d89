// Open task lists (docs/task-lists.md, "Open jobs"): a job that takes tasks by appends until it
// is closed, whose total is set when it is latched and which never completes before that.

#include <gtest/gtest.h>

#include "tests/integration/engine/engine_env.hpp"
#include "tests/support/wait.hpp"

namespace sy::test {
namespace SY_UNITY_ID {

using nlohmann::json;

json task(const std::string& key, const std::string& custom_id = "") {
  json t = {{"body",
             {{"model", "test-model"},
              {"messages", {{{"role", "user"}, {"content", "task " + key}}}},
              {"fake", {{"key", key}}}}}};
  if (!custom_id.empty()) t["custom_id"] = custom_id;
  return t;
}

json tasks(int n, const std::string& prefix) {
  json out = json::array();
  for (int i = 0; i < n; ++i) out.push_back(task(prefix + std::to_string(i)));
  return out;
}

json open_job(json first = json::array()) {
  json req = {{"endpoint", "/v1/chat/completions"}, {"open", true}};
  if (!first.empty()) req["tasks"] = std::move(first);
  return req;
}

json get_job(http_client& c, const std::string& id) { return c.get("/v1/jobs/" + id).json(); }

TEST(task_list_open, an_open_job_takes_appends_and_completes_only_after_it_is_closed) {
  engine_env env;
  env.start();
  http_client c(env.port());
  auto r = c.post_json("/v1/jobs", open_job(tasks(2, "a")));
  ASSERT_EQ(r.status, 202) << r.body;
  const std::string id = r.json()["id"];
  EXPECT_EQ(r.json()["status"], "ingesting");
  EXPECT_TRUE(r.json()["task_counts"]["total"].is_null());
  EXPECT_TRUE(r.json()["model"].is_null());

  // Its tasks run while it is open, and it does not complete.
  ASSERT_TRUE(wait_for([&] { return get_job(c, id)["task_counts"]["completed"] == 2; }));
  EXPECT_EQ(get_job(c, id)["status"], "ingesting");

  auto more = c.post_json("/v1/jobs/" + id + "/tasks", {{"tasks", tasks(3, "b")}},
                          {{"Idempotency-Key", "append-1"}});
  ASSERT_EQ(more.status, 200) << more.body;
  EXPECT_EQ(more.json()["status"], "ingesting");
  // A retried append adds nothing; the key with other tasks is a conflict.
  auto retried = c.post_json("/v1/jobs/" + id + "/tasks", {{"tasks", tasks(3, "b")}},
                             {{"Idempotency-Key", "append-1"}});
  ASSERT_EQ(retried.status, 200) << retried.body;
  auto other = c.post_json("/v1/jobs/" + id + "/tasks", {{"tasks", tasks(1, "z")}},
                           {{"Idempotency-Key", "append-1"}});
  EXPECT_EQ(other.status, 422) << other.body;
  EXPECT_EQ(other.json()["error"]["code"], "idempotency_conflict");

  auto last = c.post_json("/v1/jobs/" + id + "/tasks",
                          {{"tasks", {task("c0", "last-one")}}, {"last_batch", true}});
  ASSERT_EQ(last.status, 200) << last.body;
  EXPECT_EQ(last.json()["task_counts"]["total"], 6);
  auto done = env.wait_terminal(c, id);
  ASSERT_EQ(done["status"], "completed") << done.dump();
  EXPECT_EQ(done["task_counts"]["completed"], 6);
  auto by_key = env.gateway().requests_by_key();
  EXPECT_EQ(by_key.size(), 6u);
  for (const auto& [k, n] : by_key) EXPECT_EQ(n, 1) << k;
  EXPECT_EQ(c.get("/v1/jobs/" + id + "/tasks/last-one").json()["index"], 5);
  // Closed: nothing more is taken.
  auto late = c.post_json("/v1/jobs/" + id + "/tasks", {{"tasks", tasks(1, "late")}});
  EXPECT_EQ(late.status, 409) << late.body;
  EXPECT_EQ(late.json()["error"]["code"], "job_not_open");
}

TEST(task_list_open, close_latches_a_list_whose_tasks_are_all_done) {
  engine_env env;
  env.start();
  http_client c(env.port());
  auto r = c.post_json("/v1/jobs", open_job(tasks(3, "x")));
  ASSERT_EQ(r.status, 202) << r.body;
  const std::string id = r.json()["id"];
  ASSERT_TRUE(wait_for([&] { return get_job(c, id)["task_counts"]["completed"] == 3; }));
  EXPECT_EQ(get_job(c, id)["status"], "ingesting");
  auto closed = c.post_json("/v1/jobs/" + id + "/close", json::object());
  ASSERT_EQ(closed.status, 200) << closed.body;
  EXPECT_EQ(closed.json()["status"], "completed");
  EXPECT_EQ(closed.json()["task_counts"]["total"], 3);
  auto again = c.post_json("/v1/jobs/" + id + "/close", json::object());
  EXPECT_EQ(again.status, 409);
  EXPECT_EQ(again.json()["error"]["code"], "job_not_open");
}

TEST(task_list_open, an_empty_open_job_closes_as_an_empty_completed_list) {
  engine_env env;
  env.start();
  http_client c(env.port());
  auto r = c.post_json("/v1/jobs", open_job());
  ASSERT_EQ(r.status, 202) << r.body;
  const std::string id = r.json()["id"];
  EXPECT_EQ(r.json()["task_counts"]["queued"], 0);
  auto closed = c.post_json("/v1/jobs/" + id + "/close", json::object());
  ASSERT_EQ(closed.status, 200) << closed.body;
  EXPECT_EQ(closed.json()["status"], "completed");
  EXPECT_EQ(closed.json()["task_counts"]["total"], 0);
}

TEST(task_list_open, bad_appends_are_refused_and_change_nothing) {
  engine_env env;
  env.settings().sync_tasks_max = 4;
  env.start();
  http_client c(env.port());
  auto r = c.post_json("/v1/jobs", open_job({task("a", "dup")}));
  ASSERT_EQ(r.status, 202) << r.body;
  const std::string id = r.json()["id"];
  auto append = [&](const json& body) { return c.post_json("/v1/jobs/" + id + "/tasks", body); };
  auto expect = [&](const http_reply& reply, int status, const std::string& code,
                    const std::string& param) {
    EXPECT_EQ(reply.status, status) << reply.body;
    EXPECT_EQ(reply.json()["error"]["code"], code) << reply.body;
    EXPECT_EQ(reply.json()["error"]["param"], param) << reply.body;
  };
  expect(append({{"tasks", {task("b"), task("c", "dup")}}}), 400, "duplicate_custom_id",
         "tasks[1].custom_id");
  expect(append({{"tasks", json::array()}}), 400, "invalid_tasks", "tasks");
  expect(append({{"tasks", tasks(5, "many")}}), 400, "too_many_tasks", "tasks");
  expect(append({{"tasks", tasks(1, "x")}, {"priority", 1}}), 400, "unknown_parameter", "priority");
  expect(append({{"tasks", tasks(1, "x")}, {"last_batch", "yes"}}), 400, "invalid_tasks",
         "last_batch");
  const json counts = get_job(c, id)["task_counts"];  // one snapshot: the task moves meanwhile
  EXPECT_EQ(counts["queued"].get<int>() + counts["in_progress"].get<int>() +
                counts["completed"].get<int>(),
            1);
  auto unknown = c.post_json("/v1/jobs/job_nope/tasks", {{"tasks", tasks(1, "u")}});
  expect(unknown, 404, "job_not_found", "id");
  auto single = env.submit(c, "single");
  auto to_single = c.post_json("/v1/jobs/" + single.json()["id"].get<std::string>() + "/tasks",
                               {{"tasks", tasks(1, "s")}});
  expect(to_single, 404, "job_not_found", "id");
  auto inline_list = c.post_json(
      "/v1/jobs", {{"endpoint", "/v1/chat/completions"}, {"tasks", tasks(2, "closed")}});
  ASSERT_EQ(inline_list.status, 201);
  auto to_closed = c.post_json("/v1/jobs/" + inline_list.json()["id"].get<std::string>() + "/tasks",
                               {{"tasks", tasks(1, "c")}});
  expect(to_closed, 409, "job_not_open", "id");
}

TEST(task_list_open, a_cancelled_open_job_takes_no_more_tasks) {
  engine_env env;
  env.start();
  http_client c(env.port());
  auto r = c.post_json("/v1/jobs", open_job());
  const std::string id = r.json()["id"];
  auto cancelled = c.post_json("/v1/jobs/" + id + "/cancel", json::object());
  ASSERT_EQ(cancelled.status, 200) << cancelled.body;
  EXPECT_EQ(cancelled.json()["status"], "cancelled");
  EXPECT_EQ(cancelled.json()["task_counts"]["total"], 0);
  auto late = c.post_json("/v1/jobs/" + id + "/tasks", {{"tasks", tasks(1, "x")}});
  EXPECT_EQ(late.status, 409);
}

TEST(task_list_open, open_jobs_are_listed_by_their_status) {
  engine_env env;
  env.start();
  http_client c(env.port());
  auto r = c.post_json("/v1/jobs", open_job());
  auto listed = c.get("/v1/jobs?status=ingesting");
  ASSERT_EQ(listed.status, 200) << listed.body;
  ASSERT_EQ(listed.json()["data"].size(), 1u);
  EXPECT_EQ(listed.json()["data"][0]["id"], r.json()["id"]);
}

}  // namespace SY_UNITY_ID
}  // namespace sy::test
