#pragma once
/// Runs `switchyard serve` and `fake_gateway` as child processes over a temp data dir.

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "config/result.hpp"
#include "runtime/nats_server.hpp"
#include "tests/support/http_client.hpp"
#include "tests/support/process.hpp"
#include "tests/support/temp_dir.hpp"

namespace sy::test {

class system_env {
 public:
  system_env();

  /// Starts a nats-server of the test's own (JetStream, a free port, its store under the test's
  /// folder), for an engine started with `--nats` its url.
  result<std::unique_ptr<runtime::nats_server>> start_nats();

  /// Starts the fake gateway binary (on `port`, 0: a free one) with `latency_ms`.
  void start_gateway(int latency_ms, uint16_t port = 0);
  void kill_gateway();
  uint16_t gateway_port() const { return gateway_port_; }
  /// The fake's request count per `fake.key`.
  std::map<std::string, int64_t> gateway_counts();

  /// Starts switchyard over the data dir; `extra` flags are appended (e.g. --nats URL).
  void start_engine(std::vector<std::string> extra = {});
  child_process& engine() { return *engine_; }
  /// What a `switchyard serve` that is expected to exit by itself did.
  struct exit_report {
    int code = -1;  ///< exit code; -1: it was still running after the deadline (then killed)
    std::string log;
  };
  /// Runs one more `switchyard serve` over the data dir (beside the engine, if one runs) with
  /// the usual flags and `extra`, and waits up to `deadline` for it to exit.
  exit_report run_engine_to_exit(std::vector<std::string> extra,
                                 std::chrono::milliseconds deadline = std::chrono::seconds(30));
  void kill_engine();  ///< SIGKILL
  /// The next start_engine only: arm these failpoints (SY_FAILPOINTS, runtime/failpoint.hpp),
  /// so that the engine kills itself with SIGKILL when it reaches one of them.
  void arm_failpoints(std::string names) { failpoints_ = std::move(names); }
  /// Waits until the engine killed itself at an armed failpoint; false if it did not (it is
  /// still running after 60 s, or it died without logging `failpoint hit`).
  bool wait_failpoint_hit();
  uint16_t port() const { return port_; }
  /// The internal listener's port (the worker protocol; docs/workers.md).
  uint16_t internal_port() const { return internal_port_; }
  std::string engine_log() const { return engine_ ? engine_->log() : ""; }
  const temp_dir& dir() const { return dir_; }

  /// POST /v1/jobs with a chat body carrying fake.key = key; returns the job id ("" on error).
  std::string submit(http_client& c, const std::string& key);
  /// GET /v1/jobs/{id} until terminal or the deadline; returns the last status ("" if none).
  std::string wait_terminal(http_client& c, const std::string& id,
                            std::chrono::milliseconds deadline = std::chrono::seconds(60));

 private:
  temp_dir dir_;
  std::unique_ptr<child_process> gateway_;
  uint16_t gateway_port_ = 0;
  std::unique_ptr<child_process> engine_;
  uint16_t port_ = 0;
  uint16_t internal_port_ = 0;
  int engine_runs_ = 0;
  std::string failpoints_;
  std::vector<std::string> engine_argv(const std::vector<std::string>& extra) const;
};

}  // namespace sy::test
