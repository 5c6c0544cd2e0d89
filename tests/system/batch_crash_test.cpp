// kill -9 of the engine while a batch is ingested, while it runs and while it finalizes, then a
// restart over the same data: the batch reaches its terminal state, every custom_id appears
// exactly once across the output and error files, and lines finished before the crash are not
// sent to the gateway again. Ingestion and finalization are short, so the engine kills itself
// there at failpoints (runtime/failpoint.hpp) instead of the test hoping to hit them from outside.

#include <gtest/gtest.h>

#include <filesystem>
#include <set>
#include <sstream>
#include <stdexcept>

#include "tests/support/wait.hpp"
#include "tests/system/system_env.hpp"

namespace sy::test {
namespace SY_UNITY_ID {

using nlohmann::json;

/// Uploads `content` as a batch input file over multipart/form-data; returns the file id.
std::string upload(http_client& c, const std::string& content) {
  const std::string boundary = "----sy-test-boundary-7d2f";
  std::string body = "--" + boundary +
                     "\r\nContent-Disposition: form-data; name=\"purpose\"\r\n\r\nbatch\r\n--" +
                     boundary +
                     "\r\nContent-Disposition: form-data; name=\"file\"; filename=\"in.jsonl\"\r\n"
                     "Content-Type: application/jsonl\r\n\r\n" +
                     content + "\r\n--" + boundary + "--\r\n";
  auto r = c.request("POST", "/v1/files", body,
                     {{"Content-Type", "multipart/form-data; boundary=" + boundary}});
  EXPECT_EQ(r.status, 200) << r.body;
  return r.json().value("id", "");
}

/// `lines` request lines `<prefix>0..`, spread over `models` models (m0, m1, ...; one: m).
std::string input(int lines, const std::string& prefix, int models = 1) {
  std::ostringstream out;
  for (int i = 0; i < lines; ++i) {
    const std::string model = models == 1 ? "m" : "m" + std::to_string(i % models);
    json l = {
        {"custom_id", prefix + std::to_string(i)},
        {"method", "POST"},
        {"url", "/v1/chat/completions"},
        {"body",
         {{"model", model},
          {"messages", json::array({{{"role", "system"}, {"content", "p" + std::to_string(i % 5)}},
                                    {{"role", "user"}, {"content", "hi"}}})},
          {"fake", {{"key", prefix + std::to_string(i)}}}}}};
    out << l.dump() << "\n";
  }
  return out.str();
}

json batch(http_client& c, const std::string& id) { return c.get("/v1/batches/" + id).json(); }

json wait_batch_terminal(http_client& c, const std::string& id) {
  json b;
  wait_for(
      [&] {
        b = batch(c, id);
        auto s = b.value("status", "");
        return s == "completed" || s == "failed" || s == "expired" || s == "cancelled";
      },
      std::chrono::seconds(90));
  return b;
}

/// custom_id → occurrences across the batch's output and error files.
std::map<std::string, int> result_ids(http_client& c, const json& b) {
  std::map<std::string, int> seen;
  for (const char* field : {"output_file_id", "error_file_id"}) {
    if (!b[field].is_string()) continue;
    auto r = c.get("/v1/files/" + b[field].get<std::string>() + "/content");
    EXPECT_EQ(r.status, 200);
    std::istringstream in(r.body);
    std::string line;
    while (std::getline(in, line))
      if (!line.empty()) ++seen[json::parse(line)["custom_id"].get<std::string>()];
  }
  return seen;
}

/// Each of the batch's `n` lines is in its output or error file exactly once.
void expect_each_line_once(http_client& c, const json& b, int n) {
  auto seen = result_ids(c, b);
  EXPECT_EQ(seen.size(), static_cast<size_t>(n));
  for (const auto& [cid, count] : seen) EXPECT_EQ(count, 1) << cid;
}

std::string create(http_client& c, const std::string& file_id) {
  auto r = c.post_json("/v1/batches", {{"input_file_id", file_id},
                                       {"endpoint", "/v1/chat/completions"},
                                       {"completion_window", "24h"}});
  EXPECT_EQ(r.status, 200) << r.body;
  return r.json().value("id", "");
}

TEST(system, kill9_during_a_batch_keeps_every_line_exactly_once) {
  system_env env;
  env.start_gateway(/*latency_ms=*/40);
  env.start_engine();
  const int n = 400;
  std::string id;
  int recorded_before = 0;  // lines recorded at the last look before the kill (at most)
  {
    http_client c(env.port());
    id = create(c, upload(c, input(n, "k")));
    ASSERT_FALSE(id.empty()) << env.engine_log();
    ASSERT_TRUE(wait_for(
        [&] {
          recorded_before = batch(c, id)["request_counts"].value("completed", 0);
          return recorded_before >= 60;
        },
        std::chrono::seconds(60)))
        << env.engine_log();
  }
  env.kill_engine();
  auto before = env.gateway_counts();  // every request the killed engine sent
  ASSERT_LT(before.size(), static_cast<size_t>(n)) << "the crash came too late to test anything";

  env.start_engine();
  http_client c(env.port());
  auto b = wait_batch_terminal(c, id);
  ASSERT_EQ(b["status"], "completed") << b.dump() << env.engine_log();
  EXPECT_EQ(b["request_counts"]["total"], n);
  EXPECT_EQ(b["request_counts"]["completed"], n);
  EXPECT_TRUE(b["error_file_id"].is_null());
  expect_each_line_once(c, b, n);
  // Only requests whose result was not recorded at the crash went out twice: those in flight
  // (at most the per-model limit) and those answered but still gathering for their group commit
  // (their slot is free once answered, so under a slow fsync there can be more of them). The
  // lines recorded at the kill were at least `recorded_before`, so at most the rest of what the
  // killed engine sent can be sent again.
  int twice = 0;
  for (const auto& [key, count] : env.gateway_counts()) {
    EXPECT_LE(count, 2) << key;
    twice += count == 2;
  }
  EXPECT_LE(twice, static_cast<int>(before.size()) - recorded_before);
}

// A kill from outside at once after the create lands anywhere early — while the batch
// validates, or (more often) once it dispatches; batch_ingest_crash below hits each window of
// the ingestion exactly.
TEST(system, kill9_right_after_a_batch_is_created_then_restart_completes_it) {
  system_env env;
  env.start_gateway(/*latency_ms=*/0);
  env.start_engine();
  const int n = 3000;
  std::string id;
  {
    http_client c(env.port());
    id = create(c, upload(c, input(n, "v")));
    ASSERT_FALSE(id.empty());
  }
  env.kill_engine();
  env.start_engine();
  http_client c(env.port());
  auto b = wait_batch_terminal(c, id);
  ASSERT_EQ(b["status"], "completed") << b.dump();
  EXPECT_EQ(b["request_counts"]["completed"], n);
  expect_each_line_once(c, b, n);
}

/// The regular files in the engine's files dir (uploads, outputs), by name.
std::set<std::string> stored_files(const system_env& env) {
  std::set<std::string> out;
  for (const auto& e : std::filesystem::directory_iterator(env.dir().sub("data/files")))
    if (e.is_regular_file()) out.insert(e.path().filename().string());
  return out;
}

/// The files in the batch's work directory, by kind: "plan", "plan.tmp", "model_map.json",
/// "model_map.json.tmp", or the name of anything else found there.
std::multiset<std::string> plan_files(const system_env& env, const std::string& batch_id) {
  std::multiset<std::string> out;
  const auto dir = std::filesystem::path(env.dir().sub("data/batches")) / batch_id;
  if (!std::filesystem::exists(dir)) return out;
  for (const auto& e : std::filesystem::recursive_directory_iterator(dir)) {
    if (!e.is_regular_file()) continue;
    const std::string name = e.path().filename().string();
    if (name.ends_with(".plan")) {
      out.insert("plan");
    } else if (name.ends_with(".plan.tmp")) {
      out.insert("plan.tmp");
    } else {
      out.insert(name);
    }
  }
  return out;
}

/// A complete ingest of a batch over three models: their plans and model_map.json, no temp file.
const std::multiset<std::string> complete_plans = {"model_map.json", "plan", "plan", "plan"};

/// Each ingestion failpoint and what the crash leaves in the batch's work directory.
struct ingest_window {
  const char* failpoint;
  std::multiset<std::string> left;
};

void PrintTo(const ingest_window& w, std::ostream* os) { *os << w.failpoint; }

class batch_ingest_crash : public ::testing::TestWithParam<ingest_window> {};

/// Starts the engine armed with `failpoint` and waits until it kills itself there. Batches are
/// resumed before the API serves, so the engine may die before it reports its address, which
/// start_engine takes for a failed start: expected here, and told apart by the log.
bool restart_until_failpoint(system_env& env, const char* failpoint) {
  env.arm_failpoints(failpoint);
  try {
    env.start_engine();
  } catch (const std::runtime_error&) {
  }
  return env.wait_failpoint_hit();
}

// kill -9 at each step of ingestion. The restart must ingest again from scratch (the batch is
// still validating; partial plans and temp files must not be taken for a complete ingest) or,
// once in_progress is committed, use the plans as they are. To see that the re-ingest leaves a
// clean work directory, the restart is itself killed where dispatch would begin.
TEST_P(batch_ingest_crash, restart_ingests_cleanly_and_completes_every_line_once) {
  const ingest_window& w = GetParam();
  system_env env;
  env.start_gateway(/*latency_ms=*/0);
  env.arm_failpoints(w.failpoint);
  env.start_engine();
  const int n = 600;
  std::string id, input_id;
  {
    http_client c(env.port());
    input_id = upload(c, input(n, "i", /*models=*/3));
    id = create(c, input_id);
    ASSERT_FALSE(id.empty()) << env.engine_log();
  }
  ASSERT_TRUE(env.wait_failpoint_hit()) << env.engine_log();
  EXPECT_TRUE(env.gateway_counts().empty()) << "a request went out before dispatch";
  EXPECT_EQ(plan_files(env, id), w.left) << "the crash was not where the failpoint says";

  if (std::string(w.failpoint) != "batch_ingest_committed") {  // still validating
    ASSERT_TRUE(restart_until_failpoint(env, "batch_ingest_committed")) << env.engine_log();
    EXPECT_EQ(plan_files(env, id), complete_plans) << "the re-ingest left stale files";
  }

  env.start_engine();
  http_client c(env.port());
  auto b = wait_batch_terminal(c, id);
  ASSERT_EQ(b["status"], "completed") << b.dump() << env.engine_log();
  EXPECT_EQ(b["request_counts"], (json{{"total", n}, {"completed", n}, {"failed", 0}}));
  EXPECT_TRUE(b["error_file_id"].is_null());
  expect_each_line_once(c, b, n);
  auto sent = env.gateway_counts();
  EXPECT_EQ(sent.size(), static_cast<size_t>(n));
  for (const auto& [key, count] : sent) EXPECT_EQ(count, 1) << key;
  // Nothing stale: the input and the output file, and no work directory once finished.
  EXPECT_EQ(stored_files(env),
            (std::set<std::string>{input_id, b["output_file_id"].get<std::string>()}));
  EXPECT_TRUE(wait_for([&] { return plan_files(env, id).empty(); }, std::chrono::seconds(10)))
      << "the work directory outlived the batch";
}

INSTANTIATE_TEST_SUITE_P(system, batch_ingest_crash,
                         ::testing::Values(ingest_window{"batch_ingest_plan_tmp", {"plan.tmp"}},
                                           ingest_window{"batch_ingest_plan_renamed", {"plan"}},
                                           ingest_window{"batch_ingest_map_written",
                                                         complete_plans},
                                           ingest_window{"batch_ingest_committed", complete_plans}),
                         [](const ::testing::TestParamInfo<ingest_window>& info) {
                           return std::string(info.param.failpoint);
                         });

class batch_finalize_crash : public ::testing::TestWithParam<const char*> {};

TEST_P(batch_finalize_crash, restart_finishes_the_batch_once_without_resending) {
  system_env env;
  env.start_gateway(/*latency_ms=*/0);
  env.arm_failpoints(GetParam());
  env.start_engine();
  const int n = 300;
  std::string id, input_id;
  {
    http_client c(env.port());
    input_id = upload(c, input(n, "f"));
    id = create(c, input_id);
    ASSERT_FALSE(id.empty()) << env.engine_log();
  }
  ASSERT_TRUE(env.wait_failpoint_hit()) << env.engine_log();
  // Finalization starts only once every line has its result.
  auto before = env.gateway_counts();
  ASSERT_EQ(before.size(), static_cast<size_t>(n));

  env.start_engine();
  http_client c(env.port());
  auto b = wait_batch_terminal(c, id);
  ASSERT_EQ(b["status"], "completed") << b.dump() << env.engine_log();
  EXPECT_EQ(b["request_counts"]["completed"], n);
  EXPECT_TRUE(b["error_file_id"].is_null());
  expect_each_line_once(c, b, n);
  EXPECT_EQ(env.gateway_counts(), before) << "a line was sent to the gateway again";
  // The files of the interrupted finalization (temp or renamed, without a record) are gone:
  // what is left is the input and the one output file.
  EXPECT_EQ(stored_files(env),
            (std::set<std::string>{input_id, b["output_file_id"].get<std::string>()}));
}

INSTANTIATE_TEST_SUITE_P(system, batch_finalize_crash,
                         ::testing::Values("batch_finalize_start", "batch_files_written"));

TEST(system, kill9_while_a_cancelled_batch_finalizes_keeps_partial_output_once) {
  system_env env;
  env.start_gateway(/*latency_ms=*/40);
  env.arm_failpoints("batch_files_written");
  env.start_engine();
  const int n = 400;
  std::string id;
  {
    http_client c(env.port());
    id = create(c, upload(c, input(n, "c")));
    ASSERT_FALSE(id.empty()) << env.engine_log();
    ASSERT_TRUE(wait_for([&] { return batch(c, id)["request_counts"].value("completed", 0) >= 30; },
                         std::chrono::seconds(60)))
        << env.engine_log();
    auto r = c.request("POST", "/v1/batches/" + id + "/cancel", "");
    ASSERT_EQ(r.status, 200) << r.body;
  }
  ASSERT_TRUE(env.wait_failpoint_hit()) << env.engine_log();
  auto before = env.gateway_counts();
  ASSERT_LT(before.size(), static_cast<size_t>(n)) << "the batch ran to the end before the cancel";

  env.start_engine();
  http_client c(env.port());
  auto b = wait_batch_terminal(c, id);
  ASSERT_EQ(b["status"], "cancelled") << b.dump() << env.engine_log();
  const int completed = b["request_counts"]["completed"].get<int>();
  const int failed = b["request_counts"]["failed"].get<int>();
  EXPECT_EQ(completed + failed, n);
  EXPECT_GE(completed, 30);
  expect_each_line_once(c, b, n);
  // Lines still undispatched at the cancel are in the error file as batch_cancelled.
  ASSERT_TRUE(b["error_file_id"].is_string()) << b.dump();
  auto err = c.get("/v1/files/" + b["error_file_id"].get<std::string>() + "/content");
  std::istringstream lines(err.body);
  std::string line;
  int cancelled = 0;
  while (std::getline(lines, line))
    if (!line.empty() && json::parse(line)["error"].value("code", "") == "batch_cancelled")
      ++cancelled;
  EXPECT_EQ(cancelled, failed);
  EXPECT_EQ(env.gateway_counts(), before) << "a line was sent to the gateway after the cancel";
}

// kill -9 where a rerun's plans are written and nothing of the run is dispatched yet: the
// restart runs the same lines again from those plans, and every line ends exactly once across
// the new files (docs/batches.md, "Rerun").
TEST(system, kill9_during_a_rerun_keeps_every_line_exactly_once) {
  system_env env;
  env.start_gateway(/*latency_ms=*/0);
  env.arm_failpoints("batch_rerun_planned");
  env.start_engine();
  const int n = 150;
  std::ostringstream text;
  for (int i = 0; i < n; ++i) {
    json fake = {{"key", "r" + std::to_string(i)}};
    if (i % 3 == 0) fake.update({{"status", 400}, {"fail_times", 1}});  // an error line, once
    text << json{{"custom_id", "r" + std::to_string(i)},
                 {"method", "POST"},
                 {"url", "/v1/chat/completions"},
                 {"body",
                  {{"model", "m"},
                   {"messages", json::array({{{"role", "user"}, {"content", "hi"}}})},
                   {"fake", fake}}}}
                .dump()
         << "\n";
  }
  std::string id;
  {
    http_client c(env.port());
    id = create(c, upload(c, text.str()));
    ASSERT_FALSE(id.empty()) << env.engine_log();
    auto first = wait_batch_terminal(c, id);
    ASSERT_EQ(first["request_counts"], (json{{"total", n}, {"completed", 100}, {"failed", 50}}))
        << first.dump();
    auto r = c.request("POST", "/v1/jobs/" + id + "/rerun", "");
    ASSERT_EQ(r.status, 200) << r.body;
  }
  ASSERT_TRUE(env.wait_failpoint_hit()) << env.engine_log();
  for (const auto& [key, count] : env.gateway_counts())
    EXPECT_EQ(count, 1) << key << ": a line of the rerun went out before its plans were done";

  env.arm_failpoints("");
  env.start_engine();
  http_client c(env.port());
  auto b = wait_batch_terminal(c, id);
  ASSERT_EQ(b["status"], "completed") << b.dump() << env.engine_log();
  EXPECT_EQ(b["request_counts"], (json{{"total", n}, {"completed", n}, {"failed", 0}}));
  EXPECT_TRUE(b["error_file_id"].is_null());
  expect_each_line_once(c, b, n);
  for (const auto& [key, count] : env.gateway_counts())
    EXPECT_EQ(count, std::stoi(key.substr(1)) % 3 == 0 ? 2 : 1) << key;
}

}  // namespace SY_UNITY_ID
}  // namespace sy::test
