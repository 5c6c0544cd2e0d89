#pragma once
/// How a job's state change looks to the outside world: the JSON document that webhooks POST,
/// that server-sent events carry in `data:` and that NATS publishes on `sy.jobs.<id>.<state>`.
/// One renderer, so the three never drift (docs/lifecycle.md shows it).

#include <cstdint>
#include <string>

#include "storage/json_text.hpp"
#include "storage/records.hpp"

namespace sy::storage {

/// {"job_id", "sequence", "state", "previous_state", "timestamp" (unix s), "timestamp_ms",
///  "attempt", "error", "result"} (and "task_counts" for a task-list job) — `error` ({code,
///  message}) when the change was caused by an
/// error; `result` ({status_code, body}) on a terminal change when the gateway answered: inline
/// when the body is at most `inline_result_bytes`, else `null` plus `"result_url":
/// "/v1/jobs/<id>"` where the client reads it.
std::string event_payload(const job_record& job, const event_record& ev,
                          int64_t inline_result_bytes);

/// `{"code", "message"}`, or null without an error — as a job's API document and its events
/// show it.
void write_error(json_text& out, const std::optional<job_error>& e);

/// `{"status_code", "body"}`, the body as JSON when it is JSON, else as a string — as a job's API
/// document and its terminal event show the gateway's answer.
void write_result(json_text& out, const gateway_result& r);

/// `{"total", "queued", "in_progress", "completed", "failed", "cancelled"}` of a task-list job
/// (`total` null until the list is latched) — as the job's API document and its events show it.
void write_task_counts(json_text& out, const task_counts& c);

/// The NATS subject of a state change: `<subject_prefix>.jobs.<job_id>.<state>`.
std::string event_subject(std::string_view subject_prefix, const event_record& ev);

}  // namespace sy::storage
