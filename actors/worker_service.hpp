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

#include "actors/admitted.hpp"
#include "actors/runtime_queue.hpp"
#include "config/result.hpp"

namespace sy::actors {

/// A worker call, read and checked by admission (api/admission.hpp, docs/workers.md): the
/// fields its kind uses are set, the others are empty.
struct worker_request {
  enum class kind { lease, heartbeat, complete, fail, credentials };
  kind what = kind::lease;
  std::string runtime;        ///< lease: the runtime's name (no control character)
  int max_tasks = 1;          ///< lease: 1..100
  int64_t wait_ms = 0;        ///< lease: 0..30,000
  std::string token;          ///< the others: the capability token, at most 8 KiB (verified here)
  std::string output;         ///< complete: the task's result, JSON text
  std::string error_code;     ///< fail: the worker's code (1..64 of A-Z a-z 0-9 _ - .)
  std::string error_message;  ///< fail: at most 4,096 bytes
  bool retryable = false;     ///< fail

  bool operator==(const worker_request&) const = default;
};

/// A heartbeat's answer: the lease's new expiry and a fresh token that carries it.
struct heartbeat_answer {
  int64_t lease_expires_at_ms = 0;
  std::string capability_token;
  bool cancel_requested = false;  ///< the job is being cancelled or past its timeout: stop

  bool operator==(const heartbeat_answer&) const = default;
};

/// Storage credentials minted for an attempt: scoped to its grants (docs/workers.md).
struct storage_credentials {
  std::string access_key_id;
  std::string secret_access_key;
  std::string session_token;
  std::string expiration;  ///< ISO 8601, as STS wrote it
  std::string endpoint;    ///< the S3 endpoint to use them with
  std::string region;

  bool operator==(const storage_credentials&) const = default;
};

// --- inspect (storage/inspect.hpp): plain values, like job_service.hpp's.

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, worker_request& x) {
  return f(x.what, x.runtime, x.max_tasks, x.wait_ms, x.token, x.output, x.error_code,
           x.error_message, x.retryable);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, heartbeat_answer& x) {
  return f(x.lease_expires_at_ms, x.capability_token, x.cancel_requested);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, storage_credentials& x) {
  return f(x.access_key_id, x.secret_access_key, x.session_token, x.expiration, x.endpoint,
           x.region);
}

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
  /// Each call takes a request that admission read and checked (its `what` is the call's).
  /// Up to `max_tasks` tasks of `runtime`, waiting up to `wait_ms` for the first; the wait ends
  /// early, without tasks, when `caller` (may be null: NATS) is gone.
  /// Errors: runtime_not_found, shutting_down.
  virtual boost::asio::awaitable<result<lease_reply>> lease(
      admitted<worker_request> call, std::shared_ptr<caller_presence> caller) = 0;
  /// Errors (all calls below): invalid_capability_token (401), stale_attempt and lease_expired
  /// (409), storage_unavailable.
  virtual boost::asio::awaitable<result<heartbeat_answer>> heartbeat(
      admitted<worker_request> call) = 0;
  /// Records the attempt's success with `output` (JSON text) as the job's result.
  virtual boost::asio::awaitable<status> complete(admitted<worker_request> call) = 0;
  /// Records the attempt's failure: retried with backoff when retryable and attempts are left.
  virtual boost::asio::awaitable<status> fail(admitted<worker_request> call) = 0;
  /// Credentials for the attempt's storage grants, from STS, while the attempt holds its lease.
  /// Errors (besides the four above): invalid_grants (the task has none), credentials_unavailable
  /// (no STS configured, or STS refused or did not answer).
  virtual boost::asio::awaitable<result<storage_credentials>> credentials(
      admitted<worker_request> call) = 0;
  /// The JWKS of the keys that verify capability tokens, as JSON text.
  virtual boost::asio::awaitable<result<std::string>> jwks() = 0;
  /// Rotates the signing key now (`switchyard keys rotate`): the new key is published at once
  /// and signs after the publish lead; returns the JWKS after the rotation.
  virtual boost::asio::awaitable<result<std::string>> rotate_keys() = 0;
};

}  // namespace sy::actors
