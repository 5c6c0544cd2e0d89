#pragma once
/// Turning a client's JSON request into a validated `actors::submission`, and the request hash
/// that idempotency compares. Pure functions: no I/O, no clock; any thread may call them.
/// Shared by the HTTP API and (later) the NATS intake, so both accept exactly the same input.

#include <optional>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "actors/job_service.hpp"
#include "config/result.hpp"

namespace sy::actors {

/// Default upper bound for a client-supplied `max_attempts`.
inline constexpr int default_max_attempts_cap = 100;

/// Checks `body.model` of an OpenAI request body: missing_model (absent, empty, not a string)
/// or string_above_max_length (over limits::model_max_bytes); `param` names it in the error.
status check_model(const nlohmann::json& body, const std::string& param);

/// Checks `metadata` of a job or a batch: null or an object of at most 16 string values, keys
/// at most 64 and values at most 512 characters (Unicode code points, as OpenAI counts them).
/// Error invalid_metadata with param `param`, saying which rule broke. The same limits hold for
/// a `metadata` inside a request body (OpenAI's own: `body.metadata`, a sync call's `metadata`).
status check_metadata(const nlohmann::json& m, const std::string& param = "metadata");

/// A checked JSON value as the compact text the core carries and stores (keys sorted; invalid
/// UTF-8, which admission refuses anyway, replaced rather than thrown).
std::string json_text_of(const nlohmann::json& j);

/// Validates a `POST /v1/jobs` document and builds the submission for `tenant`.
/// Errors (code, param): invalid_request (not an object), unknown_parameter (<field>),
/// invalid_endpoint (endpoint), invalid_body (body), missing_model and string_above_max_length
/// (body.model),
/// streaming_unsupported (body.stream), invalid_metadata (metadata[.<key>]),
/// invalid_max_attempts (max_attempts), invalid_webhook_url (webhook_url: http(s) URL syntax),
/// invalid_timeout (timeout: seconds, 0 < t <= 7 days). A task list (`tasks` instead of `body`,
/// docs/task-lists.md): invalid_tasks (tasks, tasks[i], tasks[i].custom_id), unknown_parameter
/// (tasks[i].<field>), duplicate_custom_id (tasks[i].custom_id), the body's codes with param
/// tasks[i].body..., invalid_max_inflight (max_inflight). Nothing is stored when it fails.
/// Takes the document by value: a caller done with it moves it in, and the body and metadata
/// are moved out of it instead of copied.
result<submission> parse_submission(nlohmann::json j, std::string tenant,
                                    std::string idempotency_key,
                                    int max_attempts_cap = default_max_attempts_cap);

/// One task object — of `tasks`, of an append, or a line of a staged list — checked as the
/// others are: `{"custom_id"?, "body"}`, or an http task's `{"custom_id"?, "request"}` when
/// `http` says so (not known: an append, whose job's endpoint the engine checks, takes either;
/// actors/http_task.hpp checks the request). `at` prefixes the params ("tasks[3]"; empty for a
/// line of a file: "body.model"). The body's text is kept (`keep_body`; a check that only needs
/// the verdict skips writing it — an http task's request is kept always, its target is checked
/// from it). Uniqueness of custom_ids is the caller's (it sees the whole list).
result<task_input> parse_task(nlohmann::json& t, const std::string& at,
                              std::optional<bool> http = std::nullopt, bool keep_body = true);

/// One line of a staged task file (JSONL, docs/task-lists.md), read by the parser of every
/// client's JSON (runtime/strict_json.hpp) as admission reads a body: too deep is
/// json_too_deep, a key twice invalid_request (its path as param), what is not a JSON object
/// (invalid UTF-8, an overflowing number, ...) invalid_json_line; then parse_task's rules.
result<task_input> parse_task_line(std::string_view line, bool keep_body = true);

/// `max_attempts` of a job or a batch: 0 when absent or null (the configured default);
/// invalid_max_attempts (param max_attempts) when it is not an integer from 1 to `cap`.
result<int> parse_max_attempts(const nlohmann::json& j, int cap = default_max_attempts_cap);
/// `max_inflight` of a task list or a batch: 0 when absent or null; invalid_max_inflight when it
/// is not an integer from 1 to 10000 or not `allowed` (`needs` ends the message: what it needs).
result<int> parse_max_inflight(const nlohmann::json& j, bool allowed, std::string_view needs = "");
/// `webhook_url` of a job or a batch: empty when absent or null; invalid_webhook_url when it is
/// not an http(s) URL (runtime::parse_webhook_url). The engine checks the target's network.
result<std::string> parse_webhook_url(const nlohmann::json& j);

/// Validates the document of `POST /v1/jobs/{id}/tasks`: `{"tasks": [...], "last_batch"?}`
/// (tasks may be empty only in a last batch). Errors as parse_submission's for tasks, and
/// invalid_tasks (last_batch), unknown_parameter.
result<task_append> parse_append(nlohmann::json j);
/// Hex SHA-256 of an append's canonical JSON (a retried append under its Idempotency-Key).
std::string request_hash(const task_append& a);

/// Hex SHA-256 of the canonical JSON of {endpoint, body, metadata, max_attempts}: the same
/// request gives the same hash whatever the key order; the tenant and the key are not part of it.
std::string request_hash(const submission& s);

}  // namespace sy::actors
