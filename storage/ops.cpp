#include "storage/ops.hpp"

#include <charconv>

namespace sy::storage {
namespace {

/// Propagates a storage error out of `apply`.
#define SY_TRY(expr)                          \
  do {                                        \
    if (auto st_ = (expr); !st_) return st_.error(); \
  } while (0)

op_reply reply(op_reply::kind k) {
  op_reply r;
  r.what = k;
  return r;
}

result<op_reply> apply_create(write_txn& txn, const create_job_op& op) {
  const auto& job = op.job;
  if (!job.idempotency_key.empty()) {
    if (auto idem = get_idempotency(txn, job.tenant, job.idempotency_key)) {
      op_reply r = reply(idem->request_hash == job.request_hash ? op_reply::kind::existing
                                                                : op_reply::kind::conflict);
      r.job = get_job(txn, idem->job_id);
      if (!r.job) return make_error("storage_corrupt", "idempotency key " + job.idempotency_key +
                                                           " names missing job " + idem->job_id);
      return r;
    }
    SY_TRY(put_idempotency(txn, job.tenant, job.idempotency_key,
                           idempotency_record{job.id, job.request_hash, job.created_at_ms}));
  }
  SY_TRY(put_job(txn, job));
  task_record task = op.task;
  task.queued_at_ms = job.created_at_ms;
  SY_TRY(put_task(txn, task));
  SY_TRY(txn.put(db::meta, known_model_key(job.model), ""));
  append_outbox(txn, op.publish);
  op_reply r = reply(op_reply::kind::done);
  r.job = job;
  r.task = std::move(task);
  r.outbox_appended = true;
  return r;
}

result<op_reply> apply_start(write_txn& txn, const start_attempt_op& op) {
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
  task->state = task_state::leased;
  SY_TRY(put_lease(txn, lease_record{task->id, op.attempt, op.token,
                                     op.now_ms + op.lease_ttl_ms, op.holder}));
  SY_TRY(put_task(txn, *task));
  job->status = job_status::in_progress;
  job->attempts = op.attempt;
  if (job->started_at_ms == 0) job->started_at_ms = op.now_ms;
  job->updated_at_ms = op.now_ms;
  SY_TRY(put_job(txn, *job));
  op_reply r = reply(op_reply::kind::done);
  r.job = std::move(job);
  r.task = std::move(task);
  return r;
}

/// The current lease, if (task, attempt, token) still holds it.
std::optional<lease_record> current_lease(const write_txn& txn, const std::string& task_id,
                                          int attempt, const std::string& token) {
  auto lease = get_lease(txn, task_id);
  if (!lease || lease->attempt != attempt || lease->token != token) return std::nullopt;
  return lease;
}

result<op_reply> apply_extend(write_txn& txn, const extend_lease_op& op) {
  auto lease = current_lease(txn, op.task_id, op.attempt, op.token);
  if (!lease) return reply(op_reply::kind::stale);
  lease->expires_at_ms = op.expires_at_ms;
  SY_TRY(put_lease(txn, *lease));
  return reply(op_reply::kind::done);
}

void finish_job(job_record& job, job_status status, int64_t now_ms) {
  job.status = status;
  job.finished_at_ms = now_ms;
  job.updated_at_ms = now_ms;
}

result<op_reply> apply_finish(write_txn& txn, const finish_attempt_op& op) {
  if (!current_lease(txn, op.task_id, op.attempt, op.token)) return reply(op_reply::kind::stale);
  auto task = get_task(txn, op.task_id);
  if (!task || task->state != task_state::leased || task->attempt != op.attempt)
    return reply(op_reply::kind::stale);
  auto job = get_job(txn, task->job_id);
  if (!job) return reply(op_reply::kind::not_found);
  del_lease(txn, op.task_id);
  op_reply r = reply(op_reply::kind::done);
  job->updated_at_ms = op.now_ms;
  switch (op.end) {
    case attempt_end::succeeded:
      task->state = task_state::done;
      job->result = op.response;
      job->error.reset();
      finish_job(*job, job_status::completed, op.now_ms);
      break;
    case attempt_end::rejected:
      task->state = task_state::done;
      task->last_error = op.error_message;
      job->result = op.response;
      job->error = job_error{op.error_code, op.error_message};
      finish_job(*job, job_status::failed, op.now_ms);
      break;
    case attempt_end::retry:
      task->last_error = op.error_message;
      if (op.attempt >= task->max_attempts) {
        task->state = task_state::done;
        job->result = op.response;
        job->error = job_error{op.error_code, op.error_message + " (attempt " +
                                                  std::to_string(op.attempt) + " of " +
                                                  std::to_string(task->max_attempts) + ")"};
        finish_job(*job, job_status::failed, op.now_ms);
      } else {
        task->state = task_state::queued;
        task->attempt = op.attempt + 1;
        task->not_before_ms = op.now_ms + op.backoff_ms;
        task->queued_at_ms = op.now_ms;
        job->status = job_status::queued;
        append_outbox(txn, outbox_record{0, task_message_id(task->id, task->attempt), op.subject,
                                         task_message_payload(task->id, task->attempt)});
        r.outbox_appended = true;
      }
      break;
    case attempt_end::released:
      task->state = task_state::queued;
      task->queued_at_ms = op.now_ms;
      job->status = job_status::queued;
      job->attempts = op.attempt - 1;
      break;
  }
  SY_TRY(put_task(txn, *task));
  SY_TRY(put_job(txn, *job));
  r.job = std::move(job);
  r.task = std::move(task);
  return r;
}

result<op_reply> apply_republish(write_txn& txn, const republish_op& op) {
  auto task = get_task(txn, op.task_id);
  if (!task || task->state != task_state::queued || task->attempt != op.attempt)
    return reply(op_reply::kind::stale);
  task->queued_at_ms = op.now_ms;
  SY_TRY(put_task(txn, *task));
  // A distinct message id: the original may still sit in JetStream's duplicate window.
  append_outbox(txn, outbox_record{0,
                                   task_message_id(task->id, task->attempt) + ":r" +
                                       std::to_string(op.now_ms),
                                   op.subject, task_message_payload(task->id, task->attempt)});
  op_reply r = reply(op_reply::kind::done);
  r.outbox_appended = true;
  r.task = std::move(task);
  return r;
}

result<op_reply> apply_outbox_ack(write_txn& txn, const outbox_ack_op& op) {
  for (auto seq : op.seqs) del_outbox(txn, seq);
  return reply(op_reply::kind::done);
}

}  // namespace

result<op_reply> apply(write_txn& txn, const write_op& op) {
  return std::visit(
      [&](const auto& o) -> result<op_reply> {
        using T = std::decay_t<decltype(o)>;
        if constexpr (std::is_same_v<T, create_job_op>) return apply_create(txn, o);
        if constexpr (std::is_same_v<T, start_attempt_op>) return apply_start(txn, o);
        if constexpr (std::is_same_v<T, extend_lease_op>) return apply_extend(txn, o);
        if constexpr (std::is_same_v<T, finish_attempt_op>) return apply_finish(txn, o);
        if constexpr (std::is_same_v<T, republish_op>) return apply_republish(txn, o);
        if constexpr (std::is_same_v<T, outbox_ack_op>) return apply_outbox_ack(txn, o);
      },
      op);
}

std::string known_model_key(std::string_view model) {
  return std::string(known_model_prefix) + std::string(model);
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

}  // namespace sy::storage
