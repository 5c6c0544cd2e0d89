// Staged task lists (docs/task-lists.md): a list too long to commit at once, or uploaded as a
// file of purpose "tasks", is answered 202 and read in chunks by its ingest actor; a bad file
// fails the job with its line numbers and writes no task.

#include <gtest/gtest.h>

#include <filesystem>

#include "tests/integration/engine/engine_env.hpp"
#include "tests/support/multipart_form.hpp"
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

std::string lines(int n, const std::string& prefix) {
  std::string out;
  for (int i = 0; i < n; ++i)
    out += task(prefix + std::to_string(i), "id-" + std::to_string(i)).dump() + "\n";
  return out;
}

std::string upload_tasks(http_client& c, const std::string& content) {
  auto r = upload(c, form({{"purpose", "tasks"}}, "tasks.jsonl", content));
  EXPECT_EQ(r.status, 200) << r.body;
  return r.json().value("id", "");
}

json staged_job(const std::string& file_id) {
  return {{"endpoint", "/v1/chat/completions"}, {"input_file_id", file_id}};
}

size_t task_files(engine_env& env) {
  const auto dir = std::filesystem::path(env.settings().data_dir) / "task-lists";
  if (!std::filesystem::exists(dir)) return 0;
  return static_cast<size_t>(std::distance(std::filesystem::directory_iterator(dir),
                                           std::filesystem::directory_iterator()));
}

TEST(task_list_staged, an_inline_list_over_sync_tasks_max_is_answered_202_and_ingested) {
  engine_env env;
  env.settings().sync_tasks_max = 5;
  env.start();
  http_client c(env.port());
  json tasks = json::array();
  for (int i = 0; i < 2'500; ++i) tasks.push_back(task("k" + std::to_string(i)));
  auto r = c.post_json("/v1/jobs", {{"endpoint", "/v1/chat/completions"}, {"tasks", tasks}});
  ASSERT_EQ(r.status, 202) << r.body;
  EXPECT_EQ(r.json()["status"], "ingesting");
  EXPECT_TRUE(r.json()["task_counts"]["total"].is_null());
  const std::string id = r.json()["id"];
  // 2,500 tasks: seconds alone, but CI's sanitizer stages run it beside other tests.
  auto done = env.wait_terminal(c, id, std::chrono::seconds(240));
  ASSERT_EQ(done["status"], "completed") << done.dump();
  EXPECT_EQ(done["task_counts"]["total"], 2'500);
  EXPECT_EQ(done["task_counts"]["completed"], 2'500);
  auto by_key = env.gateway().requests_by_key();
  EXPECT_EQ(by_key.size(), 2'500u);
  for (const auto& [k, n] : by_key) ASSERT_EQ(n, 1) << k;
  // The staged copy goes once the list is latched (just after the latch's commit).
  EXPECT_TRUE(wait_for([&] { return task_files(env) == 0; })) << task_files(env);
}

TEST(task_list_staged, an_uploaded_list_is_checked_ingested_and_run) {
  engine_env env;
  env.start();
  http_client c(env.port());
  const std::string file = upload_tasks(c, lines(1'200, "f") + "\n");  // a blank last line
  auto r = c.post_json("/v1/jobs", staged_job(file));
  ASSERT_EQ(r.status, 202) << r.body;
  const std::string id = r.json()["id"];
  // Deleting the upload does not take the list away.
  EXPECT_EQ(c.request("DELETE", "/v1/files/" + file, "").status, 200);
  auto done = env.wait_terminal(c, id, std::chrono::seconds(60));
  ASSERT_EQ(done["status"], "completed") << done.dump();
  EXPECT_EQ(done["task_counts"]["total"], 1'200);
  EXPECT_EQ(done["task_counts"]["completed"], 1'200);
  EXPECT_TRUE(done["errors"].is_null());
  EXPECT_EQ(env.gateway().requests(), 1'200);
  auto t = c.get("/v1/jobs/" + id + "/tasks/id-1100");
  ASSERT_EQ(t.status, 200) << t.body;
  EXPECT_EQ(t.json()["index"], 1100);
}

TEST(task_list_staged, a_bad_file_fails_the_job_with_its_lines_and_writes_no_task) {
  engine_env env;
  env.start();
  http_client c(env.port());
  json no_body = {{"custom_id", "x"}};
  json other_model = task("m");
  other_model["body"]["model"] = "";
  std::string content = task("a", "a").dump() + "\n" +  // 1
                        "{not json\n" +                 // 2
                        no_body.dump() + "\n" +         // 3
                        "\n" +                          // 4: blank, skipped
                        task("b", "a").dump() + "\n" +  // 5: duplicate custom_id
                        other_model.dump() + "\n";      // 6: empty model
  auto r = c.post_json("/v1/jobs", staged_job(upload_tasks(c, content)));
  ASSERT_EQ(r.status, 202) << r.body;
  auto done = env.wait_terminal(c, r.json()["id"]);
  ASSERT_EQ(done["status"], "failed") << done.dump();
  EXPECT_EQ(done["error"]["code"], "invalid_task_file");
  auto errors = done["errors"]["data"];
  ASSERT_EQ(errors.size(), 4u) << done.dump();
  EXPECT_EQ(errors[0]["line"], 2);
  EXPECT_EQ(errors[0]["code"], "invalid_json_line");
  EXPECT_EQ(errors[1]["line"], 3);
  EXPECT_EQ(errors[1]["code"], "invalid_body");
  EXPECT_EQ(errors[2]["line"], 5);
  EXPECT_EQ(errors[2]["code"], "duplicate_custom_id");
  EXPECT_EQ(errors[3]["line"], 6);
  EXPECT_EQ(errors[3]["code"], "missing_model");
  EXPECT_EQ(env.count(storage::db::tasks), 0u);
  EXPECT_EQ(env.count(storage::db::list_ingest), 0u);
  EXPECT_EQ(env.gateway().requests(), 0);
  // The staged copy goes just after the failure's commit, which the job's status already shows.
  EXPECT_TRUE(wait_for([&] { return task_files(env) == 0; })) << task_files(env);
}

TEST(task_list_staged, a_file_that_is_not_a_task_list_is_refused) {
  engine_env env;
  env.start();
  http_client c(env.port());
  auto missing = c.post_json("/v1/jobs", staged_job("file-nope"));
  EXPECT_EQ(missing.status, 404) << missing.body;
  EXPECT_EQ(missing.json()["error"]["code"], "file_not_found");
  auto batch_file = upload(c, form({{"purpose", "batch"}}, "b.jsonl", lines(1, "x")));
  ASSERT_EQ(batch_file.status, 200) << batch_file.body;
  auto wrong = c.post_json("/v1/jobs", staged_job(batch_file.json()["id"]));
  EXPECT_EQ(wrong.status, 400) << wrong.body;
  EXPECT_EQ(wrong.json()["error"]["code"], "invalid_tasks");
  EXPECT_EQ(wrong.json()["error"]["param"], "input_file_id");
  json both = staged_job("file-x");
  both["tasks"] = json::array({task("t")});
  EXPECT_EQ(c.post_json("/v1/jobs", both).json()["error"]["code"], "invalid_tasks");
  EXPECT_EQ(env.count(storage::db::jobs), 0u);
}

TEST(task_list_staged, an_empty_file_fails_its_job) {
  engine_env env;
  env.start();
  http_client c(env.port());
  auto r = c.post_json("/v1/jobs", staged_job(upload_tasks(c, "\n\n")));
  ASSERT_EQ(r.status, 202) << r.body;
  auto done = env.wait_terminal(c, r.json()["id"]);
  ASSERT_EQ(done["status"], "failed") << done.dump();
  EXPECT_EQ(done["errors"]["data"][0]["code"], "empty_file");
}

TEST(task_list_staged, an_ingest_stopped_by_shutdown_resumes_at_the_next_start) {
  engine_env env;
  env.settings().sync_tasks_max = 5;
  env.start();
  http_client c(env.port());
  env.gateway().set_latency_ms(5);
  json tasks = json::array();
  for (int i = 0; i < 3'000; ++i) tasks.push_back(task("r" + std::to_string(i)));
  auto r = c.post_json("/v1/jobs", {{"endpoint", "/v1/chat/completions"}, {"tasks", tasks}});
  ASSERT_EQ(r.status, 202) << r.body;
  const std::string id = r.json()["id"];
  env.stop();
  env.start();
  http_client c2(env.port());
  // 3,000 tasks: about 50 s alone under ThreadSanitizer, more beside other tests (CI's TSan
  // stage failed it once at 90 s).
  auto done = env.wait_terminal(c2, id, std::chrono::seconds(240));
  ASSERT_EQ(done["status"], "completed") << done.dump();
  EXPECT_EQ(done["task_counts"]["total"], 3'000);
  EXPECT_EQ(done["task_counts"]["completed"], 3'000);
  for (const auto& [k, n] : env.gateway().requests_by_key()) ASSERT_EQ(n, 1) << k;
  EXPECT_EQ(env.gateway().requests_by_key().size(), 3'000u);
}

TEST(task_list_staged, a_task_file_has_its_own_size_limit) {
  engine_env env;
  env.settings().max_task_file_bytes = 4'096;
  env.start();
  http_client c(env.port());
  const std::string content = lines(40, "big");  // about 7 KB
  ASSERT_GT(content.size(), 4'096u);
  for (bool purpose_first : {true, false}) {
    std::string body = purpose_first ? form({{"purpose", "tasks"}}, "t.jsonl", content)
                                     : form({}, "t.jsonl", content);
    if (!purpose_first) {  // the purpose after the file: checked when the form ends
      body.erase(body.rfind("--" + form_boundary + "--"));
      body += "--" + form_boundary +
              "\r\nContent-Disposition: form-data; name=\"purpose\"\r\n\r\n" + "tasks\r\n--" +
              form_boundary + "--\r\n";
    }
    auto r = upload(c, body);
    EXPECT_EQ(r.status, 413) << r.body;
    EXPECT_EQ(r.json()["error"]["code"], "file_too_large");
    EXPECT_NE(r.json()["error"]["message"].get<std::string>().find("max_task_file_bytes"),
              std::string::npos);
  }
  // Other purposes keep files_max_bytes.
  EXPECT_EQ(upload(c, form({{"purpose", "batch"}}, "b.jsonl", content)).status, 200);
}

}  // namespace SY_UNITY_ID
}  // namespace sy::test
