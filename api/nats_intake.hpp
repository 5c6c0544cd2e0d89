#pragma once
/// The NATS intake (docs/nats.md): submissions published on `<sp>.submit.job` into the
/// `<prefix>_INTAKE` work-queue stream become jobs with the same authentication, validation and
/// idempotency as `POST /v1/jobs`. Each message is answered (when it names a reply subject in
/// header `Sy-Reply-To`) with the job or the error, then acked (job created or found),
/// terminated (a submission that can never succeed) or nak'ed with a delay (storage or engine
/// temporarily unavailable; the last allowed delivery is answered and terminated instead).
///
/// Threads: the intake owns two threads. The fetch thread pulls batches from the durable
/// consumer `intake`, decides, replies and acks (it is the only thread that touches the
/// subscription and its messages); the io thread runs the `job_service::submit` coroutines of a
/// batch concurrently, so one batch shares the storage writer's group commit. Public members
/// may be called from any one thread (the owner, e.g. main).

#include <utility>  // before any Asio header

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>

#include "actors/core_messages.hpp"
#include "api/admission.hpp"
#include "config/result.hpp"
#include "config/settings.hpp"
#include "runtime/jetstream.hpp"

namespace sy::api {

/// Tuning of the fetch loop (defaults suit production; tests keep them).
struct nats_intake_options {
  int batch = 64;                  ///< messages per fetch (and submits in flight)
  int64_t fetch_timeout_ms = 250;  ///< one fetch's wait; also bounds how long stop() takes
  int64_t retry_delay_ms = 1'000;  ///< nak delay after a transient error
  int64_t error_backoff_ms = 500;  ///< pause after a failed fetch (NATS down)
};

/// What the intake has done since it started (for tests and logs).
struct nats_intake_counters {
  uint64_t received = 0;  ///< deliveries fetched (a redelivery counts again)
  uint64_t accepted = 0;  ///< answered with a job and acked
  uint64_t rejected = 0;  ///< answered with an error and terminated
  uint64_t deferred = 0;  ///< nak'ed for a later redelivery
};

class nats_intake {
 public:
  /// Binds the durable consumer (creating it when missing) and starts both threads.
  /// `core` (the submissions go to the core through it) and `js` must outlive the intake. Errors:
  /// the consumer cannot be bound although NATS is up with its streams. Until then the intake
  /// starts unbound and binds once it can.
  static result<std::unique_ptr<nats_intake>> start(const config::settings& settings,
                                                    actors::core::client& core,
                                                    runtime::js_client& js,
                                                    nats_intake_options options = {});
  nats_intake(const nats_intake&) = delete;
  nats_intake& operator=(const nats_intake&) = delete;
  /// Calls stop().
  ~nats_intake();

  /// Stops fetching, finishes the batch in hand (its submits, replies and acks), joins both
  /// threads. Idempotent. Call it before the engine shuts down.
  void stop();

  nats_intake_counters counters() const;

 private:
  struct pending;  // one fetched message and what became of it
  nats_intake(const config::settings& settings, actors::core::client& core, runtime::js_client& js,
              nats_intake_options options);
  void fetch_loop();
  void process(std::vector<runtime::js_message>& batch);
  void finish(pending& p);
  void answer(const pending& p, unsigned status, const std::string& body);
  /// Binds the durable consumer (creating it when missing) under the current layout generation.
  sy::status bind();
  /// bind() when connected; on failure the old subscription is kept.
  void resubscribe();

  admission admission_;  ///< every message goes through it, as an HTTP body does
  actors::core::client& core_;
  runtime::js_client& js_;
  nats_intake_options options_;
  std::string job_subject_;
  std::unique_ptr<runtime::pull_subscription> sub_;  // fetch thread only (after start)
  uint64_t bound_generation_ = 0;  ///< js layout generation sub_ was bound under (fetch thread)

  /// Never destroyed, on purpose: the engine's writer answers a submission by posting to it, and
  /// Asio signals the context's condition variable after unlocking its mutex, so a context
  /// destroyed right after it ran that answer races with the poster still inside post()
  /// (ThreadSanitizer saw pthread_cond_signal against pthread_cond_destroy when a test stopped
  /// the intake). One small object per intake started; a process starts one.
  boost::asio::io_context& io_ = *new boost::asio::io_context;
  std::optional<boost::asio::executor_work_guard<boost::asio::io_context::executor_type>> work_;
  std::thread io_thread_;
  std::thread fetch_thread_;
  std::atomic<bool> stopping_{false};
  std::mutex stop_mu_;
  std::condition_variable stop_cv_;  // wakes the fetch thread's back-off on stop()

  mutable std::mutex counters_mu_;
  nats_intake_counters counters_;
};

}  // namespace sy::api
