#pragma once
/// What the worker protocol (docs/workers.md) asks of the engine: the internal listener's routes
/// (api/detail/worker_routes.cpp) call it, and later the NATS micro service. Every call but
/// `lease` is authenticated by the attempt's capability token alone; the token is checked by the
/// credential minter and the attempt by the store (fencing), never by the caller.

#include <utility>  // before any Asio header

#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include <boost/asio/awaitable.hpp>

#include "actors/runtime_queue.hpp"
#include "config/result.hpp"

namespace sy::actors {

/// How a worker says its attempt failed.
struct worker_failure {
  std::string code;     ///< the worker's own code, recorded as the job's error code
  std::string message;  ///< what failed and why
  bool retryable = false;
};

/// A heartbeat's answer: the lease's new expiry and a fresh token that carries it.
struct heartbeat_answer {
  int64_t lease_expires_at_ms = 0;
  std::string capability_token;
  bool cancel_requested = false;  ///< the job is being cancelled or past its timeout: stop
};

/// Storage credentials minted for an attempt: scoped to its grants (docs/workers.md).
struct storage_credentials {
  std::string access_key_id;
  std::string secret_access_key;
  std::string session_token;
  std::string expiration;  ///< ISO 8601, as STS wrote it
  std::string endpoint;    ///< the S3 endpoint to use them with
  std::string region;
};

/// A long poll's caller as its transport sees it. The HTTP server marks it gone when the worker
/// closes its connection while the poll waits (api/http_server.cpp); the lease then withdraws
/// its wait, so that no task fetched later is leased to a caller that cannot hear of it. Touched
/// only on the caller's executor (the connection's), where the lease's coroutine runs too.
class caller_presence {
 public:
  /// The caller left: runs the hook the waiting call set, once.
  void left() {
    if (gone_) return;
    gone_ = true;
    if (auto hook = std::move(on_left_)) hook();
  }
  bool gone() const { return gone_; }
  /// What the waiting call does when the caller leaves; an empty function clears it.
  void on_left(std::function<void()> hook) { on_left_ = std::move(hook); }

 private:
  bool gone_ = false;
  std::function<void()> on_left_;
};

class worker_service {
 public:
  virtual ~worker_service() = default;
  /// Up to `max_tasks` tasks of `runtime`, waiting up to `wait_ms` for the first; the wait ends
  /// early, without tasks, when `caller` (may be null: NATS) is gone.
  /// Errors: runtime_not_found, shutting_down.
  virtual boost::asio::awaitable<result<lease_reply>> lease(
      std::string runtime, int max_tasks, int64_t wait_ms,
      std::shared_ptr<caller_presence> caller) = 0;
  /// Errors (all calls below): invalid_capability_token (401), stale_attempt and lease_expired
  /// (409), storage_unavailable.
  virtual boost::asio::awaitable<result<heartbeat_answer>> heartbeat(std::string token) = 0;
  /// Records the attempt's success with `output` (JSON text) as the job's result.
  virtual boost::asio::awaitable<status> complete(std::string token, std::string output) = 0;
  /// Records the attempt's failure: retried with backoff when retryable and attempts are left.
  virtual boost::asio::awaitable<status> fail(std::string token, worker_failure f) = 0;
  /// Credentials for the attempt's storage grants, from STS, while the attempt holds its lease.
  /// Errors (besides the four above): invalid_grants (the task has none), credentials_unavailable
  /// (no STS configured, or STS refused or did not answer).
  virtual boost::asio::awaitable<result<storage_credentials>> credentials(std::string token) = 0;
  /// The JWKS of the keys that verify capability tokens, as JSON text.
  virtual boost::asio::awaitable<result<std::string>> jwks() = 0;
  /// Rotates the signing key now (`switchyard keys rotate`): the new key is published at once
  /// and signs after the publish lead; returns the JWKS after the rotation.
  virtual boost::asio::awaitable<result<std::string>> rotate_keys() = 0;
};

}  // namespace sy::actors
