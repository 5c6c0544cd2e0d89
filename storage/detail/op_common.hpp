#pragma once
/// What the state-machine operations share (storage/ops.cpp for single jobs, storage/list_ops.cpp
/// for task-list jobs): the transaction context, the job's transitions and their events, and
/// the fixed errors of a stop. Private to storage/; only the storage writer thread runs them.

#include <optional>
#include <string>

#include "storage/ops.hpp"

/// Propagates a storage error out of an operation.
#define SY_TRY(expr)                                 \
  do {                                               \
    if (auto st_ = (expr); !st_) return st_.error(); \
  } while (0)

namespace sy::storage::detail {

/// Everything an operation's transitions need besides the transaction.
struct op_ctx {
  write_txn& txn;
  const store_policy& policy;
  op_reply& reply;
};

op_reply reply(op_reply::kind k);

/// How long a job that ended in `s` is kept (its retention entry is finished + this).
int64_t retention_ms(const store_policy& p, job_status s);

/// Appends the job's next event (its current status, coming from `previous`) and what makes it
/// visible: the NATS event through the outbox and, when the job has a webhook, a delivery.
status record_event(op_ctx& c, job_record& job, std::optional<job_status> previous,
                    std::optional<job_error> why, int64_t now_ms);

/// Moves `job` to `to`: the status, timestamps, indexes (listing, deadline, retention), the
/// input (retain_inputs), and the event. The caller writes the job record afterwards.
status set_status(op_ctx& c, job_record& job, job_status to, int64_t now_ms,
                  std::optional<job_error> why = std::nullopt);

/// Ends a task that a client or a deadline stopped: no attempt may start or finish.
status close_task(write_txn& txn, task_record& task);

job_error deadline_error(const job_record& job, const std::string& last_error);
job_error cancelled_error();
bool past_deadline(const job_record& job, int64_t now_ms);

/// With an idempotency key: answers `existing` or `conflict` in `c.reply` (true) when the key
/// already names a job, else records the key for `job` (false).
result<bool> claim_idempotency(op_ctx& c, const job_record& job);

/// Writes the job and answers `done` with it (and with the task, when given).
result<op_reply> answer_done(op_ctx& c, job_record job, std::optional<task_record> task);

/// Queues `task`'s current attempt: the `queued` index and its message through the outbox.
status publish_task(op_ctx& c, task_record& task, int64_t now_ms);

}  // namespace sy::storage::detail
