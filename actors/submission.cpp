#include "actors/submission.hpp"

#include <array>
#include <cmath>
#include <string_view>
#include <unordered_set>
#include <utility>

#include "actors/http_task.hpp"
#include "actors/runtime_names.hpp"
#include "config/client_text.hpp"
#include "config/endpoints.hpp"
#include "config/limits.hpp"
#include "config/s3_scope.hpp"
#include "runtime/webhook_policy.hpp"

namespace sy::actors {
namespace {

using nlohmann::json;

constexpr std::array<std::string_view, 14> known_fields = {
    "endpoint",    "body",    "tasks",        "metadata",      "max_attempts",
    "webhook_url", "timeout", "max_inflight", "input_file_id", "open",
    "task_events", "runtime", "input",        "grants"};
/// What a job for a runtime's workers does not take (it has `runtime` and `input`, or a task
/// list of inputs, instead).
constexpr std::array<std::string_view, 2> not_with_runtime = {"endpoint", "body"};
constexpr std::array<std::string_view, 4> known_task_fields = {"custom_id", "body", "request",
                                                               "input"};
constexpr int max_inflight_cap = 10'000;
constexpr double max_timeout_s = 7 * 24 * 3600;

bool contains(const auto& list, std::string_view value) {
  for (auto item : list)
    if (item == value) return true;
  return false;
}

status check_fields(const json& j) {
  for (const auto& [key, value] : j.items()) {
    if (!contains(known_fields, key))
      return make_error(errc::unknown_parameter,
                        "Unrecognized request argument supplied: " + quote_client(key) +
                            ". Allowed: endpoint, body, tasks, input_file_id, open, metadata, "
                            "max_attempts, webhook_url, timeout, max_inflight, task_events, "
                            "runtime, input, grants.",
                        key);
  }
  return ok;
}

result<std::string> parse_endpoint(const json& j) {
  auto it = j.find("endpoint");
  if (it == j.end() || !it->is_string() ||
      (!endpoints::find(it->get_ref<const std::string&>()) &&
       it->get_ref<const std::string&>() != http_endpoint))
    return make_error(errc::invalid_endpoint,
                      "'endpoint' must be one of " + endpoints::list() +
                          ", or http (a task list of plain HTTP requests).",
                      "endpoint");
  return it->get<std::string>();
}

/// A request body (`param`: where it is, "body" or "tasks[i].body"), checked in place.
status check_request_body(const json* body, const std::string& param) {
  if (body == nullptr || !body->is_object())
    return make_error(errc::invalid_body,
                      "'" + param +
                          "' is required and must be a JSON object holding "
                          "the OpenAI request.",
                      param);
  if (auto st = check_model(*body, param + ".model"); !st) return st.error();
  if (auto m = body->find("metadata"); m != body->end())
    if (auto st = check_metadata(*m, param + ".metadata"); !st) return st.error();
  auto stream = body->find("stream");
  if (stream != body->end() && !stream->is_boolean() && !stream->is_null())
    return make_error(errc::invalid_request, "'" + param + ".stream' must be true or false.",
                      param + ".stream");
  if (stream != body->end() && stream->is_boolean() && stream->get<bool>())
    return make_error(
        errc::streaming_unsupported,
        "Streaming is not supported for jobs; remove '" + param + ".stream' or set it to false.",
        param + ".stream");
  return ok;
}

/// The request's body, checked; it is moved out of the document afterwards (no copy).
result<json*> parse_body(json& j) {
  auto it = j.find("body");
  json* body = it == j.end() ? nullptr : &*it;
  if (auto st = check_request_body(body, "body"); !st) return st.error();
  return body;
}

/// A list of tasks (`tasks`), checked whole; `empty_ok`: an open job's first tasks, or an
/// append that closes the list, may be none.
result<std::vector<task_input>> parse_tasks(json& j, bool empty_ok, std::optional<bool> http) {
  auto it = j.find("tasks");
  if (it == j.end() || it->is_null()) {
    if (empty_ok) return std::vector<task_input>{};
    return make_error(errc::invalid_tasks, "'tasks' must be a non-empty array of tasks.", "tasks");
  }
  if (!it->is_array() || (it->empty() && !empty_ok))
    return make_error(errc::invalid_tasks, "'tasks' must be a non-empty array of tasks.", "tasks");
  // Views of the custom_id strings, which stay in the document (only bodies are moved out).
  std::unordered_set<std::string_view> seen;
  std::vector<task_input> out;
  out.reserve(it->size());
  for (size_t i = 0; i < it->size(); ++i) {
    auto& t = (*it)[i];
    const std::string at = "tasks[" + std::to_string(i) + "]";
    auto task = parse_task(t, at, http);
    if (!task) return task.error();
    if (!task->custom_id.empty() &&
        !seen.insert(t["custom_id"].get_ref<const std::string&>()).second)
      return make_error(errc::duplicate_custom_id,
                        "'" + at + ".custom_id' is '" + task->custom_id +
                            "', the custom_id of an earlier task; custom_ids are unique within a "
                            "job.",
                        at + ".custom_id");
    out.push_back(std::move(*task));
  }
  return out;
}

/// Which kind of job the document asks for: `tasks`, `open` and `input_file_id` make a task
/// list, and each excludes `body`; `input_file_id` excludes `tasks` and `open` too.
struct list_kind {
  bool tasks = false;
  bool open = false;
  std::string input_file_id;
};

result<list_kind> parse_list_kind(const json& j) {
  list_kind k;
  auto given = [&](const char* name) {
    auto it = j.find(name);
    return it != j.end() && !it->is_null();
  };
  k.tasks = given("tasks");
  if (given("open")) {
    if (!j["open"].is_boolean())
      return make_error(errc::invalid_tasks, "'open' must be true or false.", "open");
    k.open = j["open"].get<bool>();
  }
  if (given("input_file_id")) {
    const auto& f = j["input_file_id"];
    if (!f.is_string() || f.get_ref<const std::string&>().empty())
      return make_error(errc::invalid_tasks,
                        "'input_file_id' must be the id of a file uploaded with purpose 'tasks'.",
                        "input_file_id");
    // An id the engine issued is at most 64 bytes: a longer one is refused without a lookup.
    if (f.get_ref<const std::string&>().size() > limits::issued_id_max_bytes)
      return make_error(errc::string_above_max_length,
                        "Invalid 'input_file_id': string too long. Expected at most " +
                            std::to_string(limits::issued_id_max_bytes) + " bytes, got " +
                            std::to_string(f.get_ref<const std::string&>().size()) + ".",
                        "input_file_id");
    k.input_file_id = f.get<std::string>();
    if (k.tasks || k.open)
      return make_error(errc::invalid_tasks,
                        "A staged list ('input_file_id') takes neither 'tasks' nor 'open'.",
                        "input_file_id");
  }
  if ((k.tasks || k.open || !k.input_file_id.empty()) && given("body"))
    return make_error(errc::invalid_tasks,
                      "Give either 'body' (one request) or a task list ('tasks', "
                      "'input_file_id' or 'open'), not both.",
                      k.tasks  ? "tasks"
                      : k.open ? "open"
                               : "input_file_id");
  return k;
}

/// The metadata, checked (nullptr when absent or null); moved out of the document afterwards.
result<json*> parse_metadata(json& j) {
  auto it = j.find("metadata");
  if (it == j.end() || it->is_null()) return static_cast<json*>(nullptr);
  if (auto st = check_metadata(*it); !st) return st.error();
  return &*it;
}

result<int64_t> parse_timeout(const json& j) {
  auto it = j.find("timeout");
  if (it == j.end() || it->is_null()) return int64_t{0};
  if (!it->is_number() || it->get<double>() <= 0 || it->get<double>() > max_timeout_s)
    return make_error(errc::invalid_timeout,
                      "'timeout' must be a number of seconds greater than 0 and at most 604800 "
                      "(7 days).",
                      "timeout");
  return static_cast<int64_t>(std::llround(it->get<double>() * 1000.0));
}

}  // namespace

result<int> parse_max_attempts(const json& j, int cap) {
  auto it = j.find("max_attempts");
  if (it == j.end() || it->is_null()) return 0;
  auto bad = make_error(errc::invalid_max_attempts,
                        "'max_attempts' must be an integer from 1 to " + std::to_string(cap) + ".",
                        "max_attempts");
  if (it->is_number_unsigned()) {
    auto v = it->get<uint64_t>();
    if (v < 1 || v > static_cast<uint64_t>(cap)) return bad;
    return static_cast<int>(v);
  }
  if (it->is_number_integer()) {
    auto v = it->get<int64_t>();
    if (v < 1 || v > cap) return bad;
    return static_cast<int>(v);
  }
  return bad;
}

result<int> parse_max_inflight(const json& j, bool allowed, std::string_view needs) {
  auto it = j.find("max_inflight");
  if (it == j.end() || it->is_null()) return 0;
  auto bad =
      make_error(errc::invalid_max_inflight,
                 "'max_inflight' must be an integer from 1 to 10000" + std::string(needs) + ".",
                 "max_inflight");
  if (!allowed || !it->is_number_integer()) return bad;
  const auto v = it->get<int64_t>();
  if (v < 1 || v > max_inflight_cap) return bad;
  return static_cast<int>(v);
}

/// Syntax, by the one webhook URL parser the deliverer uses too; the engine then checks the
/// target against the webhook network policy.
result<std::string> parse_webhook_url(const json& j) {
  auto it = j.find("webhook_url");
  if (it == j.end() || it->is_null()) return std::string();
  if (!it->is_string())
    return make_error(errc::invalid_webhook_url, "'webhook_url' must be a string.", "webhook_url");
  const auto& url = it->get_ref<const std::string&>();
  if (auto parsed = runtime::parse_webhook_url(url); !parsed) return parsed.error();
  return url;
}

result<task_input> parse_task(json& t, const std::string& at, std::optional<bool> http,
                              bool keep_body) {
  auto param = [&](const char* field) {
    return at.empty() ? std::string(field) : at + "." + field;
  };
  const std::string what = at.empty() ? "The line" : "'" + at + "'";
  if (!t.is_object())
    return make_error(errc::invalid_tasks,
                      what + " must be an object with a 'body' (or an http task's 'request').", at);
  for (const auto& [key, value] : t.items()) {
    if (!contains(known_task_fields, key))
      return make_error(errc::unknown_parameter,
                        "Unrecognized task argument supplied: " + quote_client(param(key.c_str())) +
                            ". Allowed: custom_id, body (request in an http job, input in a "
                            "job for a runtime).",
                        param(key.c_str()));
  }
  task_input out;
  if (auto id = t.find("custom_id"); id != t.end() && !id->is_null()) {
    if (!id->is_string() || id->get_ref<const std::string&>().empty() ||
        id->get_ref<const std::string&>().size() > limits::custom_id_max_bytes)
      return make_error(
          errc::invalid_tasks,
          "'" + param("custom_id") + "' must be a non-empty string of at most 512 bytes.",
          param("custom_id"));
    if (has_control_character(id->get_ref<const std::string&>()))
      return make_error(errc::invalid_value,
                        "'" + param("custom_id") + "' may not hold a control character.",
                        param("custom_id"));
    out.custom_id = id->get<std::string>();
  }
  if (auto input = t.find("input"); input != t.end()) {
    // A task for a runtime's workers: any JSON. Whether the job is one is the caller's check.
    if (t.contains("body") || t.contains("request"))
      return make_error(errc::invalid_tasks,
                        what +
                            " has an 'input' (a task for a runtime's workers): it takes "
                            "neither 'body' nor 'request'.",
                        param("input"));
    out.runtime = true;
    if (keep_body) out.body = json_text_of(*input);
    return out;
  }
  auto request = t.find("request");
  const bool has_request = request != t.end() && !request->is_null();
  out.http = http.value_or(has_request);
  if (out.http) {
    if (!has_request || t.contains("body"))
      return make_error(errc::invalid_tasks,
                        what + " must have a 'request' and no 'body': the job's endpoint is http.",
                        param("request"));
    auto queue = parse_http_request(*request, param("request"));
    if (!queue) return queue.error();
    out.model = std::move(*queue);
    out.body = json_text_of(*request);
    return out;
  }
  if (has_request)
    return make_error(errc::invalid_tasks,
                      "'" + param("request") +
                          "' is for the tasks of an http job (endpoint "
                          "\"http\"); this job's tasks have a 'body'.",
                      param("request"));
  auto body = t.find("body");
  if (auto st = check_request_body(body == t.end() ? nullptr : &*body, param("body")); !st)
    return st.error();
  out.model = (*body)["model"].get<std::string>();
  if (keep_body) out.body = json_text_of(*body);
  return out;
}

namespace {

/// The options every job takes: metadata, max_attempts, webhook_url, timeout.
status parse_job_options(json& j, int max_attempts_cap, submission& s) {
  auto metadata = parse_metadata(j);
  if (!metadata) return metadata.error();
  auto attempts = parse_max_attempts(j, max_attempts_cap);
  if (!attempts) return attempts.error();
  auto webhook = parse_webhook_url(j);
  if (!webhook) return webhook.error();
  auto timeout = parse_timeout(j);
  if (!timeout) return timeout.error();
  s.metadata = *metadata ? std::move(**metadata) : json::object();
  s.max_attempts = *attempts;
  s.webhook_url = std::move(*webhook);
  s.timeout_ms = *timeout;
  return ok;
}

/// A job for a runtime's workers (docs/workers.md): `runtime` and `input` (any JSON), and the
/// options every job takes. Whether the runtime is configured is the engine's check.
/// A task list's parts (`tasks`, `open`, `input_file_id`, `max_inflight`, `task_events`) into
/// `s`; `http` as parse_tasks takes it.
status parse_list_parts(json& j, list_kind kind, std::optional<bool> http, submission& s) {
  const bool list = kind.tasks || kind.open || !kind.input_file_id.empty();
  auto max_inflight = parse_max_inflight(j, list, ", given with 'tasks'");
  if (!max_inflight) return max_inflight.error();
  if (list) {
    auto parsed = parse_tasks(j, !kind.tasks, http);
    if (!parsed) return parsed.error();
    s.tasks = std::move(*parsed);
  }
  s.max_inflight = *max_inflight;
  s.open = kind.open;
  if (auto ev = j.find("task_events"); ev != j.end() && !ev->is_null()) {
    if (!ev->is_boolean() || (!list && ev->get<bool>()))
      return make_error(errc::invalid_tasks,
                        "'task_events' must be true or false, given with a task list.",
                        "task_events");
    s.task_events = ev->get<bool>();
  }
  s.input_file_id = std::move(kind.input_file_id);
  return ok;
}

/// Every task of a runtime job's inline list is an `input`: refused before parse_task would
/// read a `body` as an OpenAI request.
status check_runtime_tasks(const json& j) {
  auto tasks = j.find("tasks");
  if (tasks == j.end() || !tasks->is_array()) return ok;
  for (size_t i = 0; i < tasks->size(); ++i) {
    const auto& t = (*tasks)[i];
    if (t.is_object() && !t.contains("input")) {
      const std::string at = "tasks[" + std::to_string(i) + "]";
      return make_error(errc::invalid_tasks,
                        "'" + at +
                            "' must have an 'input': the tasks of a job for a runtime "
                            "are done by its workers.",
                        at + ".input");
    }
  }
  return ok;
}

/// A job for a runtime's workers (docs/workers.md): `runtime` and `input` (any JSON) or a task
/// list of inputs, optional `grants`, and the options every job takes. Whether the runtime is
/// configured is the engine's check.
result<submission> parse_runtime_job(json& j, submission s, int max_attempts_cap) {
  const auto& name = j["runtime"];
  if (!name.is_string() || name.get_ref<const std::string&>().empty() ||
      name.get_ref<const std::string&>().size() > limits::runtime_name_max_bytes)
    return make_error(errc::invalid_request,
                      "'runtime' must be the name of a configured runtime: a string of 1 to " +
                          std::to_string(limits::runtime_name_max_bytes) + " bytes.",
                      "runtime");
  if (has_control_character(name.get_ref<const std::string&>()))
    return make_error(errc::invalid_value, "'runtime' may not hold a control character.",
                      "runtime");
  for (auto field : not_with_runtime) {
    if (j.contains(field))
      return make_error(errc::invalid_request,
                        "'" + std::string(field) +
                            "' is not used by a job for a runtime: give 'runtime' and 'input' "
                            "(or 'tasks' of inputs).",
                        std::string(field));
  }
  auto kind = parse_list_kind(j);
  if (!kind) return kind.error();
  const bool list = kind->tasks || kind->open || !kind->input_file_id.empty();
  auto input = j.find("input");
  if (list && input != j.end())
    return make_error(errc::invalid_tasks,
                      "Give either 'input' (one task) or a task list ('tasks', 'input_file_id' "
                      "or 'open'), not both.",
                      "input");
  if (!list && input == j.end())
    return make_error(errc::missing_required_parameter,
                      "'input' is required with 'runtime': the JSON the worker gets.", "input");
  if (auto st = check_runtime_tasks(j); !st) return st.error();
  if (auto st = parse_list_parts(j, std::move(*kind), false, s); !st) return st.error();
  if (auto g = j.find("grants"); g != j.end() && !g->is_null()) {
    auto grants = config::parse_s3_grants(*g);
    if (!grants) return grants.error();
    s.grants = std::move(*grants);
  }
  if (auto st = parse_job_options(j, max_attempts_cap, s); !st) return st.error();
  s.endpoint = runtime_endpoint;
  s.runtime = name.get<std::string>();
  if (!list) s.body = json_text_of(*input);
  return s;
}

}  // namespace

result<submission> parse_submission(json j, std::string tenant, std::string idempotency_key,
                                    int max_attempts_cap) {
  if (!j.is_object())
    return make_error(errc::invalid_request, "The request body must be a JSON object.");
  if (auto s = check_fields(j); !s) return s.error();
  if (j.contains("runtime")) {
    submission s;
    s.tenant = std::move(tenant);
    s.idempotency_key = std::move(idempotency_key);
    return parse_runtime_job(j, std::move(s), max_attempts_cap);
  }
  for (const char* field : {"input", "grants"}) {
    if (j.contains(field))
      return make_error(errc::unknown_parameter,
                        "'" + std::string(field) +
                            "' is for a job done by external workers; give it with 'runtime'.",
                        field);
  }
  auto endpoint = parse_endpoint(j);
  if (!endpoint) return endpoint.error();
  auto kind = parse_list_kind(j);
  if (!kind) return kind.error();
  const bool list = kind->tasks || kind->open || !kind->input_file_id.empty();
  const bool http = *endpoint == http_endpoint;
  if (http && !list)
    return make_error(errc::invalid_endpoint,
                      "The http endpoint runs task lists: give 'tasks' (each with a 'request'), "
                      "'input_file_id' or 'open', not 'body'.",
                      "endpoint");
  submission s;
  if (!list) {
    auto body = parse_body(j);
    if (!body) return body.error();
    s.model = (**body)["model"].get<std::string>();
    s.body = json_text_of(**body);
  }
  if (auto st = parse_list_parts(j, std::move(*kind), http, s); !st) return st.error();
  if (auto st = parse_job_options(j, max_attempts_cap, s); !st) return st.error();
  s.tenant = std::move(tenant);
  s.endpoint = std::move(*endpoint);
  s.idempotency_key = std::move(idempotency_key);
  return s;
}

result<task_append> parse_append(json j) {
  if (!j.is_object())
    return make_error(errc::invalid_request, "The request body must be a JSON object.");
  for (const auto& [key, value] : j.items()) {
    if (key != "tasks" && key != "last_batch")
      return make_error(errc::unknown_parameter,
                        "Unrecognized request argument supplied: " + quote_client(key) +
                            ". Allowed: tasks, last_batch.",
                        key);
  }
  task_append out;
  if (auto last = j.find("last_batch"); last != j.end() && !last->is_null()) {
    if (!last->is_boolean())
      return make_error(errc::invalid_tasks, "'last_batch' must be true or false.", "last_batch");
    out.last_batch = last->get<bool>();
  }
  auto tasks = parse_tasks(j, out.last_batch, std::nullopt);
  if (!tasks) return tasks.error();
  out.tasks = std::move(*tasks);
  return out;
}

}  // namespace sy::actors
