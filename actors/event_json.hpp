#pragma once
/// What the engine says about what storage recorded (storage/records.hpp): the JSON of a job's
/// state change — one renderer for webhooks, SSE and NATS, so the three never drift
/// (docs/lifecycle.md shows it) —, of a task event, of a dead letter and of a task message. The
/// outbox relay (which also makes their subjects), the webhook deliverer and the API render with
/// these; storage keeps the typed values.
///
/// Threading: pure functions; any thread.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "runtime/json_text.hpp"
#include "storage/records.hpp"

namespace sy::actors {

/// {"job_id", "sequence", "state", "previous_state", "timestamp" (unix s), "timestamp_ms",
///  "attempt", "error", "result"} (and "task_counts" for a task-list job) — `error` ({code,
/// message}) when the change was caused by an error; `result` ({status_code, body}) on a
/// terminal change when the gateway answered: inline when the event carries it, else `null`
/// plus `"result_url": "/v1/jobs/<id>"` where the client reads it.
std::string event_json(const storage::job_event& e);

/// `{"job_id", "task_id", "custom_id", "index", "state", "attempt", "error", "result",
/// "timestamp_ms"}`: a task's transition (`custom_id` and `result` null when it has none).
std::string task_event_json(const storage::task_event& e);

/// `{"job_id", "run", "task_id", "custom_id", "model", "attempts", "error", "at_ms"}`: what a
/// dead letter tells its subscribers (`task_id` null, and no custom_id, model, attempts, for an
/// ingest).
std::string dead_letter_json(const storage::dead_letter& d);

/// What a webhook delivery POSTs: the job event's JSON, a batch's OpenAI event
/// (`{"id": webhook-id, "object": "event", "type": "batch.<status>", "created_at", "data":
/// {"id"}}`), or the body a previous build rendered.
std::string webhook_body(const storage::webhook_record& w);
/// A delivery's id (`webhook-id`, the same at every retry): `whd_<seq>`.
std::string webhook_id(const storage::webhook_record& w);

/// `{"code", "message"}`, or null without an error — as a job's API document and its events
/// show it.
void write_error(runtime::json_text& out, const std::optional<storage::job_error>& e);

/// `{"status_code", "body"}`, the body as JSON when it is JSON, else as a string — as a job's API
/// document and its terminal event show the gateway's answer.
void write_result(runtime::json_text& out, const storage::gateway_result& r);

/// `{"total", "queued", "in_progress", "completed", "failed", "cancelled"}` of a task-list job
/// (`total` null until the list is latched) — as the job's API document and its events show it.
void write_task_counts(runtime::json_text& out, const storage::task_counts& c);

/// A task message's payload (`<task_id>:<attempt>`) and its deterministic Nats-Msg-Id.
std::string task_message_payload(const std::string& task_id, int attempt);
std::string task_message_id(const std::string& task_id, int attempt);
/// Parses a task message payload; nullopt when it is not one of ours.
std::optional<std::pair<std::string, int>> parse_task_message(std::string_view payload);
/// Parses a message that may wake many tasks (DESIGN rule 3): `<task_id>:<attempt>` lines
/// joined by `\n` (the relay's group_outbox); a single-task payload is one line. Nullopt when a
/// line is not a task, or there is none.
std::optional<std::vector<std::pair<std::string, int>>> parse_task_messages(
    std::string_view payload);

}  // namespace sy::actors
