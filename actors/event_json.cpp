#include "actors/event_json.hpp"

#include <charconv>

namespace sy::actors {

using storage::to_string;

std::string event_json(const storage::job_event& e) {
  const auto& ev = e.event;
  runtime::json_text out;
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
  if (e.task_list) write_task_counts(out.key("task_counts"), e.counts);
  out.key("result");
  if (e.result) {
    write_result(out, *e.result);
  } else {
    out.null();
    if (e.result_elsewhere) out.field("result_url", "/v1/jobs/" + ev.job_id);
  }
  return out.end_object().take();
}

std::string task_event_json(const storage::task_event& e) {
  runtime::json_text out;
  out.begin_object().field("job_id", e.job_id).field("task_id", e.task_id).key("custom_id");
  if (e.custom_id.empty()) {
    out.null();
  } else {
    out.string(e.custom_id);
  }
  out.field("index", e.index).field("state", to_string(e.state)).field("attempt", e.attempt);
  write_error(out.key("error"), e.error);
  out.key("result");
  if (e.result) {
    write_result(out, *e.result);
  } else {
    out.null();
  }
  return out.field("timestamp_ms", e.at_ms).end_object().take();
}

std::string dead_letter_json(const storage::dead_letter& d) {
  runtime::json_text out;
  out.begin_object().field("job_id", d.job_id).field("run", d.run).key("task_id");
  if (!d.task_id.empty()) {
    out.string(d.task_id).field("custom_id", d.custom_id).field("model", d.model);
    out.field("attempts", d.attempts);
  } else {
    out.null();
  }
  write_error(out.key("error"), d.error);
  return out.field("at_ms", d.at_ms).end_object().take();
}

std::string webhook_body(const storage::webhook_record& w) {
  if (!w.body.empty()) return w.body;
  if (w.batch_status.empty()) return event_json(w.event);
  // OpenAI's webhook event; its id is the delivery's, as webhook-id carries it.
  runtime::json_text out;
  return out.begin_object()
      .field("id", webhook_id(w))
      .field("object", "event")
      .field("type", "batch." + w.batch_status)
      .field("created_at", w.created_at_ms / 1000)
      .key("data")
      .begin_object()
      .field("id", w.job_id)
      .end_object()
      .end_object()
      .take();
}

std::string webhook_id(const storage::webhook_record& w) { return "whd_" + std::to_string(w.seq); }

void write_error(runtime::json_text& out, const std::optional<storage::job_error>& e) {
  if (e) {
    out.begin_object().field("code", e->code).field("message", e->message).end_object();
  } else {
    out.null();
  }
}

void write_result(runtime::json_text& out, const storage::gateway_result& r) {
  out.begin_object().field("status_code", r.status_code).key("body").json_or_string(r.body);
  out.end_object();
}

void write_task_counts(runtime::json_text& out, const storage::task_counts& c) {
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

std::string task_message_payload(const std::string& task_id, int attempt) {
  return task_id + ":" + std::to_string(attempt);
}

std::string task_message_id(const std::string& task_id, int attempt) {
  return "task:" + task_id + ":" + std::to_string(attempt);
}

std::optional<std::pair<std::string, int>> parse_task_message(std::string_view payload) {
  auto colon = payload.rfind(':');
  if (colon == std::string_view::npos || colon == 0) return std::nullopt;
  int attempt = 0;
  auto digits = payload.substr(colon + 1);
  auto [p, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), attempt);
  if (ec != std::errc{} || p != digits.data() + digits.size() || attempt < 1) return std::nullopt;
  return std::pair{std::string(payload.substr(0, colon)), attempt};
}

std::optional<std::vector<std::pair<std::string, int>>> parse_task_messages(
    std::string_view payload) {
  std::vector<std::pair<std::string, int>> out;
  for (;;) {
    const auto nl = payload.find('\n');
    auto one = parse_task_message(payload.substr(0, nl));
    if (!one) return std::nullopt;
    out.push_back(std::move(*one));
    if (nl == std::string_view::npos) return out;
    payload.remove_prefix(nl + 1);
  }
}

}  // namespace sy::actors
