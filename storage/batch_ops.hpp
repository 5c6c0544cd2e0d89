#pragma once
/// The write operations of the Files and Batch API, applied by the storage writer like every
/// other operation (storage/ops.hpp), and the typed reads that go with them. Lifecycle and the
/// exactly-once rule: docs/batches.md.
///
/// Exactly once: a batch's result lines live in db::batch_lines under (batch, slot); the
/// first result recorded for a slot wins and later ones are answered `stale`, and the request
/// counts move only when a line is new — so every input line ends in exactly one output or error
/// line and `request_counts` equal the line counts, whatever was retried or redelivered.

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "config/result.hpp"
#include "storage/batch_records.hpp"
#include "storage/records.hpp"

namespace sy::storage {

class txn_view;
class write_txn;

/// Store the record of a file whose bytes are already on disk (fsynced).
struct create_file_op {
  file_record file;

  bool operator==(const create_file_op&) const = default;
};

/// Delete a file of `tenant`: its record and index entries (the caller removes the bytes after
/// the commit). Answers not_found for an unknown id or another tenant's file. An empty tenant
/// matches any (the engine expiring files).
struct delete_file_op {
  std::string tenant;
  std::string id;

  bool operator==(const delete_file_op&) const = default;
};

/// Create a batch in `validating` (its input file must exist: not_found otherwise).
// clang-tidy 14 sees a throw in nlohmann::json's move constructor (its invariant check), which
// the implicitly noexcept moves of this struct (its batch's metadata) call; that check is an
// assert, not a throw. NOLINTNEXTLINE(bugprone-exception-escape)
struct create_batch_op {
  batch_record batch;

  bool operator==(const create_batch_op&) const = default;
};

/// Ingestion ended: validating → in_progress with `total` lines, or → failed with `errors` (not
/// empty) and a total of 0, as OpenAI counts a batch whose input was refused: no request was
/// accepted. A valid batch that is already cancelling keeps that state (the total is recorded).
struct batch_ingested_op {
  std::string id;
  int64_t total = 0;
  std::vector<batch_error> errors;
  int64_t now_ms = 0;

  bool operator==(const batch_ingested_op&) const = default;
};

/// One result line of a batch (output when `ok`, error otherwise).
struct batch_line {
  uint64_t slot = 0;  ///< the request's batch_slot: its identity within the batch
  bool ok = false;
  std::string text;                  ///< the line, OpenAI batch output format, without '\n'
  std::optional<token_usage> usage;  ///< the response's usage, empty when none
  /// Set when the line's retryable failures exhausted its attempts: this dead letter (for
  /// SY_DLQ) is appended to the outbox with the line, only when the line is recorded (new).
  std::optional<dead_letter> dead;

  bool operator==(const batch_line&) const = default;
};

/// Record result lines; first write per slot wins. A new line's dead letter, if it has one, is
/// appended to the outbox in the same transaction. Answers stale (changing nothing) when the
/// batch is terminal or unknown.
struct batch_lines_op {
  std::string id;
  std::vector<batch_line> lines;

  bool operator==(const batch_lines_op&) const = default;
};

/// A client cancels: validating, in_progress or finalizing → cancelling (stop code
/// batch_cancelled). Answers the batch with `done` (also when already cancelling or cancelled)
/// or `conflict` when it is completed, failed or expired.
struct cancel_batch_op {
  std::string tenant;
  std::string id;
  int64_t now_ms = 0;

  bool operator==(const cancel_batch_op&) const = default;
};

/// The engine stops a running batch: its completion window passed (`batch_expired`) or a system
/// failure (`batch_failed`, `message` says what). Sets the stop code of a non-terminal batch that
/// has none; a failure also adds an entry to `errors`.
struct stop_batch_op {
  std::string id;
  std::string code;
  std::string message;
  int64_t now_ms = 0;

  bool operator==(const stop_batch_op&) const = default;
};

/// Every line has a result: in_progress (or cancelling) → finalizing, recording the time.
/// Cancelling batches stay cancelling.
struct batch_finalizing_op {
  std::string id;
  int64_t now_ms = 0;

  bool operator==(const batch_finalizing_op&) const = default;
};

/// Finalization: the output and error files (written to disk and fsynced by the caller, absent
/// when they would be empty) get their records, and the batch becomes terminal — completed when
/// it ran to the end, else cancelled, expired or failed after its stop code. With a `failure`
/// (finalization gave up: a file could not be written, lines could not be drained) the batch
/// becomes failed whatever its stop code, with the failure added to `errors`; the files given
/// are the partial output kept.
///
/// The files given replace the batch's file ids (none given: none). A rerun's finalization
/// passes `completed` and `failed` (≥ 0): its request counts are then rebuilt from the lines of
/// its files, which hold the previous output's lines as well as this run's.
struct batch_finish_op {
  std::string id;
  std::optional<file_record> output;
  std::optional<file_record> error;
  int64_t now_ms = 0;
  std::optional<batch_error> failure;
  int64_t completed = -1;  ///< lines in `output`, or -1: the counts stay as recorded
  int64_t failed = -1;     ///< lines in `error`, or -1

  bool operator==(const batch_finish_op&) const = default;
};

/// POST /v1/jobs/{id}/rerun of a finished batch of `tenant` (docs/batches.md, "Rerun"): a new
/// run of the lines of its error file. In one transaction the batch is `in_progress` again
/// (`in_progress_at` now; the previous end's times, stop code and errors cleared), `run` + 1,
/// `failed` 0 (`completed` stays: the previous output's lines go into the new output file), its
/// completion window restarts (`window_ms` from now) and it is back in the active set. The
/// previous output and error file ids stay until the new end replaces them.
/// Answers not_found (unknown, another tenant's), refused with job_not_rerunnable (not
/// terminal, failed validation, no error file, or its input, output or error file is gone), or
/// done with the batch.
struct rerun_batch_op {
  std::string tenant;
  std::string id;
  int64_t now_ms = 0;
  int64_t window_ms = 0;

  bool operator==(const rerun_batch_op&) const = default;
};

/// DELETE /v1/jobs/{id} of a batch of `tenant` (docs/batches.md, "A batch as a job"): removes
/// the batch record, its listing entry, its result lines (a finished batch has none left: its
/// finalization moved them into its files) and its events, in one transaction. Not its files:
/// those live under the Files API. Answers not_found (unknown, another tenant's), refused with
/// job_not_deletable while it has not finished (nothing changes), or done with the batch as it
/// was.
struct delete_batch_op {
  std::string tenant;
  std::string id;

  bool operator==(const delete_batch_op&) const = default;
};

// --- inspect (storage/inspect.hpp)

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, create_file_op& x) {
  return f(x.file);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, delete_file_op& x) {
  return f(x.tenant, x.id);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, create_batch_op& x) {
  return f(x.batch);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, batch_ingested_op& x) {
  return f(x.id, x.total, x.errors, x.now_ms);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, batch_line& x) {
  return f(x.slot, x.ok, x.text, optional_field{x.usage}, optional_field{x.dead});
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, batch_lines_op& x) {
  return f(x.id, x.lines);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, cancel_batch_op& x) {
  return f(x.tenant, x.id, x.now_ms);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, stop_batch_op& x) {
  return f(x.id, x.code, x.message, x.now_ms);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, batch_finalizing_op& x) {
  return f(x.id, x.now_ms);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, batch_finish_op& x) {
  return f(x.id, optional_field{x.output}, optional_field{x.error}, x.now_ms,
           optional_field{x.failure}, x.completed, x.failed);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, rerun_batch_op& x) {
  return f(x.tenant, x.id, x.now_ms, x.window_ms);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, delete_batch_op& x) {
  return f(x.tenant, x.id);
}

// --- A batch as a job (docs/batches.md, "A batch as a job")

/// The job status a batch shows in the job vocabulary: validating is `queued`, finalizing is
/// `in_progress`; the others have the same name.
job_status job_status_of(batch_status s);
/// `b` as the native jobs API shows it (kind_of() gives `batch`): its status in the job
/// vocabulary, its lines as task counts (lines not yet answered are `queued`), its errors, its
/// `max_inflight` as the window, its event sequence, its run. Only what a job record can say: the
/// batch's own fields (files, usage) stay on GET /v1/batches/{id}.
job_record job_of(const batch_record& b);

// --- Typed reads

std::optional<file_record> get_file(const txn_view& t, std::string_view id);
std::optional<batch_record> get_batch(const txn_view& t, std::string_view id);
status put_batch(write_txn& t, const batch_record& r);
/// The tenant's files, newest first (or oldest first when `ascending`), with ids after `after`
/// in that order (empty: from the start), at most `limit`; `purpose` filters when not empty.
/// `has_more` says whether another matched.
std::vector<file_record> list_files(const txn_view& t, std::string_view tenant,
                                    std::string_view purpose, bool ascending,
                                    std::string_view after, size_t limit, bool& has_more);
/// The tenant's batches, newest first, older than batch id `after` when given.
std::vector<batch_record> list_batches(const txn_view& t, std::string_view tenant,
                                       std::string_view after, size_t limit, bool& has_more);
/// Every batch that is not terminal (startup recovery).
std::vector<std::string> active_batches(const txn_view& t);
/// Whether the line at `slot` (batch_slot) of batch `id` has its result.
bool has_batch_line(const txn_view& t, std::string_view batch_id, uint64_t slot);
/// Visits the result lines of a batch in slot order: fn(slot, ok, text); false stops.
void scan_batch_lines(const txn_view& t, std::string_view batch_id,
                      const std::function<bool(uint64_t, bool, std::string_view)>& fn);
/// Files whose expires_at has passed by `now_s`, at most `limit`.
std::vector<std::string> expired_files(const txn_view& t, int64_t now_s, size_t limit);

}  // namespace sy::storage
