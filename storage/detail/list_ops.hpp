#pragma once
/// The task-list part of the state machine (storage/list_ops.cpp; docs/task-lists.md): creating
/// a list, a task's attempt starting and ending, the window of published tasks, the counts, and
/// stopping a list. Called by the operations of storage/ops.cpp when the job is a task list.
/// Private to storage/; only the storage writer thread runs them.

#include "storage/detail/op_common.hpp"

namespace sy::storage::detail {

result<op_reply> apply_create_list(op_ctx& c, const create_list_op& op);
result<op_reply> apply_ingest_chunk(op_ctx& c, const ingest_chunk_op& op);
result<op_reply> apply_latch(op_ctx& c, const latch_list_op& op);
result<op_reply> apply_ingest_failed(op_ctx& c, const ingest_failed_op& op);
result<op_reply> apply_append(op_ctx& c, const append_tasks_op& op);
result<op_reply> apply_rerun(op_ctx& c, const rerun_list_op& op);

/// An attempt of a list's task started (its lease is written): the task's status, the counts,
/// and the job's own `in_progress` at its first start. The caller writes the task and the job.
status list_task_started(op_ctx& c, job_record& job, task_record& task, int64_t now_ms);

/// An attempt of a list's task ended (its lease was current and is deleted): the task's outcome,
/// the counts, the next tasks of the window, and the job's completion once every task of a
/// latched list has finished. The caller writes the task and the job.
status list_task_finished(op_ctx& c, job_record& job, task_record& task,
                          const finish_attempt_op& op);

/// Cancel (`to` cancelled) or deadline (`to` expired): every published task not finished ends
/// now — `cancelled`, or `failed` with the deadline's error — and its running attempt is named in
/// `c.reply.abort_tasks` (its outcome is fenced out); the tasks never published count with them
/// and read that way (docs/task-lists.md). The caller writes the job.
status stop_list(op_ctx& c, job_record& job, job_status to, const job_error& why, int64_t now_ms);

/// Retention and DELETE: the list's tasks, their leases, queue and window entries and custom_id
/// index, and its append keys — at most `budget` tasks (lowered by those removed). False when
/// tasks are left for another transaction.
bool purge_list(write_txn& t, const job_record& job, size_t& budget);

}  // namespace sy::storage::detail
