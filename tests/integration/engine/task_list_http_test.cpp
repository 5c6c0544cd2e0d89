// http tasks (docs/task-lists.md, "http tasks"): a task list whose endpoint is "http" runs plain
// HTTP requests against the fake server under the http_task_* network policy, keeps each answer,
// retries what can be retried, refuses bad requests and denied targets with nothing stored, and
// holds each host to its own concurrency limit.

#include <gtest/gtest.h>

#include "tests/integration/engine/engine_env.hpp"
#include "tests/support/multipart_form.hpp"
#include "tests/support/wait.hpp"

namespace sy::test {
namespace SY_UNITY_ID {

using nlohmann::json;

json http_task(const std::string& id, json request) {
  return {{"custom_id", id}, {"request", std::move(request)}};
}

json chat_request(const std::string& base, const std::string& content) {
  return {{"method", "POST"},
          {"url", base + "/v1/chat/completions"},
          {"body", {{"model", "any"}, {"messages", {{{"role", "user"}, {"content", content}}}}}}};
}

json list_of(json tasks) {
  return {{"endpoint", "http"}, {"tasks", std::move(tasks)}, {"max_attempts", 3}};
}

json task_of(http_client& c, const std::string& job, const std::string& custom_id) {
  return c.get("/v1/jobs/" + job + "/tasks/" + custom_id).json();
}

TEST(task_list_http, requests_run_with_their_method_headers_and_body_and_keep_the_answer) {
  engine_env env;
  env.settings().http_task_allow_loopback = true;
  env.settings().requeue_initial_backoff_ms = 10;
  env.start();
  http_client c(env.port());
  const std::string base = env.gateway().url();
  json echo = chat_request(base, "hello");
  echo["headers"] = {{"X-Trace", "t-1"}};
  json text = {{"method", "POST"},
               {"url", base + "/v1/chat/completions"},
               {"headers", {{"Content-Type", "application/json"}}},
               {"body", R"({"model":"any","messages":[{"role":"user","content":"as text"}]})"}};
  auto r = c.post_json(
      "/v1/jobs", list_of({http_task("echo", echo), http_task("text", text),
                           http_task("missing", {{"method", "GET"}, {"url", base + "/nope"}})}));
  ASSERT_EQ(r.status, 201) << r.body;
  const std::string id = r.json()["id"];
  EXPECT_EQ(r.json()["endpoint"], "http");
  auto job = env.wait_terminal(c, id);
  ASSERT_EQ(job["status"], "completed") << job.dump();
  EXPECT_EQ(job["task_counts"]["completed"], 2);
  EXPECT_EQ(job["task_counts"]["failed"], 1);

  auto answered = task_of(c, id, "echo");
  EXPECT_EQ(answered["status"], "completed");
  EXPECT_EQ(answered["result"]["status_code"], 200);
  EXPECT_EQ(answered["result"]["body"]["choices"][0]["message"]["content"], "echo: hello");
  EXPECT_EQ(task_of(c, id, "text")["result"]["body"]["choices"][0]["message"]["content"],
            "echo: as text");
  auto missing = task_of(c, id, "missing");
  EXPECT_EQ(missing["status"], "failed");
  EXPECT_EQ(missing["error"]["code"], "http_rejected") << missing.dump();
  EXPECT_EQ(missing["result"]["status_code"], 404);

  bool saw_echo = false;
  int gets = 0;
  for (const auto& req : env.gateway().received()) {
    if (req.method == "GET") ++gets;
    if (req.body.find("hello") == std::string::npos) continue;
    saw_echo = true;
    EXPECT_EQ(req.method, "POST");
    EXPECT_EQ(req.headers.at("x-trace"), "t-1");
    EXPECT_EQ(req.headers.at("content-type"), "application/json");
    EXPECT_EQ(req.headers.at("user-agent"), "switchyard-http-task");
  }
  EXPECT_TRUE(saw_echo);
  EXPECT_EQ(gets, 1) << "a 404 is final: not retried";
}

TEST(task_list_http, a_retryable_answer_is_retried_and_an_unreachable_server_fails_the_task) {
  engine_env env;
  env.settings().http_task_allow_loopback = true;
  env.settings().requeue_initial_backoff_ms = 10;
  env.settings().requeue_max_backoff_ms = 20;
  env.start();
  http_client c(env.port());
  env.gateway().fail_next(1, 503);
  auto r = c.post_json(
      "/v1/jobs",
      list_of({http_task("flaky", chat_request(env.gateway().url(), "again")),
               http_task("closed", {{"method", "GET"}, {"url", "http://127.0.0.1:9/none"}})}));
  ASSERT_EQ(r.status, 201) << r.body;
  const std::string id = r.json()["id"];
  ASSERT_EQ(env.wait_terminal(c, id)["status"], "completed");
  auto flaky = task_of(c, id, "flaky");
  EXPECT_EQ(flaky["status"], "completed") << flaky.dump();
  EXPECT_EQ(flaky["attempts"], 2);
  auto closed = task_of(c, id, "closed");
  EXPECT_EQ(closed["status"], "failed");
  EXPECT_EQ(closed["error"]["code"], "http_unreachable") << closed.dump();
  EXPECT_EQ(closed["attempts"], 3);
}

TEST(task_list_http, bad_requests_and_denied_targets_are_refused_and_store_nothing) {
  engine_env env;  // loopback not allowed
  env.start();
  http_client c(env.port());
  auto expect = [&](const json& body, int status, const std::string& code,
                    const std::string& param) {
    auto r = c.post_json("/v1/jobs", body);
    EXPECT_EQ(r.status, status) << body.dump() << " → " << r.body;
    EXPECT_EQ(r.json()["error"]["code"], code) << r.body;
    EXPECT_EQ(r.json()["error"]["param"], param) << r.body;
  };
  auto one = [](json request) { return list_of({http_task("a", std::move(request))}); };
  const json get = {{"method", "GET"}, {"url", "http://example.test/x"}};
  expect(one({{"method", "GET"}, {"url", "http://127.0.0.1:8/x"}}), 400, "http_task_denied",
         "tasks[0].request.url");
  expect(one({{"method", "GET"}, {"url", "http://localhost/x"}}), 400, "http_task_denied",
         "tasks[0].request.url");
  expect(one({{"method", "GET"}, {"url", "http://169.254.169.254/latest/meta-data"}}), 400,
         "http_task_denied", "tasks[0].request.url");
  expect(one({{"method", "FETCH"}, {"url", "http://example.test/"}}), 400, "invalid_http_request",
         "tasks[0].request.method");
  expect(one({{"method", "GET"}, {"url", "ftp://example.test/"}}), 400, "invalid_http_request",
         "tasks[0].request.url");
  expect(one({{"method", "GET"}, {"url", "http://example.test/"}, {"headers", {{"Host", "x"}}}}),
         400, "invalid_http_request", "tasks[0].request.headers.Host");
  expect(one({{"method", "GET"}, {"url", "http://example.test/"}, {"headers", {{"X-A", 1}}}}), 400,
         "invalid_http_request", "tasks[0].request.headers.X-A");
  expect(one({{"method", "GET"}, {"url", "http://example.test/"}, {"timeout", 1}}), 400,
         "unknown_parameter", "tasks[0].request.timeout");
  expect(list_of({http_task("a", get), {{"body", {{"model", "m"}}}}}), 400, "invalid_tasks",
         "tasks[1].request");
  expect({{"endpoint", "http"}, {"body", get}}, 400, "invalid_endpoint", "endpoint");
  expect({{"endpoint", "/v1/chat/completions"}, {"tasks", {http_task("a", get)}}}, 400,
         "invalid_tasks", "tasks[0].request");
  expect({{"endpoint", "/v1/chat/completions"},
          {"body", {{"model", "http-task:example.test"}, {"messages", json::array()}}}},
         400, "invalid_body", "body.model");
  EXPECT_EQ(env.count(storage::db::jobs), 0u);
  EXPECT_EQ(env.count(storage::db::tasks), 0u);

  // An open http job takes only http tasks, checked the same way.
  auto open = c.post_json("/v1/jobs", {{"endpoint", "http"}, {"open", true}});
  ASSERT_EQ(open.status, 202) << open.body;
  const std::string id = open.json()["id"];
  auto denied =
      c.post_json("/v1/jobs/" + id + "/tasks",
                  {{"tasks", {http_task("b", {{"method", "GET"}, {"url", "http://[::1]:8/"}})}}});
  EXPECT_EQ(denied.status, 400) << denied.body;
  EXPECT_EQ(denied.json()["error"]["code"], "http_task_denied");
  auto chat = c.post_json(
      "/v1/jobs/" + id + "/tasks",
      {{"tasks", {{{"body", {{"model", "test-model"}, {"messages", json::array()}}}}}}});
  EXPECT_EQ(chat.status, 400) << chat.body;
  EXPECT_EQ(chat.json()["error"]["param"], "tasks[0].request");
  EXPECT_EQ(env.count(storage::db::tasks), 0u);
}

TEST(task_list_http, a_name_that_resolves_only_into_denied_networks_fails_its_task_at_once) {
  engine_env env;
  env.settings().http_task_allow_loopback = true;
  env.settings().http_task_deny_networks = "127.0.0.0/8,::1/128";
  env.start();
  http_client c(env.port());
  auto r = c.post_json(
      "/v1/jobs",
      list_of({http_task(
          "x", {{"method", "GET"},
                {"url", "http://localhost:" + std::to_string(env.gateway().port()) + "/"}})}));
  ASSERT_EQ(r.status, 201) << r.body;
  const std::string id = r.json()["id"];
  ASSERT_EQ(env.wait_terminal(c, id)["status"], "completed");
  auto task = task_of(c, id, "x");
  EXPECT_EQ(task["status"], "failed");
  EXPECT_EQ(task["error"]["code"], "http_task_denied") << task.dump();
  EXPECT_EQ(task["attempts"], 1) << "a denial is final";
  EXPECT_NE(task["error"]["message"].get<std::string>().find("http_task_deny_networks"),
            std::string::npos);
  EXPECT_EQ(env.gateway().requests(), 0);
}

TEST(task_list_http, each_host_is_held_to_its_own_limit_and_hosts_run_side_by_side) {
  engine_env env;
  env.settings().http_task_allow_loopback = true;
  env.settings().http_task_host_concurrency = 2;
  env.start();
  env.gateway().set_latency_ms(150);
  http_client c(env.port());
  const auto port = std::to_string(env.gateway().port());
  json tasks = json::array();
  for (int i = 0; i < 8; ++i) {
    tasks.push_back(
        http_task("ip" + std::to_string(i), chat_request("http://127.0.0.1:" + port, "ip")));
    tasks.push_back(
        http_task("name" + std::to_string(i), chat_request("http://localhost:" + port, "name")));
  }
  auto r = c.post_json("/v1/jobs", list_of(tasks));
  ASSERT_EQ(r.status, 201) << r.body;
  const std::string id = r.json()["id"];
  auto job = env.wait_terminal(c, id, std::chrono::seconds(60));
  ASSERT_EQ(job["status"], "completed");
  EXPECT_EQ(job["task_counts"]["completed"], 16) << job.dump();
  // Without a per-host limit all 16 would be in flight (per_model_concurrency is 10 per queue).
  EXPECT_LE(env.gateway().peak_in_flight(), 4);
  EXPECT_GT(env.gateway().peak_in_flight(), 2) << "the two hosts' queues ran side by side";
}

TEST(task_list_http, a_staged_list_of_requests_is_checked_line_by_line_then_run) {
  engine_env env;
  env.settings().http_task_allow_loopback = true;
  env.settings().http_task_deny_networks = "10.0.0.0/8";
  env.start();
  http_client c(env.port());
  auto upload_list = [&](const std::string& content) {
    auto r = upload(c, form({{"purpose", "tasks"}}, "requests.jsonl", content));
    EXPECT_EQ(r.status, 200) << r.body;
    return r.json().value("id", "");
  };
  const std::string base = env.gateway().url();
  std::string good;
  for (int i = 0; i < 20; ++i)
    good += http_task("g" + std::to_string(i), chat_request(base, "g")).dump() + "\n";
  auto r = c.post_json("/v1/jobs", {{"endpoint", "http"}, {"input_file_id", upload_list(good)}});
  ASSERT_EQ(r.status, 202) << r.body;
  auto done = env.wait_terminal(c, r.json()["id"]);
  EXPECT_EQ(done["status"], "completed") << done.dump();
  EXPECT_EQ(done["task_counts"]["completed"], 20);

  const std::string bad = http_task("a", chat_request(base, "a")).dump() + "\n" +  // 1
                          json{{"body", {{"model", "m"}}}}.dump() + "\n" +         // 2
                          http_task("c", {{"method", "GET"}, {"url", "http://10.1.2.3/"}}).dump() +
                          "\n";  // 3
  r = c.post_json("/v1/jobs", {{"endpoint", "http"}, {"input_file_id", upload_list(bad)}});
  ASSERT_EQ(r.status, 202) << r.body;
  done = env.wait_terminal(c, r.json()["id"]);
  ASSERT_EQ(done["status"], "failed") << done.dump();
  auto errors = done["errors"]["data"];
  ASSERT_EQ(errors.size(), 2u) << done.dump();
  EXPECT_EQ(errors[0]["line"], 2);
  EXPECT_EQ(errors[0]["code"], "invalid_tasks");
  EXPECT_EQ(errors[0]["param"], "request");
  EXPECT_EQ(errors[1]["line"], 3);
  EXPECT_EQ(errors[1]["code"], "http_task_denied");
  EXPECT_EQ(errors[1]["param"], "request.url");
}

}  // namespace SY_UNITY_ID
}  // namespace sy::test
