#include "storage/events.hpp"

namespace sy::storage {

std::string event_payload(const job_record& job, const event_record& ev,
                          int64_t inline_result_bytes) {
  json_text out;
  out.begin_object()
      .field("job_id", ev.job_id)
      .field("sequence", ev.seq)
      .field("state", to_string(ev.state));
  out.key("previous_state");
  if (ev.previous) {
    out.string(to_string(*ev.previous));
  } else {
    out.null();
  }
  out.field("timestamp", ev.at_ms / 1000)
      .field("timestamp_ms", ev.at_ms)
      .field("attempt", ev.attempt);
  write_error(out.key("error"), ev.error);
  if (job.task_list) write_task_counts(out.key("task_counts"), job.counts);
  out.key("result");
  const gateway_result* r = is_terminal(ev.state) && job.result ? &*job.result : nullptr;
  if (r && static_cast<int64_t>(r->body.size()) <= inline_result_bytes) {
    write_result(out, *r);
  } else {
    out.null();
    if (r) out.field("result_url", "/v1/jobs/" + job.id);
  }
  return out.end_object().take();
}

void write_error(json_text& out, const std::optional<job_error>& e) {
  if (e) {
    out.begin_object().field("code", e->code).field("message", e->message).end_object();
  } else {
    out.null();
  }
}

void write_result(json_text& out, const gateway_result& r) {
  out.begin_object().field("status_code", r.status_code).key("body").json_or_string(r.body);
  out.end_object();
}

void write_task_counts(json_text& out, const task_counts& c) {
  out.begin_object().key("total");
  if (c.total >= 0) {
    out.number(c.total);
  } else {
    out.null();
  }
  out.field("queued", c.queued)
      .field("in_progress", c.in_progress)
      .field("completed", c.completed)
      .field("failed", c.failed)
      .field("cancelled", c.cancelled)
      .end_object();
}

std::string event_subject(std::string_view subject_prefix, const event_record& ev) {
  return std::string(subject_prefix) + ".jobs." + ev.job_id + "." +
         std::string(to_string(ev.state));
}

}  // namespace sy::storage
