// The types of the fields admission reads in a worker call (docs/workers.md) and a batch
// (`POST /v1/batches`, docs/api.md): each field of another JSON type gets its documented code,
// else invalid_request, with `param` naming it; a field missing is missing_required_parameter.

#include <map>
#include <string>
#include <tuple>
#include <vector>

#include <gtest/gtest.h>

#include "api/admission.hpp"

namespace sy::api {
namespace SY_UNITY_ID {

using kind = worker_request::kind;
using json_body = std::map<std::string, std::string>;

struct row {
  kind what;
  std::string body;
  std::string code;
  std::string param;
};

const admission& admit() {
  static const admission a{config::settings{}};
  return a;
}

TEST(call_types, a_worker_call_field_of_another_type_is_refused_naming_it) {
  const std::vector<row> rows = {
      {kind::lease, R"({})", "missing_required_parameter", "runtime"},
      {kind::lease, R"({"runtime":null})", "missing_required_parameter", "runtime"},
      {kind::lease, R"({"runtime":5})", "invalid_request", "runtime"},
      {kind::lease, R"({"runtime":["r"]})", "invalid_request", "runtime"},
      {kind::lease, R"({"runtime":{"r":1}})", "invalid_request", "runtime"},
      {kind::lease, R"({"runtime":true})", "invalid_request", "runtime"},
      {kind::lease, R"({"runtime":"r\u0001"})", "invalid_value", "runtime"},
      {kind::lease, R"({"runtime":"r","max_tasks":"2"})", "invalid_request", "max_tasks"},
      {kind::lease, R"({"runtime":"r","max_tasks":2.5})", "invalid_request", "max_tasks"},
      {kind::lease, R"({"runtime":"r","max_tasks":true})", "invalid_request", "max_tasks"},
      {kind::lease, R"({"runtime":"r","max_tasks":0})", "invalid_request", "max_tasks"},
      {kind::lease, R"({"runtime":"r","wait_ms":[]})", "invalid_request", "wait_ms"},
      {kind::lease, R"({"runtime":"r","wait_ms":-1})", "invalid_request", "wait_ms"},
      {kind::lease, R"({"runtime":"r","wait_ms":30001})", "invalid_request", "wait_ms"},
      {kind::lease, R"({"runtime":"r","x":1})", "unknown_parameter", "x"},
      {kind::lease, R"([])", "invalid_request", ""},
      {kind::complete, R"({})", "missing_required_parameter", "output"},
      {kind::complete, R"({"output":1,"extra":2})", "unknown_parameter", "extra"},
      {kind::fail, R"({"error":"boom"})", "invalid_request", "error"},
      {kind::fail, R"({"error":{"code":7}})", "invalid_request", "error"},
      {kind::fail, R"({"error":{"code":"a b"}})", "invalid_request", "error.code"},
      {kind::fail, R"({"error":{"code":"c","message":5}})", "invalid_request", "error.message"},
      {kind::fail, R"({"error":{"code":"c"},"retryable":"yes"})", "invalid_request", "retryable"},
      {kind::fail, R"({"error":{"code":"c"},"retryable":1})", "invalid_request", "retryable"},
      {kind::heartbeat, R"({"x":1})", "unknown_parameter", "x"},
      {kind::heartbeat, R"("")", "invalid_request", ""},
      {kind::credentials, R"({"x":1})", "unknown_parameter", "x"},
      {kind::credentials, R"(null)", "invalid_request", ""},
  };
  for (const auto& r : rows) {
    auto a = admit().worker_call(r.what, r.body, "", "tok");
    ASSERT_FALSE(a.ok()) << r.body;
    EXPECT_EQ(a.error().code, r.code) << r.body;
    EXPECT_EQ(a.error().param, r.param) << r.body;
  }
  // The same fields of their own types are admitted; an empty body is `{}`.
  EXPECT_TRUE(admit()
                  .worker_call(kind::lease, R"({"runtime":"r","max_tasks":2,"wait_ms":0})", "", "")
                  .ok());
  EXPECT_TRUE(admit()
                  .worker_call(kind::fail, R"({"error":{"code":"c"},"retryable":true})", "", "tok")
                  .ok());
  EXPECT_TRUE(admit().worker_call(kind::heartbeat, "", "", "tok").ok());
}

TEST(call_types, a_batch_field_of_another_type_is_refused_naming_it) {
  const std::string good_rest = R"("endpoint":"/v1/chat/completions","completion_window":"24h")";
  auto with_file = [&](const std::string& value) {
    return "{\"input_file_id\":" + value + "," + good_rest + "}";
  };
  auto with = [](const std::string& field, const std::string& value) {
    json_body b = {{"input_file_id", "\"file-1\""},
                   {"endpoint", "\"/v1/chat/completions\""},
                   {"completion_window", "\"24h\""}};
    b[field] = value;
    std::string out = "{";
    for (const auto& [k, v] : b) out += (out.size() > 1 ? ",\"" : "\"") + k + "\":" + v;
    return out + "}";
  };
  const std::vector<std::tuple<std::string, std::string, std::string>> rows = {
      {with_file("5"), "invalid_request", "input_file_id"},
      {with_file("[]"), "invalid_request", "input_file_id"},
      {with_file("null"), "missing_required_parameter", "input_file_id"},
      {with_file("\"\""), "invalid_value", "input_file_id"},
      {with_file("\"" + std::string(65, 'f') + "\""), "string_above_max_length", "input_file_id"},
      {with("endpoint", "{}"), "invalid_request", "endpoint"},
      {with("endpoint", "\"/v1/moderations\""), "invalid_value", "endpoint"},
      {with("completion_window", "24"), "invalid_request", "completion_window"},
      {with("completion_window", "false"), "invalid_request", "completion_window"},
      {with("metadata", "[]"), "invalid_metadata", "metadata"},
      {with("metadata", "\"m\""), "invalid_metadata", "metadata"},
      {with("output_expires_after", "3600"), "invalid_value", "output_expires_after"},
      {with("output_expires_after", R"({"anchor":"created_at","seconds":"3600"})"), "invalid_value",
       "output_expires_after"},
      {with("output_expires_after", R"({"anchor":"created_at","seconds":3600,"x":1})"),
       "invalid_value", "output_expires_after"},
      {with("max_inflight", "\"3\""), "invalid_max_inflight", "max_inflight"},
      {with("max_inflight", "2.5"), "invalid_max_inflight", "max_inflight"},
      {with("max_inflight", "0"), "invalid_max_inflight", "max_inflight"},
      {with("max_inflight", "true"), "invalid_max_inflight", "max_inflight"},
      {with("webhook_url", "5"), "invalid_webhook_url", "webhook_url"},
      {with("webhook_url", "[]"), "invalid_webhook_url", "webhook_url"},
      {with("webhook_url", "\"ftp://h/x\""), "invalid_webhook_url", "webhook_url"},
      {with("max_attempts", "0"), "invalid_max_attempts", "max_attempts"},
      {with("max_attempts", "101"), "invalid_max_attempts", "max_attempts"},
      {with("max_attempts", "-1"), "invalid_max_attempts", "max_attempts"},
      {with("max_attempts", "2.5"), "invalid_max_attempts", "max_attempts"},
      {with("max_attempts", "\"2\""), "invalid_max_attempts", "max_attempts"},
      {with("max_attempts", "true"), "invalid_max_attempts", "max_attempts"},
      {with("surprise", "1"), "unknown_parameter", "surprise"},
      {"[]", "invalid_request", ""},
  };
  for (const auto& [body, code, param] : rows) {
    client_request c;
    c.body = body;
    auto b = admit().batch(c);
    ASSERT_FALSE(b.ok()) << body;
    EXPECT_EQ(b.error().code, code) << body;
    EXPECT_EQ(b.error().param, param) << body;
  }
  client_request c;
  const std::string good = with("metadata", R"({"run":"nightly"})");
  c.body = good;
  auto b = admit().batch(c);
  ASSERT_TRUE(b.ok()) << b.error().message;
  EXPECT_EQ((*b)->completion_window_ms, 86'400'000);
  EXPECT_EQ((*b)->tenant, "default");
  EXPECT_EQ((*b)->max_inflight, 0);
  EXPECT_EQ((*b)->max_attempts, 0);  // the engine applies default_max_attempts
  // null in an optional field is as if it were absent.
  for (const char* field :
       {"max_inflight", "webhook_url", "metadata", "output_expires_after", "max_attempts"}) {
    const std::string body = with(field, "null");  // c.body is a view
    c.body = body;
    auto r = admit().batch(c);
    EXPECT_TRUE(r.ok()) << field << ": " << (r ? "" : r.error().message);
  }
  const std::string seven = with("max_inflight", "7");
  c.body = seven;
  auto capped = admit().batch(c);
  ASSERT_TRUE(capped.ok());
  EXPECT_EQ((*capped)->max_inflight, 7);
  const std::string hundred = with("max_attempts", "100");
  c.body = hundred;
  auto most = admit().batch(c);
  ASSERT_TRUE(most.ok());
  EXPECT_EQ((*most)->max_attempts, 100);
}

}  // namespace SY_UNITY_ID
}  // namespace sy::api
