#include "actors/observe_changes.hpp"

#include <algorithm>
#include <string>

#include "runtime/metrics.hpp"
#include "runtime/trace.hpp"

namespace sy::actors {
namespace {

bool is_terminal(const std::string& s) {
  return s == "completed" || s == "failed" || s == "cancelled" || s == "expired";
}

double seconds_between(int64_t from_ms, int64_t to_ms) {
  return static_cast<double>(std::max<int64_t>(to_ms - from_ms, 0)) / 1000.0;
}

/// The metrics of a committed status change (docs/operations.md maps the seed's results and
/// reasons onto the engine's states).
void count(const storage::status_change& c) {
  if (c.batch && (c.from == "validating" || c.from.empty()) && c.to != "cancelling" &&
      c.to != "validating")
    metrics::plan_built(seconds_between(c.since_ms, c.at_ms), c.size);
  if (c.batch && c.to == "cancelling")
    metrics::batch_cancelled(c.from == "validating" ? "queued" : c.from);
  if (!c.batch && c.from == "queued" && c.to == "in_progress")
    metrics::job_queue_wait(seconds_between(c.since_ms, c.at_ms));
  if (!c.batch && c.from == "in_progress" && c.to == "queued")
    metrics::job_processed("re_enqueued", c.reason.empty() ? "none" : c.reason);
  if (!is_terminal(c.to)) return;
  if (c.to == "completed") {
    metrics::job_processed("success", "none");
  } else if (c.to == "failed") {
    metrics::job_processed("failed", c.reason.empty() ? "system_error" : c.reason);
  } else if (c.to == "expired") {
    metrics::job_processed("expired",
                           c.started_at_ms > 0 ? "expired_execution" : "expired_dequeue");
  } else {
    metrics::job_processed("cancelled", "none");
  }
  if (c.started_at_ms > 0)
    metrics::job_processing(seconds_between(c.started_at_ms, c.at_ms), c.size);
  if (c.batch) metrics::batch_ended(c.to, seconds_between(c.created_at_ms, c.at_ms));
}

/// The name of the batch phase that a change from `from` ends (the seed's process-batch phases).
const char* batch_phase(const std::string& from) {
  if (from == "validating") return "batch.ingest";
  if (from == "in_progress") return "batch.execute";
  if (from == "finalizing" || from == "cancelling") return "batch.finalize";
  return nullptr;
}

/// The batch's own span, with the seed's attributes.
void add_batch_attributes(trace::span& s, const storage::batch_record& b) {
  s.attributes = {{"batch.id", b.id}, {"tenant.id", b.tenant}, {"file.id", b.input_file_id}};
  if (!b.output_file_id.empty())
    s.attributes.emplace_back("batch.output_file.id", b.output_file_id);
  if (!b.error_file_id.empty()) s.attributes.emplace_back("batch.error_file.id", b.error_file_id);
  s.int_attributes = {{"batch.request.total", b.total},
                      {"batch.request.completed", b.completed},
                      {"batch.request.failed", b.failed}};
}

/// The spans a committed change closes.
void trace_change(const storage::status_change& c, const storage::op_reply& r) {
  const auto at = trace::of(c.id, c.trace);
  const auto& self = at.self;
  auto child = [&](const char* name, int64_t from_ms) {
    trace::record(trace::make_span(self.child(), self.span_id, name, trace::span_kind::internal,
                                   from_ms, c.at_ms));
  };
  if (!c.batch && c.from == "queued" && c.to == "in_progress") child("queue.wait", c.since_ms);
  if (c.batch && !c.from.empty()) {
    if (const char* phase = batch_phase(c.from)) child(phase, c.since_ms);
  }
  if (!is_terminal(c.to)) return;
  auto own = trace::make_span(self, at.parent_span_id, c.batch ? "process-batch" : "job",
                              trace::span_kind::internal, c.created_at_ms, c.at_ms);
  if (c.batch && r.batch && r.batch->id == c.id) {
    add_batch_attributes(own, *r.batch);
  } else {
    own.attributes = {{c.batch ? "batch.id" : "job.id", c.id}, {"status", c.to}};
    own.int_attributes = {{"requests", c.size}};
  }
  own.error = c.to == "failed" || c.to == "expired";
  if (own.error) own.status_message = c.reason.empty() ? c.to : c.reason;
  trace::record(std::move(own));
}

}  // namespace

void observe_changes(const storage::op_reply& r) {
  for (const auto& c : r.changes) {
    count(c);
    if (trace::enabled()) trace_change(c, r);
  }
}

}  // namespace sy::actors
