// Hostile input on the surfaces hostile_surfaces_test.cpp does not reach, against the built
// binary: appends to an open task list and synchronous calls, batch creation, uploads, the lines
// of a batch input file and of a staged task file, and garbage credentials on every surface that
// takes a job (HTTP, the NATS micro service, the JetStream intake). Each hostile request gets its
// status, code and param by docs/limits.md's rules in an answer under 16 KiB; afterwards the
// engine is up, a well-formed request beside it succeeds, and nothing refused was stored (no job,
// task, batch or file object, no bytes under <data_dir>/files, no request to the gateway).

#include <gtest/gtest.h>

#include <nats/nats.h>

#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "config/sha256.hpp"
#include "runtime/nats_server.hpp"
#include "tests/support/multipart_form.hpp"
#include "tests/support/wait.hpp"
#include "tests/system/nats_client.hpp"
#include "tests/system/system_env.hpp"

namespace sy::test {
namespace SY_UNITY_ID {

using nlohmann::json;
using namespace std::chrono_literals;

constexpr int64_t max_body = int64_t{1} << 20;        // the default max_body_bytes
constexpr int64_t files_max = int64_t{4} << 20;       // --files-max-bytes
constexpr int64_t task_files_max = int64_t{3} << 20;  // --max-task-file-bytes
constexpr size_t answer_max = size_t{16} * 1024;      // no error answer is longer
constexpr const char* chat = "/v1/chat/completions";

/// What the engine answered: the status, and the error's code and param (empty: none).
struct verdict {
  int status = 0;
  std::string code;
  std::string param;
  size_t bytes = 0;  ///< the answer's size
};

verdict from_reply(const http_reply& r) {
  verdict v{r.status, "", "", r.body.size()};
  auto j = json::parse(r.body, nullptr, false);
  if (j.is_object() && j.contains("error") && j["error"].is_object()) {
    v.code = j["error"].value("code", "");
    if (j["error"]["param"].is_string()) v.param = j["error"]["param"];
  }
  return v;
}

/// One hostile request and what it must get; param "-": not checked.
struct hostile_case {
  std::string name;
  std::string bytes;
  int status;
  std::string code;
  std::string param;
};

/// Checks one answer against its case.
void expect_verdict(const verdict& v, const hostile_case& c) {
  EXPECT_EQ(v.status, c.status) << c.name << ": " << v.code;
  EXPECT_EQ(v.code, c.code) << c.name;
  if (c.param != "-") {
    EXPECT_EQ(v.param, c.param) << c.name;
  }
  EXPECT_LT(v.bytes, answer_max) << c.name << ": the answer echoes the input";
  // A message quotes at most 256 bytes of a client value: a 900 KB one is not repeated.
  if (c.name.starts_with("huge")) {
    EXPECT_LT(v.bytes, 2048u) << c.name << ": the answer echoes it";
  }
}

/// JSON nested 200,000 levels deep, unclosed (200 KB): refused by the nesting scan.
std::string unclosed_deep() { return std::string(200'000, '['); }
/// The same nesting closed (400 KB): valid JSON, only too deep (a file line).
std::string closed_deep() { return std::string(200'000, '[') + std::string(200'000, ']'); }

/// A metadata object of 10,000 keys.
std::string many_keys() {
  std::string out = "{";
  for (int i = 0; i < 10'000; ++i) out += (i ? ",\"k" : "\"k") + std::to_string(i) + "\":\"v\"";
  return out + "}";
}

/// `make(pad)` padded with 'x' to exactly `size` bytes.
template <class Make>
std::string exactly(size_t size, Make make) {
  const std::string empty = make("");
  return make(std::string(size - empty.size(), 'x'));
}

/// The fixed hostile families for a JSON surface whose documents `wrap` (what goes into a
/// request body, e.g. a task's body) builds; `at`: the param prefix of that body.
std::vector<hostile_case> body_cases(const std::function<std::string(const std::string&)>& wrap,
                                     const std::string& at) {
  const std::string huge(900'000, 'm');
  return {
      {"nested_200000_deep", wrap(R"("model":"m","x":)" + unclosed_deep()), 400, "json_too_deep",
       "-"},
      {"invalid_utf8", wrap("\"model\":\"m\",\"x\":\"\xff\xfe\""), 400, "invalid_json", "-"},
      {"raw_control_character", wrap("\"model\":\"m\",\"x\":\"a\tb\""), 400, "invalid_json", "-"},
      {"number_overflow", wrap(R"("model":"m","temperature":1e999999)"), 400, "invalid_json", "-"},
      {"nul_in_model", wrap(R"("model":"m\u0000x")"), 400, "invalid_value", at + "model"},
      {"control_character_in_model", wrap(R"("model":"m\u0085x")"), 400, "invalid_value",
       at + "model"},
      {"huge_model", wrap(R"("model":")" + huge + "\""), 400, "string_above_max_length",
       at + "model"},
      {"duplicate_key_deep", wrap(R"("model":"m","messages":[{"role":"user","role":"user"}])"), 400,
       "invalid_request", at + "messages[0].role"},
      {"duplicate_model", wrap(R"("model":"m","model":"n")"), 400, "invalid_request", at + "model"},
      {"model_wrong_type", wrap(R"("model":5)"), 400, "missing_model", at + "model"},
      {"stream_wrong_type", wrap(R"("model":"m","stream":"yes")"), 400, "invalid_request",
       at + "stream"},
      {"metadata_wrong_type", wrap(R"("model":"m","metadata":5)"), 400, "invalid_metadata",
       at + "metadata"},
      {"metadata_10000_keys", wrap(R"("model":"m","metadata":)" + many_keys()), 400,
       "invalid_metadata", at + "metadata"},
      {"empty", "", 400, "invalid_json", "-"},
      {"not_an_object", "[1,2]", 400, "invalid_request", "-"},
  };
}

/// A body of exactly max_body bytes refused on its content (a metadata value over 512
/// characters), and the same one byte longer, refused on its size.
std::vector<hostile_case> limit_cases(const std::function<std::string(const std::string&)>& wrap,
                                      const std::string& param) {
  auto at_limit = exactly(static_cast<size_t>(max_body), [&](const std::string& pad) {
    return wrap(R"("model":"m","metadata":{"pad":")" + pad + "\"}");
  });
  return {{"exactly_the_limit", at_limit, 400, "invalid_metadata", param},
          {"one_byte_over", at_limit + " ", 413, "body_too_large", "-"}};
}

class HostileFiles : public ::testing::Test {
 protected:
  void SetUp() override {
    env_.start_gateway(0);
    env_.start_engine({"--files-max-bytes", std::to_string(files_max), "--max-task-file-bytes",
                       std::to_string(task_files_max)});
  }

  verdict post(const std::string& path, const std::string& body,
               std::map<std::string, std::string> headers = {}) {
    http_client c(env_.port());
    headers["Content-Type"] = "application/json";
    return from_reply(c.request("POST", path, body, headers));
  }

  json get(const std::string& path) {
    http_client c(env_.port());
    return c.get(path).json();
  }

  /// The `data` of a list route (at most 100 entries here).
  size_t listed(const std::string& path) {
    auto j = get(path);
    return j.is_object() && j["data"].is_array() ? j["data"].size() : 0;
  }

  /// The requests the fake gateway has received.
  int64_t gateway_requests() {
    http_client c(env_.gateway_port());
    return c.get("/_fake/stats").json().value("requests", int64_t{-1});
  }

  /// Regular files under <data_dir>/files (uploads in progress included).
  size_t files_on_disk() {
    size_t n = 0;
    std::error_code ec;
    for (auto it = std::filesystem::recursive_directory_iterator(env_.dir().sub("data/files"), ec);
         !ec && it != std::filesystem::recursive_directory_iterator(); it.increment(ec))
      if (it->is_regular_file()) ++n;
    return n;
  }

  /// Every file object has its bytes on disk, and nothing else is there.
  void expect_files_match_objects() {
    const size_t objects = listed("/v1/files");
    EXPECT_TRUE(wait_for([&] { return files_on_disk() == objects; }, 5s))
        << files_on_disk() << " files on disk, " << objects << " file objects";
  }

  void expect_up() {
    http_client c(env_.port());
    EXPECT_EQ(c.get("/healthz").status, 200);
  }

  http_reply upload_raw(const std::string& body,
                        const std::string& type = "multipart/form-data; boundary=" +
                                                  form_boundary) {
    http_client c(env_.port());
    return c.request("POST", "/v1/files", body, {{"Content-Type", type}});
  }

  /// Uploads `content` as `filename` for `purpose`; the file's id ("" if refused).
  std::string upload_file(const std::string& purpose, const std::string& filename,
                          const std::string& content) {
    auto r = upload_raw(form({{"purpose", purpose}}, filename, content));
    EXPECT_EQ(r.status, 200) << r.body.substr(0, 400);
    return r.status == 200 ? r.json().value("id", "") : "";
  }

  /// Polls `path` until its `status` is `want` (or terminal); the last document.
  json wait_status(const std::string& path, const std::string& want) {
    json last;
    wait_for(
        [&] {
          last = get(path);
          const std::string s = last.value("status", "");
          return s == want || s == "completed" || s == "failed" || s == "cancelled" ||
                 s == "expired";
        },
        30s);
    return last;
  }

  system_env env_;
};

// --- appends and sync calls -----------------------------------------------------------------

TEST_F(HostileFiles, appends_and_sync_calls_refuse_hostile_bodies_and_store_nothing) {
  auto open = post("/v1/jobs", R"({"endpoint":"/v1/chat/completions","open":true})");
  ASSERT_EQ(open.status, 202) << open.code;
  const std::string job_id = get("/v1/jobs?limit=1")["data"][0].value("id", "");
  const std::string append_path = "/v1/jobs/" + job_id + "/tasks";

  // Appends: the fields go into the body of the one task appended.
  auto task = [](const std::string& fields) {
    return R"({"tasks":[{"custom_id":"c","body":{)" + fields + "}}]}";
  };
  auto append_cases = body_cases(task, "tasks[0].body.");
  for (auto& c : limit_cases(task, "tasks[0].body.metadata")) append_cases.push_back(c);
  const std::string huge(900'000, 'c');
  const std::vector<hostile_case> append_only = {
      {"nul_in_custom_id", R"({"tasks":[{"custom_id":"a\u0000","body":{"model":"m"}}]})", 400,
       "invalid_value", "tasks[0].custom_id"},
      {"control_character_in_custom_id",
       R"({"tasks":[{"custom_id":"a\u001fb","body":{"model":"m"}}]})", 400, "invalid_value",
       "tasks[0].custom_id"},
      {"huge_custom_id", R"({"tasks":[{"custom_id":")" + huge + R"(","body":{"model":"m"}}]})", 400,
       "invalid_tasks", "tasks[0].custom_id"},
      {"huge_unknown_key", R"({"tasks":[],")" + huge + "\":1}", 400, "unknown_parameter", "-"},
      {"duplicate_tasks", R"({"tasks":[],"tasks":[]})", 400, "invalid_request", "tasks"},
      {"tasks_wrong_type", R"({"tasks":5})", 400, "invalid_tasks", "tasks"},
      {"task_wrong_type", R"({"tasks":[5]})", 400, "invalid_tasks", "tasks[0]"},
      {"custom_id_wrong_type", R"({"tasks":[{"custom_id":5,"body":{"model":"m"}}]})", 400,
       "invalid_tasks", "tasks[0].custom_id"},
      {"body_wrong_type", R"({"tasks":[{"body":[]}]})", 400, "invalid_body", "tasks[0].body"},
      {"last_batch_wrong_type", R"({"tasks":[],"last_batch":"yes"})", 400, "invalid_tasks",
       "last_batch"},
      // -0 is 0: both are refused alike where a boolean belongs.
      {"last_batch_zero", R"({"tasks":[],"last_batch":0})", 400, "invalid_tasks", "last_batch"},
      {"last_batch_negative_zero", R"({"tasks":[],"last_batch":-0})", 400, "invalid_tasks",
       "last_batch"},
  };
  append_cases.insert(append_cases.end(), append_only.begin(), append_only.end());
  // Every refused append carries the key a well-formed one uses afterwards: a refused request
  // keeps no key, so the later one is not a conflict.
  const std::map<std::string, std::string> append_key = {{"Idempotency-Key", "hostile-append"}};
  for (const auto& c : append_cases) expect_verdict(post(append_path, c.bytes, append_key), c);
  EXPECT_EQ(listed(append_path), 0u) << "a refused append stored a task";

  // Sync calls: the fields are the OpenAI request itself.
  auto sync = [](const std::string& fields) { return "{" + fields + "}"; };
  auto sync_cases = body_cases(sync, "");
  for (auto& c : limit_cases(sync, "metadata")) sync_cases.push_back(c);
  const size_t jobs_before = listed("/v1/jobs?limit=100");
  const int64_t gateway_before = gateway_requests();
  const std::map<std::string, std::string> sync_key = {{"Idempotency-Key", "hostile-sync"}};
  for (const auto& c : sync_cases) expect_verdict(post(chat, c.bytes, sync_key), c);
  EXPECT_EQ(listed("/v1/jobs?limit=100"), jobs_before) << "a refused sync call stored a job";
  EXPECT_EQ(gateway_requests(), gateway_before) << "a refused sync call reached the gateway";

  // The engine is up; well-formed requests beside them succeed under the same keys; -0 gets
  // what 0 gets.
  expect_up();
  auto good = post(append_path, task(R"("model":"m","messages":[])"), append_key);
  EXPECT_EQ(good.status, 200) << good.code;
  EXPECT_EQ(listed(append_path), 1u);
  EXPECT_EQ(post(chat, R"({"model":"m","messages":[]})", sync_key).status, 200);
  EXPECT_EQ(post(chat, R"({"model":"m","messages":[],"temperature":0})").status, 200);
  EXPECT_EQ(post(chat, R"({"model":"m","messages":[],"temperature":-0})").status, 200);
}

// --- batches --------------------------------------------------------------------------------

TEST_F(HostileFiles, batch_creation_refuses_hostile_bodies_without_a_lookup) {
  const std::string input = upload_file(
      "batch", "in.jsonl",
      R"({"custom_id":"a","method":"POST","url":"/v1/chat/completions","body":{"model":"m","messages":[]}})"
      "\n");
  ASSERT_FALSE(input.empty());
  auto batch = [&](const std::string& extra) {
    return R"({"input_file_id":")" + input +
           R"(","endpoint":"/v1/chat/completions","completion_window":"24h")" + extra + "}";
  };
  const std::string huge(900'000, 'f');
  auto at_limit = exactly(static_cast<size_t>(max_body), [&](const std::string& pad) {
    return batch(R"(,"metadata":{"pad":")" + pad + "\"}");
  });
  const std::vector<hostile_case> cases = {
      {"nested_200000_deep", batch(",\"metadata\":" + unclosed_deep()), 400, "json_too_deep", "-"},
      {"invalid_utf8", batch(",\"metadata\":{\"a\":\"\xc3\x28\"}"), 400, "invalid_json", "-"},
      {"raw_control_character", batch(",\"metadata\":{\"a\":\"\x01\"}"), 400, "invalid_json", "-"},
      {"number_overflow",
       batch(R"(,"output_expires_after":{"anchor":"created_at","seconds":1e999999})"), 400,
       "invalid_json", "-"},
      {"seconds_zero", batch(R"(,"output_expires_after":{"anchor":"created_at","seconds":0})"), 400,
       "invalid_value", "output_expires_after"},
      {"seconds_negative_zero",
       batch(R"(,"output_expires_after":{"anchor":"created_at","seconds":-0})"), 400,
       "invalid_value", "output_expires_after"},
      {"duplicate_key_deep", batch(R"(,"metadata":{"a":"1","a":"2"})"), 400, "invalid_request",
       "metadata.a"},
      {"duplicate_key_top", batch(R"(,"endpoint":"/v1/embeddings")"), 400, "invalid_request",
       "endpoint"},
      {"huge_input_file_id",
       R"({"input_file_id":")" + huge +
           R"(","endpoint":"/v1/chat/completions","completion_window":"24h"})",
       400, "string_above_max_length", "input_file_id"},
      {"huge_completion_window",
       R"({"input_file_id":")" + input + R"(","endpoint":"/v1/chat/completions",)" +
           R"("completion_window":")" + huge + "\"}",
       400, "invalid_value", "completion_window"},
      {"input_file_id_wrong_type",
       R"({"input_file_id":5,"endpoint":"/v1/chat/completions","completion_window":"24h"})", 400,
       "invalid_request", "input_file_id"},
      {"endpoint_wrong_type",
       R"({"input_file_id":")" + input + R"(","endpoint":5,"completion_window":"24h"})", 400,
       "invalid_request", "endpoint"},
      {"completion_window_wrong_type",
       R"({"input_file_id":")" + input + R"(","endpoint":"/v1/chat/completions",)" +
           R"("completion_window":24})",
       400, "invalid_request", "completion_window"},
      {"metadata_wrong_type", batch(R"(,"metadata":[])"), 400, "invalid_metadata", "metadata"},
      {"output_expires_after_wrong_type", batch(R"(,"output_expires_after":"1h")"), 400,
       "invalid_value", "output_expires_after"},
      {"metadata_10000_keys", batch(",\"metadata\":" + many_keys()), 400, "invalid_metadata",
       "metadata"},
      {"empty", "", 400, "invalid_json", "-"},
      {"not_an_object", "[1,2]", 400, "invalid_request", "-"},
      {"exactly_the_limit", at_limit, 400, "invalid_metadata", "metadata"},
      {"one_byte_over", at_limit + " ", 413, "body_too_large", "-"},
  };
  const size_t batches_before = listed("/v1/batches?limit=100");
  for (const auto& c : cases) expect_verdict(post("/v1/batches", c.bytes), c);
  EXPECT_EQ(listed("/v1/batches?limit=100"), batches_before) << "a refused batch was stored";

  expect_up();
  auto good = post("/v1/batches", batch(""));
  ASSERT_EQ(good.status, 200) << good.code;
  auto b = wait_status("/v1/batches/" + get("/v1/batches?limit=1")["data"][0].value("id", ""),
                       "completed");
  EXPECT_EQ(b.value("status", ""), "completed") << b.dump().substr(0, 2000);
}

// --- uploads --------------------------------------------------------------------------------

/// A raw multipart body of `parts` (each a header block and content) with the form's boundary.
std::string parts(const std::vector<std::pair<std::string, std::string>>& ps, bool close = true) {
  std::string body;
  for (const auto& [headers, content] : ps)
    body += "--" + form_boundary + "\r\n" + headers + "\r\n\r\n" + content + "\r\n";
  return close ? body + "--" + form_boundary + "--\r\n" : body;
}

std::string field(const std::string& name) {
  return "Content-Disposition: form-data; name=\"" + name + "\"";
}

std::string file_part(const std::string& filename, const std::string& name = "file") {
  return "Content-Disposition: form-data; name=\"" + name + "\"; filename=\"" + filename + "\"";
}

TEST_F(HostileFiles, uploads_take_exactly_the_limit_and_refuse_hostile_forms_leaving_nothing) {
  const std::string line = "{}\n";
  struct upload_case {
    std::string name;
    std::string body;
    int status;
    std::string code;
    std::string param;  ///< "-": not checked
    std::string content_type = "multipart/form-data; boundary=" + form_boundary;
  };
  const std::string one_over(static_cast<size_t>(files_max) + 1, 'x');
  const std::string tasks_over(static_cast<size_t>(task_files_max) + 1, 'x');
  const std::string huge(900'000, 'n');
  const std::vector<upload_case> cases = {
      {"file_one_byte_over", form({{"purpose", "user_data"}}, "a.bin", one_over), 413,
       "file_too_large", "-"},
      {"task_file_one_byte_over", form({{"purpose", "tasks"}}, "t.jsonl", tasks_over), 413,
       "file_too_large", "-"},
      {"task_file_one_byte_over_purpose_after_the_file",
       parts({{file_part("t.jsonl"), tasks_over}, {field("purpose"), "tasks"}}), 413,
       "file_too_large", "-"},
      {"nul_in_filename", form({{"purpose", "batch"}}, std::string("a\0b.jsonl", 9), line), 400,
       "invalid_file", "-"},
      {"control_character_in_filename", form({{"purpose", "batch"}}, "a\x01.jsonl", line), 400,
       "invalid_file", "-"},
      {"c1_control_character_in_filename", form({{"purpose", "batch"}}, "a\xc2\x85.jsonl", line),
       400, "invalid_file", "-"},
      {"invalid_utf8_filename", form({{"purpose", "batch"}}, "a\xff.jsonl", line), 400,
       "invalid_file", "-"},
      {"huge_filename", form({{"purpose", "batch"}}, huge + ".jsonl", line), 400, "invalid_file",
       "-"},
      {"file_part_twice",
       parts({{field("purpose"), "batch"},
              {file_part("a.jsonl"), line},
              {file_part("b.jsonl"), line}}),
       400, "invalid_file", "-"},
      {"purpose_twice",
       parts({{field("purpose"), "batch"},
              {field("purpose"), "batch"},
              {file_part("a.jsonl"), line}}),
       400, "invalid_file", "-"},
      {"purpose_sent_as_a_file",
       parts({{file_part("p.txt", "purpose"), "batch"}, {file_part("a.jsonl"), line}}), 400,
       "invalid_file", "-"},
      {"file_without_filename", parts({{field("purpose"), "batch"}, {field("file"), line}}), 400,
       "invalid_file", "-"},
      {"cut_short", parts({{field("purpose"), "batch"}, {file_part("a.jsonl"), line}}, false), 400,
       "invalid_file", "-"},
      {"not_multipart", "{}", 400, "invalid_file", "-", "application/json"},
      {"batch_file_not_jsonl", form({{"purpose", "batch"}}, "a.txt", line), 400, "invalid_file",
       "-"},
      {"bad_purpose", form({{"purpose", "nope"}}, "a.jsonl", line), 400, "invalid_value",
       "purpose"},
      {"huge_purpose", form({{"purpose", huge}}, "a.jsonl", line), 400, "invalid_value", "purpose"},
      {"control_character_in_purpose",
       form({{"purpose",
              "bat\x01"
              "ch"}},
            "a.jsonl", line),
       400, "invalid_value", "purpose"},
      {"bad_anchor",
       form({{"purpose", "batch"},
             {"expires_after[anchor]", "now"},
             {"expires_after[seconds]", "3600"}},
            "a.jsonl", line),
       400, "invalid_value", "expires_after[anchor]"},
      {"bad_seconds",
       form({{"purpose", "batch"},
             {"expires_after[anchor]", "created_at"},
             {"expires_after[seconds]", "1e999999"}},
            "a.jsonl", line),
       400, "invalid_value", "expires_after[seconds]"},
      {"seconds_negative_zero",
       form({{"purpose", "batch"},
             {"expires_after[anchor]", "created_at"},
             {"expires_after[seconds]", "-0"}},
            "a.jsonl", line),
       400, "invalid_value", "expires_after[seconds]"},
      {"missing_purpose", form({}, "a.jsonl", line), 400, "missing_required_parameter", "purpose"},
      {"missing_file", form({{"purpose", "batch"}}, "", ""), 400, "missing_required_parameter",
       "file"},
      {"empty", "", 400, "invalid_file", "-"},
  };
  const size_t objects_before = listed("/v1/files");
  for (const auto& c : cases) {
    auto v = from_reply(upload_raw(c.body, c.content_type));
    expect_verdict(v, {c.name, "", c.status, c.code, c.param});
    EXPECT_EQ(listed("/v1/files"), objects_before) << c.name << ": a refused upload was stored";
    expect_files_match_objects();
  }

  // Exactly the limits are accepted, for purpose tasks too; the engine is up.
  expect_up();
  EXPECT_FALSE(
      upload_file("user_data", "a.bin", std::string(static_cast<size_t>(files_max), 'x')).empty());
  EXPECT_FALSE(
      upload_file("tasks", "t.jsonl", std::string(static_cast<size_t>(task_files_max), 'x'))
          .empty());
  EXPECT_EQ(listed("/v1/files"), objects_before + 2);
  expect_files_match_objects();
}

// --- file lines -----------------------------------------------------------------------------

/// One hostile line of a file and the entry its error must be (param "": null).
struct line_case {
  std::string name;
  std::string line;
  std::string code;
  std::string param;
};

std::string join(const std::string& first, const std::vector<line_case>& cs) {
  std::string out = first + "\n";
  for (const auto& c : cs) out += c.line + "\n";
  return out;
}

/// Checks the `errors` list of a failed batch or job: one entry per case, on its line (the
/// first line of the file is good), `{code, line, param, message}`, no message echoing a line.
void expect_line_errors(const json& errors, const std::vector<line_case>& cs) {
  ASSERT_TRUE(errors.is_object() && errors["data"].is_array()) << errors.dump().substr(0, 2000);
  std::map<int64_t, json> by_line;
  for (const auto& e : errors["data"])
    if (e["line"].is_number_integer()) by_line[e["line"].get<int64_t>()] = e;
  for (size_t i = 0; i < cs.size(); ++i) {
    const auto& c = cs[i];
    const int64_t line = static_cast<int64_t>(i) + 2;
    if (c.code.empty()) {
      EXPECT_EQ(by_line.count(line), 0u) << c.name << " is not an error: " << by_line[line].dump();
      continue;
    }
    if (by_line.count(line) == 0) {
      ADD_FAILURE() << c.name << " (line " << line << ") has no error entry";
      continue;
    }
    const json& e = by_line[line];
    EXPECT_EQ(e.value("code", ""), c.code) << c.name << ": " << e.dump().substr(0, 400);
    EXPECT_EQ(e["param"].is_string() ? e["param"].get<std::string>() : "", c.param) << c.name;
    EXPECT_TRUE(e["message"].is_string()) << c.name;
    EXPECT_LT(e.dump().size(), size_t{9} * 1024) << c.name << ": the entry echoes the line";
  }
}

TEST_F(HostileFiles, hostile_file_lines_fail_the_batch_and_the_task_list_and_run_nothing) {
  const std::string huge(900'000, 'i');
  auto req = [](const std::string& id, const std::string& body) {
    return R"({"custom_id":")" + id + R"(","method":"POST","url":"/v1/chat/completions","body":)" +
           body + "}";
  };
  const std::vector<line_case> batch_lines = {
      {"nested_200000_deep", req("d", R"({"model":"m","messages":[],"x":)" + closed_deep() + "}"),
       "json_too_deep", ""},
      {"duplicate_key_deep",
       req("k", R"({"model":"m","messages":[{"role":"user","role":"user"}]})"), "invalid_request",
       "body.messages[0].role"},
      {"duplicate_key_top",
       R"({"custom_id":"t",)" + req("t", R"({"model":"m","messages":[]})").substr(1),
       "invalid_request", "custom_id"},
      {"nul_in_custom_id", req(R"(a\u0000b)", R"({"model":"m","messages":[]})"), "invalid_value",
       "custom_id"},
      {"control_character_in_model", req("c", R"({"model":"m\u0085","messages":[]})"),
       "invalid_value", "body.model"},
      {"number_overflow", req("n", R"({"model":"m","messages":[],"temperature":1e999999})"),
       "invalid_json_line", ""},
      {"negative_zero_is_fine", req("z", R"({"model":"m","messages":[],"temperature":-0})"), "",
       ""},
      {"invalid_utf8", req("u", "{\"model\":\"m\",\"messages\":[],\"x\":\"\xff\"}"),
       "invalid_json_line", ""},
      {"raw_control_character", req("r", "{\"model\":\"m\",\"messages\":[],\"x\":\"a\tb\"}"),
       "invalid_json_line", ""},
      {"huge_custom_id", req(huge, R"({"model":"m","messages":[]})"), "string_above_max_length",
       "custom_id"},
      {"custom_id_wrong_type",
       R"({"custom_id":5,"method":"POST","url":"/v1/chat/completions","body":{"model":"m","messages":[]}})",
       "missing_required_parameter", "custom_id"},
      {"method_wrong_type",
       R"({"custom_id":"mt","method":5,"url":"/v1/chat/completions","body":{"model":"m","messages":[]}})",
       "missing_required_parameter", "method"},
      {"url_wrong_type",
       R"({"custom_id":"ut","method":"POST","url":5,"body":{"model":"m","messages":[]}})",
       "missing_required_parameter", "url"},
      {"body_wrong_type", req("bt", "[]"), "missing_required_parameter", "body"},
      {"model_wrong_type", req("mo", R"({"model":5,"messages":[]})"), "invalid_request",
       "body.model"},
      {"stream_wrong_type", req("st", R"({"model":"m","messages":[],"stream":"yes"})"),
       "invalid_request", "body.stream"},
      {"metadata_10000_keys",
       req("md", R"({"model":"m","messages":[],"metadata":)" + many_keys() + "}"),
       "invalid_metadata", "body.metadata"},
      {"not_an_object", "[1,2]", "invalid_json_line", ""},
  };
  const std::string good_request = req("ok", R"({"model":"m","messages":[]})");
  const std::string batch_file =
      upload_file("batch", "hostile.jsonl", join(good_request, batch_lines));
  ASSERT_FALSE(batch_file.empty());

  auto task = [](const std::string& id, const std::string& body) {
    return R"({"custom_id":")" + id + R"(","body":)" + body + "}";
  };
  const std::vector<line_case> task_lines = {
      {"nested_200000_deep", task("d", R"({"model":"m","x":)" + closed_deep() + "}"),
       "json_too_deep", ""},
      {"duplicate_key_deep",
       task("k", R"({"model":"m","messages":[{"role":"user","role":"user"}]})"), "invalid_request",
       "body.messages[0].role"},
      {"duplicate_key_top", R"({"body":{"model":"m"},"body":{"model":"m"}})", "invalid_request",
       "body"},
      {"nul_in_custom_id", task(R"(a\u0000b)", R"({"model":"m"})"), "invalid_value", "custom_id"},
      {"control_character_in_model", task("c", R"({"model":"m\u0085"})"), "invalid_value",
       "body.model"},
      {"number_overflow", task("n", R"({"model":"m","temperature":1e999999})"), "invalid_json_line",
       ""},
      {"negative_zero_is_fine", task("z", R"({"model":"m","temperature":-0})"), "", ""},
      {"invalid_utf8", task("u", "{\"model\":\"m\",\"x\":\"\xff\"}"), "invalid_json_line", ""},
      {"raw_control_character", task("r", "{\"model\":\"m\",\"x\":\"a\tb\"}"), "invalid_json_line",
       ""},
      {"huge_custom_id", task(huge, R"({"model":"m"})"), "invalid_tasks", "custom_id"},
      {"huge_unknown_key", R"({"body":{"model":"m"},")" + huge + "\":1}", "unknown_parameter", "-"},
      {"custom_id_wrong_type", R"({"custom_id":5,"body":{"model":"m"}})", "invalid_tasks",
       "custom_id"},
      {"body_wrong_type", task("bt", "[]"), "invalid_body", "body"},
      {"model_wrong_type", task("mo", R"({"model":5})"), "missing_model", "body.model"},
      {"stream_wrong_type", task("st", R"({"model":"m","stream":"yes"})"), "invalid_request",
       "body.stream"},
      {"metadata_10000_keys", task("md", R"({"model":"m","metadata":)" + many_keys() + "}"),
       "invalid_metadata", "body.metadata"},
      {"not_an_object", "[1,2]", "invalid_json_line", ""},
  };
  const std::string task_file =
      upload_file("tasks", "hostile.jsonl", join(task("ok", R"({"model":"m"})"), task_lines));
  ASSERT_FALSE(task_file.empty());

  const int64_t gateway_before = gateway_requests();
  auto b =
      post("/v1/batches", R"({"input_file_id":")" + batch_file +
                              R"(","endpoint":"/v1/chat/completions","completion_window":"24h"})");
  ASSERT_EQ(b.status, 200) << b.code;
  auto j = post("/v1/jobs",
                R"({"endpoint":"/v1/chat/completions","input_file_id":")" + task_file + "\"}");
  ASSERT_EQ(j.status, 202) << j.code;

  const json batch =
      wait_status("/v1/batches/" + get("/v1/batches?limit=1")["data"][0].value("id", ""), "failed");
  EXPECT_EQ(batch.value("status", ""), "failed");
  EXPECT_EQ(batch["request_counts"].value("total", -1), 0);
  expect_line_errors(batch["errors"], batch_lines);

  const std::string job_id = get("/v1/jobs?limit=1")["data"][0].value("id", "");
  const json job = wait_status("/v1/jobs/" + job_id, "failed");
  EXPECT_EQ(job.value("status", ""), "failed");
  EXPECT_EQ(job["error"].is_object() ? job["error"].value("code", "") : "", "invalid_task_file");
  {
    // A 900 KB key is named by its first 256 bytes at most.
    std::vector<line_case> checked = task_lines;
    for (auto& c : checked)
      if (c.param == "-") c.param = "";
    auto errors = job["errors"];
    for (auto& e : errors["data"])
      if (e.value("code", "") == "unknown_parameter") {
        EXPECT_LT(e["param"].is_string() ? e["param"].get<std::string>().size() : 0u, 300u);
        e["param"] = nullptr;
      }
    expect_line_errors(errors, checked);
  }
  EXPECT_EQ(listed("/v1/jobs/" + job_id + "/tasks"), 0u) << "a bad task file stored tasks";

  // Nothing ran; the engine is up and a well-formed request beside them succeeds.
  EXPECT_EQ(gateway_requests(), gateway_before) << "a bad file reached the gateway";
  expect_up();
  http_client c(env_.port());
  const std::string id = env_.submit(c, "beside-files");
  ASSERT_FALSE(id.empty());
  EXPECT_EQ(env_.wait_terminal(c, id), "completed");
}

// --- garbage credentials --------------------------------------------------------------------

verdict from_answer(const nats_answer& a) {
  http_reply r;
  r.status = a.status;
  r.body = a.body;
  return from_reply(r);
}

class HostileCredentials : public ::testing::Test {
 protected:
  void SetUp() override {
    auto s = env_.start_nats();
    ASSERT_TRUE(s) << s.error().message;
    nats_ = std::move(*s);
    const auto config = env_.dir().sub("switchyard.yaml");
    std::ofstream(config) << "api_keys:\n"
                          << "  - {sha256: " << config::sha256_hex("sk-client")
                          << ", tenant: t1}\n";
    env_.start_gateway(0);
    env_.start_engine({"--nats", nats_->url(), "--config", config});
    ASSERT_EQ(natsConnection_ConnectTo(&conn_.nc, nats_->url().c_str()), NATS_OK);
  }

  verdict http(const std::string& body, const std::optional<std::string>& authorization) {
    http_client c(env_.port());
    std::map<std::string, std::string> h = {{"Content-Type", "application/json"}};
    if (authorization) h["Authorization"] = *authorization;
    return from_reply(c.request("POST", "/v1/jobs", body, h));
  }

  verdict micro(const std::string& body, const std::optional<std::string>& authorization) {
    std::map<std::string, std::string> headers;
    if (authorization) headers["Authorization"] = *authorization;
    auto a = micro_request(conn_.nc, "sy.api.jobs.create", body, headers);
    if (a.status < 0) return {-1, a.body, "", 0};
    return from_answer(a);
  }

  verdict intake(const std::string& body, const std::optional<std::string>& authorization) {
    std::map<std::string, std::string> headers;
    if (authorization) headers["Authorization"] = *authorization;
    auto a = intake_request(conn_.nc, "hostile.creds." + std::to_string(++replies_), body, headers);
    if (a.status < 0) {
      const std::string log = env_.engine_log();
      ADD_FAILURE() << "no reply on the intake (" << a.body << "); the engine's log ends:\n"
                    << log.substr(log.size() > 3000 ? log.size() - 3000 : 0);
      return {-1, a.body, "", 0};
    }
    return from_answer(a);
  }

  size_t jobs_stored() {
    http_client c(env_.port());
    auto r = c.get("/v1/jobs?limit=100", {{"Authorization", "Bearer sk-client"}});
    return r.json()["data"].size();
  }

  system_env env_;
  std::unique_ptr<runtime::nats_server> nats_;
  nats_conn conn_;
  int replies_ = 0;
};

TEST_F(HostileCredentials, garbage_credentials_get_the_same_answer_on_every_job_surface) {
  const std::string body = R"({"endpoint":"/v1/chat/completions","body":{"model":"m"}})";
  struct cred_case {
    std::string name;
    std::optional<std::string> authorization;
    std::string code;
  };
  const std::vector<cred_case> cases = {
      {"missing", std::nullopt, "missing_api_key"},
      // nats.c 3.4.1 reads an empty header value as the next header line ("Sy-Reply-To: ..."),
      // so on the intake this one is judged on that line and its reply subject is lost.
      {"empty", "", "missing_api_key"},
      {"no_scheme", "sk-client", "invalid_api_key"},
      {"wrong_scheme", "Basic sk-client", "invalid_api_key"},
      {"empty_token", "Bearer ", "invalid_api_key"},
      {"wrong_key", "Bearer sk-wrong", "invalid_api_key"},
      {"key_with_suffix", "Bearer sk-client-x", "invalid_api_key"},
      {"not_ascii", "Bearer sk-caf\xc3\xa9", "invalid_api_key"},
      {"long_token", "Bearer " + std::string(6'000, 'k'), "invalid_api_key"},
  };
  const size_t before = jobs_stored();
  for (const auto& c : cases) {
    SCOPED_TRACE(c.name);
    const verdict h = http(body, c.authorization);
    EXPECT_EQ(h.status, 401) << h.code;
    EXPECT_EQ(h.code, c.code);
    for (const auto& [surface, v] : {std::pair{"micro", micro(body, c.authorization)},
                                     std::pair{"intake", intake(body, c.authorization)}}) {
      EXPECT_EQ(v.status, h.status) << surface << ": " << v.code;
      EXPECT_EQ(v.code, h.code) << surface;
      EXPECT_LT(v.bytes, answer_max) << surface;
    }
  }
  // Over NATS a header has no 8 KiB bound: a giant token is refused, not echoed (over HTTP such
  // a header is 431 before any route). JetStream itself refuses a message whose headers pass
  // 64 KiB (its error 10097, in the publish ack), so the intake gets one just under that.
  for (const auto& [surface, v] :
       {std::pair{"micro", micro(body, "Bearer " + std::string(900'000, 'k'))},
        std::pair{"intake", intake(body, "Bearer " + std::string(60'000, 'k'))}}) {
    EXPECT_EQ(v.status, 401) << surface << ": " << v.code;
    EXPECT_EQ(v.code, "invalid_api_key") << surface;
    EXPECT_LT(v.bytes, answer_max) << surface;
  }
  EXPECT_EQ(jobs_stored(), before) << "a refused submission was stored";

  // The engine is up and a client with a valid key beside them sees no error on any surface.
  http_client c(env_.port());
  EXPECT_EQ(c.get("/healthz").status, 200);
  const std::string valid = "Bearer sk-client";
  EXPECT_EQ(http(body, valid).status, 202);
  EXPECT_EQ(micro(body, valid).status, 202);
  EXPECT_EQ(intake(body, valid).status, 202);
  EXPECT_EQ(jobs_stored(), before + 3);
}

}  // namespace SY_UNITY_ID
}  // namespace sy::test
