#pragma once
/// The core's messages over NATS request-reply (actors/core_messages.hpp): the hop the cluster
/// takes to a job's owner on another node (docs/architecture.md, "The boundary"). `core_bridge`
/// serves the requests published on a subject, `call_core` sends one and reads the answer. The
/// bytes are the messages' own encoding, so a request crosses exactly as it would inside a node.
///
/// Threads: nats.c's delivery thread only hands each request to the bridge's io thread, which
/// runs it against the core as a coroutine and publishes the answer to the request's reply
/// subject. The connection is the caller's and must outlive the bridge.

#include <utility>  // before any Asio header

#include <chrono>
#include <memory>
#include <string>
#include <thread>

#include <nats/nats.h>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>

#include "actors/core_messages.hpp"

namespace sy::api {

class core_bridge {
 public:
  /// Subscribes `subject` on `nc` (queue group "core") and serves what arrives with `core`
  /// (this node's: actors::core::local_client), which must outlive it. Errors: nats_error (the
  /// subscription failed).
  static result<std::unique_ptr<core_bridge>> start(natsConnection* nc, const std::string& subject,
                                                    actors::core::client& core);
  ~core_bridge();
  core_bridge(const core_bridge&) = delete;
  core_bridge& operator=(const core_bridge&) = delete;
  /// Takes no more requests, waits for those in flight and ends the io thread. Idempotent.
  void stop();

 private:
  core_bridge(natsConnection* nc, actors::core::client& core);
  static void on_request(natsConnection* nc, natsSubscription* sub, natsMsg* msg, void* closure);

  natsConnection* nc_;
  actors::core::client& core_;
  natsSubscription* sub_ = nullptr;
  boost::asio::io_context io_{1};
  std::unique_ptr<boost::asio::executor_work_guard<boost::asio::io_context::executor_type>> work_;
  std::thread thread_;
};

/// Sends `r` to the bridge serving `subject` and waits up to `timeout` for its answer (this
/// thread blocks: for tools and tests; a node forwarding a request awaits the same bytes).
/// Errors: nats_unavailable (no bridge answered in time), nats_error, invalid_request (an answer
/// that does not decode). The core's own errors come back inside the reply.
result<actors::core::reply> call_core(natsConnection* nc, const std::string& subject,
                                      const actors::core::request& r,
                                      std::chrono::milliseconds timeout);

}  // namespace sy::api
