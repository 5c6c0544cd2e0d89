#include "api/admission.hpp"

#include <algorithm>
#include <cctype>
#include <initializer_list>
#include <utility>

#include "actors/submission.hpp"
#include "api/detail/sync.hpp"
#include "config/client_text.hpp"
#include "config/limits.hpp"
#include "runtime/strict_json.hpp"
#include "runtime/trace.hpp"

namespace sy::api {
namespace detail {

result<actors::submission> sync_submission(std::string endpoint, nlohmann::json body,
                                           std::string tenant, std::string idempotency_key) {
  if (!body.is_object())
    return make_error(errc::invalid_request, "The request body must be a JSON object.");
  if (auto st = actors::check_model(body, "model"); !st) return st.error();
  if (auto m = body.find("metadata"); m != body.end())
    if (auto st = actors::check_metadata(*m, "metadata"); !st) return st.error();
  auto stream = body.find("stream");
  if (stream != body.end() && !stream->is_boolean() && !stream->is_null())
    return make_error(errc::invalid_request, "'stream' must be true or false.", "stream");
  if (stream != body.end() && stream->is_boolean() && stream->get<bool>())
    return make_error(errc::streaming_unsupported,
                      "Streaming is not supported; remove 'stream' or set it to false.", "stream");
  actors::submission s;
  s.tenant = std::move(tenant);
  s.endpoint = std::move(endpoint);
  s.model = body["model"].get<std::string>();
  s.body = actors::json_text_of(body);
  s.idempotency_key = std::move(idempotency_key);
  return s;
}

}  // namespace detail

admission::admission(const config::settings& settings)
    : auth_(settings.api_keys),
      max_body_bytes_(settings.max_body_bytes),
      files_max_bytes_(settings.files_max_bytes),
      max_task_file_bytes_(settings.max_task_file_bytes),
      completion_windows_(settings.batch_completion_windows) {}

result<std::string> admission::tenant(std::optional<std::string_view> authorization) const {
  return auth_.tenant_for(authorization.value_or(std::string_view()));
}

status admission::worker(std::optional<std::string_view> authorization) const {
  return auth_.worker(authorization.value_or(std::string_view()));
}

result<nlohmann::json> admission::json(std::string_view body) const {
  if (static_cast<int64_t>(body.size()) > max_body_bytes_)
    return make_error(errc::body_too_large, "The request body is " + std::to_string(body.size()) +
                                                " bytes, more than max_body_bytes (" +
                                                std::to_string(max_body_bytes_) + ").");
  return runtime::parse_strict_json(body);
}

result<std::string> admission::idempotency_key(const client_request& r) const {
  if (!r.idempotency_key) return std::string();
  std::string_view key = *r.idempotency_key;
  bool valid = !key.empty() && key.size() <= limits::idempotency_key_max_chars;
  for (char c : key) valid = valid && c >= 0x20 && c <= 0x7e;
  if (!valid)
    return make_error(errc::invalid_idempotency_key,
                      "The " + std::string(r.idempotency_param) +
                          " header must be 1 to 255 printable ASCII characters.",
                      std::string(r.idempotency_param));
  return std::string(key);
}

trace::context trace_of(const client_request& r) {
  if (!r.traceparent) return {};
  return trace::parse(*r.traceparent, r.tracestate.value_or(std::string_view()))
      .value_or(trace::context{});
}

namespace {

using nlohmann::json;

constexpr int64_t max_lease_wait_ms = 30'000;
constexpr size_t max_error_code_bytes = 64;
constexpr size_t max_error_message_bytes = 4096;
constexpr size_t capability_token_max_bytes = size_t{8} * 1024;

sy::error bad(const std::string& message, const std::string& param) {
  return make_error(errc::invalid_request, message, param);
}

/// The JSON object of a call's body (empty: `{}`), admitted as every body is, with only
/// `allowed` keys.
result<json> read_body(const admission& admit, std::string_view text,
                       std::initializer_list<std::string_view> allowed) {
  if (text.empty()) return json::object();
  auto doc = admit.json(text);
  if (!doc) return doc.error();
  if (!doc->is_object())
    return make_error(errc::invalid_request, "The request body must be a JSON object.");
  for (const auto& [key, value] : doc->items()) {
    if (std::find(allowed.begin(), allowed.end(), key) == allowed.end())
      return make_error(errc::unknown_parameter,
                        "Unrecognized request argument supplied: " + quote_client(key), key);
  }
  return doc;
}

/// An integer field in [lo, hi], or `fallback` when absent.
result<int64_t> bounded(const json& j, const char* name, int64_t lo, int64_t hi, int64_t fallback) {
  auto it = j.find(name);
  if (it == j.end() || it->is_null()) return fallback;
  if (!it->is_number_integer() || it->get<int64_t>() < lo || it->get<int64_t>() > hi)
    return bad("'" + std::string(name) + "' must be an integer from " + std::to_string(lo) +
                   " to " + std::to_string(hi) + ".",
               name);
  return it->get<int64_t>();
}

/// A worker's `error`: a code of letters, digits, '_', '-' and '.', and a message.
result<worker_request> read_failure(const json& j, worker_request r) {
  auto e = j.find("error");
  if (e == j.end() || !e->is_object() || !e->contains("code") || !(*e)["code"].is_string())
    return bad("'error' must be an object {code, message}.", "error");
  const auto code = (*e)["code"].get<std::string>();
  const bool code_ok =
      !code.empty() && code.size() <= max_error_code_bytes &&
      std::all_of(code.begin(), code.end(), [](char c) {
        return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-' || c == '.';
      });
  if (!code_ok)
    return bad("'error.code' must be 1 to 64 letters, digits, '_', '-' or '.'.", "error.code");
  std::string message;
  if (auto m = e->find("message"); m != e->end() && !m->is_null()) {
    if (!m->is_string() || m->get_ref<const std::string&>().size() > max_error_message_bytes)
      return bad("'error.message' must be a string of at most 4096 bytes.", "error.message");
    message = m->get<std::string>();
  }
  bool retryable = false;
  if (auto r = j.find("retryable"); r != j.end() && !r->is_null()) {
    if (!r->is_boolean()) return bad("'retryable' must be true or false.", "retryable");
    retryable = r->get<bool>();
  }
  r.error_code = code;
  r.error_message = std::move(message);
  r.retryable = retryable;
  return r;
}

/// A worker call's fields (admission::worker_call).
result<worker_request> read_worker_call(const admission& admit, worker_request::kind what,
                                        std::string_view body, std::string_view authorization,
                                        std::string_view token) {
  using kind = worker_request::kind;
  worker_request r;
  r.what = what;
  if (what == kind::lease) {
    if (auto st = admit.worker(authorization); !st) return st.error();
    auto doc = read_body(admit, body, {"runtime", "max_tasks", "wait_ms"});
    if (!doc) return doc.error();
    auto runtime = doc->find("runtime");
    if (runtime == doc->end() || runtime->is_null())
      return make_error(errc::missing_required_parameter,
                        "'runtime' is required: the name of a configured runtime.", "runtime");
    if (!runtime->is_string()) return bad("'runtime' must be a string.", "runtime");
    if (has_control_character(runtime->get_ref<const std::string&>()))
      return make_error(errc::invalid_value, "'runtime' may not hold a control character.",
                        "runtime");
    auto max = bounded(*doc, "max_tasks", 1, 100, 1);
    if (!max) return max.error();
    auto wait = bounded(*doc, "wait_ms", 0, max_lease_wait_ms, 0);
    if (!wait) return wait.error();
    r.runtime = runtime->get<std::string>();
    r.max_tasks = static_cast<int>(*max);
    r.wait_ms = *wait;
    return r;
  }
  if (token.empty())
    return make_error(errc::invalid_capability_token,
                      "The X-Switchyard-Task-Capability header is required: the capability "
                      "token the lease or the last heartbeat gave.");
  // A token the engine signed is a few hundred bytes: a longer one is refused unread.
  if (token.size() > capability_token_max_bytes)
    return make_error(errc::invalid_capability_token,
                      "The X-Switchyard-Task-Capability header is " + std::to_string(token.size()) +
                          " bytes long; no capability token is longer than " +
                          std::to_string(capability_token_max_bytes) + ".");
  r.token = std::string(token);
  if (what == kind::complete) {
    auto doc = read_body(admit, body, {"output"});
    if (!doc) return doc.error();
    if (!doc->contains("output"))
      return make_error(errc::missing_required_parameter,
                        "'output' is required: the task's result, any JSON.", "output");
    r.output = (*doc)["output"].dump();
    return r;
  }
  if (what == kind::fail) {
    auto doc = read_body(admit, body, {"error", "retryable"});
    if (!doc) return doc.error();
    return read_failure(*doc, std::move(r));
  }
  auto doc = read_body(admit, body, {});  // heartbeat, credentials: an empty object or none
  if (!doc) return doc.error();
  return r;
}

}  // namespace

result<actors::admitted<worker_request>> admission::worker_call(worker_request::kind what,
                                                                std::string_view body,
                                                                std::string_view authorization,
                                                                std::string_view token) const {
  auto r = read_worker_call(*this, what, body, authorization, token);
  if (!r) return r.error();
  return actors::admitted<worker_request>(std::move(*r));
}

template <class Parse>
result<actors::admitted<actors::submission>> admission::submission(const client_request& r,
                                                                   Parse parse) const {
  auto tenant = this->tenant(r.authorization);
  if (!tenant) return tenant.error();
  auto doc = json(r.body);
  if (!doc) return doc.error();
  auto key = idempotency_key(r);
  if (!key) return key.error();
  result<actors::submission> sub = parse(std::move(*doc), std::move(*tenant), std::move(*key));
  if (!sub) return sub.error();
  sub->trace = trace_of(r);
  return actors::admitted<actors::submission>(std::move(*sub));
}

result<actors::admitted<actors::submission>> admission::job(const client_request& r) const {
  return submission(r, [](nlohmann::json doc, std::string tenant, std::string key) {
    return actors::parse_submission(std::move(doc), std::move(tenant), std::move(key));
  });
}

result<actors::admitted<actors::submission>> admission::sync_call(std::string endpoint,
                                                                  const client_request& r) const {
  return submission(r, [&](nlohmann::json doc, std::string tenant, std::string key) {
    return detail::sync_submission(std::move(endpoint), std::move(doc), std::move(tenant),
                                   std::move(key));
  });
}

result<actors::admitted<actors::task_append>> admission::append(const client_request& r,
                                                                bool close) const {
  auto tenant = this->tenant(r.authorization);
  if (!tenant) return tenant.error();
  actors::task_append a;
  a.last_batch = true;  // a close is an empty last batch, and takes no body
  if (!close) {
    auto doc = json(r.body);
    if (!doc) return doc.error();
    auto key = idempotency_key(r);
    if (!key) return key.error();
    auto parsed = actors::parse_append(std::move(*doc));
    if (!parsed) return parsed.error();
    a = std::move(*parsed);
    a.idempotency_key = std::move(*key);
  } else {
    auto key = idempotency_key(r);
    if (!key) return key.error();
    a.idempotency_key = std::move(*key);
  }
  a.tenant = std::move(*tenant);
  return actors::admitted<actors::task_append>(std::move(a));
}

}  // namespace sy::api
