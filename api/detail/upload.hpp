#pragma once
/// One `POST /v1/files` upload as it streams in: the multipart body is parsed chunk by chunk, the
/// `file` part is written to a staging file in the batch service's upload directory (never held
/// in memory), the small form fields are kept. Used by the HTTP server's streaming path; one
/// connection's strand only.

#include <cstdint>
#include <memory>
#include <set>
#include <string>
#include <string_view>

#include "api/detail/multipart.hpp"
#include "config/result.hpp"
#include "storage/batch_records.hpp"

namespace sy::api::detail {

/// Purposes an upload may name (OpenAI's, as of the Files API).
bool is_file_purpose(std::string_view purpose);

class upload {
 public:
  /// Opens the staging file `<dir>/upload-<random>.part`. Errors: storage_unavailable.
  /// `max_task_bytes` bounds a file of purpose "tasks" instead of `max_bytes`; while the purpose
  /// is not known yet (it may follow the file part) the larger bound holds, and finish() checks.
  static result<std::unique_ptr<upload>> start(std::string tenant, std::string_view boundary,
                                               const std::string& dir, int64_t max_bytes,
                                               int64_t max_task_bytes);
  /// Removes the staging file unless `adopt()` took it.
  ~upload();
  upload(const upload&) = delete;
  upload& operator=(const upload&) = delete;

  /// The next bytes of the body. Errors: invalid_file (malformed multipart, a second file
  /// part), file_too_large (the file part passes `max_bytes`), storage_unavailable (disk).
  status feed(std::string_view bytes);

  /// The body ended: checks the form (purpose present and known, file present, `.jsonl` for
  /// purpose batch, expires_after), fsyncs the staging file and describes it; `id` and times
  /// are the caller's. Errors: missing_required_parameter, invalid_value, invalid_file,
  /// storage_unavailable.
  result<storage::file_record> finish();

  /// The staging file's path; after this call the upload no longer removes it.
  std::string adopt();
  /// Seconds after creation the file expires (0: never), from expires_after.
  int64_t expires_after() const { return expires_after_; }

 private:
  upload(std::string tenant, std::string_view boundary, int64_t max_bytes, int64_t max_task_bytes);
  /// The bound on the file part, as far as the purpose is known.
  int64_t limit() const;
  sy::error too_large(int64_t limit) const;
  status on_part(const multipart_part& p);
  status on_data(std::string_view bytes);
  status on_part_end();

  std::string tenant_;
  int64_t max_bytes_;
  int64_t max_task_bytes_;
  multipart_parser parser_;
  std::string path_;
  int fd_ = -1;
  bool adopted_ = false;
  // Current part.
  enum class sink { none, file, field, skip } sink_ = sink::none;
  std::string field_name_;
  std::string field_value_;
  // The form.
  bool have_file_ = false;
  std::set<std::string> fields_seen_;  ///< the known fields given so far (each at most once)
  std::string filename_;
  int64_t bytes_ = 0;
  std::optional<std::string> purpose_;
  std::optional<std::string> anchor_;
  std::optional<std::string> seconds_;
  int64_t expires_after_ = 0;
};

}  // namespace sy::api::detail
