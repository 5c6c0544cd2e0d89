// Bad input against the real engine (LMDB, JetStream, the fake gateway) rather than the HTTP
// layer's in-memory service: every refusal has its status and the OpenAI error envelope, and
// leaves no trace — no job, task, idempotency key, event or outbox record in LMDB, no message in
// JetStream, no request at the gateway.

#include <gtest/gtest.h>

#include <map>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "config/limits.hpp"
#include "storage/lmdb_env.hpp"
#include "tests/integration/engine/engine_env.hpp"
#include "tests/integration/engine/js_probe.hpp"

namespace sy::test {
namespace SY_UNITY_ID {

using nlohmann::json;

/// One refused request and what the client must get back.
struct bad_request {
  std::string name;
  std::string method;
  std::string target;
  std::string body;
  std::string content_type;  ///< empty: application/json
  int status = 0;
  std::string code;
  json param = nullptr;  ///< the envelope's `param`
};

const json chat_body = {{"model", "test-model"},
                        {"messages", {{{"role", "user"}, {"content", "hi"}}}}};

std::vector<bad_request> cases() {
  // One byte over the default limit (1 MiB), in an otherwise valid submission.
  const auto limit = static_cast<size_t>(config::settings{}.max_body_bytes);
  json big = {{"endpoint", "/v1/embeddings"}, {"body", {{"model", "test-model"}, {"input", ""}}}};
  const size_t frame = big.dump().size();
  big["body"]["input"] = std::string(limit + 1 - frame, 'x');
  const std::string valid = json{{"endpoint", "/v1/chat/completions"}, {"body", chat_body}}.dump();
  const std::string images =
      json{{"endpoint", "/v1/images/generations"}, {"body", chat_body}}.dump();
  const std::string no_model =
      json{{"endpoint", "/v1/chat/completions"}, {"body", {{"messages", json::array()}}}}.dump();
  const std::string cut_off = R"({"endpoint": "/v1/chat/completions", "body": {"model": "m",)";
  // Nested one level past the limit, and 100,000 levels (which overflowed a thread's stack).
  auto nested = [](size_t arrays) {
    return R"({"endpoint":"/v1/chat/completions","body":{"model":"test-model","x":)" +
           std::string(arrays, '[') + std::string(arrays, ']') + "}}";
  };
  const std::string one_too_deep = nested(limits::json_max_depth - 1);
  const std::string far_too_deep = nested(100'000);
  const std::string sync_too_deep =
      R"({"model":"test-model","messages":)" + std::string(100'000, '[') + "]}";
  json long_model = {{"endpoint", "/v1/chat/completions"}, {"body", chat_body}};
  long_model["body"]["model"] = std::string(limits::model_max_bytes + 1, 'm');
  json sync_long_model = chat_body;
  sync_long_model["model"] = std::string(600, 'm');  // longer than an LMDB key
  return {
      {"json_one_level_too_deep", "POST", "/v1/jobs", one_too_deep, "", 400, "json_too_deep"},
      {"json_100k_levels_deep", "POST", "/v1/jobs", far_too_deep, "", 400, "json_too_deep"},
      {"sync_json_100k_levels_deep", "POST", "/v1/chat/completions", sync_too_deep, "", 400,
       "json_too_deep"},
      {"model_over_the_limit", "POST", "/v1/jobs", long_model.dump(), "", 400,
       "string_above_max_length", "body.model"},
      {"sync_model_over_an_lmdb_key", "POST", "/v1/chat/completions", sync_long_model.dump(), "",
       400, "string_above_max_length", "model"},
      {"malformed_json", "POST", "/v1/jobs", cut_off, "", 400, "invalid_json"},
      {"unknown_endpoint", "POST", "/v1/jobs", images, "", 400, "invalid_endpoint", "endpoint"},
      {"missing_model", "POST", "/v1/jobs", no_model, "", 400, "missing_model", "body.model"},
      {"body_over_the_limit", "POST", "/v1/jobs", big.dump(), "", 413, "body_too_large"},
      {"wrong_content_type", "POST", "/v1/jobs", valid, "text/plain", 415,
       "unsupported_media_type"},
      {"unknown_route", "POST", "/v1/nothing-here", valid, "", 404, "not_found"},
      {"wrong_method", "PUT", "/v1/jobs", valid, "", 405, "method_not_allowed"},
  };
}

/// Records in every database a submission writes to.
size_t stored(engine_env& env) {
  size_t n = 0;
  for (auto d : {storage::db::jobs, storage::db::tasks, storage::db::idempotency,
                 storage::db::leases, storage::db::outbox, storage::db::events,
                 storage::db::job_index, storage::db::queued, storage::db::deadlines})
    n += env.count(d);
  return n;
}

/// Names the case in GoogleTest's messages instead of dumping the struct's bytes.
void PrintTo(const bad_request& r, std::ostream* os) { *os << r.name; }

class bad_input : public ::testing::TestWithParam<bad_request> {};

TEST_P(bad_input, has_its_status_and_envelope_and_stores_nothing) {
  const auto& bad = GetParam();
  engine_env env;
  env.start();
  ASSERT_EQ(stored(env), 0u);
  std::map<std::string, std::string> headers = {{"Idempotency-Key", "bad-" + bad.name}};
  if (!bad.content_type.empty()) headers["Content-Type"] = bad.content_type;
  http_reply r;
  {
    // Its own connection: a 413 closes the connection it came on.
    http_client c(env.port());
    r = c.request(bad.method, bad.target, bad.body, headers);
  }
  // Checked first, so that a refusal that still stored something is reported as such.
  EXPECT_EQ(stored(env), 0u) << "a refused request left records in LMDB";
  EXPECT_EQ(env.gateway().requests(), 0);
  ASSERT_EQ(r.status, bad.status) << r.error << " " << r.body;
  EXPECT_EQ(r.headers["content-type"], "application/json");
  auto j = r.json();
  ASSERT_TRUE(j.is_object()) << r.body;
  ASSERT_EQ(j.size(), 1u) << r.body;
  ASSERT_TRUE(j.contains("error")) << r.body;
  const auto& e = j["error"];
  ASSERT_EQ(e.size(), 4u) << r.body;
  ASSERT_TRUE(e.contains("message") && e["message"].is_string()) << r.body;
  EXPECT_FALSE(e["message"].get<std::string>().empty());
  EXPECT_EQ(e["type"], "invalid_request_error") << r.body;
  ASSERT_TRUE(e.contains("param")) << r.body;
  EXPECT_EQ(e["param"], bad.param) << r.body;
  EXPECT_EQ(e["code"], bad.code) << r.body;
  if (bad.status == 405) {
    EXPECT_FALSE(r.headers["allow"].empty());
  }

  // The same Idempotency-Key with a valid request makes a new job: the refusal did not take the
  // key. Its records show up where the checks above looked, so those checks can see a job.
  http_client c(env.port());
  auto good = env.submit(c, "valid", nullptr, {{"Idempotency-Key", "bad-" + bad.name}});
  ASSERT_EQ(good.status, 202) << good.body;
  EXPECT_EQ(env.count(storage::db::jobs), 1u);
  EXPECT_EQ(env.count(storage::db::idempotency), 1u);
  EXPECT_EQ(env.wait_terminal(c, good.json()["id"])["status"], "completed");
  EXPECT_EQ(env.gateway().requests(), 1);
  // Only the valid job's task message ever reached JetStream.
  EXPECT_EQ(stream_last_seq(env.nats().url(), "SY_TASKS"), std::optional<uint64_t>(1));
}

INSTANTIATE_TEST_SUITE_P(engine, bad_input, ::testing::ValuesIn(cases()),
                         [](const auto& info) { return info.param.name; });

}  // namespace SY_UNITY_ID
}  // namespace sy::test
