#include "api/job_json.hpp"

#include "storage/events.hpp"

namespace sy::api {
namespace {

void unix_seconds(storage::json_text& out, std::string_view name, int64_t ms) {
  out.key(name);
  if (ms > 0) {
    out.number(ms / 1000);
  } else {
    out.null();
  }
}

}  // namespace

std::string job_json(const storage::job_record& job) {
  storage::json_text out;
  out.begin_object()
      .field("id", job.id)
      .field("object", "job")
      .field("status", storage::to_string(job.status))
      .field("endpoint", job.endpoint)
      .field("model", job.model);
  const int64_t finished = storage::is_terminal(job.status) ? job.finished_at_ms : 0;
  unix_seconds(out, "created_at", job.created_at_ms);
  unix_seconds(out, "started_at", job.started_at_ms);
  unix_seconds(out, "completed_at", finished);
  unix_seconds(out, "finished_at", finished);
  out.field("attempts", job.attempts).field("max_attempts", job.max_attempts);
  out.key("metadata");
  if (job.metadata.is_object() && !job.metadata.empty()) {
    out.value(job.metadata);
  } else {
    out.raw("{}");
  }
  out.key("result");
  if (job.result) {
    storage::write_result(out, *job.result);
  } else {
    out.null();
  }
  storage::write_error(out.key("error"), job.error);
  out.key("webhook_url");
  if (job.webhook_url.empty()) {
    out.null();
  } else {
    out.string(job.webhook_url);
  }
  unix_seconds(out, "expires_at", job.deadline_ms);
  return out.end_object().take();
}

}  // namespace sy::api
