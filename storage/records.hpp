#pragma once
/// Records kept in LMDB. Jobs, tasks, leases and events are stored in a compact binary encoding
/// (encode_* below, schema 3; the compact JSON of older stores is still read); the other records
/// as compact JSON. Each has an `inspect` overload so that the operations carrying them travel in
/// actor messages as values. Owner: the storage writer writes them; anyone may read them in a
/// read transaction.

#include <cstdint>
#include <optional>
#include <string>
#include <variant>

#include <nlohmann/json.hpp>

#include "storage/batch_records.hpp"
#include "storage/inspect.hpp"

namespace sy::storage {

/// Client-visible job states (docs/state-machine.md).
/// Stored by number (records.hpp, schema 3): new states go at the end, never in between.
/// `ingesting`: a task list still taking tasks (a staged list being read, or an open job); its
/// tasks may run meanwhile (docs/task-lists.md).
enum class job_status {
  queued,
  in_progress,
  cancelling,
  completed,
  failed,
  cancelled,
  expired,
  ingesting
};

/// Internal task states. `leased` means an attempt holds a lease; the lease record says until when.
/// Stored by number, like job_status: append only.
enum class task_state { queued, leased, done };

std::string_view to_string(job_status s);
std::optional<job_status> job_status_from(std::string_view s);
bool is_terminal(job_status s);
std::string_view to_string(task_state s);
std::optional<task_state> task_state_from(std::string_view s);

/// Where a job's tasks come from (DESIGN.md, "Vocabulary"): one request, a list of tasks, or an
/// OpenAI batch input file. A batch's id is `batch_<ULID>`; a list is a job with `task_list`.
enum class job_kind { single, list, batch };
std::string_view to_string(job_kind k);
std::optional<job_kind> job_kind_from(std::string_view s);
bool is_batch_id(std::string_view id);

/// The gateway's answer, recorded verbatim (status and body text).
struct gateway_result {
  int status_code = 0;
  std::string body;  ///< the response body as the gateway sent it (usually JSON text)

  bool operator==(const gateway_result&) const = default;
};

/// Why a job failed: a stable code and a human-readable message.
struct job_error {
  std::string code;
  std::string message;

  bool operator==(const job_error&) const = default;
};

/// Where the tasks of a task-list job stand (docs/task-lists.md). Kept in the job record and
/// changed in the same transaction as each task's transition, never by scanning the tasks.
/// `queued` counts every task not yet started, published to JetStream or not.
struct task_counts {
  int64_t total = -1;  ///< -1 until the list is latched (every task known)
  int64_t queued = 0;
  int64_t in_progress = 0;
  int64_t completed = 0;
  int64_t failed = 0;
  int64_t cancelled = 0;

  int64_t finished() const { return completed + failed + cancelled; }
  bool operator==(const task_counts&) const = default;
};

/// A job: what a client submitted, and where it is in its life.
struct job_record {
  std::string id;      ///< job_<ULID>
  std::string tenant;  ///< owner
  std::string endpoint;
  std::string model;
  std::string body;  ///< the OpenAI request body as JSON text
  nlohmann::json metadata = nlohmann::json::object();
  std::string idempotency_key;  ///< empty when none was given
  std::string
      request_hash;  ///< hex SHA-256 of the canonical submission; only with an idempotency key
  std::string task_id;
  int max_attempts = 3;
  int attempts = 0;  ///< attempts started so far
  job_status status = job_status::queued;
  int64_t created_at_ms = 0;
  int64_t started_at_ms = 0;   ///< 0 until the first attempt starts
  int64_t finished_at_ms = 0;  ///< 0 until terminal
  int64_t updated_at_ms = 0;
  std::optional<gateway_result> result;
  std::optional<job_error> error;
  std::string webhook_url;     ///< where state changes are POSTed; empty: nowhere
  int64_t deadline_ms = 0;     ///< absolute; not finished by then → expired. 0: none
  uint64_t event_seq = 0;      ///< sequence number of the job's latest event (1 = created)
  bool input_dropped = false;  ///< `body` was deleted after the job ended (retain_inputs: false)
  // --- task-list jobs only (schema 4); a single-request job leaves them at their defaults
  bool task_list = false;  ///< the job runs a list of tasks (`tasks`), not `body`
  task_counts counts;
  int64_t ingested = 0;       ///< tasks written so far: indexes 0 .. ingested-1 exist
  int64_t next_publish = 0;   ///< tasks below this index have been published to JetStream
  int64_t live = 0;           ///< published tasks not finished yet (at most `window`)
  int64_t window = 0;         ///< most tasks published and unfinished at once (max_inflight)
  std::string ingest_path;    ///< the staged list still to read (JSONL); empty: none (open or done)
  int64_t ingest_offset = 0;  ///< bytes of it read into tasks 0 .. ingested-1
  std::vector<batch_error> errors;  ///< why the ingest failed: bad lines, with their numbers
  int run = 1;                      ///< 1, then + 1 for each rerun of its failed tasks
  bool deleted = false;      ///< DELETE'd, its tasks still being removed in steps: gone for clients
  bool task_events = false;  ///< publish an event on NATS for each task's transition
  /// A runtime job's storage grants as canonical JSON (config::s3_grants_json); empty: none
  std::string grants;
  /// The job's span under the client's, when the client sent a traceparent (runtime/trace.hpp's
  /// to_keep), and the client's tracestate. Empty otherwise: the trace is derived from the id.
  std::string trace;
  std::string trace_state;

  job_kind kind() const {
    if (is_batch_id(id)) return job_kind::batch;
    return task_list ? job_kind::list : job_kind::single;
  }

  /// Whether `t`'s requests see this job (its tenant's, and not deleted).
  bool owned_by(std::string_view t) const { return !deleted && tenant == t; }

  bool operator==(const job_record&) const = default;
};

/// One state change of a job (kept in db::events; shown by SSE, webhooks and NATS events).
struct event_record {
  std::string job_id;
  uint64_t seq = 0;  ///< 1, 2, ... per job
  job_status state = job_status::queued;
  std::optional<job_status> previous;  ///< none for the creation event
  int64_t at_ms = 0;
  int attempt = 0;
  std::optional<job_error> error;  ///< why: the terminal error, or the failed attempt's error

  bool operator==(const event_record&) const = default;
};

/// A job's state change as it is announced (NATS, webhooks, SSE): the event and what the job
/// showed at that moment — taken in the transaction of the change, since a later one changes
/// the job. Rendered by whoever sends it (actors/event_json.hpp).
struct job_event {
  event_record event;
  bool task_list = false;
  task_counts counts;                    ///< a task list's counts after the change
  std::optional<gateway_result> result;  ///< terminal: the answer, when within the inline limit
  bool result_elsewhere = false;         ///< terminal: an answer over the limit, read at the job

  bool operator==(const job_event&) const = default;
};

/// `ev` of `job` as announced, its result carried when at most `inline_result_bytes` long.
job_event job_event_of(const job_record& job, event_record ev, int64_t inline_result_bytes);

/// A webhook delivery waiting to be made (db::webhooks, keyed by `seq`). The event is taken at
/// the transition and rendered by the deliverer the same way at every retry.
struct webhook_record {
  uint64_t seq = 0;
  std::string job_id;
  std::string url;
  job_event event;
  std::string body;  ///< a previous build's rendered body, sent as it is; empty: render `event`
  int attempts = 0;  ///< deliveries tried so far
  int64_t next_at_ms = 0;  ///< not before
  std::string last_error;
  /// A batch's terminal transition (`job_id` is the batch's id), sent as OpenAI's event
  /// `batch.<status>`; empty: a job's event (`event`).
  std::string batch_status;
  int64_t created_at_ms = 0;  ///< when the transition happened (a batch's event's created_at)
};

/// One executable unit of a job. For a single-request job there is exactly one task.
struct task_record {
  std::string id;  ///< the job's ULID, "-", the index (ids grow with time: docs/storage.md)
  std::string job_id;
  std::string tenant;
  std::string model;
  int index = 0;
  int attempt =
      1;  ///< the current attempt number (1-based); a message for another attempt is stale
  int max_attempts = 3;
  task_state state = task_state::queued;
  int64_t not_before_ms = 0;  ///< earliest time the current attempt may start (retry backoff)
  int64_t queued_at_ms = 0;   ///< when the current attempt's message was last queued (reconcile)
  std::string last_error;
  // --- tasks of task-list jobs only (schema 4)
  std::string custom_id;                   ///< the client's id, unique within the job; may be empty
  std::string body;                        ///< the request body as JSON text
  job_status status = job_status::queued;  ///< queued, in_progress, completed, failed, cancelled
  std::optional<gateway_result> result;    ///< the last answer of the gateway
  std::optional<job_error> error;          ///< why the task failed or was cancelled
  int64_t started_at_ms = 0;               ///< the first attempt's start
  int64_t finished_at_ms = 0;
  /// At or above 0: `result`'s body is not in the record but in the job's result segment
  /// (storage/result_segments.hpp), `result_length` bytes from here.
  int64_t result_offset = -1;
  int64_t result_length = 0;

  bool operator==(const task_record&) const = default;
};

/// The right to run one attempt of a task until `expires_at_ms`. Only the holder of the current
/// token may extend it or complete the task (fencing, DESIGN.md durability rule 3).
struct lease_record {
  std::string task_id;
  int attempt = 0;
  std::string token;
  int64_t expires_at_ms = 0;
  std::string holder;  ///< node instance id (a new one per process start)
};

/// An idempotency key: which job it made, and a hash of the request that made it.
struct idempotency_record {
  std::string job_id;
  std::string request_hash;
  int64_t created_at_ms = 0;
};

/// The message of a task's current attempt on its queue: a dispatcher of `queue` runs it.
struct task_message {
  std::string queue;  ///< the task's model (or a runtime's queue)
  std::string task_id;
  int attempt = 0;
  int64_t republished_at_ms = 0;  ///< the reconcile sweeper's copy (a new message id); 0: none

  bool operator==(const task_message&) const = default;
};

/// A task of a list changed state (its job asked for task events).
struct task_event {
  std::string job_id;
  std::string task_id;
  std::string custom_id;  ///< empty: none
  int64_t index = 0;
  job_status state = job_status::queued;
  int attempt = 0;
  std::optional<job_error> error;
  std::optional<gateway_result> result;  ///< only when within the inline limit
  int64_t at_ms = 0;

  bool operator==(const task_event&) const = default;
};

/// A task (or a staged list's ingest) that failed for good, for SY_DLQ.
struct dead_letter {
  std::string job_id;
  int run = 1;
  std::string task_id;  ///< empty: the list's ingest failed (no custom_id, model, attempts)
  std::string custom_id;
  std::string model;
  int attempts = 0;
  job_error error;
  int64_t at_ms = 0;

  bool operator==(const dead_letter&) const = default;
};

/// A message a previous build stored already rendered: published as it is.
struct rendered_message {
  std::string msg_id, subject, payload;

  bool operator==(const rendered_message&) const = default;
};

/// "Publish this" — committed in the same transaction as the state change that caused it, as
/// what happened; the outbox relay renders subject, Nats-Msg-Id and payload when it publishes.
struct outbox_record {
  uint64_t seq = 0;  ///< key in the outbox database (monotonic)
  std::variant<task_message, job_event, task_event, dead_letter, rendered_message> what;

  bool operator==(const outbox_record&) const = default;
};

/// The stored values of jobs, tasks, leases and events (schema 3): `\x01`, then every field in
/// a fixed order — integers as LEB128 varints (signed ones zigzagged), strings and the
/// metadata's JSON text length-prefixed, enums by number, optionals behind a 0/1 flag
/// (docs/storage.md has the field order). No escaping when a body is written and no JSON parse
/// when it is read; the job is re-written at every state change. Fields are only ever appended:
/// a value that ends early reads the missing ones as defaults. decode_* also read the compact
/// JSON of older stores (to_json / *_from_json below), and give nullopt for a value that is
/// neither (cut short, an enum out of range).
std::string encode_job(const job_record& r);
std::optional<job_record> decode_job(std::string_view value);
std::string encode_task(const task_record& r);
std::optional<task_record> decode_task(std::string_view value);
std::string encode_lease(const lease_record& r);
std::optional<lease_record> decode_lease(std::string_view value);
std::string encode_event(const event_record& r);
std::optional<event_record> decode_event(std::string_view value);

/// The compact-JSON form of schema 1 and 2, still read (decode_*); idempotency keys are still
/// written this way.
nlohmann::json to_json(const job_record& r);
job_record job_from_json(const nlohmann::json& j);
nlohmann::json to_json(const task_record& r);
task_record task_from_json(const nlohmann::json& j);
nlohmann::json to_json(const lease_record& r);
lease_record lease_from_json(const nlohmann::json& j);
nlohmann::json to_json(const idempotency_record& r);
idempotency_record idempotency_from_json(const nlohmann::json& j);
/// The outbox value (the sequence is the key): `\x02`, the alternative's index, its fields as
/// in the binary values above. A rendered_message is written as the encoding before it,
/// `\x01` msg_id `\0` subject `\0` payload.
std::string encode_outbox(const outbox_record& r);
/// Reads the current encoding, and as a rendered_message the two before it (`\x01`..., and the
/// compact JSON `{"sq","id","sb","pl"}`); nullopt for a value that is none of them.
std::optional<outbox_record> decode_outbox(std::string_view value);
/// The webhook value: binary (`\x01`, fields as above); the compact JSON of older stores is
/// read with its rendered body.
std::string encode_webhook(const webhook_record& r);
std::optional<webhook_record> decode_webhook(std::string_view value);
nlohmann::json to_json(const event_record& r);
event_record event_from_json(const nlohmann::json& j);

// --- inspect (storage/inspect.hpp): the records that travel in messages to the storage writer

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, job_error& x) {
  return f(x.code, x.message);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, gateway_result& x) {
  return f(x.status_code, x.body);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, dead_letter& x) {
  return f(x.job_id, x.run, x.task_id, x.custom_id, x.model, x.attempts, x.error, x.at_ms);
}

/// As its stored encoding (encode_job), so the field list lives in one place.
template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, job_record& x) {
  return inspect_encoded(
      f, x, [](const job_record& r) { return encode_job(r); },
      [](std::string_view v) { return decode_job(v); });
}

/// As its stored encoding (encode_task).
template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, task_record& x) {
  return inspect_encoded(
      f, x, [](const task_record& r) { return encode_task(r); },
      [](std::string_view v) { return decode_task(v); });
}

/// As its stored encoding (encode_event).
template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, event_record& x) {
  return inspect_encoded(
      f, x, [](const event_record& r) { return encode_event(r); },
      [](std::string_view v) { return decode_event(v); });
}

/// The status a client sees for a task of a list: its own, except that a task still waiting when
/// its list ended (never published, so never written again) ends with the list — `cancelled`
/// when the job was cancelled, `failed` when it expired or failed.
job_status shown_status(const job_record& job, const task_record& task);

}  // namespace sy::storage
