#pragma once
/// The engine's NATS micro service (docs/nats.md, "Request-reply service"): the worker protocol
/// and job submission as NATS request-reply, the NATS way — the ADR-32 service protocol
/// (api/nats_micro.hpp: `$SRV.PING|INFO|STATS` discovery, a queue group, so several engines share
/// the load). Service `switchyard`; endpoints, with the default subject prefix:
///
/// | subject | as over HTTP |
/// |---|---|
/// | `sy.api.jobs.create` | `POST /v1/jobs`: headers `Authorization`, `Idempotency-Key`; answered
/// with the job after the commit | | `sy.task.lease` | `POST /v1/task/lease` (header
/// `Authorization`: a worker key) | | `sy.task.heartbeat`, `.complete`, `.fail` | the same, header
/// `X-Switchyard-Task-Capability` |
///
/// An answer is the JSON body HTTP would send; an error is the OpenAI envelope with the headers
/// `Nats-Service-Error` (the message) and `Nats-Service-Error-Code` (the HTTP status).
///
/// Threads: its own NATS connection (reconnecting forever; nats.c subscribes again after a
/// reconnect) whose callbacks only hand the request to the service's io thread, which runs the
/// calls as coroutines against the engine and answers from there.

#include <utility>  // before any Asio header

#include <cstdint>
#include <memory>
#include <string>
#include <thread>

#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>

#include "actors/core_messages.hpp"
#include "api/admission.hpp"
#include "api/auth.hpp"
#include "api/nats_micro.hpp"
#include "config/settings.hpp"

namespace sy::api {

class nats_service {
 public:
  /// Connects to `nats_url` (retrying in the background while NATS is down) and starts the
  /// service. `core` (every call goes to the core through it: actors/core_messages.hpp) must
  /// outlive it. Errors: nats_error (no connection object),
  /// those of micro_service::start.
  static result<std::unique_ptr<nats_service>> start(const config::settings& settings,
                                                     const std::string& nats_url,
                                                     actors::core::client& core, int64_t now_ms);
  ~nats_service();
  nats_service(const nats_service&) = delete;
  nats_service& operator=(const nats_service&) = delete;
  /// Stops taking requests (the subscriptions drain; the requests already taken still run).
  /// Before the engine stops, whose stop then ends the long polls among them.
  void stop_accepting();
  /// stop_accepting(), then waits for the calls in flight, ends the io thread and closes the
  /// connection. Idempotent.
  void stop();
  /// The micro service's instance id (discovery).
  const std::string& id() const { return micro_->id(); }

 private:
  nats_service(const config::settings& settings, actors::core::client& core);
  micro_config config(int64_t now_ms);

  admission admission_;  ///< every request goes through it, as an HTTP body does
  actors::core::client& core_;
  std::string prefix_;  ///< the subject prefix (`sy`)
  int64_t shutdown_timeout_ms_;
  boost::asio::io_context io_{1};
  boost::asio::executor_work_guard<boost::asio::io_context::executor_type> work_{
      boost::asio::make_work_guard(io_)};
  std::thread thread_;
  natsConnection* nc_ = nullptr;
  std::unique_ptr<micro_service> micro_;
  bool stopped_ = false;
};

}  // namespace sy::api
