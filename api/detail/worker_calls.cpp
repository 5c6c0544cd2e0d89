#include "api/detail/worker_calls.hpp"

#include <algorithm>
#include <cctype>
#include <initializer_list>

#include "api/detail/json_parse.hpp"

namespace sy::api::detail {
namespace {

using nlohmann::json;

constexpr int64_t max_lease_wait_ms = 30'000;
constexpr size_t max_error_code_bytes = 64;
constexpr size_t max_error_message_bytes = 4096;

sy::error bad(const std::string& message, const std::string& param) {
  return make_error(errc::invalid_request, message, param);
}

/// The JSON object of a call's body (empty: `{}`), with only `allowed` keys.
result<json> read_body(const std::string& text, std::initializer_list<std::string_view> allowed) {
  if (text.empty()) return json::object();
  auto doc = parse_json_body(text);
  if (!doc) return doc.error();
  if (!doc->is_object())
    return make_error(errc::invalid_request, "The request body must be a JSON object.");
  for (const auto& [key, value] : doc->items()) {
    if (std::find(allowed.begin(), allowed.end(), key) == allowed.end())
      return make_error(errc::unknown_parameter, "Unrecognized request argument supplied: " + key,
                        key);
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

json leased_json(const actors::leased_task& t) {
  json j = {{"task_id", t.task_id},
            {"job_id", t.job_id},
            {"attempt", t.attempt},
            {"input", json::parse(t.input, nullptr, false)},
            {"lease_expires_at", t.lease_expires_at_ms / 1000},
            {"lease_expires_at_ms", t.lease_expires_at_ms},
            {"lease_ttl_ms", t.lease_ttl_ms},
            {"capability_token", t.capability_token}};
  if (!t.traceparent.empty()) j["traceparent"] = t.traceparent;
  if (!t.tracestate.empty()) j["tracestate"] = t.tracestate;
  return j;
}

/// A worker's `error`: a code of letters, digits, '_', '-' and '.', and a message.
result<actors::worker_failure> read_failure(const json& j) {
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
  return actors::worker_failure{code, message, retryable};
}

boost::asio::awaitable<result<json>> lease(actors::worker_service& workers,
                                           const authenticator& auth, const worker_call& call) {
  if (auto st = auth.worker(call.authorization); !st) co_return st.error();
  auto doc = read_body(call.body, {"runtime", "max_tasks", "wait_ms"});
  if (!doc) co_return doc.error();
  auto runtime = doc->find("runtime");
  if (runtime == doc->end() || !runtime->is_string())
    co_return make_error(errc::missing_required_parameter,
                         "'runtime' is required: the name of a configured runtime.", "runtime");
  auto max = bounded(*doc, "max_tasks", 1, 100, 1);
  if (!max) co_return max.error();
  auto wait = bounded(*doc, "wait_ms", 0, max_lease_wait_ms, 0);
  if (!wait) co_return wait.error();
  auto leased = co_await workers.lease(runtime->get<std::string>(), static_cast<int>(*max), *wait,
                                       call.caller);
  if (!leased) co_return leased.error();
  json tasks = json::array();
  for (const auto& t : leased->tasks) tasks.push_back(leased_json(t));
  co_return json{{"tasks", std::move(tasks)}};
}

boost::asio::awaitable<result<json>> heartbeat(actors::worker_service& workers, worker_call call) {
  auto doc = read_body(call.body, {});
  if (!doc) co_return doc.error();
  auto a = co_await workers.heartbeat(std::move(call.token));
  if (!a) co_return a.error();
  co_return json{{"lease_expires_at", a->lease_expires_at_ms / 1000},
                 {"lease_expires_at_ms", a->lease_expires_at_ms},
                 {"capability_token", a->capability_token},
                 {"cancel_requested", a->cancel_requested}};
}

boost::asio::awaitable<result<json>> credentials(actors::worker_service& workers,
                                                 worker_call call) {
  auto doc = read_body(call.body, {});
  if (!doc) co_return doc.error();
  auto c = co_await workers.credentials(std::move(call.token));
  if (!c) co_return c.error();
  co_return json{{"access_key_id", c->access_key_id}, {"secret_access_key", c->secret_access_key},
                 {"session_token", c->session_token}, {"expiration", c->expiration},
                 {"endpoint", c->endpoint},           {"region", c->region}};
}

boost::asio::awaitable<result<json>> outcome(actors::worker_service& workers, worker_call call) {
  status done = ok;
  if (call.what == worker_call::kind::complete) {
    auto doc = read_body(call.body, {"output"});
    if (!doc) co_return doc.error();
    if (!doc->contains("output"))
      co_return make_error(errc::missing_required_parameter,
                           "'output' is required: the task's result, any JSON.", "output");
    done = co_await workers.complete(std::move(call.token), (*doc)["output"].dump());
  } else {
    auto doc = read_body(call.body, {"error", "retryable"});
    if (!doc) co_return doc.error();
    auto failure = read_failure(*doc);
    if (!failure) co_return failure.error();
    done = co_await workers.fail(std::move(call.token), std::move(*failure));
  }
  if (!done) co_return done.error();
  co_return json{{"recorded", true}};
}

}  // namespace

boost::asio::awaitable<result<json>> run(actors::worker_service& workers, const authenticator& auth,
                                         worker_call call) {
  if (call.what == worker_call::kind::lease) co_return co_await lease(workers, auth, call);
  if (call.token.empty())
    co_return make_error(errc::invalid_capability_token,
                         "The X-Switchyard-Task-Capability header is required: the capability "
                         "token the lease or the last heartbeat gave.");
  if (call.what == worker_call::kind::heartbeat)
    co_return co_await heartbeat(workers, std::move(call));
  if (call.what == worker_call::kind::credentials)
    co_return co_await credentials(workers, std::move(call));
  co_return co_await outcome(workers, std::move(call));
}

}  // namespace sy::api::detail
