#pragma once
/// The state-machine operations: each is one self-describing write applied inside the storage
/// writer's group-commit transaction. Pure functions of (transaction, op, time) so they are unit
/// tested without an actor system. Owner: only the storage writer thread calls `apply`.
///
/// Fencing (DESIGN.md rule 3): every operation on a running attempt names (task, attempt, token);
/// anything that does not match the current lease is answered `stale` and changes nothing.

#include <cstdint>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "config/result.hpp"
#include "storage/lmdb_env.hpp"
#include "storage/records.hpp"

namespace sy::storage {

/// Create a job and its single task, and queue the task's first message — unless the tenant's
/// idempotency key already names a job (same request: that job; different request: conflict).
struct create_job_op {
  job_record job;
  task_record task;
  outbox_record publish;  ///< the task's first message
};

/// Try to start attempt `attempt` of a task under a new lease.
struct start_attempt_op {
  std::string task_id;
  int attempt = 0;
  std::string token;
  std::string holder;
  int64_t now_ms = 0;
  int64_t lease_ttl_ms = 0;
};

/// Push the lease of a running attempt further out.
struct extend_lease_op {
  std::string task_id;
  int attempt = 0;
  std::string token;
  int64_t expires_at_ms = 0;
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
  std::string subject;  ///< for retry: where the next attempt's message goes
};

/// Queue the current attempt's message again (the reconcile sweeper, DESIGN.md rule 6: the
/// message was lost, e.g. JetStream lost recently acked data in a machine crash). Applies only if
/// the task is still queued at `attempt`; a duplicate it may create is fenced out at start.
struct republish_op {
  std::string task_id;
  int attempt = 0;
  int64_t now_ms = 0;
  std::string subject;
};

/// Delete outbox records that JetStream has acknowledged.
struct outbox_ack_op {
  std::vector<uint64_t> seqs;
};

using write_op =
    std::variant<create_job_op, start_attempt_op, extend_lease_op, finish_attempt_op,
                 republish_op, outbox_ack_op>;

/// The answer to an operation.
struct op_reply {
  enum class kind {
    done,         ///< applied
    existing,     ///< create: the idempotency key named an existing job (returned in `job`)
    conflict,     ///< create: same idempotency key, different request
    stale,        ///< fenced out: the attempt/token is not current, or the task is finished
    busy,         ///< start: another live lease holds the task
    not_yet,      ///< start: the attempt's backoff has not elapsed (`delay_ms` left)
    not_found,    ///< the task or job does not exist
  };
  kind what = kind::done;
  std::optional<job_record> job;
  std::optional<task_record> task;
  int64_t delay_ms = 0;
  bool outbox_appended = false;  ///< tells the writer to wake the outbox relay
};

/// Applies one operation. Errors are storage failures (e.g. map_full): the caller aborts the
/// transaction (and, for map_full, grows the map and retries the whole batch).
result<op_reply> apply(write_txn& txn, const write_op& op);

/// Every model that ever had a job is remembered in `db::meta` under this prefix, so that a
/// restarted engine subscribes to its queue again.
inline constexpr std::string_view known_model_prefix = "model/";
std::string known_model_key(std::string_view model);

/// The task message payload and its deterministic Nats-Msg-Id.
std::string task_message_payload(const std::string& task_id, int attempt);
std::string task_message_id(const std::string& task_id, int attempt);
/// Parses a task message payload; nullopt when it is not one of ours.
std::optional<std::pair<std::string, int>> parse_task_message(std::string_view payload);

}  // namespace sy::storage
