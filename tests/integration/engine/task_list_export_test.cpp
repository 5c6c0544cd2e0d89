// GET /v1/jobs/{id}/export (docs/task-lists.md): every task's outcome as JSONL, in index order,
// gzip'd when the client accepts it.

#include <gtest/gtest.h>

#include <filesystem>
#include <sstream>

#include "tests/integration/engine/engine_env.hpp"
#include "tests/support/gunzip.hpp"

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

std::vector<json> lines_of(const std::string& body) {
  std::vector<json> out;
  std::istringstream in(body);
  for (std::string line; std::getline(in, line);) out.push_back(json::parse(line));
  return out;
}

TEST(task_list_export, every_task_is_one_line_with_its_outcome_in_index_order) {
  engine_env env;
  env.start();
  http_client c(env.port());
  json tasks = json::array();
  for (int i = 0; i < 1'200; ++i) tasks.push_back(task("e" + std::to_string(i)));
  tasks[7] = task("bad", {{"status", 400}});
  auto r = c.post_json(
      "/v1/jobs", {{"endpoint", "/v1/chat/completions"}, {"tasks", tasks}, {"max_attempts", 1}});
  ASSERT_TRUE(r.status == 201 || r.status == 202) << r.body;
  const std::string id = r.json()["id"];
  ASSERT_EQ(env.wait_terminal(c, id, std::chrono::seconds(60))["status"], "completed");

  auto plain = c.get("/v1/jobs/" + id + "/export");
  ASSERT_EQ(plain.status, 200) << plain.body;
  EXPECT_EQ(plain.headers["content-type"], "application/x-ndjson");
  auto lines = lines_of(plain.body);
  ASSERT_EQ(lines.size(), 1'200u);
  for (size_t i = 0; i < lines.size(); ++i) {
    const auto& l = lines[i];
    EXPECT_EQ(l["custom_id"], tasks[i]["custom_id"]) << i;
    if (i == 7) {
      EXPECT_EQ(l["status"], "failed");
      EXPECT_EQ(l["error"]["code"], "gateway_rejected");
      EXPECT_EQ(l["response"]["status_code"], 400);
    } else {
      EXPECT_EQ(l["status"], "completed") << l.dump();
      EXPECT_EQ(l["response"]["status_code"], 200);
      EXPECT_TRUE(l["error"].is_null());
    }
  }

  auto zipped = c.get("/v1/jobs/" + id + "/export", {{"Accept-Encoding", "gzip, deflate"}});
  ASSERT_EQ(zipped.status, 200);
  EXPECT_EQ(zipped.headers["content-encoding"], "gzip");
  EXPECT_LT(zipped.body.size(), plain.body.size() / 4);
  EXPECT_EQ(gunzip(zipped.body), plain.body);
  auto refused = c.get("/v1/jobs/" + id + "/export", {{"Accept-Encoding", "gzip;q=0"}});
  EXPECT_TRUE(refused.headers["content-encoding"].empty());
}

TEST(task_list_export, a_cancelled_list_exports_its_tasks_that_never_ran_as_cancelled) {
  engine_env env;
  env.settings().per_model_concurrency = 1;
  env.settings().task_window = 1;
  env.start();
  env.gateway().set_latency_ms(1'000);
  http_client c(env.port());
  json tasks = json::array();
  for (int i = 0; i < 5; ++i) tasks.push_back(task("x" + std::to_string(i)));
  auto r = c.post_json("/v1/jobs", {{"endpoint", "/v1/chat/completions"}, {"tasks", tasks}});
  const std::string id = r.json()["id"];
  ASSERT_EQ(c.post_json("/v1/jobs/" + id + "/cancel", json::object()).status, 200);
  auto lines = lines_of(c.get("/v1/jobs/" + id + "/export").body);
  ASSERT_EQ(lines.size(), 5u);
  for (const auto& l : lines) {
    EXPECT_EQ(l["status"], "cancelled") << l.dump();
    EXPECT_EQ(l["error"]["code"], "cancelled") << l.dump();
  }
  EXPECT_EQ(c.get("/v1/jobs/job_nope/export").status, 404);
  auto single = env.submit(c, "s");
  EXPECT_EQ(c.get("/v1/jobs/" + single.json()["id"].get<std::string>() + "/export").status, 404);
}

TEST(task_list_export, results_over_the_inline_size_are_read_back_from_the_segment_and_deleted) {
  engine_env env;
  env.settings().inline_result_bytes = 64;  // every echo answer is larger
  env.start();
  http_client c(env.port());
  json tasks = json::array();
  for (int i = 0; i < 50; ++i) tasks.push_back(task("r" + std::to_string(i)));
  auto r = c.post_json("/v1/jobs", {{"endpoint", "/v1/chat/completions"}, {"tasks", tasks}});
  ASSERT_EQ(r.status, 201) << r.body;
  const std::string id = r.json()["id"];
  ASSERT_EQ(env.wait_terminal(c, id, std::chrono::seconds(30))["status"], "completed");
  const auto segment =
      std::filesystem::path(env.settings().data_dir) / "task-results" / (id + ".seg");
  ASSERT_TRUE(std::filesystem::exists(segment));
  EXPECT_GT(std::filesystem::file_size(segment), 50u * 64);
  auto content = [](const json& response) {
    return response["body"]["choices"][0]["message"]["content"].get<std::string>();
  };
  auto lines = lines_of(c.get("/v1/jobs/" + id + "/export").body);
  ASSERT_EQ(lines.size(), 50u);
  for (size_t i = 0; i < lines.size(); ++i)
    EXPECT_EQ(content(lines[i]["response"]), "echo: task r" + std::to_string(i)) << lines[i];
  auto page =
      c.get("/v1/jobs/" + id + "/tasks?limit=5&after=" + lines[9]["task_id"].get<std::string>());
  ASSERT_EQ(page.status, 200) << page.body;
  EXPECT_EQ(content(page.json()["data"][0]["result"]), "echo: task r10");
  auto one = c.get("/v1/jobs/" + id + "/tasks/r33");
  ASSERT_EQ(one.status, 200) << one.body;
  EXPECT_EQ(content(one.json()["result"]), "echo: task r33");
  ASSERT_EQ(c.request("DELETE", "/v1/jobs/" + id, "").status, 200);
  EXPECT_FALSE(std::filesystem::exists(segment));
}

}  // namespace SY_UNITY_ID
}  // namespace sy::test
