#pragma once
/// The HTTP/1.1 client that executes inference requests against one OpenAI-compatible gateway:
/// keep-alive pooling, a per-exchange timeout, retries with backoff on retryable outcomes, and a
/// prompt abort. Errors never escape as exceptions; every outcome is a `gateway_outcome`.
///
/// Threading: all of a client's I/O and pool state live on one internal strand of the executor it
/// is given, so `send()` may be awaited from any coroutine on any thread of that execution
/// context. `abort_handle::abort()` may be called from any thread.

#include <utility>  // before any Asio header (Boost 1.74 coroutine support needs it)

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>
#include <functional>
#include <memory>
#include <mutex>
#include <string>

#include "config/settings.hpp"
#include "runtime/clock.hpp"

namespace sy::runtime {

/// One request to a gateway.
struct gateway_request {
  gateway_request() = default;
  /// The path and body; the rest is optional (a test's request needs neither).
  gateway_request(std::string p, std::string b, std::string m = {}, std::string tp = {},
                  std::string ts = {})
      : path(std::move(p)),
        body(std::move(b)),
        model(std::move(m)),
        traceparent(std::move(tp)),
        tracestate(std::move(ts)) {}

  std::string path;   ///< e.g. /v1/chat/completions, appended to the gateway URL's path prefix
  std::string body;   ///< JSON text, sent as is
  std::string model;  ///< for the metrics only (by model); not sent
  std::string traceparent;  ///< sent as the `traceparent` header when not empty
  std::string tracestate;   ///< sent as `tracestate` with it
  /// The most HTTP exchanges this request may take across retryable outcomes (a batch line's
  /// `max_attempts`); 0: the client's, 1 + `max_retries`.
  int max_tries = 0;
};

/// What came of a `send()`, after any retries. `tries` says how many HTTP exchanges were made.
struct gateway_outcome {
  bool got_response = false;  ///< false: transport failure (refused, reset, timeout, dropped)
  int status_code = 0;        ///< the last response's HTTP status, when got_response
  std::string body;           ///< the last response's body, when got_response
  std::string request_id;     ///< the gateway's x-request-id, when present
  bool retryable = false;     ///< transport failure, 408, 429 or 5xx (never for "aborted")
  std::string error;          ///< what failed and why; empty on a 2xx
  int tries = 0;              ///< HTTP exchanges made (1 + retries)
  /// No answer, and trying again cannot help (an http task's URL whose every address is denied,
  /// or whose answer is over the size limit).
  bool permanent = false;
  bool denied = false;  ///< permanent because the network policy denies every address

  bool operator==(const gateway_outcome&) const = default;
};

/// CAF 0.17's inspector concept: an outcome travels to its job actor as a message value.
template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, gateway_outcome& x) {
  return f(x.got_response, x.status_code, x.body, x.request_id, x.retryable, x.error, x.tries,
           x.permanent, x.denied);
}

/// Lets another party stop a `send()` early, from any thread: the in-flight exchange's socket is
/// closed and any backoff or pool wait is cancelled, and the outcome's error is "aborted". Used by
/// the dispatcher for cancel, lease loss and shutdown. One handle serves one `send()` at a time.
class abort_handle {
 public:
  /// Requests the abort. Idempotent; returns at once (the cancellation runs on the client's
  /// strand).
  void abort();
  /// Whether abort() has been called.
  bool aborted() const;

  /// For gateway_client: installs the function that cancels the current wait. Returns false (and
  /// installs nothing) when the handle is already aborted.
  bool set_canceller(std::function<void()> fn);
  /// For gateway_client: removes the canceller when the send finishes.
  void clear_canceller();

 private:
  mutable std::mutex mu_;
  bool aborted_ = false;
  std::function<void()> canceller_;
};

/// An asynchronous client for one gateway (one instance per configured gateway).
class gateway_client {
 public:
  /// `settings.url` must be `http://host[:port][/prefix]`; an invalid URL makes every `send()`
  /// answer a non-retryable error naming it (validation is config's job; this is the backstop).
  /// The pauses between retries follow `clock` (the engine's), which must outlive the client.
  gateway_client(const boost::asio::any_io_executor& executor,
                 sy::config::gateway_settings settings, const clock& clock);
  /// A client whose retry pauses follow the system clock (tools and tests of the wire).
  gateway_client(const boost::asio::any_io_executor& executor,
                 sy::config::gateway_settings settings);
  ~gateway_client();
  gateway_client(const gateway_client&) = delete;
  gateway_client& operator=(const gateway_client&) = delete;

  /// Sends `request` as `POST <prefix><path>` with keep-alive pooling (idle connections reused, at
  /// most `max_connections` open; further sends wait for a free one), a deadline of
  /// `request_timeout_ms` per exchange (connect + write + read), and up to `max_retries` retries
  /// (`request.max_tries` - 1 when the request sets it) on retryable outcomes, waiting
  /// `backoff_delay_ms` in between (a 429's or 503's Retry-After seconds are honoured, capped at
  /// `max_backoff_ms`). A pooled connection that fails before any response byte (the gateway closed
  /// it while idle) is retried at once on a fresh connection without counting a try. Responses are
  /// limited to 64 MiB. The client must outlive the returned awaitable.
  boost::asio::awaitable<gateway_outcome> send(gateway_request request,
                                               std::shared_ptr<abort_handle> abort = nullptr);

  /// Connections currently open (idle and busy), for metrics and tests.
  int open_connections() const;

  /// The client's strand. A coroutine that runs on it (co_spawn'ed there) sends without the hop
  /// onto the strand and back that `send()` otherwise makes: callers that send many requests in
  /// a row (a batch's lanes) run there.
  boost::asio::any_io_executor executor() const;
  /// The settings the client was made with (entries equal to them can share it).
  const sy::config::gateway_settings& settings() const;

  struct impl;

 private:
  std::shared_ptr<impl> impl_;
};

}  // namespace sy::runtime
