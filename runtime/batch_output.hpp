#pragma once
/// A batch's output or error file as finalization writes it (docs/batches.md, "Finalization"):
/// lines are streamed in, the file appears under its final name only once it is complete and
/// fsynced, and a failure says exactly what failed so the batch can retry or report it.
///
/// Threading: one object per thread (finalization runs on the batch manager's blocking thread).

#include <cstdint>
#include <string>
#include <string_view>

namespace sy::runtime::batch {

/// One result file: `<path>.tmp` is created on the first line (a file that would be empty is
/// never created), written through a 1 MiB buffer, then fsynced and renamed to `<path>` by
/// `commit`. The first failure sticks: later lines are counted but not written, and `failure()`
/// names the step, the path and the system error. The destructor removes the temp file of a file
/// that was not committed (the renamed file is the caller's).
class result_file {
 public:
  explicit result_file(std::string path);
  ~result_file();
  result_file(const result_file&) = delete;
  result_file& operator=(const result_file&) = delete;

  /// Adds `line` and a '\n'.
  void append(std::string_view line);
  /// Adds every line of the file at `path` (a previous run's result file, each line ending in
  /// '\n'), copied through the buffer; a failure to read it is this file's failure.
  void append_file(const std::string& path);
  /// Flushes, fsyncs, closes and renames the file into place (the caller fsyncs the directory).
  /// True when it is in place, or when no line was appended (no file then).
  bool commit();

  bool failed() const { return !failure_.empty(); }
  /// "cannot <step> <path>: <strerror>"; empty while nothing failed.
  const std::string& failure() const { return failure_; }
  /// Whether `commit` put a file at `path()`.
  bool created() const { return committed_ && lines_ > 0; }
  const std::string& path() const { return path_; }
  int64_t lines() const { return lines_; }  ///< appended, written or not
  int64_t bytes() const { return bytes_; }  ///< of the appended lines, with their '\n'

 private:
  bool flush();
  void fail(const char* step, const std::string& path, int err);

  std::string path_;
  std::string tmp_;
  int fd_ = -1;
  std::string buffer_;
  std::string failure_;
  int64_t lines_ = 0;
  int64_t bytes_ = 0;
  bool committed_ = false;
};

}  // namespace sy::runtime::batch
