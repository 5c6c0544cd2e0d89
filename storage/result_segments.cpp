#include "storage/result_segments.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace sy::storage {
namespace {

/// Open segments kept between commits; more are closed after the next sync.
constexpr size_t max_open_segments = 64;

sy::error io_error(const std::string& what, const std::filesystem::path& path, int err) {
  return make_error(errc::storage_error, what + " " + path.string() + ": " + std::strerror(err));
}

}  // namespace

result_segments::result_segments(std::filesystem::path dir, int64_t inline_bytes)
    : dir_(std::move(dir)), inline_bytes_(inline_bytes) {}

result_segments::~result_segments() { close_all(); }

std::filesystem::path result_segments::path_of(const std::string& job_id) const {
  return dir_ / (job_id + ".seg");
}

result<int64_t> result_segments::append(const std::string& job_id, std::string_view body) {
  auto it = open_.find(job_id);
  if (it == open_.end()) {
    std::error_code ec;
    std::filesystem::create_directories(dir_, ec);
    if (ec)
      return make_error(errc::storage_error,
                        "cannot create " + dir_.string() + ": " + ec.message());
    const auto path = path_of(job_id);
    const bool existed = std::filesystem::exists(path, ec);
    const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
    if (fd < 0) return io_error("cannot open the result segment", path, errno);
    struct stat st {};
    if (::fstat(fd, &st) != 0) {
      const int err = errno;
      ::close(fd);
      return io_error("cannot stat the result segment", path, err);
    }
    dir_dirty_ = dir_dirty_ || !existed;
    it = open_.emplace(job_id, open_segment{fd, st.st_size, false}).first;
  }
  auto& seg = it->second;
  const int64_t at = seg.size;
  size_t done = 0;
  while (done < body.size()) {
    const auto n = ::write(seg.fd, body.data() + done, body.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      const int err = n < 0 ? errno : EIO;
      // What was written of this body is never referenced; the size stays where the file is.
      seg.size = ::lseek(seg.fd, 0, SEEK_END);
      return io_error("cannot write the result segment", path_of(job_id), err);
    }
    done += static_cast<size_t>(n);
  }
  seg.size += static_cast<int64_t>(body.size());
  seg.dirty = true;
  return at;
}

status result_segments::sync() {
  for (auto& [job_id, seg] : open_) {
    if (!seg.dirty) continue;
    if (::fdatasync(seg.fd) != 0)
      return io_error("cannot sync the result segment", path_of(job_id), errno);
    seg.dirty = false;
  }
  if (dir_dirty_) {
    const int fd = ::open(dir_.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0 || ::fsync(fd) != 0) {
      const int err = errno;
      if (fd >= 0) ::close(fd);
      return io_error("cannot sync the directory", dir_, err);
    }
    ::close(fd);
    dir_dirty_ = false;
  }
  if (open_.size() > max_open_segments) close_all();
  return ok;
}

void result_segments::remove(const std::string& job_id) {
  if (auto it = open_.find(job_id); it != open_.end()) {
    ::close(it->second.fd);
    open_.erase(it);
  }
  std::error_code ec;
  std::filesystem::remove(path_of(job_id), ec);
}

result<std::string> result_segments::read(const std::string& job_id, int64_t offset,
                                          int64_t length) const {
  const auto path = path_of(job_id);
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return io_error("cannot open the result segment", path, errno);
  std::string out(static_cast<size_t>(length), '\0');
  size_t done = 0;
  int err = 0;
  while (done < out.size()) {
    const auto n = ::pread(fd, out.data() + done, out.size() - done,
                           static_cast<off_t>(offset) + static_cast<off_t>(done));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      err = n < 0 ? errno : EIO;
      break;
    }
    done += static_cast<size_t>(n);
  }
  ::close(fd);
  if (err != 0) return io_error("cannot read a result from the segment", path, err);
  return out;
}

void result_segments::close_all() {
  for (auto& [job_id, seg] : open_) ::close(seg.fd);
  open_.clear();
}

}  // namespace sy::storage
