#pragma once
/// A supervised child `nats-server -js` process: the private embedded server of `switchyard serve`
/// (DESIGN "Embedded default") and the real server every NATS test runs against.
///
/// Ownership and threads: one `nats_server` object owns one child process; it is not thread-safe,
/// so one thread (the one that started it) calls its members. Because the child is started with
/// `PR_SET_PDEATHSIG`, which fires when the *thread* that forked it exits, start() and restart()
/// must be called from a thread that lives as long as the server should (e.g. the main thread).

#include <sys/types.h>

#include <cstdint>
#include <memory>
#include <string>

#include "config/result.hpp"

namespace sy::runtime {

/// How to launch the child. `port = 0` picks a free loopback port (bind to port 0, read it back,
/// close; the small race with another process is handled by retrying on a failed start).
struct nats_server_options {
  std::string binary = "nats-server";  ///< looked up on PATH when it has no '/'
  std::string store_dir;               ///< JetStream store (`-sd`); required, created if missing
  std::string host = "127.0.0.1";      ///< listen address (`-a`)
  int port = 0;                        ///< client port (`-p`); 0: pick a free port
  std::string log_file;                ///< `-l` when set; otherwise the child inherits stderr
  int64_t start_timeout_ms = 10'000;   ///< how long start()/restart() wait for readiness
  int64_t stop_timeout_ms = 10'000;    ///< how long stop() waits after SIGTERM before SIGKILL
};

/// One running `nats-server -js -a host -p port -sd store_dir` child process.
class nats_server {
 public:
  /// Forks and execs the server, then waits (probing every few ms, up to start_timeout_ms) until
  /// this very child has written its ports file and accepts TCP on the port. With `port = 0`, a
  /// start that fails (e.g. the picked port was taken meanwhile) is retried on another port.
  static result<std::unique_ptr<nats_server>> start(nats_server_options options);

  nats_server(const nats_server&) = delete;
  nats_server& operator=(const nats_server&) = delete;
  /// Stops the child (stop()); a destructor cannot report failure, so errors are ignored.
  ~nats_server();

  /// `nats://host:port`, with a wildcard listen address replaced by 127.0.0.1.
  std::string url() const;
  /// The client port the server listens on (the picked one when the options said 0).
  int port() const { return port_; }
  /// The child's pid, or -1 when no child is running.
  pid_t pid() const { return pid_; }

  /// Graceful stop: SIGTERM, wait up to stop_timeout_ms, then SIGKILL; always reaps the child.
  /// Stopping a server that is not running is a no-op.
  status stop();
  /// SIGKILL and reap: simulates a crash of the server (tests).
  void kill9();
  /// Starts the server again on the same port and store dir (stopping it first if it runs), so
  /// clients reconnect to the same URL and find the same streams (tests: NATS restart).
  status restart();
  /// True while the child lives; reaps it (and forgets its pid) once it has died.
  bool running();

 private:
  explicit nats_server(nats_server_options options) : options_(std::move(options)) {}
  status spawn_and_wait();
  status wait_ready();
  void reap_blocking();
  bool try_reap(int* wstatus);  ///< non-blocking; true (and pid forgotten) once it has exited
  void forget_child();

  nats_server_options options_;
  int port_ = 0;
  pid_t pid_ = -1;
};

}  // namespace sy::runtime
