#pragma once
/// The state-machine operations: each is one self-describing write applied inside the storage
/// writer's group-commit transaction. Pure functions of (transaction, op, time) so they are unit
/// tested without an actor system. Owner: only the storage writer thread calls `apply`.
///
/// Fencing (DESIGN.md rule 3): every operation on a running attempt names (task, attempt, token);
/// anything that does not match the current lease is answered `stale` and changes nothing.

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <type_traits>
#include <variant>
#include <vector>

#include "config/result.hpp"
#include "storage/batch_ops.hpp"
#include "storage/lmdb_env.hpp"
#include "storage/records.hpp"
#include "storage/result_segments.hpp"

namespace sy::storage {

/// Create a job and its single task, and queue the task's first message (on `task.model`'s
/// queue) — unless the tenant's idempotency key already names a job (same request: that job;
/// different request: conflict).
struct create_job_op {
  job_record job;
  task_record task;

  bool operator==(const create_job_op&) const = default;
};

/// Create a task-list job with every task of its list (a small closed list, answered 201): the
/// job, its tasks, their custom_id index, and the messages of the first `job.window` tasks —
/// unless the tenant's idempotency key already names a job (as create_job_op).
struct create_list_op {
  job_record job;  ///< task_list and window set by the caller; counts and ingested by the op
  std::vector<task_record> tasks;
  /// True: `tasks` is the whole list (latched now, total = its size). False: the job is
  /// `ingesting` — open for appends, or reading `job.ingest_path` (docs/task-lists.md).
  bool latch = true;

  bool operator==(const create_list_op&) const = default;
};

/// One chunk of a staged list's ingest: tasks first_index .. first_index+n-1 (ids, indexes and
/// bodies filled in), and the source's offset after them. Applies only while the job is ingesting
/// with exactly `first_index` tasks: a chunk read again after a crash finds its tasks written
/// (answered `stale` with the job, whose `ingested` and `ingest_offset` say where to go on).
struct ingest_chunk_op {
  std::string job_id;
  int64_t first_index = 0;
  std::vector<task_record> tasks;
  int64_t next_offset = 0;
  int64_t now_ms = 0;

  bool operator==(const ingest_chunk_op&) const = default;
};

/// The list is complete: `total` (the absolute count, which must equal the tasks ingested) is
/// set and the list latched, so the job can complete — in one transaction, so a crash before it
/// leaves the job unable to complete early and a crash after it finds it done. Repeat-safe.
struct latch_list_op {
  std::string job_id;
  int64_t total = 0;
  int64_t now_ms = 0;

  bool operator==(const latch_list_op&) const = default;
};

/// A staged list failed its validation (or could not be read): the job fails with `error` and
/// the bad lines in `errors`. `recoverable` (a system failure, after its retries): the list is
/// kept, so that a rerun resumes the ingest, and a dead letter goes to SY_DLQ.
struct ingest_failed_op {
  std::string job_id;
  job_error error;
  std::vector<batch_error> errors;
  int64_t now_ms = 0;
  bool recoverable = false;

  bool operator==(const ingest_failed_op&) const = default;
};

/// An append to an open list (POST /v1/jobs/{id}/tasks; /close is an empty last batch): the
/// tasks get the next indexes; with `last_batch` the list is latched. With an idempotency key a
/// repeated append adds nothing (`existing`, with the job). Refused (with `refusal`): the key was
/// used for other tasks (idempotency_conflict), the job is not open (job_not_open), a custom_id
/// is already used (duplicate_custom_id, param tasks[i].custom_id), or the list would grow past
/// `max_tasks` (too_many_tasks). Not found: no such job of `tenant`.
struct append_tasks_op {
  std::string tenant;
  std::string job_id;
  std::string idempotency_key;
  std::string request_hash;
  std::vector<task_record> tasks;  ///< model, body, custom_id; ids and indexes by the op
  bool last_batch = false;
  int64_t max_tasks = 0;
  int64_t now_ms = 0;

  bool operator==(const append_tasks_op&) const = default;
};

/// Try to start attempt `attempt` of a task under a new lease.
struct start_attempt_op {
  std::string task_id;
  int attempt = 0;
  std::string token;
  std::string holder;
  int64_t now_ms = 0;
  int64_t lease_ttl_ms = 0;

  bool operator==(const start_attempt_op&) const = default;
};

/// Push the lease of a running attempt further out.
struct extend_lease_op {
  std::string task_id;
  int attempt = 0;
  std::string token;
  int64_t expires_at_ms = 0;
  /// An external worker's heartbeat (docs/workers.md): refused with `lease_expired` once the
  /// lease has run out at `now_ms`, even before the reaper took the task back.
  bool live_lease_only = false;
  int64_t now_ms = 0;

  bool operator==(const extend_lease_op&) const = default;
};

/// How an attempt ended.
enum class attempt_end {
  succeeded,  ///< the gateway answered 2xx: the job completes with its answer
  rejected,   ///< a final answer that is not a success (4xx other than 408/429): the job fails
  retry,      ///< retryable failure: a new attempt after `backoff_ms`, or fail at max_attempts
  released,   ///< shutdown: give the attempt back unchanged (not counted), to run again later
};

/// Record the end of an attempt (fenced by token).
struct finish_attempt_op {
  std::string task_id;
  int attempt = 0;
  std::string token;  ///< empty: the reaper expiring a lease (fenced by attempt and holder)
  attempt_end end = attempt_end::succeeded;
  std::optional<gateway_result> response;  ///< what the gateway answered, if it answered
  std::string error_code;                  ///< for rejected/retry: stable code
  std::string error_message;               ///< for rejected/retry: what failed and why
  int64_t backoff_ms = 0;                  ///< for retry
  int64_t now_ms = 0;
  /// An external worker's outcome: refused with `lease_expired` once the lease has run out at
  /// `now_ms` (the reaper takes the task back; the late outcome is not recorded).
  bool live_lease_only = false;
  /// A chain (task lists; DESIGN rule 3, "the lease is committed first"): when this outcome moves
  /// the list's window, the first task it releases for the same model is leased under
  /// `chain_token` and `chain_holder` in the same transaction, instead of being queued and
  /// published; the reply's `chained` is that task, for the finishing attempt's actor to run
  /// next. Empty: no chain.
  std::string chain_token;
  std::string chain_holder;
  int64_t chain_lease_ttl_ms = 0;

  bool operator==(const finish_attempt_op&) const = default;
};

/// Queue the current attempt's message again (the reconcile sweeper, DESIGN.md rule 6: the
/// message was lost, e.g. JetStream lost recently acked data in a machine crash). Applies only if
/// the task is still queued at `attempt`; a duplicate it may create is fenced out at start.
struct republish_op {
  std::string task_id;
  int attempt = 0;
  int64_t now_ms = 0;

  bool operator==(const republish_op&) const = default;
};

/// Delete outbox records that JetStream has acknowledged.
struct outbox_ack_op {
  std::vector<uint64_t> seqs;

  bool operator==(const outbox_ack_op&) const = default;
};

/// A client cancels a job of `tenant`: queued → cancelled at once; in_progress → cancelling (the
/// caller then aborts the in-flight request; the attempt's end makes it cancelled).
struct cancel_job_op {
  std::string tenant;
  std::string job_id;
  int64_t now_ms = 0;

  bool operator==(const cancel_job_op&) const = default;
};

/// The deadline index says job `job_id` is due at `deadline_ms`: expire it if it is still not
/// terminal (the caller aborts an in-flight request). Stale index entries are removed.
struct expire_job_op {
  std::string job_id;
  int64_t deadline_ms = 0;
  int64_t now_ms = 0;

  bool operator==(const expire_job_op&) const = default;
};

/// Tasks of task lists that one retention or DELETE transaction removes at most: a list larger
/// than this goes in steps (the reaper's ticks), so no transaction holds the writer for long.
inline constexpr size_t purge_tasks_per_txn = 10'000;

/// Retention: delete terminal jobs whose time has come — job, task, lease, idempotency key,
/// events and index entries. Entries are (delete_at_ms, job_id) from the retention index.
struct purge_jobs_op {
  std::vector<std::pair<int64_t, std::string>> due;

  bool operator==(const purge_jobs_op&) const = default;
};

/// DELETE /v1/jobs/{id}: stops the job if it is not finished (its running attempts are named in
/// the reply, as for a cancel, and fenced out), then deletes it with everything that belongs to
/// it. `not_found` for an unknown job or another tenant's (so a repeated delete is one).
struct delete_job_op {
  std::string tenant;
  std::string job_id;
  int64_t now_ms = 0;

  bool operator==(const delete_job_op&) const = default;
};

/// POST /v1/jobs/{id}/rerun: a finished task list runs its failed and cancelled tasks again as
/// run `run + 1`, each with a fresh budget of max_attempts; its timeout, if any, starts again.
/// Refused (job_not_rerunnable) while a run is live or for a job that is not a task list.
struct rerun_list_op {
  std::string tenant;
  std::string job_id;
  int64_t now_ms = 0;

  bool operator==(const rerun_list_op&) const = default;
};

/// The outcome of one webhook delivery attempt.
struct webhook_result_op {
  enum class outcome { delivered, retry, dropped };
  uint64_t seq = 0;
  outcome what = outcome::delivered;
  int attempts = 0;        ///< deliveries tried, including this one
  int64_t next_at_ms = 0;  ///< retry: not before
  std::string error;       ///< retry/dropped: why the last attempt failed

  bool operator==(const webhook_result_op&) const = default;
};

using write_op =
    std::variant<create_job_op, create_list_op, ingest_chunk_op, latch_list_op, ingest_failed_op,
                 append_tasks_op, start_attempt_op, extend_lease_op, finish_attempt_op,
                 republish_op, outbox_ack_op, cancel_job_op, expire_job_op, purge_jobs_op,
                 delete_job_op, rerun_list_op, webhook_result_op, create_file_op, delete_file_op,
                 create_batch_op, batch_ingested_op, batch_lines_op, cancel_batch_op, stop_batch_op,
                 batch_finalizing_op, batch_finish_op, rerun_batch_op, delete_batch_op>;

/// What the operations need to know about the deployment. Set once by the writer's owner.
struct store_policy {
  int64_t inline_result_bytes = 65'536;  ///< events carry results up to this size inline
  int64_t retention_completed_ms = int64_t{24} * 3'600'000;
  int64_t retention_failed_ms = int64_t{7} * 24 * 3'600'000;  ///< failed, expired, cancelled
  bool retain_inputs = true;  ///< false: drop the request body when the job ends
  /// Which job events go to NATS through the outbox (every event is still stored for SSE).
  enum class nats_events { all, terminal, none } events = nats_events::all;
  /// Where task-list results larger than its `inline_bytes()` go. Null: every result stays in
  /// its task record.
  std::shared_ptr<result_segments> results;
};

/// NATS events carry results inline up to this size at most (NATS' default max payload is 1 MiB).
inline constexpr int64_t max_nats_inline_result_bytes = int64_t{256} * 1024;

/// The answer to an operation.
/// A job or batch whose status this operation changed. The writer hands the changes of a commit
/// to the metrics once it is durable (runtime/metrics.hpp): they are counted where the state
/// changes, once, and never for an operation that was rolled back.
struct status_change {
  bool batch = false;         ///< a batch (batch_status names), else a job (job_status names)
  std::string id;             ///< the job's or batch's id
  std::string trace;          ///< its traceparent (runtime/trace.hpp); empty: none
  std::string from;           ///< the status before
  std::string to;             ///< the status after
  std::string reason;         ///< the job's error code when it failed or was re-queued; else empty
  int64_t created_at_ms = 0;  ///< when the job or batch was created
  int64_t started_at_ms = 0;  ///< when it started running; 0: never
  int64_t since_ms = 0;       ///< when it entered `from`
  int64_t at_ms = 0;          ///< when it entered `to`
  int64_t size = 1;           ///< requests in it: 1, a list's tasks, a batch's lines

  bool operator==(const status_change&) const = default;
};

struct op_reply {
  enum class kind {
    done,       ///< applied
    existing,   ///< create: the idempotency key named an existing job (returned in `job`)
    conflict,   ///< create: same idempotency key, different request; cancel_batch: finished
    stale,      ///< fenced out: the attempt/token is not current, or the task is finished
    busy,       ///< start: another live lease holds the task
    not_yet,    ///< start: the attempt's backoff has not elapsed (`delay_ms` left)
    not_found,  ///< the task or job does not exist
    refused,    ///< append: not applied, `refusal` says why
  };
  kind what = kind::done;
  std::optional<job_record> job;
  std::optional<task_record> task;
  int64_t delay_ms = 0;
  bool outbox_appended = false;           ///< tells the writer to wake the outbox relay
  bool webhooks_appended = false;         ///< tells the writer to wake the webhook deliverer
  bool abort_inflight = false;            ///< cancel/expire: abort the running attempt of `task`
  std::vector<std::string> abort_tasks;   ///< cancel/expire of a task list: running tasks to abort
  std::optional<sy::error> refusal;       ///< refused: why, as the client is to be answered
  std::vector<std::string> changed_jobs;  ///< jobs that got a new event (wake their waiters)
  size_t purged = 0;                      ///< purge: jobs deleted
  std::optional<file_record> file;        ///< file operations: the file
  std::optional<batch_record> batch;      ///< batch operations: the batch after the operation
  size_t lines_added = 0;                 ///< batch_lines: lines that were new
  std::vector<status_change> changes;     ///< jobs and batches whose status changed
  std::optional<task_record> chained;     ///< finish with a chain: the task leased next

  bool operator==(const op_reply&) const = default;
};

// --- inspect (storage/inspect.hpp): the operations and the reply as message values

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, create_job_op& x) {
  return f(x.job, x.task);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, create_list_op& x) {
  return f(x.job, x.tasks, x.latch);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, ingest_chunk_op& x) {
  return f(x.job_id, x.first_index, x.tasks, x.next_offset, x.now_ms);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, latch_list_op& x) {
  return f(x.job_id, x.total, x.now_ms);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, ingest_failed_op& x) {
  return f(x.job_id, x.error, x.errors, x.now_ms, x.recoverable);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, append_tasks_op& x) {
  return f(x.tenant, x.job_id, x.idempotency_key, x.request_hash, x.tasks, x.last_batch,
           x.max_tasks, x.now_ms);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, start_attempt_op& x) {
  return f(x.task_id, x.attempt, x.token, x.holder, x.now_ms, x.lease_ttl_ms);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, extend_lease_op& x) {
  return f(x.task_id, x.attempt, x.token, x.expires_at_ms, x.live_lease_only, x.now_ms);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, finish_attempt_op& x) {
  return f(x.task_id, x.attempt, x.token, x.end, optional_field{x.response}, x.error_code,
           x.error_message, x.backoff_ms, x.now_ms, x.live_lease_only, x.chain_token,
           x.chain_holder, x.chain_lease_ttl_ms);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, republish_op& x) {
  return f(x.task_id, x.attempt, x.now_ms);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, outbox_ack_op& x) {
  return f(x.seqs);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, cancel_job_op& x) {
  return f(x.tenant, x.job_id, x.now_ms);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, expire_job_op& x) {
  return f(x.job_id, x.deadline_ms, x.now_ms);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, purge_jobs_op& x) {
  return f(x.due);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, delete_job_op& x) {
  return f(x.tenant, x.job_id, x.now_ms);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, rerun_list_op& x) {
  return f(x.tenant, x.job_id, x.now_ms);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, webhook_result_op& x) {
  return f(x.seq, x.what, x.attempts, x.next_at_ms, x.error);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, status_change& x) {
  return f(x.batch, x.id, x.trace, x.from, x.to, x.reason, x.created_at_ms, x.started_at_ms,
           x.since_ms, x.at_ms, x.size);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, op_reply& x) {
  return f(x.what, optional_field{x.job}, optional_field{x.task}, x.delay_ms, x.outbox_appended,
           x.webhooks_appended, x.abort_inflight, x.changed_jobs, x.purged, optional_field{x.file},
           optional_field{x.batch}, x.lines_added, x.abort_tasks, optional_field{x.refusal},
           x.changes, optional_field{x.chained});
}

/// The Files and Batch API operations (storage/batch_ops.cpp), dispatched by `apply`.
template <class T>
inline constexpr bool is_batch_op =
    std::is_same_v<T, create_file_op> || std::is_same_v<T, delete_file_op> ||
    std::is_same_v<T, create_batch_op> || std::is_same_v<T, batch_ingested_op> ||
    std::is_same_v<T, batch_lines_op> || std::is_same_v<T, cancel_batch_op> ||
    std::is_same_v<T, stop_batch_op> || std::is_same_v<T, batch_finalizing_op> ||
    std::is_same_v<T, batch_finish_op> || std::is_same_v<T, rerun_batch_op>;
result<op_reply> apply_batch(write_txn& t, const create_file_op& op);
result<op_reply> apply_batch(write_txn& t, const delete_file_op& op);
result<op_reply> apply_batch(write_txn& t, const create_batch_op& op);
result<op_reply> apply_batch(write_txn& t, const batch_ingested_op& op);
result<op_reply> apply_batch(write_txn& t, const batch_lines_op& op);
result<op_reply> apply_batch(write_txn& t, const cancel_batch_op& op);
result<op_reply> apply_batch(write_txn& t, const stop_batch_op& op);
result<op_reply> apply_batch(write_txn& t, const batch_finalizing_op& op);
result<op_reply> apply_batch(write_txn& t, const batch_finish_op& op);
result<op_reply> apply_batch(write_txn& t, const rerun_batch_op& op);
/// Not a status change of the batch (it is gone): applied without recording one.
result<op_reply> apply_batch(write_txn& t, const delete_batch_op& op);

/// Applies one operation. Errors are storage failures (e.g. map_full): the caller aborts the
/// transaction (and, for map_full, grows the map and retries the whole batch).
result<op_reply> apply(write_txn& txn, const write_op& op, const store_policy& policy = {});

/// Every model that ever had a job is remembered in `db::meta` under this prefix, so that a
/// restarted engine subscribes to its queue again.
inline constexpr std::string_view known_model_prefix = "model/";
std::string known_model_key(std::string_view model);

/// The id of task `index` of job `job_id` (seed 000: deterministic, so a re-ingest rewrites the
/// same task): the job's ULID, "-", the index in 8 decimal digits — ids sort by index, so a
/// task list pages in its order and a list's tasks append to the last pages of `tasks`.
std::string list_task_id(std::string_view job_id, int64_t index);
/// The index of a task-list task id; nullopt when `task_id` is not one of `job_id`'s.
std::optional<int64_t> list_task_index(std::string_view job_id, std::string_view task_id);

/// The id of the job task `task_id` belongs to ("job_" and the ULID before the dash): a single
/// job's one task and a task list's tasks alike.
std::string job_id_of_task(std::string_view task_id);

/// The key of db::task_custom: job id '/' custom_id.
std::string task_custom_key(std::string_view job_id, std::string_view custom_id);

}  // namespace sy::storage
