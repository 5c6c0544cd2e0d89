#include "storage/events.hpp"

#include "storage/json_text.hpp"

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
  out.field("timestamp", ev.at_ms / 1000).field("timestamp_ms", ev.at_ms).field("attempt", ev.attempt);
  out.key("error");
  if (ev.error) {
    out.begin_object().field("code", ev.error->code).field("message", ev.error->message).end_object();
  } else {
    out.null();
  }
  out.key("result");
  const gateway_result* r = is_terminal(ev.state) && job.result ? &*job.result : nullptr;
  if (r && static_cast<int64_t>(r->body.size()) <= inline_result_bytes) {
    out.begin_object().field("status_code", r->status_code).key("body").json_or_string(r->body);
    out.end_object();
  } else {
    out.null();
    if (r) out.field("result_url", "/v1/jobs/" + job.id);
  }
  return out.end_object().take();
}

std::string event_subject(std::string_view subject_prefix, const event_record& ev) {
  return std::string(subject_prefix) + ".jobs." + ev.job_id + "." +
         std::string(to_string(ev.state));
}

}  // namespace sy::storage
