// The Files and Batch API over HTTP against the real engine: streamed uploads land
// byte-identical, every bad request gets its OpenAI error and changes nothing, listing and
// content download work, deleting removes bytes and record.

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "tests/integration/engine/engine_env.hpp"
#include "tests/integration/engine/nats_subscriber.hpp"
#include "tests/support/multipart_form.hpp"
#include "tests/support/wait.hpp"

namespace sy::test {
namespace SY_UNITY_ID {

using nlohmann::json;
namespace fs = std::filesystem;

std::string jsonl(int n) {
  std::string out;
  for (int i = 0; i < n; ++i)
    out += json{{"custom_id", "c" + std::to_string(i)},
                {"method", "POST"},
                {"url", "/v1/chat/completions"},
                {"body",
                 {{"model", "test-model"},
                  {"messages", json::array({{{"role", "user"}, {"content", "hi"}}})}}}}
               .dump() +
           "\n";
  return out;
}

/// `n` lines the fake gateway answers only after 5 s (long enough to cancel them in flight).
std::string slow_jsonl(int n) {
  std::string out;
  for (int i = 0; i < n; ++i)
    out += json{{"custom_id", "s" + std::to_string(i)},
                {"method", "POST"},
                {"url", "/v1/chat/completions"},
                {"body",
                 {{"model", "test-model"},
                  {"messages", json::array({{{"role", "user"}, {"content", "hi"}}})},
                  {"fake", {{"latency_ms", 5'000}}}}}}
               .dump() +
           "\n";
  return out;
}

size_t entries(const std::string& dir) {
  size_t n = 0;
  for ([[maybe_unused]] const auto& e : fs::directory_iterator(dir)) ++n;
  return n;
}

void expect_error(const http_reply& r, int status, const std::string& code,
                  const std::string& param = "") {
  EXPECT_EQ(r.status, status) << r.body;
  auto j = r.json();
  EXPECT_EQ(j["error"]["code"], code) << r.body;
  if (!param.empty()) {
    EXPECT_EQ(j["error"]["param"], param) << r.body;
  }
  EXPECT_TRUE(j["error"].contains("type") && j["error"].contains("message")) << r.body;
}

TEST(batch_http, a_large_upload_streams_to_disk_byte_identical) {
  engine_env env;
  env.start();
  http_client c(env.port());
  std::string content;
  content.reserve(6 << 20);
  for (int i = 0; content.size() < (5u << 20); ++i)
    content +=
        "{\"i\":" + std::to_string(i) + ",\"pad\":\"" + std::string(100, 'a' + i % 26) + "\"}\n";
  auto r = upload(c, form({{"purpose", "user_data"}}, "big.jsonl", content));
  ASSERT_EQ(r.status, 200) << r.body;
  auto f = r.json();
  EXPECT_EQ(f["object"], "file");
  EXPECT_EQ(f["bytes"], content.size());
  EXPECT_EQ(f["purpose"], "user_data");
  EXPECT_EQ(f["filename"], "big.jsonl");
  std::ifstream in(env.engine().batches().file_path(f["id"]), std::ios::binary);
  std::string stored((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_TRUE(stored == content) << "the stored bytes differ from the upload";
  auto got = c.get("/v1/files/" + f["id"].get<std::string>() + "/content");
  ASSERT_EQ(got.status, 200);
  EXPECT_TRUE(got.body == content);
  EXPECT_NE(got.headers["content-disposition"].find("big.jsonl"), std::string::npos);
  EXPECT_EQ(entries(env.engine().batches().upload_dir()), 0u) << "a staging file was left";
}

TEST(batch_http, bad_uploads_are_rejected_and_store_nothing) {
  engine_env env;
  env.settings().files_max_bytes = 64 * 1024;
  env.start();
  const std::string uploads = env.engine().batches().upload_dir();
  auto fresh = [&] { return std::make_unique<http_client>(env.port()); };
  expect_error(
      upload(*fresh(), form({{"purpose", "batch"}}, "in.jsonl", std::string(100'000, 'x'))), 413,
      "file_too_large", "file");
  expect_error(upload(*fresh(), form({}, "in.jsonl", jsonl(1))), 400, "missing_required_parameter",
               "purpose");
  expect_error(upload(*fresh(), form({{"purpose", "batch"}}, "", "")), 400,
               "missing_required_parameter", "file");
  expect_error(upload(*fresh(), form({{"purpose", "batch"}}, "in.txt", jsonl(1))), 400,
               "invalid_file", "file");
  expect_error(upload(*fresh(), form({{"purpose", "nonsense"}}, "in.jsonl", jsonl(1))), 400,
               "invalid_value", "purpose");
  expect_error(upload(*fresh(), form({{"purpose", "batch"},
                                      {"expires_after[anchor]", "created_at"},
                                      {"expires_after[seconds]", "10"}},
                                     "in.jsonl", jsonl(1))),
               400, "invalid_value", "expires_after[seconds]");
  expect_error(fresh()->request("POST", "/v1/files", "{}", {{"Content-Type", "application/json"}}),
               400, "invalid_file");
  // A body cut before its closing boundary.
  std::string cut = form({{"purpose", "batch"}}, "in.jsonl", jsonl(2));
  cut.resize(cut.size() - 10);
  expect_error(upload(*fresh(), cut), 400, "invalid_file");
  http_client c(env.port());
  auto list = c.get("/v1/files");
  ASSERT_EQ(list.status, 200);
  EXPECT_TRUE(list.json()["data"].empty()) << list.body;
  EXPECT_EQ(entries(uploads), 0u) << "a staging file was left";
  // expires_after that is valid sets expires_at.
  auto ok = upload(c, form({{"purpose", "batch"},
                            {"expires_after[anchor]", "created_at"},
                            {"expires_after[seconds]", "3600"}},
                           "in.jsonl", jsonl(1)));
  ASSERT_EQ(ok.status, 200) << ok.body;
  EXPECT_EQ(ok.json()["expires_at"].get<int64_t>(), ok.json()["created_at"].get<int64_t>() + 3600);
}

TEST(batch_http, bad_batch_requests_get_their_error_and_create_nothing) {
  engine_env env;
  env.start();
  http_client c(env.port());
  auto file = upload(c, form({{"purpose", "batch"}}, "in.jsonl", jsonl(2))).json();
  std::string fid = file["id"];
  auto other = upload(c, form({{"purpose", "user_data"}}, "x.jsonl", jsonl(1))).json();
  json good = {
      {"input_file_id", fid}, {"endpoint", "/v1/chat/completions"}, {"completion_window", "24h"}};
  auto with = [&](const std::string& k, json v) {
    json b = good;
    if (v.is_discarded()) {
      b.erase(k);
    } else {
      b[k] = v;
    }
    return c.post_json("/v1/batches", b);
  };
  expect_error(with("input_file_id", json::value_t::discarded), 400, "missing_required_parameter",
               "input_file_id");
  expect_error(with("endpoint", "/v1/moderations"), 400, "invalid_value", "endpoint");
  expect_error(with("completion_window", "1h"), 400, "invalid_value", "completion_window");
  json many = json::object();
  for (int i = 0; i < 17; ++i) many["k" + std::to_string(i)] = "v";
  expect_error(with("metadata", many), 400, "invalid_metadata", "metadata");
  expect_error(with("metadata", {{"k", 1}}), 400, "invalid_metadata");
  expect_error(with("metadata", {{"k", std::string(513, 'v')}}), 400, "invalid_metadata");
  expect_error(with("output_expires_after", {{"anchor", "created_at"}, {"seconds", 5}}), 400,
               "invalid_value", "output_expires_after");
  expect_error(with("surprise", 1), 400, "unknown_parameter", "surprise");
  expect_error(with("max_inflight", 0), 400, "invalid_max_inflight", "max_inflight");
  expect_error(with("max_inflight", 10'001), 400, "invalid_max_inflight", "max_inflight");
  expect_error(with("max_inflight", "2"), 400, "invalid_max_inflight", "max_inflight");
  expect_error(with("max_attempts", 0), 400, "invalid_max_attempts", "max_attempts");
  expect_error(with("max_attempts", 101), 400, "invalid_max_attempts", "max_attempts");
  expect_error(with("max_attempts", "2"), 400, "invalid_max_attempts", "max_attempts");
  expect_error(with("webhook_url", "ftp://example.com/x"), 400, "invalid_webhook_url",
               "webhook_url");
  expect_error(with("webhook_url", 5), 400, "invalid_webhook_url", "webhook_url");
  // A field of another JSON type is invalid_request naming it (metadata has its own code); an id
  // longer than any the engine issues is refused without a lookup.
  expect_error(with("input_file_id", 5), 400, "invalid_request", "input_file_id");
  expect_error(with("endpoint", true), 400, "invalid_request", "endpoint");
  expect_error(with("completion_window", 24), 400, "invalid_request", "completion_window");
  expect_error(with("metadata", json::array()), 400, "invalid_metadata", "metadata");
  expect_error(with("output_expires_after", "1h"), 400, "invalid_value", "output_expires_after");
  expect_error(with("input_file_id", std::string(65, 'f')), 400, "string_above_max_length",
               "input_file_id");
  expect_error(with("input_file_id", "file-nope"), 404, "file_not_found", "input_file_id");
  expect_error(with("input_file_id", other["id"]), 400, "invalid_value", "input_file_id");
  expect_error(c.request("POST", "/v1/batches", "{", {{"Content-Type", "application/json"}}), 400,
               "invalid_json");
  expect_error(c.request("POST", "/v1/batches", "x", {{"Content-Type", "text/plain"}}), 415,
               "unsupported_media_type");
  auto list = c.get("/v1/batches");
  ASSERT_EQ(list.status, 200);
  EXPECT_TRUE(list.json()["data"].empty()) << list.body;
  expect_error(c.get("/v1/batches?limit=0"), 400, "invalid_value", "limit");
  expect_error(c.get("/v1/batches/batch_nope"), 404, "batch_not_found");
  expect_error(c.request("POST", "/v1/batches/batch_nope/cancel"), 404, "batch_not_found");
  expect_error(c.get("/v1/files/file-nope"), 404, "file_not_found");
  expect_error(c.get("/v1/files/file-nope/content"), 404, "file_not_found");
  expect_error(c.request("DELETE", "/v1/files/file-nope"), 404, "file_not_found");
  expect_error(c.get("/v1/files?order=sideways"), 400, "invalid_value", "order");
  EXPECT_EQ(c.request("PUT", "/v1/batches").status, 405);
  // The extension fields are echoed on the batch object (null when not given; max_attempts is
  // the effective value, the default_max_attempts setting when not given).
  auto plain = with("metadata", nullptr);
  ASSERT_EQ(plain.status, 200) << plain.body;
  EXPECT_TRUE(plain.json()["max_inflight"].is_null());
  EXPECT_TRUE(plain.json()["webhook_url"].is_null());
  EXPECT_EQ(plain.json()["max_attempts"], 3);
  json extended = good;
  extended["max_inflight"] = 2;
  extended["webhook_url"] = "https://hooks.example.com/batches";
  extended["max_attempts"] = 5;
  auto made = c.post_json("/v1/batches", extended);
  ASSERT_EQ(made.status, 200) << made.body;
  EXPECT_EQ(made.json()["max_inflight"], 2);
  EXPECT_EQ(made.json()["max_attempts"], 5);
  EXPECT_EQ(made.json()["webhook_url"], "https://hooks.example.com/batches");
  EXPECT_EQ(c.get("/v1/batches/" + made.json()["id"].get<std::string>()).json()["webhook_url"],
            "https://hooks.example.com/batches");
}

/// `n` copies of `c` (a UTF-8 sequence: one character).
std::string repeat(const std::string& c, int n) {
  std::string out;
  for (int i = 0; i < n; ++i) out += c;
  return out;
}

// OpenAI's metadata limits are characters: "é" is 2 bytes, "€" 3 and "😀" 4, so 512 of them
// are 1,024 to 2,048 bytes and still within the value limit.
TEST(batch_http, metadata_limits_count_characters_not_bytes) {
  engine_env env;
  env.start();
  http_client c(env.port());
  std::string fid = upload(c, form({{"purpose", "batch"}}, "in.jsonl", jsonl(1))).json()["id"];
  auto create = [&](const json& metadata) {
    return c.post_json("/v1/batches", {{"input_file_id", fid},
                                       {"endpoint", "/v1/chat/completions"},
                                       {"completion_window", "24h"},
                                       {"metadata", metadata}});
  };
  const json longest = {{repeat("é", 64), repeat("é", 512)},
                        {"euro", repeat("€", 512)},
                        {repeat("😀", 64), repeat("😀", 512)}};
  auto r = create(longest);
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(r.json()["metadata"], longest);
  expect_error(create({{"k", repeat("é", 513)}}), 400, "invalid_metadata", "metadata");
  expect_error(create({{"k", repeat("😀", 513)}}), 400, "invalid_metadata", "metadata");
  expect_error(create({{std::string(65, 'k'), "v"}}), 400, "invalid_metadata", "metadata");
  auto long_key = create({{repeat("é", 65), "v"}});
  expect_error(long_key, 400, "invalid_metadata", "metadata");
  // The key is quoted cut at whole characters, so the message stays valid UTF-8.
  EXPECT_NE(long_key.json()["error"]["message"].get<std::string>().find(repeat("é", 64) + "..."),
            std::string::npos);
  // Bytes that are not UTF-8 are refused before the limits are counted.
  auto invalid = c.request("POST", "/v1/batches",
                           R"({"input_file_id":")" + fid +
                               R"(","endpoint":"/v1/chat/completions","completion_window":"24h",)"
                               "\"metadata\":{\"k\":\"\xC3(\"}}",
                           {{"Content-Type", "application/json"}});
  expect_error(invalid, 400, "invalid_json");
  EXPECT_NE(invalid.json()["error"]["message"].get<std::string>().find("UTF-8"), std::string::npos)
      << invalid.body;
  EXPECT_EQ(c.get("/v1/batches").json()["data"].size(), 1u) << "only the valid batch exists";
}

TEST(batch_http, a_batch_runs_lists_and_its_files_download_and_delete) {
  engine_env env;
  env.start();
  http_client c(env.port());
  std::string fid = upload(c, form({{"purpose", "batch"}}, "in.jsonl", jsonl(7))).json()["id"];
  std::vector<std::string> ids;
  for (int i = 0; i < 3; ++i) {
    auto r = c.post_json("/v1/batches", {{"input_file_id", fid},
                                         {"endpoint", "/v1/chat/completions"},
                                         {"completion_window", "24h"},
                                         {"metadata", {{"n", std::to_string(i)}}}});
    ASSERT_EQ(r.status, 200) << r.body;
    ids.push_back(r.json()["id"]);
  }
  json done;
  for (const auto& id : ids)
    ASSERT_TRUE(wait_for([&] {
      done = c.get("/v1/batches/" + id).json();
      return done["status"] == "completed";
    })) << done.dump();
  EXPECT_EQ(done["request_counts"]["completed"], 7);
  EXPECT_EQ(done["metadata"]["n"], "2");
  auto page = c.get("/v1/batches?limit=2").json();
  ASSERT_EQ(page["data"].size(), 2u);
  EXPECT_EQ(page["data"][0]["id"], ids[2]);
  EXPECT_EQ(page["first_id"], ids[2]);
  EXPECT_EQ(page["last_id"], ids[1]);
  EXPECT_TRUE(page["has_more"].get<bool>());
  auto rest = c.get("/v1/batches?limit=2&after=" + ids[1]).json();
  ASSERT_EQ(rest["data"].size(), 1u);
  EXPECT_EQ(rest["data"][0]["id"], ids[0]);
  EXPECT_FALSE(rest["has_more"].get<bool>());
  std::string out = done["output_file_id"];
  auto content = c.get("/v1/files/" + out + "/content");
  ASSERT_EQ(content.status, 200);
  std::istringstream lines(content.body);
  int n = 0;
  for (std::string l; std::getline(lines, l);) n += !l.empty();
  EXPECT_EQ(n, 7);
  auto outputs = c.get("/v1/files?purpose=batch_output&order=asc").json();
  EXPECT_EQ(outputs["data"].size(), 3u);
  auto del = c.request("DELETE", "/v1/files/" + out);
  ASSERT_EQ(del.status, 200) << del.body;
  EXPECT_EQ(del.json(), (json{{"id", out}, {"object", "file"}, {"deleted", true}}));
  EXPECT_FALSE(fs::exists(env.engine().batches().file_path(out)));
  expect_error(c.get("/v1/files/" + out), 404, "file_not_found");
  // A finished batch cannot be cancelled.
  expect_error(c.request("POST", "/v1/batches/" + ids[0] + "/cancel"), 409,
               "batch_not_cancellable");
}

// A batch is a job of kind batch on the native jobs API: read, listed beside the other kinds,
// filtered by kind, streamed on SSE and NATS like a job, cancelled through /v1/jobs.
TEST(batch_http, a_batch_is_a_job_on_the_native_jobs_api) {
  engine_env env;
  env.settings().nats_events = "all";
  env.start();
  nats_subscriber sub(env.nats().url(), "sy.jobs.>");
  http_client c(env.port());
  std::string fid = upload(c, form({{"purpose", "batch"}}, "in.jsonl", jsonl(3))).json()["id"];
  auto create = [&] {
    auto r = c.post_json("/v1/batches", {{"input_file_id", fid},
                                         {"endpoint", "/v1/chat/completions"},
                                         {"completion_window", "24h"},
                                         {"metadata", {{"k", "v"}}}});
    EXPECT_EQ(r.status, 200) << r.body;
    return r.json()["id"].get<std::string>();
  };
  const std::string batch = create();
  auto single = env.submit(c, "beside");
  ASSERT_EQ(single.status, 202) << single.body;
  const std::string job = single.json()["id"];
  json got;
  ASSERT_TRUE(wait_for([&] {
    got = c.get("/v1/jobs/" + batch).json();
    return got["status"] == "completed";
  })) << got.dump();
  EXPECT_EQ(got["object"], "job");
  EXPECT_EQ(got["kind"], "batch");
  EXPECT_EQ(got["endpoint"], "/v1/chat/completions");
  EXPECT_EQ(got["metadata"], (json{{"k", "v"}}));
  EXPECT_EQ(got["task_counts"]["total"], 3);
  EXPECT_EQ(got["task_counts"]["completed"], 3);
  EXPECT_EQ(got["task_counts"]["queued"], 0);
  EXPECT_TRUE(got["completed_at"].is_number_integer()) << got.dump();
  EXPECT_EQ(c.get("/v1/jobs/" + job).json()["kind"], "single");
  expect_error(c.get("/v1/jobs/batch_0000000000000000000000000"), 404, "job_not_found", "id");
  // Listed beside the jobs, newest first, and filtered by kind.
  ASSERT_TRUE(wait_for([&] { return c.get("/v1/jobs/" + job).json()["status"] == "completed"; }));
  auto all = c.get("/v1/jobs").json();
  ASSERT_EQ(all["data"].size(), 2u) << all.dump();
  EXPECT_EQ(all["data"][0]["id"], job);
  EXPECT_EQ(all["data"][1]["id"], batch);
  auto page = c.get("/v1/jobs?limit=1").json();
  EXPECT_EQ(page["data"][0]["id"], job);
  EXPECT_TRUE(page["has_more"].get<bool>());
  page = c.get("/v1/jobs?limit=1&after=" + job).json();
  ASSERT_EQ(page["data"].size(), 1u);
  EXPECT_EQ(page["data"][0]["id"], batch);
  EXPECT_FALSE(page["has_more"].get<bool>());
  auto batches = c.get("/v1/jobs?kind=batch&status=completed").json();
  ASSERT_EQ(batches["data"].size(), 1u);
  EXPECT_EQ(batches["data"][0]["id"], batch);
  auto singles = c.get("/v1/jobs?kind=single").json();
  ASSERT_EQ(singles["data"].size(), 1u);
  EXPECT_EQ(singles["data"][0]["id"], job);
  EXPECT_TRUE(c.get("/v1/jobs?kind=list").json()["data"].empty());
  EXPECT_TRUE(c.get("/v1/jobs?kind=batch&status=failed").json()["data"].empty());
  expect_error(c.get("/v1/jobs?kind=batches"), 400, "invalid_value", "kind");
  // Its state changes, on SSE and on NATS, in the job vocabulary.
  const std::string events = c.get("/v1/jobs/" + batch + "/events").body;
  const auto queued = events.find("event: queued\n");
  const auto running = events.find("event: in_progress\n");
  const auto completed = events.find("event: completed\n");
  EXPECT_TRUE(queued < running && running < completed && completed != std::string::npos) << events;
  std::vector<std::string> subjects;
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (std::chrono::steady_clock::now() < until &&
         (subjects.empty() || !subjects.back().ends_with(".completed"))) {
    auto m = sub.next(500);
    if (m && m->first.starts_with("sy.jobs." + batch + ".")) subjects.push_back(m->first);
  }
  EXPECT_EQ(subjects, (std::vector<std::string>{"sy.jobs." + batch + ".queued",
                                                "sy.jobs." + batch + ".in_progress",
                                                "sy.jobs." + batch + ".completed"}));
  // Cancelled through the jobs API: a finished one is not cancellable; a running one is.
  expect_error(c.request("POST", "/v1/jobs/" + batch + "/cancel"), 409, "job_not_cancellable",
               "id");
  std::string slow_file =
      upload(c, form({{"purpose", "batch"}}, "slow.jsonl", slow_jsonl(2))).json()["id"];
  auto slow = c.post_json("/v1/batches", {{"input_file_id", slow_file},
                                          {"endpoint", "/v1/chat/completions"},
                                          {"completion_window", "24h"}});
  ASSERT_EQ(slow.status, 200) << slow.body;
  const std::string slow_id = slow.json()["id"];
  auto cancel = c.request("POST", "/v1/jobs/" + slow_id + "/cancel");
  ASSERT_EQ(cancel.status, 200) << cancel.body;
  EXPECT_EQ(cancel.json()["kind"], "batch");
  EXPECT_TRUE(cancel.json()["status"] == "cancelling" || cancel.json()["status"] == "cancelled")
      << cancel.body;
  ASSERT_TRUE(
      wait_for([&] { return c.get("/v1/jobs/" + slow_id).json()["status"] == "cancelled"; }));
  EXPECT_EQ(c.get("/v1/batches/" + slow_id).json()["status"], "cancelled");
}

// A finished batch rerun through POST /v1/jobs/{id}/rerun: answered as a job in progress, its
// OpenAI object coherent at the end (new files, counts from them), the old files still
// downloadable, and the rerun's states on its event stream.
TEST(batch_http, a_rerun_through_the_jobs_api_gives_a_coherent_batch_object) {
  engine_env env;
  env.start();
  http_client c(env.port());
  std::string text;
  for (int i = 0; i < 3; ++i) {
    json fake = {{"key", "r" + std::to_string(i)}};
    if (i == 0) fake.update({{"status", 400}, {"fail_times", 1}});
    text += json{{"custom_id", "r" + std::to_string(i)},
                 {"method", "POST"},
                 {"url", "/v1/chat/completions"},
                 {"body",
                  {{"model", "test-model"},
                   {"messages", json::array({{{"role", "user"}, {"content", "hi"}}})},
                   {"fake", fake}}}}
                .dump() +
            "\n";
  }
  std::string fid = upload(c, form({{"purpose", "batch"}}, "in.jsonl", text)).json()["id"];
  auto created = c.post_json(
      "/v1/batches",
      {{"input_file_id", fid}, {"endpoint", "/v1/chat/completions"}, {"completion_window", "24h"}});
  ASSERT_EQ(created.status, 200) << created.body;
  const std::string id = created.json()["id"];
  json first;
  ASSERT_TRUE(wait_for([&] {
    first = c.get("/v1/batches/" + id).json();
    return first["status"] == "completed";
  })) << first.dump();
  EXPECT_EQ(first["request_counts"], (json{{"total", 3}, {"completed", 2}, {"failed", 1}}));
  auto rerun = c.request("POST", "/v1/jobs/" + id + "/rerun");
  ASSERT_EQ(rerun.status, 200) << rerun.body;
  EXPECT_EQ(rerun.json()["kind"], "batch");
  EXPECT_EQ(rerun.json()["status"], "in_progress");
  EXPECT_EQ(rerun.json()["run"], 2);
  json done;
  ASSERT_TRUE(wait_for([&] {
    done = c.get("/v1/batches/" + id).json();
    return done["status"] == "completed";
  })) << done.dump();
  EXPECT_EQ(done["object"], "batch");
  EXPECT_FALSE(done.contains("run")) << "not on the OpenAI object";
  EXPECT_EQ(done["request_counts"], (json{{"total", 3}, {"completed", 3}, {"failed", 0}}));
  EXPECT_NE(done["output_file_id"], first["output_file_id"]);
  EXPECT_TRUE(done["error_file_id"].is_null()) << done.dump();
  EXPECT_TRUE(done["completed_at"].is_number_integer());
  EXPECT_TRUE(done["failed_at"].is_null());
  EXPECT_GE(done["expires_at"].get<int64_t>(), done["in_progress_at"].get<int64_t>());
  auto count = [&](const std::string& file) {
    auto content = c.get("/v1/files/" + file + "/content");
    EXPECT_EQ(content.status, 200) << content.body;
    std::istringstream lines(content.body);
    int n = 0;
    for (std::string l; std::getline(lines, l);) n += !l.empty();
    return n;
  };
  EXPECT_EQ(count(done["output_file_id"]), 3);
  EXPECT_EQ(count(first["output_file_id"]), 2);
  EXPECT_EQ(count(first["error_file_id"]), 1);
  // Its events: the first run's, then the rerun's.
  const std::string events = c.get("/v1/jobs/" + id + "/events").body;
  const auto end1 = events.find("event: completed\n");
  const auto again = events.find("event: in_progress\n", end1);
  const auto end2 = events.find("event: completed\n", again);
  EXPECT_TRUE(end1 < again && again < end2 && end2 != std::string::npos) << events;
  expect_error(c.request("POST", "/v1/jobs/" + id + "/rerun"), 409, "job_not_rerunnable", "id");
}

}  // namespace SY_UNITY_ID
}  // namespace sy::test
