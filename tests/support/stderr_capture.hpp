#pragma once
/// Sends this process's stderr (file descriptor 2) to a file while the object lives, so that a
/// test can wait for a line the engine logs (runtime/log.hpp writes every line with one write()
/// to fd 2) — an event to wait on when the engine exposes nothing else. Restores stderr on
/// destruction and copies what was captured to it, so that a failing test still shows the log.

#include <fcntl.h>
#include <unistd.h>

#include <fstream>
#include <sstream>
#include <string>

#include "tests/support/temp_dir.hpp"

namespace sy::test {

class stderr_capture {
 public:
  stderr_capture() : path_(dir_.sub("stderr.log")) {
    ::fflush(stderr);
    saved_ = ::dup(2);
    int fd = ::open(path_.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
    if (fd >= 0) {
      ::dup2(fd, 2);
      ::close(fd);
    }
  }
  ~stderr_capture() {
    ::fflush(stderr);
    if (saved_ >= 0) {
      ::dup2(saved_, 2);
      ::close(saved_);
    }
    auto captured = text();
    if (!captured.empty()) (void)!::write(2, captured.data(), captured.size());
  }
  stderr_capture(const stderr_capture&) = delete;
  stderr_capture& operator=(const stderr_capture&) = delete;

  /// Everything written to stderr since the capture began.
  std::string text() const {
    std::ifstream in(path_);
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
  }
  /// Whether the captured text contains `needle`.
  bool contains(const std::string& needle) const {
    return text().find(needle) != std::string::npos;
  }

 private:
  temp_dir dir_;
  std::string path_;
  int saved_ = -1;
};

}  // namespace sy::test
