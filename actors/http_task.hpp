#pragma once
/// `http` tasks (docs/task-lists.md): a task list whose `endpoint` is "http" runs plain HTTP
/// requests, `{"custom_id"?, "request": {"method", "url", "headers"?, "body"?}}`, under the
/// http_task_* network policy. The tasks of one host share a queue of their own, named
/// `http-task:<host>`, whose dispatcher allows `http_task_host_concurrency` requests in flight:
/// that is the per-host limit, and hosts are served side by side as models are.

#include <utility>  // before any Asio header (Boost 1.74 coroutine support needs it)

#include <boost/asio/awaitable.hpp>
#include <memory>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "actors/job_service.hpp"
#include "config/result.hpp"
#include "runtime/gateway_client.hpp"
#include "runtime/outbound_http.hpp"

namespace sy::actors {

/// The `endpoint` of a task list of http tasks.
inline constexpr std::string_view http_endpoint = "http";
/// Queues of http tasks are named this, then the host; model names may not start with it.
inline constexpr std::string_view http_queue_prefix = "http-task:";

inline bool is_http_queue(std::string_view model) { return model.starts_with(http_queue_prefix); }

/// Checks a task's `request` (`param` names it: "tasks[3].request") and normalizes it in place:
/// method (GET, HEAD, POST, PUT, PATCH, DELETE, OPTIONS), url (http or https, as webhooks' URLs
/// are parsed), headers (an object of at most 64 string values; names are tokens, values one
/// line of at most 8 KiB; Host, Content-Length, Transfer-Encoding, Connection, Upgrade, TE,
/// Trailer, Keep-Alive and Proxy-Connection are the engine's), body (a string sent as it is, or
/// JSON sent as JSON text). Answers the task's queue (`http-task:<host>`). Errors:
/// unknown_parameter, invalid_http_request, each with its param.
result<std::string> parse_http_request(nlohmann::json& request, const std::string& param);

/// The submission-time policy check of a request that parse_http_request accepted: a URL whose
/// host is an IP literal or a loopback name must pass `policy` (a host name is judged at each
/// attempt, against what it resolves to then). Error http_task_denied, param `<param>.url`.
status check_http_target(const nlohmann::json& request, const std::string& param,
                         const runtime::webhook_policy& policy);

/// What kind of tasks a job takes: an http job's, a runtime job's (then `runtime_queue` is its
/// queue), or else OpenAI requests.
struct job_task_kind {
  bool http = false;
  std::string runtime_queue;
};

/// The kind of tasks `job` takes (its endpoint, and its runtime queue for a runtime job).
job_task_kind task_kind_of(const storage::job_record& job);

/// A task of a job of kind `k`: of the job's kind, an http task's URL passes
/// check_http_target, and a runtime task gets the job's queue as its model. `at` names the task
/// ("tasks[3]"; empty: a line of a staged list). Errors invalid_tasks, http_task_denied.
status check_task_kind(task_input& task, const job_task_kind& k,
                       const runtime::webhook_policy& policy, const std::string& at);

/// Sends one attempt of an http task (`request`: its stored JSON text) and says what came of it
/// as a gateway outcome: an answer of any status is `got_response`; 408, 429, 5xx and transport
/// failures are retryable; a URL every address of which is denied, or an answer over
/// `max_body_bytes`, is `permanent`.
boost::asio::awaitable<runtime::gateway_outcome> send_http_task(
    const runtime::outbound_client& client, std::string request, uint64_t max_body_bytes,
    std::shared_ptr<runtime::abort_handle> abort);

}  // namespace sy::actors
