// The checks of a submission's parts that other paths share (metadata, a request's model), and
// the canonical hashes an Idempotency-Key is compared by (actors/submission.hpp).

#include <string_view>

#include "actors/http_task.hpp"
#include "actors/runtime_names.hpp"
#include "actors/submission.hpp"
#include "config/client_text.hpp"
#include "config/limits.hpp"
#include "config/s3_scope.hpp"
#include "config/sha256.hpp"
#include "runtime/json_text.hpp"
#include "runtime/strict_json.hpp"

namespace sy::actors {
namespace {

using nlohmann::json;

/// The first `chars` code points of valid UTF-8 `s` (for quoting a too-long key whole
/// characters at a time: a cut inside one would make the error message invalid UTF-8).
std::string utf8_prefix(std::string_view s, size_t chars) {
  size_t i = 0;
  for (; i < s.size() && chars > 0; --chars) {
    ++i;
    while (i < s.size() && (static_cast<unsigned char>(s[i]) & 0xC0) == 0x80) ++i;
  }
  return std::string(s.substr(0, i));
}

}  // namespace

result<task_input> parse_task_line(std::string_view line, bool keep_body) {
  auto j = runtime::parse_strict_json(line, "the line");
  if (!j && j.error().code == errc::invalid_json)
    return make_error(errc::invalid_json_line, j.error().message);
  if (!j) return j.error();
  if (!j->is_object()) return make_error(errc::invalid_json_line, "The line is not a JSON object.");
  return parse_task(*j, "", std::nullopt, keep_body);
}

status check_metadata(const json& m, const std::string& param) {
  if (m.is_null()) return ok;
  auto bad = [&](const std::string& why) {
    return make_error(errc::invalid_metadata, "'" + param + "' " + why + ".", param);
  };
  if (!m.is_object()) return bad("must be an object of string values");
  if (m.size() > limits::metadata_max_keys) return bad("has more than 16 keys");
  for (const auto& [k, v] : m.items()) {
    // The body parser rejects invalid UTF-8 already; this keeps the limits honest regardless.
    auto key_chars = runtime::utf8_length(k);
    if (!key_chars) return bad("has a key that is not valid UTF-8");
    if (*key_chars > limits::metadata_key_max_chars)
      return bad("key '" + utf8_prefix(k, limits::metadata_key_max_chars) +
                 "...' is longer than 64 characters");
    if (!v.is_string()) return bad("value of '" + quote_client(k) + "' must be a string");
    auto value_chars = runtime::utf8_length(v.get_ref<const std::string&>());
    if (!value_chars) return bad("value of '" + quote_client(k) + "' is not valid UTF-8");
    if (*value_chars > limits::metadata_value_max_chars)
      return bad("value of '" + quote_client(k) + "' is longer than 512 characters");
  }
  return ok;
}

status check_model(const json& body, const std::string& param) {
  auto model = body.find("model");
  if (model == body.end() || !model->is_string() || model->get_ref<const std::string&>().empty())
    return make_error(errc::missing_model,
                      "'" + param + "' is required and must be a non-empty string.", param);
  if (is_http_queue(model->get_ref<const std::string&>()))
    return make_error(errc::invalid_body,
                      "'" + param + "' may not begin with '" + std::string(http_queue_prefix) +
                          "': such names are the queues of http tasks.",
                      param);
  if (is_runtime_queue(model->get_ref<const std::string&>()))
    return make_error(errc::invalid_body,
                      "'" + param + "' may not begin with '" + std::string(runtime_queue_prefix) +
                          "': such names are the queues of runtimes.",
                      param);
  if (has_control_character(model->get_ref<const std::string&>()))
    return make_error(errc::invalid_value,
                      "'" + param + "' may not hold a control character (U+0000-U+001F, " +
                          "U+007F-U+009F): a model names a queue, a subject and a metric label.",
                      param);
  if (const size_t n = model->get_ref<const std::string&>().size(); n > limits::model_max_bytes)
    return make_error(errc::string_above_max_length,
                      "Invalid '" + param + "': string too long. Expected at most " +
                          std::to_string(limits::model_max_bytes) + " bytes, got " +
                          std::to_string(n) + " (model_max_bytes, see docs/limits.md).",
                      param);
  return ok;
}

std::string json_text_of(const json& j) {
  return j.dump(-1, ' ', false, json::error_handler_t::replace);
}

namespace {

/// A body the core carries as text, back as the document the request hashes were defined on
/// (its text is canonical already: the same request gives the same hash as it always did).
json document(const std::string& text) {
  return text.empty() ? json(nullptr) : json::parse(text, nullptr, false);
}

}  // namespace

std::string request_hash(const task_append& a) {
  json tasks = json::array();
  for (const auto& t : a.tasks)
    tasks.push_back({{"custom_id", t.custom_id}, {"body", document(t.body)}});
  json canonical = {{"tasks", std::move(tasks)}, {"last_batch", a.last_batch}};
  return config::sha256_hex(canonical.dump(-1, ' ', false, json::error_handler_t::replace));
}

std::string request_hash(const submission& s) {
  // nlohmann's object is a std::map, so dump() emits keys sorted at every level: canonical.
  json canonical = {{"endpoint", s.endpoint},
                    {"body", document(s.body)},
                    {"metadata", s.metadata},
                    {"max_attempts", s.max_attempts}};
  // Only when given, so that requests without them hash as they always did.
  if (!s.webhook_url.empty()) canonical["webhook_url"] = s.webhook_url;
  if (s.timeout_ms > 0) canonical["timeout_ms"] = s.timeout_ms;
  if (s.open) canonical["open"] = true;
  if (!s.runtime.empty()) canonical["runtime"] = s.runtime;
  if (!s.grants.empty()) canonical["grants"] = config::s3_grants_json(s.grants);
  if (!s.input_file_id.empty()) canonical["input_file_id"] = s.input_file_id;
  if (s.task_list()) {
    json tasks = json::array();
    for (const auto& t : s.tasks)
      tasks.push_back({{"custom_id", t.custom_id}, {"body", document(t.body)}});
    canonical["tasks"] = std::move(tasks);
    canonical["max_inflight"] = s.max_inflight;
  }
  return config::sha256_hex(canonical.dump(-1, ' ', false, json::error_handler_t::replace));
}

}  // namespace sy::actors
