#pragma once
/// Result bodies of task-list tasks that are larger than `inline_result_bytes`, kept outside the
/// LMDB B-tree: one append-only segment file per job, `<dir>/<job id>.seg`, the bodies written
/// back to back. A task's record holds where its body starts and how long it is.
///
/// Durability: the storage writer appends while it applies a commit's operations and calls
/// `sync()` before the LMDB commit, so a committed record never points at bytes that are not on
/// disk. Bytes appended by a commit that then failed (or by a process killed before the commit)
/// are never referenced; the next append goes after them. Appends, `sync` and `remove` run on
/// the writer's thread only; `read` may run on any thread (the bytes it reads are committed and
/// never rewritten).

#include <cstdint>
#include <filesystem>
#include <map>
#include <string>
#include <string_view>

#include "config/result.hpp"

namespace sy::storage {

class result_segments {
 public:
  /// `inline_bytes`: bodies up to this size stay in the task record.
  result_segments(std::filesystem::path dir, int64_t inline_bytes);
  ~result_segments();
  result_segments(const result_segments&) = delete;
  result_segments& operator=(const result_segments&) = delete;

  int64_t inline_bytes() const { return inline_bytes_; }
  const std::filesystem::path& dir() const { return dir_; }

  /// Appends `body` to the job's segment: the offset it starts at.
  result<int64_t> append(const std::string& job_id, std::string_view body);
  /// Makes every append since the last call durable (fdatasync, and the directory when a
  /// segment was created).
  status sync();
  /// Deletes the job's segment (the job is purged). Missing is fine.
  void remove(const std::string& job_id);
  /// The `length` bytes at `offset` of the job's segment.
  result<std::string> read(const std::string& job_id, int64_t offset, int64_t length) const;

 private:
  struct open_segment {
    int fd = -1;
    int64_t size = 0;
    bool dirty = false;
  };
  std::filesystem::path path_of(const std::string& job_id) const;
  void close_all();

  std::filesystem::path dir_;
  int64_t inline_bytes_;
  std::map<std::string, open_segment> open_;
  bool dir_dirty_ = false;
};

}  // namespace sy::storage
