#pragma once
/// Records of the OpenAI-compatible Files and Batch API (docs/batches.md): an uploaded or
/// produced file (its bytes live on disk under `<data_dir>/files/`, the record in LMDB) and a
/// batch. Stored as compact JSON like every other record (storage/records.hpp).

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "storage/inspect.hpp"

namespace sy::storage {

/// A file of the Files API. Times are Unix seconds, as OpenAI shows them.
struct file_record {
  std::string id;  ///< file-<ULID>
  std::string tenant;
  std::string filename;
  std::string purpose;  ///< batch, batch_output, or any other purpose a client uploads with
  int64_t bytes = 0;
  int64_t created_at = 0;
  int64_t expires_at = 0;  ///< 0: never

  bool operator==(const file_record&) const = default;
};

/// Batch states, as OpenAI names them.
enum class batch_status {
  validating,
  in_progress,
  finalizing,
  completed,
  failed,
  expired,
  cancelling,
  cancelled
};
std::string_view to_string(batch_status s);
std::optional<batch_status> batch_status_from(std::string_view s);
bool is_terminal(batch_status s);

/// One item of a batch's `errors.data` (validation failures of the input file, or why a batch
/// failed as a whole). `line` is 1-based; 0 when the error is not about one line.
struct batch_error {
  std::string code;
  std::string message;
  std::string param;
  int64_t line = 0;

  bool operator==(const batch_error&) const = default;
};

/// The token counts of gateway responses. Chat and completions report prompt/completion tokens,
/// embeddings prompt tokens only, the Responses API input/output tokens; a batch names them
/// input/output as OpenAI's batch usage does.
struct token_usage {
  int64_t input = 0;
  int64_t output = 0;
  int64_t total = 0;  ///< the response's total_tokens, or input + output when it has none
  int64_t cached = 0;
  int64_t reasoning = 0;

  token_usage& operator+=(const token_usage& o) {
    input += o.input;
    output += o.output;
    total += o.total;
    cached += o.cached;
    reasoning += o.reasoning;
    return *this;
  }

  bool operator==(const token_usage&) const = default;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, token_usage& x) {
  return f(x.input, x.output, x.total, x.cached, x.reasoning);
}

// clang-tidy 14 sees a throw in nlohmann::json's move constructor (its invariant check), which
// the implicitly noexcept moves of this struct call; that check is an assert, not a throw.
// NOLINTNEXTLINE(bugprone-exception-escape)
struct batch_record {
  std::string id;  ///< batch_<ULID>
  std::string tenant;
  std::string endpoint;
  std::string input_file_id;
  std::string completion_window;  ///< as the client sent it ("24h")
  batch_status status = batch_status::validating;
  std::string output_file_id;  ///< empty until finalized (and when there is no output)
  std::string error_file_id;   ///< empty until finalized (and when there is no error line)
  int64_t created_at = 0;      ///< Unix seconds; the *_at fields below are 0 until reached
  int64_t in_progress_at = 0;
  int64_t expires_at = 0;  ///< created_at + completion window
  int64_t finalizing_at = 0;
  int64_t completed_at = 0;
  int64_t failed_at = 0;
  int64_t expired_at = 0;
  int64_t cancelling_at = 0;
  int64_t cancelled_at = 0;
  int64_t deadline_ms = 0;  ///< expires_at in ms (the completion window's end, exactly)
  int64_t total = 0;        ///< request lines (set once ingestion has counted them)
  int64_t completed = 0;    ///< lines in the output file
  int64_t failed = 0;       ///< lines in the error file
  std::vector<batch_error> errors;
  token_usage usage;                 ///< token counts summed over responses
  nlohmann::json metadata;           ///< null or an object of ≤ 16 string pairs
  int64_t output_expires_after = 0;  ///< seconds after creation of the output files; 0: never
  /// Why dispatch stopped before every line ran: "" (it did not), or the code undispatched lines
  /// get — batch_cancelled, batch_expired, batch_failed.
  std::string stop_code;
  /// The batch's span under the client's, when the client sent a traceparent (runtime/trace.hpp's
  /// to_keep), and the client's tracestate. Empty otherwise: the trace is derived from the id.
  std::string trace;
  std::string trace_state;
  int64_t max_inflight = 0;  ///< the most lines in flight at once; 0: no cap of its own
  std::string webhook_url;   ///< where its terminal transitions are POSTed; empty: nowhere
  /// Sequence number of its latest event as a job (db::events, like a job's `event_seq`); 0: a
  /// batch made before batches had events (its first event then has seq 1).
  uint64_t event_seq = 0;
  /// 1, then + 1 for each rerun of its failed lines (POST /v1/jobs/{id}/rerun). Shown on the
  /// batch as a job (`run`), not on the OpenAI object. During a rerun `output_file_id` and
  /// `error_file_id` are the previous run's files: the lines to run again are those of the error
  /// file, and the output file's lines go into the new output file (docs/batches.md, "Rerun").
  int run = 1;
  /// Tries per line across retryable outcomes (the request's, else `default_max_attempts` when
  /// it was created). A record written before batches had it reads as 3, that setting's default.
  int max_attempts = 3;

  bool operator==(const batch_record&) const = default;
};

nlohmann::json to_json(const file_record& r);
file_record file_from_json(const nlohmann::json& j);
nlohmann::json to_json(const batch_record& r);
batch_record batch_from_json(const nlohmann::json& j);

// --- inspect (storage/inspect.hpp)

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, file_record& x) {
  return f(x.id, x.tenant, x.filename, x.purpose, x.bytes, x.created_at, x.expires_at);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, batch_error& x) {
  return f(x.code, x.message, x.param, x.line);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, batch_record& x) {
  return f(x.id, x.tenant, x.endpoint, x.input_file_id, x.completion_window, x.status,
           x.output_file_id, x.error_file_id, x.created_at, x.in_progress_at, x.expires_at,
           x.finalizing_at, x.completed_at, x.failed_at, x.expired_at, x.cancelling_at,
           x.cancelled_at, x.deadline_ms, x.total, x.completed, x.failed, x.errors, x.usage,
           json_field{x.metadata}, x.output_expires_after, x.stop_code, x.trace, x.trace_state,
           x.max_inflight, x.webhook_url, x.event_seq, x.run, x.max_attempts);
}

/// A request line's place in its batch's dispatch order: the index of its model among the
/// batch's models (sorted by name) in the top 16 bits, its position in that model's plan below.
/// Deterministic for a batch (the plans never change once written), so it identifies the line.
uint64_t batch_slot(uint64_t model_index, uint64_t position);

/// Key of a batch result line in db::batch_lines: batch id '/' slot (8 bytes big-endian). Results
/// arrive in nearly slot order, so one commit's lines land on a few adjacent pages instead of
/// one random page each; a scan of "<batch id>/" visits them in dispatch order.
std::string batch_line_key(std::string_view batch_id, uint64_t slot);
/// The slot encoded in a batch_lines key (0 for a malformed key).
uint64_t batch_line_slot(std::string_view key);

}  // namespace sy::storage
