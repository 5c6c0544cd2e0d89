// kill -9 of the engine while a batch is validating and while it runs, then a restart over the
// same data: the batch completes, every custom_id appears exactly once across the output and
// error files, and lines finished before the crash are not sent to the gateway again.

#include <gtest/gtest.h>

#include <set>
#include <sstream>

#include "tests/support/wait.hpp"
#include "tests/system/system_env.hpp"

namespace sy::test {
namespace {

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

std::string input(int lines, const std::string& prefix) {
  std::ostringstream out;
  for (int i = 0; i < lines; ++i) {
    json l = {{"custom_id", prefix + std::to_string(i)},
              {"method", "POST"},
              {"url", "/v1/chat/completions"},
              {"body",
               {{"model", "m"},
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
  wait_for([&] {
    b = batch(c, id);
    auto s = b.value("status", "");
    return s == "completed" || s == "failed" || s == "expired" || s == "cancelled";
  }, std::chrono::seconds(90));
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
  {
    http_client c(env.port());
    id = create(c, upload(c, input(n, "k")));
    ASSERT_FALSE(id.empty()) << env.engine_log();
    ASSERT_TRUE(wait_for([&] { return batch(c, id)["request_counts"].value("completed", 0) >= 60; },
                         std::chrono::seconds(60)))
        << env.engine_log();
  }
  auto before = env.gateway_counts();
  env.kill_engine();
  ASSERT_LT(before.size(), static_cast<size_t>(n)) << "the crash came too late to test anything";

  env.start_engine();
  http_client c(env.port());
  auto b = wait_batch_terminal(c, id);
  ASSERT_EQ(b["status"], "completed") << b.dump() << env.engine_log();
  EXPECT_EQ(b["request_counts"]["total"], n);
  EXPECT_EQ(b["request_counts"]["completed"], n);
  EXPECT_TRUE(b["error_file_id"].is_null());
  auto seen = result_ids(c, b);
  EXPECT_EQ(seen.size(), static_cast<size_t>(n));
  for (const auto& [cid, count] : seen) EXPECT_EQ(count, 1) << cid;
  // Only requests in flight at the crash (at most the per-model limit, 10) went out twice.
  int twice = 0;
  for (const auto& [key, count] : env.gateway_counts()) {
    EXPECT_LE(count, 2) << key;
    twice += count == 2;
  }
  EXPECT_LE(twice, 10);
}

TEST(system, kill9_while_a_batch_validates_then_restart_completes_it) {
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
  env.kill_engine();  // at once: most likely still validating or just dispatching
  env.start_engine();
  http_client c(env.port());
  auto b = wait_batch_terminal(c, id);
  ASSERT_EQ(b["status"], "completed") << b.dump();
  EXPECT_EQ(b["request_counts"]["completed"], n);
  auto seen = result_ids(c, b);
  EXPECT_EQ(seen.size(), static_cast<size_t>(n));
  for (const auto& [cid, count] : seen) EXPECT_EQ(count, 1) << cid;
}

}  // namespace
}  // namespace sy::test
