#include "api/job_json.hpp"

#include "actors/event_json.hpp"
#include "actors/runtime_names.hpp"
#include "storage/ops.hpp"

namespace sy::api {
namespace {

void unix_seconds(runtime::json_text& out, std::string_view name, int64_t ms) {
  out.key(name);
  if (ms > 0) {
    out.number(ms / 1000);
  } else {
    out.null();
  }
}

}  // namespace

std::string job_json(const storage::job_record& job) {
  runtime::json_text out;
  out.begin_object()
      .field("id", job.id)
      .field("object", "job")
      .field("kind", storage::to_string(job.kind()))
      .field("status", storage::to_string(job.status))
      .field("endpoint", job.endpoint);
  out.key("model");
  const bool worker_job = actors::is_runtime_queue(job.model);
  if (job.model.empty() || worker_job) {
    out.null();  // a task list whose tasks name several models, or a runtime's job
  } else {
    out.string(job.model);
  }
  if (worker_job) out.field("runtime", job.model.substr(actors::runtime_queue_prefix.size()));
  if (!job.grants.empty()) out.key("grants").raw(job.grants);
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
    actors::write_result(out, *job.result);
  } else {
    out.null();
  }
  actors::write_error(out.key("error"), job.error);
  out.key("webhook_url");
  if (job.webhook_url.empty()) {
    out.null();
  } else {
    out.string(job.webhook_url);
  }
  unix_seconds(out, "expires_at", job.deadline_ms);
  if (job.task_list) {
    actors::write_task_counts(out.key("task_counts"), job.counts);
    out.field("max_inflight", job.window).field("run", job.run);
    out.key("errors");
    if (job.errors.empty()) {
      out.null();
    } else {
      out.begin_object().field("object", "list").key("data").begin_array();
      for (const auto& e : job.errors) {
        out.begin_object().field("code", e.code).field("message", e.message);
        out.key("param");
        if (e.param.empty()) {
          out.null();
        } else {
          out.string(e.param);
        }
        out.key("line");
        if (e.line > 0) {
          out.number(e.line);
        } else {
          out.null();
        }
        out.end_object();
      }
      out.end_array().end_object();
    }
  }
  return out.end_object().take();
}

std::string task_json(const storage::job_record& job, const storage::task_record& task) {
  runtime::json_text out;
  out.begin_object()
      .field("id", task.id)
      .field("object", "job.task")
      .field("job_id", task.job_id)
      .field("index", task.index);
  out.key("custom_id");
  if (task.custom_id.empty()) {
    out.null();
  } else {
    out.string(task.custom_id);
  }
  const auto status = storage::shown_status(job, task);
  out.field("status", storage::to_string(status));
  if (actors::is_runtime_queue(task.model)) {  // a task done by a runtime's workers
    out.key("model").null();
    out.field("runtime", task.model.substr(actors::runtime_queue_prefix.size()));
  } else {
    out.field("model", task.model);
  }
  // `attempt` is the current one; while it waits to start, the ones before it have run.
  int attempts = task.state == storage::task_state::queued ? task.attempt - 1 : task.attempt;
  if (task.started_at_ms == 0) attempts = 0;
  out.field("attempts", attempts).field("max_attempts", task.max_attempts);
  unix_seconds(out, "started_at", task.started_at_ms);
  unix_seconds(out, "finished_at", task.finished_at_ms);
  out.key("result");
  if (task.result) {
    actors::write_result(out, *task.result);
  } else {
    out.null();
  }
  const bool ended_with_list = status != task.status;  // never published: the list's error
  actors::write_error(out.key("error"), ended_with_list ? job.error : task.error);
  return out.end_object().take();
}

}  // namespace sy::api
