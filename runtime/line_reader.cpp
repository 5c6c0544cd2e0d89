#include "runtime/line_reader.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>

namespace sy::runtime {

line_reader::line_reader(const std::string& path, uint64_t from, line_reader_options o)
    : path_(path),
      cap_(std::max<size_t>(o.block_bytes, 64)),
      max_line_(std::min(o.max_line_bytes, SIZE_MAX / 2)),
      io_error_(o.io_error),
      buf_(new char[cap_ + line_padding]()),
      base_(from),
      offset_(from) {
  fd_ = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd_ < 0) {
    fail("cannot open", errno);
    return;
  }
  ::posix_fadvise(fd_, 0, 0, POSIX_FADV_SEQUENTIAL);
  if (from > 0 && ::lseek(fd_, static_cast<off_t>(from), SEEK_SET) < 0)
    fail("cannot seek in", errno);
}

line_reader::~line_reader() {
  if (fd_ >= 0) ::close(fd_);
}

bool line_reader::fail(const char* what, int err) {
  failure_ = make_error(io_error_, std::string(what) + " " + path_ + ": " + std::strerror(err));
  return false;
}

bool line_reader::fill() {
  if (failure_) return false;
  for (;;) {
    const ssize_t n = ::read(fd_, buf_.get() + end_, cap_ - end_);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return fail("cannot read", errno);
    if (n == 0) eof_ = true;
    end_ += static_cast<size_t>(n);
    bytes_ += static_cast<uint64_t>(n);
    return true;
  }
}

bool line_reader::next_slow(line& out) {
  for (;;) {
    if (const void* nl = std::memchr(buf_.get() + begin_, '\n', end_ - begin_)) {
      take(static_cast<size_t>(static_cast<const char*>(nl) - (buf_.get() + begin_)), 1, out);
      return true;
    }
    if (eof_) {
      if (begin_ == end_) return false;
      take(end_ - begin_, 0, out);  // a last line without "\n"
      return true;
    }
    if (begin_ == 0 && end_ == cap_) return gather(out);
    // Moves the start of the next line to the front and reads behind it.
    std::memmove(buf_.get(), buf_.get() + begin_, end_ - begin_);
    base_ += begin_;
    end_ -= begin_;
    begin_ = 0;
    if (!fill()) return false;
  }
}

bool line_reader::gather(line& out) {
  // The block holds the start of a line and no '\n': the line is kept in long_, up to one byte
  // past the maximum (enough to know it is too long); its length is counted whole.
  const uint64_t start = base_;
  uint64_t total = 0;
  long_.clear();
  auto append = [&](size_t n) {
    const size_t room = max_line_ + 1 > long_.size() ? max_line_ + 1 - long_.size() : 0;
    long_.append(buf_.get(), std::min(n, room));
    total += n;
  };
  append(end_);
  size_t term = 0;
  for (;;) {
    base_ = start + total;
    begin_ = end_ = 0;
    if (!fill()) return false;
    if (eof_) break;
    if (const void* nl = std::memchr(buf_.get(), '\n', end_)) {
      const size_t n = static_cast<size_t>(static_cast<const char*>(nl) - buf_.get());
      append(n);
      begin_ = n + 1;
      term = 1;
      break;
    }
    append(end_);
  }
  offset_ = start + total + term;
  out = line{{}, start, 0, total > max_line_};
  if (!out.too_long) {
    const size_t size = long_.size();
    long_.append(line_padding, '\0');
    out.text = trim(long_.data(), size);
    out.capacity = long_.size();
  }
  return true;
}

}  // namespace sy::runtime
