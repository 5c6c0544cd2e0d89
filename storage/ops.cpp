#include "storage/ops.hpp"

#include <algorithm>

#include "storage/detail/list_ops.hpp"
#include "storage/detail/op_common.hpp"

namespace sy::storage {
namespace detail {

op_reply reply(op_reply::kind k) {
  op_reply r;
  r.what = k;
  return r;
}

namespace {}  // namespace

int64_t retention_ms(const store_policy& p, job_status s) {
  return s == job_status::completed ? p.retention_completed_ms : p.retention_failed_ms;
}

status record_event(op_ctx& c, job_record& job, std::optional<job_status> previous,
                    std::optional<job_error> why, int64_t now_ms) {
  event_record ev;
  ev.job_id = job.id;
  ev.seq = ++job.event_seq;
  ev.state = job.status;
  ev.previous = previous;
  ev.at_ms = now_ms;
  ev.attempt = job.attempts;
  ev.error = std::move(why);
  SY_TRY(put_event(c.txn, ev));
  using mode = store_policy::nats_events;
  if (c.policy.events == mode::all ||
      (c.policy.events == mode::terminal && is_terminal(job.status))) {
    const auto limit = std::min(c.policy.inline_result_bytes, max_nats_inline_result_bytes);
    append_outbox(c.txn, outbox_record{0, job_event_of(job, ev, limit)});
    c.reply.outbox_appended = true;
  }
  // The creation event is the client's own 202; webhooks start with the first transition. A
  // batch's webhook gets OpenAI's event for its end instead (batch_ops.cpp, announce_end).
  if (!job.webhook_url.empty() && previous && job.kind() != job_kind::batch) {
    webhook_record w;
    w.job_id = job.id;
    w.url = job.webhook_url;
    w.event = job_event_of(job, ev, c.policy.inline_result_bytes);
    w.next_at_ms = now_ms;
    append_webhook(c.txn, std::move(w));
    c.reply.webhooks_appended = true;
  }
  c.reply.changed_jobs.push_back(job.id);
  return ok;
}

status set_status(op_ctx& c, job_record& job, job_status to, int64_t now_ms,
                  std::optional<job_error> why) {
  const job_status from = job.status;
  status_change change;
  change.id = job.id;
  change.trace = job.trace;
  change.from = to_string(from);
  change.to = to_string(to);
  if (why && (to == job_status::failed || to == job_status::queued)) change.reason = why->code;
  change.created_at_ms = job.created_at_ms;
  change.started_at_ms = job.started_at_ms;
  change.since_ms = job.updated_at_ms;
  change.at_ms = now_ms;
  change.size = job.task_list ? std::max<int64_t>(job.counts.total, job.ingested) : 1;
  c.reply.changes.push_back(std::move(change));
  job.status = to;
  job.updated_at_ms = now_ms;
  SY_TRY(c.txn.put(db::job_index, job_index_key(job.tenant, job.id), to_string(to)));
  if (is_terminal(to)) {
    job.finished_at_ms = now_ms;
    if (job.deadline_ms > 0) c.txn.del(db::deadlines, time_index_key(job.deadline_ms, job.id));
    SY_TRY(
        c.txn.put(db::retention, time_index_key(now_ms + retention_ms(c.policy, to), job.id), ""));
  }
  SY_TRY(record_event(c, job, from, std::move(why), now_ms));
  // Dropped after the event so that nothing above needs it; the result is what clients read.
  if (is_terminal(to) && !c.policy.retain_inputs && !job.body.empty()) {
    job.body.clear();
    job.input_dropped = true;
  }
  return ok;
}

status close_task(write_txn& txn, task_record& task) {
  task.state = task_state::done;
  del_lease(txn, task.id);
  txn.del(db::queued, task.id);
  return put_task(txn, task);
}

job_error deadline_error(const job_record& job, const std::string& last_error) {
  auto seconds = (job.deadline_ms - job.created_at_ms + 999) / 1000;
  std::string msg =
      "the job did not finish within its timeout of " + std::to_string(seconds) + " s";
  if (!last_error.empty()) msg += "; last error: " + last_error;
  return job_error{errc::deadline_exceeded, msg};
}

job_error cancelled_error() {
  return job_error{errc::cancelled, "the job was cancelled by the client"};
}

bool past_deadline(const job_record& job, int64_t now_ms) {
  return job.deadline_ms > 0 && now_ms >= job.deadline_ms;
}

result<op_reply> answer_done(op_ctx& c, job_record job, std::optional<task_record> task) {
  SY_TRY(put_job(c.txn, job));
  c.reply.what = op_reply::kind::done;
  c.reply.job = std::move(job);
  c.reply.task = std::move(task);
  return c.reply;
}

result<bool> claim_idempotency(op_ctx& c, const job_record& job) {
  if (job.idempotency_key.empty()) return false;
  if (auto idem = get_idempotency(c.txn, job.tenant, job.idempotency_key)) {
    c.reply.what = idem->request_hash == job.request_hash ? op_reply::kind::existing
                                                          : op_reply::kind::conflict;
    c.reply.job = get_job(c.txn, idem->job_id);
    if (!c.reply.job)
      return make_error(errc::storage_corrupt, "idempotency key " + job.idempotency_key +
                                                   " names missing job " + idem->job_id);
    return true;
  }
  SY_TRY(put_idempotency(c.txn, job.tenant, job.idempotency_key,
                         idempotency_record{job.id, job.request_hash, job.created_at_ms}));
  return false;
}

status publish_task(op_ctx& c, task_record& task, int64_t now_ms) {
  task.queued_at_ms = now_ms;
  SY_TRY(c.txn.put(db::queued, task.id, ""));
  append_outbox(c.txn, outbox_record{0, task_message{task.model, task.id, task.attempt, 0}});
  c.reply.outbox_appended = true;
  return ok;
}

}  // namespace detail

namespace {

using namespace detail;

result<op_reply> apply_create(op_ctx& c, const create_job_op& op) {
  auto& txn = c.txn;
  const auto& job = op.job;
  auto answered = claim_idempotency(c, job);
  if (!answered) return answered.error();
  if (*answered) return c.reply;
  job_record created = job;
  created.status = job_status::queued;
  created.event_seq = 0;
  SY_TRY(txn.put(db::job_index, job_index_key(created.tenant, created.id), "queued"));
  if (created.deadline_ms > 0)
    SY_TRY(txn.put(db::deadlines, time_index_key(created.deadline_ms, created.id), ""));
  task_record task = op.task;
  task.queued_at_ms = created.created_at_ms;
  SY_TRY(put_task(txn, task));
  SY_TRY(txn.put(db::queued, task.id, ""));
  // Written once per model: a put of an existing key would still dirty the page every commit.
  if (const auto known = known_model_key(created.model); !txn.get(db::meta, known))
    SY_TRY(txn.put(db::meta, known, ""));
  append_outbox(txn, outbox_record{0, task_message{task.model, task.id, task.attempt, 0}});
  SY_TRY(record_event(c, created, std::nullopt, std::nullopt, created.created_at_ms));
  SY_TRY(put_job(txn, created));
  c.reply.what = op_reply::kind::done;
  c.reply.job = std::move(created);
  c.reply.task = std::move(task);
  c.reply.outbox_appended = true;
  return c.reply;
}

result<op_reply> apply_start(op_ctx& c, const start_attempt_op& op) {
  auto& txn = c.txn;
  auto task = get_task(txn, op.task_id);
  if (!task) return reply(op_reply::kind::not_found);
  if (task->state == task_state::done || task->attempt != op.attempt)
    return reply(op_reply::kind::stale);
  if (task->state == task_state::leased) return reply(op_reply::kind::busy);
  if (task->not_before_ms > op.now_ms) {
    op_reply r = reply(op_reply::kind::not_yet);
    r.delay_ms = task->not_before_ms - op.now_ms;
    return r;
  }
  auto job = get_job(txn, task->job_id);
  if (!job) return reply(op_reply::kind::not_found);
  if (past_deadline(*job, op.now_ms) && job->task_list) {
    SY_TRY(
        stop_list(c, *job, job_status::expired, deadline_error(*job, task->last_error), op.now_ms));
    SY_TRY(put_job(txn, *job));
    c.reply.what = op_reply::kind::stale;
    c.reply.job = std::move(job);
    return c.reply;
  }
  if (past_deadline(*job, op.now_ms)) {  // too late to start: the job expires instead
    SY_TRY(close_task(txn, *task));
    SY_TRY(set_status(c, *job, job_status::expired, op.now_ms,
                      deadline_error(*job, task->last_error)));
    SY_TRY(put_job(txn, *job));
    c.reply.what = op_reply::kind::stale;
    c.reply.job = std::move(job);
    return c.reply;
  }
  task->state = task_state::leased;
  txn.del(db::queued, task->id);
  SY_TRY(put_lease(
      txn, lease_record{task->id, op.attempt, op.token, op.now_ms + op.lease_ttl_ms, op.holder}));
  if (job->task_list) SY_TRY(list_task_started(c, *job, *task, op.now_ms));
  SY_TRY(put_task(txn, *task));
  if (job->task_list) return answer_done(c, std::move(*job), std::move(task));
  job->attempts = op.attempt;
  if (job->started_at_ms == 0) job->started_at_ms = op.now_ms;
  SY_TRY(set_status(c, *job, job_status::in_progress, op.now_ms));
  return answer_done(c, std::move(*job), std::move(task));
}

/// The current lease, if (task, attempt, token) still holds it.
std::optional<lease_record> current_lease(const write_txn& txn, const std::string& task_id,
                                          int attempt, const std::string& token) {
  auto lease = get_lease(txn, task_id);
  if (!lease || lease->attempt != attempt || lease->token != token) return std::nullopt;
  return lease;
}

/// Refused: the lease ran out before an external worker's call (docs/workers.md).
op_reply lease_ran_out() {
  op_reply r = reply(op_reply::kind::refused);
  r.refusal = make_error(errc::lease_expired,
                         "The attempt's lease expired before this call; the task is queued again "
                         "and this attempt's outcome is not recorded.");
  return r;
}

result<op_reply> apply_extend(write_txn& txn, const extend_lease_op& op) {
  auto lease = current_lease(txn, op.task_id, op.attempt, op.token);
  if (!lease) return reply(op_reply::kind::stale);
  if (op.live_lease_only && lease->expires_at_ms <= op.now_ms) return lease_ran_out();
  lease->expires_at_ms = op.expires_at_ms;
  SY_TRY(put_lease(txn, *lease));
  return reply(op_reply::kind::done);
}

result<op_reply> apply_finish(op_ctx& c, const finish_attempt_op& op) {
  auto& txn = c.txn;
  const auto lease = current_lease(txn, op.task_id, op.attempt, op.token);
  if (!lease) return reply(op_reply::kind::stale);
  if (op.live_lease_only && lease->expires_at_ms <= op.now_ms) return lease_ran_out();
  auto task = get_task(txn, op.task_id);
  if (!task || task->state != task_state::leased || task->attempt != op.attempt)
    return reply(op_reply::kind::stale);
  auto job = get_job(txn, task->job_id);
  if (!job) return reply(op_reply::kind::not_found);
  del_lease(txn, op.task_id);
  if (job->task_list) {
    SY_TRY(list_task_finished(c, *job, *task, op));
    SY_TRY(put_task(txn, *task));
    return answer_done(c, std::move(*job), std::move(task));
  }
  const int64_t now = op.now_ms;
  const bool success = op.end == attempt_end::succeeded;
  if (!success && op.end != attempt_end::released) task->last_error = op.error_message;
  if (success) {
    // Also when a cancel was under way: the answer arrived first, and it is kept.
    task->state = task_state::done;
    job->result = op.response;
    job->error.reset();
    SY_TRY(set_status(c, *job, job_status::completed, now));
  } else if (job->status == job_status::cancelling) {
    task->state = task_state::done;
    job->result = op.response;
    job->error = cancelled_error();
    SY_TRY(set_status(c, *job, job_status::cancelled, now, job->error));
  } else if (past_deadline(*job, now)) {
    task->state = task_state::done;
    job->result = op.response;
    job->error = deadline_error(*job, op.error_message);
    SY_TRY(set_status(c, *job, job_status::expired, now, job->error));
  } else {
    switch (op.end) {
      case attempt_end::succeeded:
        break;
      case attempt_end::rejected:
        task->state = task_state::done;
        job->result = op.response;
        job->error = job_error{op.error_code, op.error_message};
        SY_TRY(set_status(c, *job, job_status::failed, now, job->error));
        break;
      case attempt_end::retry:
        if (op.attempt >= task->max_attempts) {
          task->state = task_state::done;
          job->result = op.response;
          job->error = job_error{op.error_code, op.error_message + " (attempt " +
                                                    std::to_string(op.attempt) + " of " +
                                                    std::to_string(task->max_attempts) + ")"};
          SY_TRY(set_status(c, *job, job_status::failed, now, job->error));
        } else {
          task->state = task_state::queued;
          SY_TRY(txn.put(db::queued, task->id, ""));
          task->attempt = op.attempt + 1;
          task->not_before_ms = now + op.backoff_ms;
          task->queued_at_ms = now;
          append_outbox(txn,
                        outbox_record{0, task_message{task->model, task->id, task->attempt, 0}});
          c.reply.outbox_appended = true;
          SY_TRY(set_status(c, *job, job_status::queued, now,
                            job_error{op.error_code, op.error_message}));
        }
        break;
      case attempt_end::released:
        // Shutdown: queued again, uncounted, with a fresh message (its first one was acked when
        // the lease was taken; a new id, as the first may still sit in the duplicate window).
        task->state = task_state::queued;
        SY_TRY(txn.put(db::queued, task->id, ""));
        task->queued_at_ms = now;
        append_outbox(txn,
                      outbox_record{0, task_message{task->model, task->id, task->attempt, now}});
        c.reply.outbox_appended = true;
        job->attempts = op.attempt - 1;
        SY_TRY(set_status(c, *job, job_status::queued, now,
                          job_error{op.error_code, op.error_message}));
        break;
    }
  }
  SY_TRY(put_task(txn, *task));
  return answer_done(c, std::move(*job), std::move(task));
}

result<op_reply> apply_republish(op_ctx& c, const republish_op& op) {
  auto& txn = c.txn;
  auto task = get_task(txn, op.task_id);
  if (!task || task->state != task_state::queued || task->attempt != op.attempt)
    return reply(op_reply::kind::stale);
  task->queued_at_ms = op.now_ms;
  SY_TRY(put_task(txn, *task));
  // A distinct message id: the original may still sit in JetStream's duplicate window.
  append_outbox(txn,
                outbox_record{0, task_message{task->model, task->id, task->attempt, op.now_ms}});
  op_reply r = reply(op_reply::kind::done);
  r.outbox_appended = true;
  r.task = std::move(task);
  return r;
}

result<op_reply> apply_outbox_ack(op_ctx& c, const outbox_ack_op& op) {
  for (auto seq : op.seqs) del_outbox(c.txn, seq);
  return reply(op_reply::kind::done);
}

result<op_reply> apply_cancel(op_ctx& c, const cancel_job_op& op) {
  auto& txn = c.txn;
  auto job = get_job(txn, op.job_id);
  if (!job || !job->owned_by(op.tenant)) return reply(op_reply::kind::not_found);
  c.reply.job = job;
  if (job->status == job_status::cancelled || job->status == job_status::cancelling) {
    c.reply.what = op_reply::kind::existing;  // a repeated cancel is harmless
    return c.reply;
  }
  if (is_terminal(job->status)) {
    c.reply.what = op_reply::kind::conflict;
    return c.reply;
  }
  if (job->task_list) {
    SY_TRY(stop_list(c, *job, job_status::cancelled, cancelled_error(), op.now_ms));
    return answer_done(c, std::move(*job), std::nullopt);
  }
  auto task = get_task(txn, job->task_id);
  if (!task) return make_error(errc::storage_corrupt, "job " + job->id + " has no task");
  if (task->state == task_state::leased) {
    // Running: the caller aborts the request; the attempt's end makes the job cancelled.
    SY_TRY(set_status(c, *job, job_status::cancelling, op.now_ms));
    c.reply.abort_inflight = true;
  } else {
    SY_TRY(close_task(txn, *task));
    job->error = cancelled_error();
    SY_TRY(set_status(c, *job, job_status::cancelled, op.now_ms, job->error));
  }
  return answer_done(c, std::move(*job), std::move(task));
}

result<op_reply> apply_expire(op_ctx& c, const expire_job_op& op) {
  auto& txn = c.txn;
  auto job = get_job(txn, op.job_id);
  if (!job || is_terminal(job->status) || job->deadline_ms != op.deadline_ms) {
    txn.del(db::deadlines, time_index_key(op.deadline_ms, op.job_id));  // stale entry
    return reply(op_reply::kind::stale);
  }
  if (!past_deadline(*job, op.now_ms)) return reply(op_reply::kind::not_yet);
  if (job->task_list) {
    SY_TRY(stop_list(c, *job, job_status::expired, deadline_error(*job, ""), op.now_ms));
    return answer_done(c, std::move(*job), std::nullopt);
  }
  auto task = get_task(txn, job->task_id);
  if (!task) return make_error(errc::storage_corrupt, "job " + job->id + " has no task");
  c.reply.abort_inflight = task->state == task_state::leased;
  SY_TRY(close_task(txn, *task));
  job->error = deadline_error(*job, task->last_error);
  SY_TRY(set_status(c, *job, job_status::expired, op.now_ms, job->error));
  return answer_done(c, std::move(*job), std::move(task));
}

/// Deletes the job and everything that belongs to it: task(s), lease(s), queue entries, events,
/// idempotency key, listing entry (and a task list's indexes). Not its time-index entries. A
/// task list goes `budget` tasks at a time: false when tasks are left (the job record stays,
/// marked deleted, for the next step).
bool purge_job(op_ctx& c, job_record& job, size_t& budget) {
  auto& txn = c.txn;
  std::vector<std::string> event_keys;
  const std::string prefix = job.id + "/";
  txn.scan(db::events, prefix, [&](std::string_view key, std::string_view) {
    if (key.substr(0, prefix.size()) != prefix) return false;
    event_keys.emplace_back(key);
    return true;
  });
  for (const auto& k : event_keys) txn.del(db::events, k);
  if (!job.idempotency_key.empty()) {
    auto idem = get_idempotency(txn, job.tenant, job.idempotency_key);
    if (idem && idem->job_id == job.id)
      txn.del(db::idempotency, idempotency_db_key(job.tenant, job.idempotency_key));
  }
  txn.del(db::job_index, job_index_key(job.tenant, job.id));
  if (job.task_list && !purge_list(txn, job, budget)) {
    job.deleted = true;
    (void)put_job(txn, job);  // a failed put poisons the transaction: its commit reports it
    return false;
  }
  if (job.task_list && c.policy.results) c.policy.results->remove(job.id);
  del_lease(txn, job.task_id);
  txn.del(db::queued, job.task_id);
  txn.del(db::tasks, job.task_id);
  txn.del(db::jobs, job.id);
  return true;
}

result<op_reply> apply_purge(op_ctx& c, const purge_jobs_op& op) {
  auto& txn = c.txn;
  size_t budget = purge_tasks_per_txn;
  for (const auto& [at, id] : op.due) {
    txn.del(db::retention, time_index_key(at, id));
    auto job = get_job(txn, id);
    if (!job || !is_terminal(job->status)) continue;
    if (!purge_job(c, *job, budget)) {  // the rest at the next tick
      SY_TRY(txn.put(db::retention, time_index_key(at, id), ""));
      break;
    }
    ++c.reply.purged;
  }
  c.reply.what = op_reply::kind::done;
  return c.reply;
}

result<op_reply> apply_delete(op_ctx& c, const delete_job_op& op) {
  auto& txn = c.txn;
  auto job = get_job(txn, op.job_id);
  if (!job || !job->owned_by(op.tenant)) return reply(op_reply::kind::not_found);
  if (!is_terminal(job->status)) {  // stop it first: its running attempts are fenced out
    if (job->task_list) {
      SY_TRY(stop_list(c, *job, job_status::cancelled, cancelled_error(), op.now_ms));
    } else if (auto task = get_task(txn, job->task_id)) {
      c.reply.abort_inflight = task->state == task_state::leased;
      SY_TRY(close_task(txn, *task));
      c.reply.task = std::move(task);
    }
  }
  txn.del(db::retention,
          time_index_key(job->finished_at_ms + retention_ms(c.policy, job->status), job->id));
  if (job->deadline_ms > 0) txn.del(db::deadlines, time_index_key(job->deadline_ms, job->id));
  size_t budget = purge_tasks_per_txn;
  if (!purge_job(c, *job, budget))  // a large list: the reaper removes the rest in steps
    SY_TRY(txn.put(db::retention, time_index_key(op.now_ms, job->id), ""));
  c.reply.changed_jobs.push_back(job->id);
  c.reply.what = op_reply::kind::done;
  c.reply.job = std::move(job);
  return c.reply;
}

result<op_reply> apply_webhook_result(op_ctx& c, const webhook_result_op& op) {
  auto& txn = c.txn;
  using outcome = webhook_result_op::outcome;
  if (op.what == outcome::delivered) {
    if (del_webhook(txn, op.seq)) SY_TRY(add_counter(txn, "webhooks_delivered", 1));
    return reply(op_reply::kind::done);
  }
  if (op.what == outcome::dropped) {
    if (del_webhook(txn, op.seq)) SY_TRY(add_counter(txn, "webhooks_dropped", 1));
    return reply(op_reply::kind::done);
  }
  auto w = get_webhook(txn, op.seq);
  if (!w) return reply(op_reply::kind::stale);
  w->attempts = op.attempts;
  w->next_at_ms = op.next_at_ms;
  w->last_error = op.error;
  SY_TRY(put_webhook(txn, *w));
  return reply(op_reply::kind::done);
}

}  // namespace

namespace {

/// When `b` entered status `s` (ms; the record keeps seconds).
int64_t entered_ms(const batch_record& b, batch_status s) {
  switch (s) {
    case batch_status::in_progress:
      return b.in_progress_at * 1000;
    case batch_status::finalizing:
      return b.finalizing_at * 1000;
    case batch_status::cancelling:
      return b.cancelling_at * 1000;
    default:
      return b.created_at * 1000;
  }
}

/// A batch's status change as a job's event (docs/batches.md, "A batch as a job"): when the
/// status it shows in the job vocabulary changed, the event is stored (SSE) and announced on NATS
/// like a job's, and the listing index keeps that status for `GET /v1/jobs?status=`.
status record_batch_event(write_txn& txn, const store_policy& policy, op_reply& r,
                          std::optional<batch_status> before, int64_t at_ms) {
  auto& b = *r.batch;
  const job_status now = job_status_of(b.status);
  std::optional<job_status> previous;
  if (before) previous = job_status_of(*before);
  if (previous == now) return ok;
  auto job = job_of(b);
  op_ctx c{txn, policy, r};
  std::optional<job_error> why;
  if (is_terminal(now) && job.error) why = job.error;
  SY_TRY(record_event(c, job, previous, std::move(why), at_ms));
  b.event_seq = job.event_seq;
  SY_TRY(put_batch(txn, b));
  return txn.put(db::batch_index, job_index_key(b.tenant, b.id), to_string(now));
}

/// A batch operation, and the status change it made (if any) in its reply.
template <class Op>
result<op_reply> apply_batch_noting_change(write_txn& txn, const store_policy& policy,
                                           const Op& op) {
  std::optional<batch_status> before;
  if constexpr (requires { op.id; }) {
    if (auto b = get_batch(txn, op.id)) before = b->status;
  }
  auto r = apply_batch(txn, op);
  if (!r || !r->batch || r->what != op_reply::kind::done) return r;
  const auto& b = *r->batch;
  if (before == b.status) return r;
  status_change change;
  change.batch = true;
  change.id = b.id;
  change.trace = b.trace;
  change.from = before ? std::string(to_string(*before)) : std::string();
  change.to = to_string(b.status);
  change.reason = b.stop_code;
  change.created_at_ms = b.created_at * 1000;
  change.started_at_ms = b.in_progress_at * 1000;
  change.since_ms = before ? entered_ms(b, *before) : change.created_at_ms;
  change.at_ms = change.created_at_ms;
  if constexpr (requires { op.now_ms; }) change.at_ms = op.now_ms;
  change.size = b.total;
  const int64_t at_ms = change.at_ms;
  r->changes.push_back(std::move(change));
  if (auto s = record_batch_event(txn, policy, *r, before, at_ms); !s) return s.error();
  return r;
}

}  // namespace

result<op_reply> apply(write_txn& txn, const write_op& op, const store_policy& policy) {
  op_reply r;
  op_ctx c{txn, policy, r};
  return std::visit(
      [&](const auto& o) -> result<op_reply> {
        using T = std::decay_t<decltype(o)>;
        if constexpr (std::is_same_v<T, create_job_op>) return apply_create(c, o);
        if constexpr (std::is_same_v<T, create_list_op>) return apply_create_list(c, o);
        if constexpr (std::is_same_v<T, ingest_chunk_op>) return apply_ingest_chunk(c, o);
        if constexpr (std::is_same_v<T, latch_list_op>) return apply_latch(c, o);
        if constexpr (std::is_same_v<T, ingest_failed_op>) return apply_ingest_failed(c, o);
        if constexpr (std::is_same_v<T, append_tasks_op>) return apply_append(c, o);
        if constexpr (std::is_same_v<T, start_attempt_op>) return apply_start(c, o);
        if constexpr (std::is_same_v<T, extend_lease_op>) return apply_extend(txn, o);
        if constexpr (std::is_same_v<T, finish_attempt_op>) return apply_finish(c, o);
        if constexpr (std::is_same_v<T, republish_op>) return apply_republish(c, o);
        if constexpr (std::is_same_v<T, outbox_ack_op>) return apply_outbox_ack(c, o);
        if constexpr (std::is_same_v<T, cancel_job_op>) return apply_cancel(c, o);
        if constexpr (std::is_same_v<T, expire_job_op>) return apply_expire(c, o);
        if constexpr (std::is_same_v<T, purge_jobs_op>) return apply_purge(c, o);
        if constexpr (std::is_same_v<T, delete_job_op>) return apply_delete(c, o);
        if constexpr (std::is_same_v<T, rerun_list_op>) return apply_rerun(c, o);
        if constexpr (std::is_same_v<T, webhook_result_op>) return apply_webhook_result(c, o);
        if constexpr (is_batch_op<T>) return apply_batch_noting_change(txn, policy, o);
        if constexpr (std::is_same_v<T, delete_batch_op>) return apply_batch(txn, o);
      },
      op);
}

std::string known_model_key(std::string_view model) {
  return std::string(known_model_prefix) + std::string(model);
}

}  // namespace sy::storage
