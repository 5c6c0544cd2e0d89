#pragma once
/// A child process for system tests: the built binaries run as a user runs them. Output goes to
/// a log file (read it on failure); the process is killed (SIGKILL) if still running on
/// destruction.

#include <sys/types.h>

#include <chrono>
#include <string>
#include <vector>

namespace sy::test {

class child_process {
 public:
  /// Starts `argv[0]` with `argv`, stdout+stderr appended to `log_path`.
  child_process(std::vector<std::string> argv, std::string log_path);
  ~child_process();
  child_process(const child_process&) = delete;
  child_process& operator=(const child_process&) = delete;

  pid_t pid() const { return pid_; }
  /// Sends `sig`.
  void signal(int sig);
  /// Waits for the exit (reaps); returns the wait status, or -1 on timeout.
  int wait(std::chrono::milliseconds timeout);
  bool running();
  /// The log so far.
  std::string log() const;

 private:
  pid_t pid_ = -1;
  std::string log_path_;
  bool reaped_ = false;
};

}  // namespace sy::test
