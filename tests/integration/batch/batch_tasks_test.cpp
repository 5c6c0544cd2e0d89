// A batch's lines are its tasks on the native jobs API (docs/batches.md, "A batch as a job"):
// GET /v1/jobs/{batch id}/tasks pages them in input order with their index, custom_id, status
// and result (from the plans and db::batch_lines while the batch runs, from its files once it
// has ended); one is found by its id or custom_id; /export streams the same objects; DELETE
// removes a finished batch (not its files) and refuses a running one.

#include <gtest/gtest.h>

#include <map>
#include <sstream>

#include "tests/integration/engine/engine_env.hpp"
#include "tests/support/gunzip.hpp"
#include "tests/support/multipart_form.hpp"
#include "tests/support/wait.hpp"

namespace sy::test {
namespace SY_UNITY_ID {

using nlohmann::json;

/// A request line of model `model`, answered as `fake` says (the fake gateway's controls).
std::string line(const std::string& custom_id, const std::string& model,
                 json fake = json::object()) {
  fake["key"] = custom_id;
  return json{{"custom_id", custom_id},
              {"method", "POST"},
              {"url", "/v1/chat/completions"},
              {"body",
               {{"model", model},
                {"messages", json::array({{{"role", "user"}, {"content", custom_id}}})},
                {"fake", fake}}}}
             .dump() +
         "\n";
}

std::vector<json> lines_of(const std::string& body) {
  std::vector<json> out;
  std::istringstream in(body);
  for (std::string l; std::getline(in, l);)
    if (!l.empty()) out.push_back(json::parse(l));
  return out;
}

std::string create_batch(http_client& c, const std::string& content) {
  auto file = upload(c, form({{"purpose", "batch"}}, "in.jsonl", content));
  EXPECT_EQ(file.status, 200) << file.body;
  auto r = c.post_json("/v1/batches", {{"input_file_id", file.json()["id"]},
                                       {"endpoint", "/v1/chat/completions"},
                                       {"completion_window", "24h"}});
  EXPECT_EQ(r.status, 200) << r.body;
  return r.json()["id"];
}

/// Every task of `id`, page by page (`limit` a page), checking the pages' cursors.
std::vector<json> all_tasks(http_client& c, const std::string& id, int limit) {
  std::vector<json> out;
  std::string after;
  for (int pages = 0; pages < 100; ++pages) {
    auto page = c.get("/v1/jobs/" + id + "/tasks?limit=" + std::to_string(limit) +
                      (after.empty() ? "" : "&after=" + after));
    EXPECT_EQ(page.status, 200) << page.body;
    auto j = page.json();
    EXPECT_EQ(j["object"], "list") << page.body;
    EXPECT_LE(j["data"].size(), static_cast<size_t>(limit));
    for (auto& t : j["data"]) out.push_back(t);
    if (!j["has_more"].get<bool>()) break;
    EXPECT_EQ(j["last_id"], j["data"].back()["id"]);
    after = j["last_id"];
  }
  return out;
}

// Two models (so dispatch order, model by model, is not input order), a blank line (not a
// request line: indexes skip it) and a final 400: every line is a task in input order with its
// own index and custom_id and the id of its result line; pages, lookups, the status filter and
// the export agree; so do they during a rerun and after it.
TEST(batch_tasks, a_finished_batch_pages_its_lines_as_tasks_in_input_order) {
  engine_env env;
  env.start();
  http_client c(env.port());
  const std::string content = line("c0", "m-b") + line("c1", "m-a") + "\n" +
                              line("c2", "m-b", {{"status", 400}, {"fail_times", 1}}) +
                              line("c3", "m-a") + line("c4", "m-b");
  const std::string id = create_batch(c, content);
  json batch;
  ASSERT_TRUE(wait_for([&] {
    batch = c.get("/v1/batches/" + id).json();
    return batch["status"] == "completed";
  })) << batch.dump();

  auto tasks = all_tasks(c, id, 2);
  ASSERT_EQ(tasks.size(), 5u);
  std::map<std::string, std::string> ids;  // custom_id → task id
  for (size_t i = 0; i < tasks.size(); ++i) {
    const auto& t = tasks[i];
    EXPECT_EQ(t["object"], "job.task");
    EXPECT_EQ(t["job_id"], id);
    EXPECT_EQ(t["index"], i);
    EXPECT_EQ(t["custom_id"], "c" + std::to_string(i));
    EXPECT_EQ(t["model"], i % 2 == 0 ? "m-b" : "m-a");
    EXPECT_TRUE(t["id"].get<std::string>().starts_with("batch_req_")) << t.dump();
    ids[t["custom_id"]] = t["id"];
    if (i == 2) {
      EXPECT_EQ(t["status"], "failed") << t.dump();
      EXPECT_EQ(t["result"]["status_code"], 400) << t.dump();
      EXPECT_EQ(t["error"]["code"], "gateway_rejected") << t.dump();
    } else {
      EXPECT_EQ(t["status"], "completed") << t.dump();
      EXPECT_EQ(t["result"]["status_code"], 200) << t.dump();
      EXPECT_TRUE(t["result"]["body"].is_object()) << t.dump();
      EXPECT_TRUE(t["error"].is_null()) << t.dump();
    }
  }
  // A task's id is the id of its line in the output or error file; its result is that line's
  // response.
  for (const char* file : {"output_file_id", "error_file_id"}) {
    for (const auto& l :
         lines_of(c.get("/v1/files/" + batch[file].get<std::string>() + "/content").body)) {
      EXPECT_EQ(ids[l["custom_id"]], l["id"]) << l.dump();
      const auto& t = tasks[std::stoul(l["custom_id"].get<std::string>().substr(1))];
      EXPECT_EQ(t["result"]["body"], l["response"]["body"]) << l.dump();
    }
  }
  // One task, by custom_id or by id; unknown ones and cursors are task_not_found.
  auto by_custom = c.get("/v1/jobs/" + id + "/tasks/c3");
  ASSERT_EQ(by_custom.status, 200) << by_custom.body;
  EXPECT_EQ(by_custom.json(), tasks[3]);
  auto by_id = c.get("/v1/jobs/" + id + "/tasks/" + ids["c3"]);
  ASSERT_EQ(by_id.status, 200) << by_id.body;
  EXPECT_EQ(by_id.json(), tasks[3]);
  EXPECT_EQ(c.get("/v1/jobs/" + id + "/tasks/nope").json()["error"]["code"], "task_not_found");
  auto bad_cursor = c.get("/v1/jobs/" + id + "/tasks?after=c1");
  EXPECT_EQ(bad_cursor.status, 404) << bad_cursor.body;
  EXPECT_EQ(bad_cursor.json()["error"]["code"], "task_not_found");
  auto failed = c.get("/v1/jobs/" + id + "/tasks?status=failed").json();
  ASSERT_EQ(failed["data"].size(), 1u) << failed.dump();
  EXPECT_EQ(failed["data"][0], tasks[2]);
  EXPECT_FALSE(failed["has_more"].get<bool>());

  // The export: the same tasks, in the same order, plain or gzip'd.
  auto plain = c.get("/v1/jobs/" + id + "/export");
  ASSERT_EQ(plain.status, 200) << plain.body;
  EXPECT_EQ(plain.headers["content-type"], "application/x-ndjson");
  auto exported = lines_of(plain.body);
  ASSERT_EQ(exported.size(), tasks.size());
  for (size_t i = 0; i < tasks.size(); ++i) {
    EXPECT_EQ(exported[i], (json{{"task_id", tasks[i]["id"]},
                                 {"custom_id", tasks[i]["custom_id"]},
                                 {"status", tasks[i]["status"]},
                                 {"response", tasks[i]["result"]},
                                 {"error", tasks[i]["error"]}}));
  }
  auto zipped = c.get("/v1/jobs/" + id + "/export", {{"Accept-Encoding", "gzip"}});
  ASSERT_EQ(zipped.status, 200);
  EXPECT_EQ(zipped.headers["content-encoding"], "gzip");
  EXPECT_EQ(gunzip(zipped.body), plain.body);

  // A rerun runs c2 again, slowly: meanwhile the lines it does not run read from the previous
  // output file and c2 is queued; cancelled, c2 reads as cancelled (from the new error file) and
  // the others as completed (from the new output file, which holds the first run's lines).
  env.gateway().set_latency_ms(5'000);
  ASSERT_EQ(c.request("POST", "/v1/jobs/" + id + "/rerun").status, 200);
  auto rerunning = all_tasks(c, id, 10);
  ASSERT_EQ(rerunning.size(), 5u);
  for (size_t i = 0; i < rerunning.size(); ++i) {
    EXPECT_EQ(rerunning[i]["id"], tasks[i]["id"]);
    EXPECT_EQ(rerunning[i]["index"], i);
    if (i == 2) {
      EXPECT_EQ(rerunning[i]["status"], "queued") << rerunning[i].dump();
      EXPECT_TRUE(rerunning[i]["result"].is_null()) << rerunning[i].dump();
    } else {
      EXPECT_EQ(rerunning[i], tasks[i]);
    }
  }
  ASSERT_EQ(c.request("POST", "/v1/jobs/" + id + "/cancel").status, 200);
  ASSERT_TRUE(wait_for([&] { return c.get("/v1/batches/" + id).json()["status"] == "cancelled"; }));
  auto again = all_tasks(c, id, 10);
  ASSERT_EQ(again.size(), 5u);
  for (size_t i = 0; i < again.size(); ++i) {
    if (i == 2) {
      EXPECT_EQ(again[i]["status"], "cancelled") << again[i].dump();
      EXPECT_EQ(again[i]["error"]["code"], "batch_cancelled") << again[i].dump();
    } else {
      EXPECT_EQ(again[i], tasks[i]);
    }
  }
}

// While a batch runs, a line with a result reads it from db::batch_lines and one without is
// queued; a running batch cannot be deleted; once cancelled, the line that never ran reads as
// cancelled, and DELETE removes the batch (then 404 everywhere) but not its files.
TEST(batch_tasks, a_running_batch_shows_queued_lines_and_is_deleted_only_once_finished) {
  engine_env env;
  env.start();
  http_client c(env.port());
  const std::string id = create_batch(
      c, line("fast", "test-model") + line("slow", "test-model", {{"latency_ms", 5'000}}));
  json job;
  ASSERT_TRUE(wait_for([&] {
    job = c.get("/v1/jobs/" + id).json();
    return job["task_counts"]["completed"] == 1;
  })) << job.dump();
  ASSERT_EQ(job["status"], "in_progress");
  auto running = c.get("/v1/jobs/" + id + "/tasks").json();
  ASSERT_EQ(running["data"].size(), 2u) << running.dump();
  EXPECT_EQ(running["data"][0]["custom_id"], "fast");
  EXPECT_EQ(running["data"][0]["status"], "completed");
  EXPECT_EQ(running["data"][0]["result"]["status_code"], 200);
  EXPECT_EQ(running["data"][1]["custom_id"], "slow");
  EXPECT_EQ(running["data"][1]["status"], "queued");
  EXPECT_TRUE(running["data"][1]["result"].is_null());
  EXPECT_EQ(c.get("/v1/jobs/" + id + "/tasks/slow").json(), running["data"][1]);
  EXPECT_EQ(c.get("/v1/jobs/" + id + "/tasks?status=queued").json()["data"].size(), 1u);

  auto refused = c.request("DELETE", "/v1/jobs/" + id);
  EXPECT_EQ(refused.status, 409) << refused.body;
  EXPECT_EQ(refused.json()["error"]["code"], "job_not_deletable");
  EXPECT_EQ(c.get("/v1/jobs/" + id).status, 200) << "still there";

  ASSERT_EQ(c.request("POST", "/v1/jobs/" + id + "/cancel").status, 200);
  json batch;
  ASSERT_TRUE(wait_for([&] {
    batch = c.get("/v1/batches/" + id).json();
    return batch["status"] == "cancelled";
  })) << batch.dump();
  auto ended = c.get("/v1/jobs/" + id + "/tasks").json();
  ASSERT_EQ(ended["data"].size(), 2u) << ended.dump();
  EXPECT_EQ(ended["data"][0], running["data"][0]) << "its result, now from the output file";
  EXPECT_EQ(ended["data"][1]["status"], "cancelled");
  EXPECT_EQ(ended["data"][1]["error"]["code"], "batch_cancelled");
  EXPECT_EQ(lines_of(c.get("/v1/jobs/" + id + "/export").body).size(), 2u);

  auto del = c.request("DELETE", "/v1/jobs/" + id);
  ASSERT_EQ(del.status, 200) << del.body;
  EXPECT_EQ(del.json(), (json{{"id", id}, {"object", "job.deleted"}, {"deleted", true}}));
  for (const std::string& path : {"/v1/jobs/" + id, "/v1/jobs/" + id + "/tasks",
                                  "/v1/jobs/" + id + "/export", "/v1/jobs/" + id + "/events"}) {
    auto gone = c.get(path);
    EXPECT_EQ(gone.status, 404) << path << ": " << gone.body;
    EXPECT_EQ(gone.json()["error"]["code"], "job_not_found") << path;
  }
  EXPECT_EQ(c.get("/v1/batches/" + id).status, 404);
  EXPECT_EQ(c.request("DELETE", "/v1/jobs/" + id).status, 404) << "a second delete";
  EXPECT_TRUE(c.get("/v1/jobs?kind=batch").json()["data"].empty());
  // Its files stay, under the Files API.
  EXPECT_EQ(c.get("/v1/files/" + batch["input_file_id"].get<std::string>()).status, 200);
  EXPECT_EQ(c.get("/v1/files/" + batch["output_file_id"].get<std::string>()).status, 200);
  EXPECT_EQ(c.get("/v1/files/" + batch["error_file_id"].get<std::string>()).status, 200);
}

}  // namespace SY_UNITY_ID
}  // namespace sy::test
