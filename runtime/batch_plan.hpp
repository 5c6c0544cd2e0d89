#pragma once
/// Batch ingestion: one streaming pass over an uploaded OpenAI Batch API input file (JSONL) that
/// validates every line and writes, per model, a plan file of (offset, length, prefix_hash)
/// entries sorted by system-prompt hash, so dispatch can read requests with `pread` in an order
/// that keeps requests sharing a system prompt together (gateway prefix caches).
///
/// Memory: the file and the request bodies are never held. The scan keeps a fixed read buffer,
/// 16 bytes per request line in the per-model plan vectors (up to twice that while a vector
/// grows) and 8 to 32 bytes per line in the set of custom_id hashes. A line longer than the read
/// buffer is gathered in a separate buffer (runtime/line_reader.hpp), bounded by `max_line_bytes`,
/// and released afterwards (as is the parser memory sized for a line above 1 MiB).
///
/// On-disk formats (docs/batch.md): `<work_dir>/plans/<safe_name>.plan` is a sequence of 16-byte
/// little-endian `plan_entry` records; `<work_dir>/model_map.json` is written last and marks a
/// complete ingest.
///
/// Threading: `ingest`, `load_plan` and `plan_reader` are for one thread at a time; `read_at`,
/// and `parse_request_line` may be called from any thread.

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "config/result.hpp"
#include "runtime/fnv.hpp"  // fnv1a32: a plan's prefix_hash and file name

namespace sy::runtime::batch {

/// One plan entry: 16 bytes on disk, little-endian, exactly this layout.
struct plan_entry {
  uint64_t offset = 0;       ///< byte offset of the line in the input file
  uint32_t length = 0;       ///< bytes of the line without its terminator ("\n" or "\r\n")
  uint32_t prefix_hash = 0;  ///< fnv1a32 of the system prompt; 0 when there is none
};

/// A validation failure of one input line (an OpenAI batch `errors.data[]` item).
struct line_error {
  std::string code;     ///< invalid_json_line, missing_required_parameter, invalid_request, ...
  int64_t line = 0;     ///< 1-based physical line number (blank lines count); 0 = whole file
  std::string param;    ///< the offending parameter, e.g. "body.model"; empty when none
  std::string message;  ///< full sentence starting "Line N: ", or about the file when line is 0

  bool operator==(const line_error&) const = default;
};

/// One model of the batch and its plan file `<work_dir>/plans/<safe_name>.plan`.
struct model_plan {
  std::string model;
  std::string safe_name;  ///< see `safe_model_name`
  uint64_t count = 0;     ///< request lines for this model (= entries in the plan file)

  bool operator==(const model_plan&) const = default;
};

struct ingest_options {
  std::string input_path;  ///< the JSONL file
  /// The batch's endpoint: /v1/chat/completions | /v1/embeddings | /v1/completions. Each line's
  /// `url` must equal it; it also decides the required body field (messages | input | prompt).
  std::string endpoint;
  /// Plans go to <work_dir>/plans/<safe_name>.plan, metadata to <work_dir>/model_map.json.
  std::string work_dir;
  int64_t max_lines = 50'000;
  size_t max_errors = 1'000;  ///< stop recording (not counting) errors beyond this
  /// false → model_not_found. Called once per line until the model has a valid line; when
  /// empty, every model is known.
  std::function<bool(std::string_view model)> model_known;
  /// A rerun's selection (docs/batches.md, "Rerun"): when set, only the lines whose custom_id's
  /// hash (as `result_custom_ids` gives them) is in this sorted vector are planned; every line is
  /// still validated. Unset: every line.
  std::optional<std::vector<uint64_t>> only;
  size_t read_buffer_bytes = size_t{4} << 20;  ///< the fixed read buffer (small in tests)
  size_t max_line_bytes = size_t{64} << 20;    ///< a longer line is an invalid_json_line error
};

struct ingest_result {
  std::vector<line_error> errors;  ///< non-empty: the batch fails with these; no plans are left
  int64_t error_count = 0;         ///< all errors found, including those beyond max_errors
  /// Request lines (blank lines are skipped and not counted). After too_many_requests, the count
  /// at which scanning stopped (max_lines + 1).
  int64_t line_count = 0;
  uint64_t bytes = 0;              ///< bytes scanned
  std::vector<model_plan> models;  ///< sorted by model name; empty when errors is non-empty

  bool operator==(const ingest_result&) const = default;
};

/// CAF 0.17's inspector concept: ingestion's result travels to the batch's actor as a message.
template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, line_error& x) {
  return f(x.code, x.line, x.param, x.message);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, model_plan& x) {
  return f(x.model, x.safe_name, x.count);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, ingest_result& x) {
  return f(x.errors, x.error_count, x.line_count, x.bytes, x.models);
}

/// Scans `o.input_path` once, validates every non-blank line and, when all are valid, writes the
/// plans and then model_map.json (each to a .tmp file, fsync, atomic rename, fsync of the
/// directory). Any model_map.json and plan files from an earlier run in `o.work_dir` are removed
/// first, so re-running after a crash starts clean; on validation failure none are left.
///
/// A line reports only its first problem, checked in this order: invalid_json_line (not JSON, not
/// an object, or longer than max_line_bytes); missing_required_parameter (custom_id, method, url,
/// body as an object); invalid_request `method` (not "POST"); invalid_url; invalid_request
/// `body.model`; invalid_request `body.messages` | `body.input` | `body.prompt`;
/// streaming_unsupported; duplicate_custom_id; model_not_found. File-level errors (line 0):
/// too_many_requests (scanning stops), empty_file.
///
/// Duplicate custom_ids are found through a set of their 64-bit FNV-1a hashes, so a 64-bit hash
/// collision between two different ids is the only way to a false duplicate_custom_id.
///
/// The result's error is for I/O failures only (code "batch_io_error", naming the path and the
/// system error); validation problems go in `ingest_result::errors`.
sy::result<ingest_result> ingest(const ingest_options& o);

/// The 64-bit hashes of the custom_ids of a result file (a batch's output or error file: one
/// JSON object per line), sorted and unique; a line whose custom_id is not a string (`null`: its
/// input line could not be read) has none. Memory: 8 bytes per line and the read buffer. Error
/// "batch_io_error" when the file cannot be read.
sy::result<std::vector<uint64_t>> result_custom_ids(const std::string& path);

/// Reads <work_dir>/model_map.json written by a successful ingest (after a restart) and checks
/// that each plan file has the recorded size. `errors` is empty. Error "batch_io_error" when a
/// file is missing or unreadable, "batch_plan_corrupt" when its content does not fit.
sy::result<ingest_result> load_plan(const std::string& work_dir);

/// Sequential, buffered reader of one plan file.
class plan_reader {
 public:
  /// Error "batch_io_error" when the file cannot be opened, "batch_plan_corrupt" when its size is
  /// not a multiple of 16 bytes.
  static sy::result<plan_reader> open(const std::string& path);

  plan_reader(plan_reader&& other) noexcept;
  plan_reader& operator=(plan_reader&& other) noexcept;
  plan_reader(const plan_reader&) = delete;
  plan_reader& operator=(const plan_reader&) = delete;
  ~plan_reader();

  /// The next entry; false at the end of the file or on a read error (then `failed()`).
  bool next(plan_entry& e);
  /// Whether a read failed (the file shrank or the device errored).
  bool failed() const { return failed_; }
  /// Entries in the file.
  uint64_t size() const { return size_; }

 private:
  explicit plan_reader(int fd, uint64_t size);
  int fd_ = -1;
  uint64_t size_ = 0;
  std::vector<unsigned char> buf_;
  size_t pos_ = 0;  ///< next unread byte in buf_
  size_t end_ = 0;  ///< bytes of buf_ filled
  bool failed_ = false;
};

/// A request line as dispatch needs it.
struct request_line {
  std::string custom_id;
  std::string model;
  std::string body;  ///< the raw JSON text of "body", as it appears in the line
};

/// Reads `length` bytes at `offset` from an open fd with pread (thread-safe). Error
/// "batch_io_error" on a read error or when the file ends early.
sy::result<std::string> read_at(int fd, uint64_t offset, uint32_t length);

/// Parses one input line (already validated at ingest) into custom_id, model and raw body text.
/// Error "invalid_json_line" when the line does not have them.
sy::result<request_line> parse_request_line(std::string_view line);

/// `model` with every character outside [A-Za-z0-9._-] replaced by '_' (cut to 100 characters),
/// then "-" and the 8 hex digits of fnv1a32(model), so that distinct models get distinct names.
std::string safe_model_name(std::string_view model);

}  // namespace sy::runtime::batch
