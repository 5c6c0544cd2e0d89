#pragma once
/// Test environment: a private nats-server on a random port with its store in a fresh temp dir,
/// and a connected js_client with the layout created. Plus deadline-bounded wait helpers.

#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "runtime/jetstream.hpp"
#include "runtime/nats_server.hpp"

namespace sy::test {

/// A temp dir, a started nats-server in it, and a client with ensure_layout() done.
class nats_env {
 public:
  explicit nats_env(runtime::js_layout layout = {});
  ~nats_env();

  /// Connects another client (e.g. with another layout) to the same server.
  std::unique_ptr<runtime::js_client> connect(runtime::js_layout layout = {});

  std::string dir;
  std::unique_ptr<runtime::nats_server> server;
  std::unique_ptr<runtime::js_client> client;
};

/// Polls `pred` every few ms until it holds or `timeout` passes; returns its last value.
bool wait_until(const std::function<bool()>& pred, std::chrono::milliseconds timeout);

/// Fetches from `sub` until one message arrives or `timeout` passes.
std::optional<runtime::js_message> fetch_one(runtime::pull_subscription& sub,
                                             std::chrono::milliseconds timeout);

/// Milliseconds elapsed since `start`.
int64_t ms_since(std::chrono::steady_clock::time_point start);

}  // namespace sy::test
