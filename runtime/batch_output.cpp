#include "runtime/batch_output.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <utility>

#include "runtime/detail/batch_files.hpp"

namespace sy::runtime::batch {
namespace {

constexpr size_t flush_bytes = size_t{1} << 20;

}  // namespace

result_file::result_file(std::string path) : path_(std::move(path)), tmp_(path_ + ".tmp") {}

result_file::~result_file() {
  if (fd_ >= 0) ::close(fd_);
  if (!committed_ && lines_ > 0) ::unlink(tmp_.c_str());
}

void result_file::fail(const char* step, const std::string& path, int err) {
  if (failure_.empty())
    failure_ = std::string("cannot ") + step + " " + path + ": " + std::strerror(err);
}

void result_file::append(std::string_view line) {
  ++lines_;
  bytes_ += static_cast<int64_t>(line.size()) + 1;
  if (failed()) return;
  buffer_.append(line);
  buffer_.push_back('\n');
  if (buffer_.size() >= flush_bytes) flush();
}

void result_file::append_file(const std::string& path) {
  if (failed()) return;
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return fail("open", path, errno);
  char chunk[64 * 1024];
  for (;;) {
    const ssize_t n = ::read(fd, chunk, sizeof chunk);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      fail("read", path, errno);
      break;
    }
    if (n == 0) break;
    const std::string_view data(chunk, static_cast<size_t>(n));
    for (char c : data) lines_ += c == '\n';
    bytes_ += n;
    buffer_.append(data);
    if (buffer_.size() >= flush_bytes && !flush()) break;
  }
  ::close(fd);
}

bool result_file::flush() {
  if (failed()) return false;
  if (fd_ < 0) {
    fd_ = ::open(tmp_.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd_ < 0) {
      fail("create", tmp_, errno);
      return false;
    }
  }
  if (!detail::write_fully(fd_, buffer_)) {
    fail("write", tmp_, errno);
    return false;
  }
  buffer_.clear();
  return true;
}

bool result_file::commit() {
  if (lines_ == 0) {
    committed_ = true;
    return true;
  }
  if (!flush()) return false;
  if (::fsync(fd_) != 0) {
    fail("fsync", tmp_, errno);
    return false;
  }
  const int fd = std::exchange(fd_, -1);
  if (::close(fd) != 0) {
    fail("close", tmp_, errno);
    return false;
  }
  if (std::rename(tmp_.c_str(), path_.c_str()) != 0) {
    fail("rename", tmp_, errno);
    return false;
  }
  committed_ = true;
  return true;
}

}  // namespace sy::runtime::batch
