#pragma once
/// The boundary between the HTTP API and the engine for the OpenAI-compatible Files and Batch
/// API (docs/batches.md). The API parses, authenticates and validates a request; the service
/// commits through the storage writer and answers once the commit is durable.
/// Thread-safety: every method may be called from any Asio thread concurrently.

#include <cstdint>
#include <string>
#include <vector>

#include <boost/asio/awaitable.hpp>
#include <nlohmann/json.hpp>

#include "actors/admitted.hpp"
#include "config/result.hpp"
#include "runtime/trace.hpp"
#include "storage/batch_records.hpp"

namespace sy::actors {

struct file_page {
  std::vector<storage::file_record> files;
  bool has_more = false;

  bool operator==(const file_page&) const = default;
};

struct batch_page {
  std::vector<storage::batch_record> batches;
  bool has_more = false;

  bool operator==(const batch_page&) const = default;
};

/// A validated POST /v1/batches.
// clang-tidy 14 sees a throw in nlohmann::json's move constructor (its invariant check), which
// the implicitly noexcept moves of this struct call; that check is an assert, not a throw.
// NOLINTNEXTLINE(bugprone-exception-escape)
struct batch_request {
  std::string tenant;
  std::string input_file_id;
  std::string endpoint;           ///< /v1/chat/completions | /v1/embeddings | /v1/completions
  std::string completion_window;  ///< one of the configured windows, e.g. "24h"
  int64_t completion_window_ms = 0;
  nlohmann::json metadata;           ///< null or an object of ≤ 16 string pairs
  int64_t output_expires_after = 0;  ///< seconds (anchor: created_at); 0: never
  trace::context trace;              ///< the client's trace context (not valid: none)
  int max_inflight = 0;              ///< the most lines in flight at once; 0: no cap of its own
  std::string webhook_url;           ///< empty: the configured default (if any)
  int max_attempts = 0;              ///< tries per line; 0: the `default_max_attempts` setting

  bool operator==(const batch_request&) const = default;
};

/// An upload whose form admission checked: its record (`id` empty: a new one is given; a zero
/// `created_at`: the engine clock's time), the complete, fsynced staging file that becomes its
/// bytes, and the seconds after creation it expires (0: `record.expires_at` as it is).
struct staged_file {
  storage::file_record record;
  std::string path;
  int64_t expires_after_s = 0;

  bool operator==(const staged_file&) const = default;
};

// --- inspect (storage/inspect.hpp): plain values, like job_service.hpp's. A staged file names a
// path on the node that received the upload (docs/storage.md, "State outside LMDB").

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, file_page& x) {
  return f(x.files, x.has_more);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, batch_page& x) {
  return f(x.batches, x.has_more);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, batch_request& x) {
  return f(x.tenant, x.input_file_id, x.endpoint, x.completion_window, x.completion_window_ms,
           storage::json_field{x.metadata}, x.output_expires_after, x.trace, x.max_inflight,
           x.webhook_url, x.max_attempts);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, staged_file& x) {
  return f(x.record, x.path, x.expires_after_s);
}

class batch_service {
 public:
  virtual ~batch_service() = default;

  /// A directory on the same filesystem as the stored files, where uploads in progress are
  /// written (under a name of the caller's choice) before `create_file` adopts them.
  virtual std::string upload_dir() const = 0;
  /// Where the bytes of file `id` live (for GET /v1/files/{id}/content).
  virtual std::string file_path(const std::string& id) const = 0;

  /// Adopts an upload: the bytes at `path` become file `record.id` (an empty id gets a new
  /// `file-<ULID>`, a zero created_at the current time) and its record is committed. The staged
  /// file is moved, or removed on failure. Errors: storage_unavailable, shutting_down.
  virtual boost::asio::awaitable<result<storage::file_record>> create_file(
      admitted<staged_file> upload) = 0;
  /// Errors: file_not_found (also another tenant's file, or one that has expired).
  virtual result<storage::file_record> get_file(const std::string& tenant,
                                                const std::string& id) = 0;
  /// The tenant's files, newest first (`ascending`: oldest first), only `purpose` when not
  /// empty, after file id `after` in that order when not empty, at most `limit` (1..10000).
  virtual result<file_page> list_files(const std::string& tenant, const std::string& purpose,
                                       bool ascending, const std::string& after, int limit) = 0;
  /// Deletes the record, then the bytes. Errors: file_not_found, storage_unavailable.
  virtual boost::asio::awaitable<result<storage::file_record>> delete_file(std::string tenant,
                                                                           std::string id) = 0;

  /// Creates the batch (status `validating`) and starts it. Errors: file_not_found (unknown
  /// input file), invalid_value (the input file's purpose is not `batch`), storage_unavailable,
  /// shutting_down.
  virtual boost::asio::awaitable<result<storage::batch_record>> create_batch(
      admitted<batch_request> r) = 0;
  /// Errors: batch_not_found.
  virtual result<storage::batch_record> get_batch(const std::string& tenant,
                                                  const std::string& id) = 0;
  /// The tenant's batches, newest first, older than batch id `after` when not empty.
  virtual result<batch_page> list_batches(const std::string& tenant, const std::string& after,
                                          int limit) = 0;
  /// validating/in_progress/finalizing → cancelling (then cancelled once the engine has drained
  /// it); cancelling or cancelled: returned as is. Errors: batch_not_found,
  /// batch_not_cancellable (completed, failed, expired), storage_unavailable, shutting_down.
  virtual boost::asio::awaitable<result<storage::batch_record>> cancel_batch(std::string tenant,
                                                                             std::string id) = 0;
};

}  // namespace sy::actors
