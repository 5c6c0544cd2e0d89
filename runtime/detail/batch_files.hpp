#pragma once
/// Private to runtime/batch_*.cpp: the files of a batch's work directory (plans, model_map.json)
/// and the small POSIX helpers they share (also with the result files, runtime/batch_output).

#include <string>
#include <string_view>
#include <vector>

#include "runtime/batch_plan.hpp"

namespace sy::runtime::batch::detail {

/// A file descriptor closed on destruction.
class unique_fd {
 public:
  explicit unique_fd(int fd = -1) : fd_(fd) {}
  unique_fd(unique_fd&& o) noexcept : fd_(o.release()) {}
  unique_fd& operator=(unique_fd&& o) noexcept;
  unique_fd(const unique_fd&) = delete;
  unique_fd& operator=(const unique_fd&) = delete;
  ~unique_fd();
  int get() const { return fd_; }
  int release() {
    const int fd = fd_;
    fd_ = -1;
    return fd;
  }

 private:
  int fd_;
};

/// Writes all of `data` to `fd` (retrying short writes and EINTR); false on error, errno set.
bool write_fully(int fd, std::string_view data);

/// Error "batch_io_error": "<what> <path>: <strerror(err)>".
sy::error io_error(std::string_view what, const std::string& path, int err);

std::string plans_dir(const std::string& work_dir);
std::string model_map_path(const std::string& work_dir);

/// Makes <work_dir>/plans/ and removes what an earlier ingest left: model_map.json first (it marks
/// a complete ingest), then every *.plan and *.plan.tmp file in plans/.
sy::status reset_outputs(const std::string& work_dir);

/// Writes `entries` to `path` through `path`.tmp, fsync and rename (the caller fsyncs the
/// directory).
sy::status write_plan_file(const std::string& path, const std::vector<plan_entry>& entries);

/// Fsyncs plans/, then writes model_map.json for `r` (tmp, fsync, rename) and fsyncs work_dir.
sy::status write_model_map(const std::string& work_dir, const ingest_result& r);

}  // namespace sy::runtime::batch::detail
