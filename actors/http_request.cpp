// The pure half of http tasks (actors/http_task.hpp): checking a task's request and its target
// against the policy. No I/O, so the fuzz harnesses link it (tests/fuzz/CMakeLists.txt); the
// sending half is http_task.cpp.

#include "actors/http_task.hpp"

#include <array>
#include <set>

#include "actors/runtime_names.hpp"
#include "config/http_token.hpp"
#include "config/webhook_url.hpp"

namespace sy::actors {
namespace {

using nlohmann::json;

constexpr std::array<std::string_view, 7> methods = {"GET",   "HEAD",   "POST",   "PUT",
                                                     "PATCH", "DELETE", "OPTIONS"};
constexpr std::array<std::string_view, 4> request_fields = {"method", "url", "headers", "body"};
constexpr size_t max_headers = 64;
constexpr size_t max_header_value_bytes = size_t{8} * 1024;

/// Framing and routing: the engine's own, whatever a task says.
const std::set<std::string, std::less<>>& reserved_headers() {
  static const std::set<std::string, std::less<>> names = {
      "host", "content-length", "transfer-encoding", "connection",      "upgrade",
      "te",   "trailer",        "keep-alive",        "proxy-connection"};
  return names;
}

sy::error bad(const std::string& param, const std::string& why) {
  return make_error(errc::invalid_http_request, "'" + param + "' " + why, param);
}

status check_headers(const json& headers, const std::string& param) {
  if (headers.is_null()) return ok;
  if (!headers.is_object()) return bad(param, "must be an object of header names to strings.");
  if (headers.size() > max_headers)
    return bad(param, "has more than " + std::to_string(max_headers) + " headers.");
  std::set<std::string> seen;
  for (const auto& [name, value] : headers.items()) {
    std::string at = param;
    at.append(".").append(name);
    if (!config::is_header_name(name))
      return bad(at, "is not a header name (letters, digits and !#$%&'*+-.^_`|~).");
    const std::string key = config::header_key(name);
    if (reserved_headers().contains(key)) return bad(at, "is set by the engine.");
    if (!seen.insert(key).second) return bad(at, "is given twice (names are case-insensitive).");
    if (!value.is_string()) return bad(at, "must be a string.");
    const auto& text = value.get_ref<const std::string&>();
    if (text.size() > max_header_value_bytes)
      return bad(at, "is longer than " + std::to_string(max_header_value_bytes) + " bytes.");
    if (config::header_value_control(text) != std::string::npos)
      return bad(at, "contains a control character.");
  }
  return ok;
}

}  // namespace

result<std::string> parse_http_request(json& request, const std::string& param) {
  if (!request.is_object())
    return bad(param, "must be an object: {\"method\", \"url\", \"headers\"?, \"body\"?}.");
  for (const auto& [key, value] : request.items()) {
    if (std::find(request_fields.begin(), request_fields.end(), key) != request_fields.end())
      continue;
    std::string field = param;
    field.append(".").append(key);
    return make_error(errc::unknown_parameter,
                      "Unrecognized request argument supplied: " + field +
                          ". Allowed: method, url, headers, body.",
                      field);
  }
  auto method = request.find("method");
  if (method == request.end() || !method->is_string() ||
      std::find(methods.begin(), methods.end(), method->get_ref<const std::string&>()) ==
          methods.end())
    return bad(param + ".method", "must be one of GET, HEAD, POST, PUT, PATCH, DELETE, OPTIONS.");
  auto url = request.find("url");
  if (url == request.end() || !url->is_string())
    return bad(param + ".url", "is required: an http:// or https:// URL.");
  const config::url_label label{"'" + param + ".url'", errc::invalid_http_request, param + ".url"};
  const auto& text = url->get_ref<const std::string&>();
  auto parsed = config::parse_http_url(text, label);
  if (!parsed) return parsed.error();
  if (auto headers = request.find("headers"); headers != request.end()) {
    if (auto st = check_headers(*headers, param + ".headers"); !st) return st.error();
  }
  return std::string(http_queue_prefix) + parsed->host;
}

status check_http_target(const json& request, const std::string& param,
                         const runtime::webhook_policy& policy) {
  const auto& text = request["url"].get_ref<const std::string&>();
  const config::url_label label{"'" + param + ".url'", errc::http_task_denied, param + ".url"};
  auto parsed = config::parse_http_url(text, label);
  if (!parsed) return parsed.error();
  return runtime::check_target(*parsed, text, policy, label);
}

job_task_kind task_kind_of(const storage::job_record& job) {
  return {job.endpoint == http_endpoint,
          job.endpoint == runtime_endpoint ? job.model : std::string()};
}

status check_task_kind(task_input& task, const job_task_kind& k,
                       const runtime::webhook_policy& policy, const std::string& at) {
  auto param = [&](const char* field) { return at.empty() ? field : at + "." + field; };
  const std::string what = at.empty() ? "The line" : "'" + at + "'";
  const bool http = k.http;
  if (task.runtime != !k.runtime_queue.empty())
    return make_error(errc::invalid_tasks,
                      task.runtime ? what +
                                         " has an 'input': only the tasks of a job for a "
                                         "runtime do; this job's tasks have a 'body'."
                                   : what +
                                         " must have an 'input': the job's tasks are done by "
                                         "its runtime's workers.",
                      param("input"));
  if (task.runtime) {
    task.model = k.runtime_queue;
    return ok;
  }
  if (task.http != http)
    return make_error(errc::invalid_tasks,
                      http ? what + " must have a 'request': the job's endpoint is http."
                           : what +
                                 " must have a 'body': only the tasks of an http job have a "
                                 "'request'.",
                      param(http ? "request" : "body"));
  if (!http) return ok;
  // The request was checked as a document by admission; its text parses back.
  return check_http_target(nlohmann::json::parse(task.body, nullptr, false), param("request"),
                           policy);
}

}  // namespace sy::actors
