// Hostile input on every surface that takes a job, as a user sends it to the built binary: the
// same bytes as an HTTP body (`POST /v1/jobs`), a NATS micro-service request
// (`sy.api.jobs.create`) and a JetStream intake message (`sy.submit.job` with `Sy-Reply-To`) get
// the same status and code (api/admission.hpp, docs/limits.md "One admission path"); the
// worker calls refuse a giant token and a deep body over HTTP and NATS alike. The engine stays up,
// a well-formed client beside it sees no error, and nothing refused is stored.

#include <gtest/gtest.h>

#include <nats/nats.h>

#include <functional>
#include <map>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "runtime/nats_server.hpp"
#include "tests/support/wait.hpp"
#include "tests/system/nats_client.hpp"
#include "tests/system/system_env.hpp"

namespace sy::test {
namespace SY_UNITY_ID {

using nlohmann::json;
using namespace std::chrono_literals;

// --max-body-bytes: room for a 900 KB string where an id or name belongs, and a payload of exactly
// the limit with its headers under NATS max_payload (1 MiB).
constexpr int64_t max_body = 960 * 1024;

/// What one surface answered: the HTTP status (the micro service's error code header, the
/// intake's Sy-Status; 202 for an accepted job) and the error code and param (empty: none).
struct verdict {
  int status = 0;
  std::string code;
  std::string param;
  size_t bytes = 0;  ///< the answer's size
  std::string id;    ///< an accepted job's id
};

verdict from_body(int status, const std::string& body) {
  verdict v{status, "", "", body.size(), ""};
  auto j = json::parse(body, nullptr, false);
  if (j.is_object() && j["id"].is_string()) v.id = j["id"];
  if (j.is_object() && j.contains("error") && j["error"].is_object()) {
    v.code = j["error"].value("code", "");
    if (j["error"]["param"].is_string()) v.param = j["error"]["param"];
  }
  return v;
}

class HostileSurfaces : public ::testing::Test {
 protected:
  void SetUp() override {
    auto s = env_.start_nats();
    ASSERT_TRUE(s) << s.error().message;
    nats_ = std::move(*s);
    env_.start_gateway(0);
    env_.start_engine({"--nats", nats_->url(), "--max-body-bytes", std::to_string(max_body)});
    ASSERT_EQ(natsConnection_ConnectTo(&conn_.nc, nats_->url().c_str()), NATS_OK);
  }

  verdict http(const std::string& body, uint16_t port = 0, const std::string& path = "/v1/jobs",
               std::map<std::string, std::string> headers = {}) {
    http_client c(port != 0 ? port : env_.port());
    headers["Content-Type"] = "application/json";
    auto r = c.request("POST", path, body, headers);
    return from_body(r.status, r.body);
  }

  /// A request to the micro service on `subject` with `headers`.
  verdict micro(const std::string& body, const std::string& subject = "sy.api.jobs.create",
                const std::map<std::string, std::string>& headers = {}) {
    auto a = micro_request(conn_.nc, subject, body, headers);
    if (a.status < 0) return {-1, a.body, "", 0, ""};
    return from_body(a.status, a.body);
  }

  /// An intake message with a reply subject (and `msg_id` as its Nats-Msg-Id when not empty);
  /// its reply's Sy-Status and body.
  verdict intake(const std::string& body, const std::string& msg_id = "") {
    std::map<std::string, std::string> headers;
    if (!msg_id.empty()) headers["Nats-Msg-Id"] = msg_id;
    auto a = intake_request(conn_.nc, "hostile.reply." + std::to_string(++replies_), body, headers);
    if (a.status < 0) return {-1, a.body, "", 0, ""};
    return from_body(a.status, a.body);
  }

  /// The jobs the engine holds (GET /v1/jobs, newest first, at most 100).
  size_t jobs_stored() {
    http_client c(env_.port());
    auto r = c.get("/v1/jobs?limit=100");
    return r.json()["data"].size();
  }

  system_env env_;
  std::unique_ptr<runtime::nats_server> nats_;
  nats_conn conn_;
  int replies_ = 0;
};

std::string job(const std::string& body_fields, const std::string& extra = "") {
  return R"({"endpoint":"/v1/chat/completions","body":{"model":"m","messages":[])" + body_fields +
         "}" + extra + "}";
}

struct hostile_case {
  std::string name;
  std::string bytes;
  int status;
  std::string code;
  std::string param;  ///< "-": not checked
};

std::vector<hostile_case> cases() {
  // 200,000 levels, unclosed: 200 KB, under max_body, and refused by the nesting scan before
  // any parse.
  std::string deep = std::string(200'000, '[');
  std::string many_keys = "{";
  for (int i = 0; i < 10'000; ++i)
    many_keys += (i ? ",\"k" : "\"k") + std::to_string(i) + "\":\"v\"";
  many_keys += "}";
  const std::string huge(900'000, 'm');
  std::string at_limit = job("", R"(,"metadata":{"pad":""})");
  // A body of exactly max_body bytes that is refused on its content (a metadata value over 512
  // characters), and the same one byte longer, refused on its size.
  std::string pad(static_cast<size_t>(max_body) - at_limit.size(), 'x');
  at_limit = job("", R"(,"metadata":{"pad":")" + pad + "\"}");
  return {
      {"nested_200000_deep", job(",\"x\":" + deep), 400, "json_too_deep", "-"},
      {"nul_in_model", R"({"endpoint":"/v1/chat/completions","body":{"model":"m\u0000x"}})", 400,
       "invalid_value", "body.model"},
      {"control_character_in_model",
       R"({"endpoint":"/v1/chat/completions","body":{"model":"m\u009fx"}})", 400, "invalid_value",
       "body.model"},
      {"huge_model", R"({"endpoint":"/v1/chat/completions","body":{"model":")" + huge + "\"}}", 400,
       "string_above_max_length", "body.model"},
      {"invalid_utf8", job(",\"x\":\"\xff\xfe\""), 400, "invalid_json", "-"},
      {"raw_control_character", job(",\"x\":\"a\tb\""), 400, "invalid_json", "-"},
      {"number_overflow", job(",\"temperature\":1e999999"), 400, "invalid_json", "-"},
      {"duplicate_key_deep", job(",\"model\":\"n\""), 400, "invalid_request", "body.model"},
      {"duplicate_key_top", job("", R"(,"metadata":{},"metadata":{})"), 400, "invalid_request",
       "metadata"},
      {"wrong_type_endpoint", R"({"endpoint":5,"body":{"model":"m"}})", 400, "invalid_endpoint",
       "endpoint"},
      {"wrong_type_body", R"({"endpoint":"/v1/chat/completions","body":[]})", 400, "invalid_body",
       "body"},
      {"negative_zero_is_zero", job("", R"(,"max_attempts":-0)"), 400, "invalid_max_attempts",
       "max_attempts"},
      {"zero", job("", R"(,"max_attempts":0)"), 400, "invalid_max_attempts", "max_attempts"},
      {"metadata_10000_keys", job("", ",\"metadata\":" + many_keys), 400, "invalid_metadata",
       "metadata"},
      {"huge_input_file_id",
       R"({"endpoint":"/v1/chat/completions","input_file_id":")" + huge + "\"}", 400,
       "string_above_max_length", "input_file_id"},
      {"huge_custom_id",
       R"({"endpoint":"/v1/chat/completions","tasks":[{"custom_id":")" + huge +
           R"(","body":{"model":"m"}}]})",
       400, "invalid_tasks", "tasks[0].custom_id"},  // its documented code (docs/api.md)
      {"nul_in_custom_id",
       R"({"endpoint":"/v1/chat/completions","tasks":[{"custom_id":"a\u0000","body":{"model":"m"}}]})",
       400, "invalid_value", "tasks[0].custom_id"},
      {"empty", "", 400, "invalid_json", "-"},
      {"not_an_object", "[1,2]", 400, "invalid_request", "-"},
      {"exactly_the_limit", at_limit, 400, "invalid_metadata", "metadata"},
      {"one_byte_over", at_limit + " ", 413, "body_too_large", "-"},
  };
}

TEST_F(HostileSurfaces, every_job_surface_judges_the_same_bytes_the_same_way) {
  const size_t before = jobs_stored();
  for (const auto& c : cases()) {
    SCOPED_TRACE(c.name);
    for (const auto& [surface, v] :
         {std::pair{"http", http(c.bytes)}, std::pair{"micro", micro(c.bytes)},
          std::pair{"intake", intake(c.bytes)}}) {
      EXPECT_EQ(v.status, c.status) << surface << ": " << v.code;
      EXPECT_EQ(v.code, c.code) << surface;
      if (c.param != "-") {
        EXPECT_EQ(v.param, c.param) << surface;
      }
      EXPECT_LT(v.bytes, 16u * 1024) << surface << ": the answer echoes the input";
    }
  }
  // The engine is up, nothing refused was stored, and a well-formed job goes through on each
  // surface, a refused request under the same idempotency key making a fresh job.
  EXPECT_EQ(jobs_stored(), before);
  EXPECT_EQ(http(job("")).status, 202);
  EXPECT_EQ(micro(job("")).status, 202);
  EXPECT_EQ(intake(job("")).status, 202);
  EXPECT_EQ(jobs_stored(), before + 3);
  http_client c(env_.port());
  EXPECT_EQ(c.get("/healthz").status, 200);
}

TEST_F(HostileSurfaces, an_intake_message_without_a_reply_subject_is_logged_with_its_code) {
  const std::string deep = job(",\"x\":" + std::string(200'000, '['));
  ASSERT_EQ(
      natsConnection_Publish(conn_.nc, "sy.submit.job", deep.data(), static_cast<int>(deep.size())),
      NATS_OK);
  EXPECT_TRUE(wait_for(
      [&] {
        // One log line (its keys in any order) says what was refused and where it was.
        std::istringstream lines(env_.engine_log());
        for (std::string line; std::getline(lines, line);)
          if (line.find("submission rejected") != std::string::npos &&
              line.find("json_too_deep") != std::string::npos &&
              line.find("\"seq\"") != std::string::npos)
            return true;
        return false;
      },
      15s))
      << env_.engine_log().substr(0, 4000);
  EXPECT_EQ(intake(job("")).status, 202);  // the intake goes on
}

TEST_F(HostileSurfaces, a_refused_request_leaves_its_idempotency_key_free_on_every_surface) {
  const std::string bad = job(",\"x\":" + std::string(200'000, '['));
  auto job_id = [&](const verdict& v) { return v.status / 100 == 2 ? v.id : std::string(); };
  // HTTP and the micro service: Idempotency-Key; the intake: Nats-Msg-Id.
  auto http_with = [&](const std::string& body) {
    return http(body, 0, "/v1/jobs", {{"Idempotency-Key", "hostile-http"}});
  };
  auto micro_with = [&](const std::string& body) {
    return micro(body, "sy.api.jobs.create", {{"Idempotency-Key", "hostile-micro"}});
  };
  auto intake_with = [&](const std::string& body) { return intake(body, "hostile-intake"); };
  const size_t before = jobs_stored();
  EXPECT_EQ(http_with(bad).code, "json_too_deep");
  EXPECT_EQ(micro_with(bad).code, "json_too_deep");
  EXPECT_EQ(intake_with(bad).code, "json_too_deep");
  EXPECT_EQ(jobs_stored(), before);
  // A valid request under the same key makes a fresh job, and a copy of it finds that job.
  for (const auto& send : std::vector<std::function<verdict(const std::string&)>>{
           http_with, micro_with, intake_with}) {
    auto first = send(job(""));
    ASSERT_EQ(first.status, 202) << first.code;
    EXPECT_FALSE(job_id(first).empty());
    EXPECT_EQ(job_id(send(job(""))), job_id(first));
  }
  EXPECT_EQ(jobs_stored(), before + 3);
}

TEST_F(HostileSurfaces, a_bad_idempotency_key_is_refused_on_the_micro_service_as_over_http) {
  // Not printable ASCII (HTTP carries it as obs-text), and one character over 255.
  for (const std::string& key : {std::string("caf\xc3\xa9"), std::string(256, 'k')}) {
    const std::map<std::string, std::string> bad = {{"Idempotency-Key", key}};
    auto h = http(job(""), 0, "/v1/jobs", bad);
    auto m = micro(job(""), "sy.api.jobs.create", bad);
    EXPECT_EQ(h.code, "invalid_idempotency_key");
    EXPECT_EQ(m.code, h.code);
    EXPECT_EQ(m.status, h.status);
  }
}

TEST_F(HostileSurfaces, worker_calls_refuse_giant_tokens_and_deep_bodies_on_both_transports) {
  const std::string token(900'000, 't');
  // Over HTTP a header that long is refused before routing (431); over NATS, where headers have
  // no such bound, the token is refused unread, without echoing it.
  auto over_nats = micro("{}", "sy.task.heartbeat", {{"X-Switchyard-Task-Capability", token}});
  EXPECT_EQ(over_nats.code, "invalid_capability_token");
  EXPECT_LT(over_nats.bytes, 16u * 1024);
  const std::string deep = R"({"output":)" + std::string(200'000, '[') + "}";
  auto h = http(deep, env_.internal_port(), "/v1/task/complete",
                {{"X-Switchyard-Task-Capability", "t.t.t"}});
  auto m = micro(deep, "sy.task.complete", {{"X-Switchyard-Task-Capability", "t.t.t"}});
  EXPECT_EQ(h.code, "json_too_deep");
  EXPECT_EQ(m.code, "json_too_deep");
  EXPECT_EQ(m.status, h.status);
  // A 900 KB runtime name is looked up and not found; neither answer echoes it.
  const std::string long_runtime = R"({"runtime":")" + std::string(900'000, 'r') + "\"}";
  auto h_runtime = http(long_runtime, env_.internal_port(), "/v1/task/lease");
  auto m_runtime = micro(long_runtime, "sy.task.lease");
  EXPECT_EQ(h_runtime.code, "runtime_not_found");
  EXPECT_EQ(m_runtime.code, h_runtime.code);
  EXPECT_EQ(m_runtime.status, h_runtime.status);
  EXPECT_LT(h_runtime.bytes, 16u * 1024);
  EXPECT_LT(m_runtime.bytes, 16u * 1024);
  auto lease = micro(R"({"runtime":"r\u0000","runtime":"s"})", "sy.task.lease");
  EXPECT_EQ(lease.code, "invalid_request");
  EXPECT_EQ(lease.param, "runtime");
  http_client c(env_.port());
  EXPECT_EQ(c.get("/healthz").status, 200);
}

}  // namespace SY_UNITY_ID
}  // namespace sy::test
