#pragma once
/// The whole engine in one test process, made of real parts: a nats-server on a random port, LMDB
/// in a temp dir, the HTTP server on port 0, and the fake OpenAI-compatible gateway.

#include <memory>
#include <string>

#include "actors/engine.hpp"
#include "api/http_server.hpp"
#include "config/settings.hpp"
#include "runtime/clock.hpp"
#include "runtime/jetstream.hpp"
#include "runtime/nats_server.hpp"
#include "storage/lmdb_env.hpp"
#include "tests/fakes/fake_gateway.hpp"
#include "tests/support/http_client.hpp"
#include "tests/support/temp_dir.hpp"

namespace sy::test {

class engine_env {
 public:
  /// Settings with a global gateway pointing at the fake and short timeouts; adjust before
  /// start().
  engine_env();
  ~engine_env();

  config::settings& settings() { return settings_; }
  fakes::fake_gateway& gateway() { return *gateway_; }
  runtime::nats_server& nats() { return *nats_; }
  storage::environment& store() { return *env_; }
  runtime::js_client& js() { return *js_; }  ///< after start()
  actors::engine& engine() { return *engine_; }
  uint16_t port() const { return http_->port(); }
  /// The internal listener's port (the worker protocol).
  uint16_t internal_port() const { return internal_->port(); }

  /// Runs the engine on a manual clock starting at `start_ms` (call before start()): deadlines,
  /// lease expiry, heartbeats, webhook backoff and waits then move only when the test advances
  /// it. Returns the clock.
  runtime::manual_clock& use_manual_clock(int64_t start_ms = 1'800'000'000'000);

  /// Opens the LMDB store without starting the engine (start() does it too).
  storage::environment& open_store();
  /// Starts (or, after stop(), restarts) the engine and HTTP server over the same data.
  void start();
  /// Graceful stop of HTTP and engine (NATS, LMDB and the gateway stay).
  void stop();

  /// Submits a chat job; returns the reply.
  http_reply submit(http_client& c, const std::string& content, nlohmann::json fake = nullptr,
                    const std::map<std::string, std::string>& headers = {},
                    nlohmann::json extra = nlohmann::json::object());
  /// Polls GET /v1/jobs/{id} until the job is terminal (or the deadline); returns the last job.
  nlohmann::json wait_terminal(http_client& c, const std::string& id,
                               std::chrono::milliseconds deadline = std::chrono::seconds(30));
  /// How many records database `d` of the store holds now (one read snapshot).
  size_t count(storage::db d);

 private:
  temp_dir dir_;
  config::settings settings_;
  std::unique_ptr<fakes::fake_gateway> gateway_;
  std::unique_ptr<runtime::nats_server> nats_;
  std::unique_ptr<storage::environment> env_;
  std::unique_ptr<runtime::js_client> js_;
  std::unique_ptr<runtime::clock> clock_ = std::make_unique<runtime::system_clock_source>();
  std::unique_ptr<actors::engine> engine_;
  std::unique_ptr<actors::core::local_client> core_;  ///< the surfaces' way into engine_
  std::unique_ptr<api::http_server> http_;
  std::unique_ptr<api::http_server> internal_;
};

}  // namespace sy::test
