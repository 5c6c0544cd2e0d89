#pragma once
/// A NATS service in the "micro" protocol (ADR-32, as the Go and JavaScript clients' `services`
/// implement it) on top of nats.c 3.4, which has no service API of its own.
///
/// A service has a name, a SemVer version and endpoints. Each endpoint subject is queue-subscribed
/// (queue group "q" unless configured otherwise), so instances of one service share its load. The
/// service answers discovery on `$SRV.<VERB>`, `$SRV.<VERB>.<name>` and `$SRV.<VERB>.<name>.<id>`
/// for the verbs PING, INFO and STATS (plain subscriptions: every instance answers) with the
/// `io.nats.micro.v1.*_response` JSON documents. An error reply carries the headers
/// `Nats-Service-Error` and `Nats-Service-Error-Code` and counts in the endpoint's STATS.
///
/// Threads and ownership: nats.c calls the handlers on its own delivery threads, one message at a
/// time per endpoint. A handler receives a `micro_responder` it may keep and answer later from any
/// thread (e.g. after a durable commit). The `natsConnection` is the caller's: it must outlive the
/// service and every responder. Public members of `micro_service` may be called from any one
/// thread; stop() waits for handlers that are running, so a handler must not wait for stop().

#include <nats/nats.h>

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "config/result.hpp"

namespace sy::api {

/// One request received on an endpoint. Header values are the first value of each key.
struct micro_request {
  std::string endpoint;  ///< the endpoint's name
  std::string subject;   ///< the subject the request was published on
  std::string data;
  std::map<std::string, std::string> headers;
  std::string reply;  ///< the reply subject; empty for a plain publish (no answer goes out)

  /// The value of header `name` (compared without regard to case), or nullopt.
  std::optional<std::string> header(std::string_view name) const;
};

/// The error of an error reply: sent as `Nats-Service-Error-Code` (a number) and
/// `Nats-Service-Error` (a description a user may be shown).
struct micro_error {
  int code = 500;
  std::string description;
};

/// An answer: a payload, optional headers, and optionally an error (which adds the two
/// Nats-Service-Error headers and counts as an error in STATS).
struct micro_reply {
  std::string data;
  std::vector<std::pair<std::string, std::string>> headers;
  std::optional<micro_error> error;

  /// An error reply with `data` as its payload (often empty).
  static micro_reply failure(int code, std::string description, std::string data = {});
};

/// The right (and duty) to answer one request, once, from any thread. Move-only. Destroying an
/// unanswered responder answers with error 500 (the request was dropped), so the requester learns
/// at once instead of waiting for its timeout; this also covers a handler that throws.
class micro_responder {
 public:
  struct state;  ///< the request's reply subject and its service's statistics (nats_micro.cpp)
  /// Made by the service for each request; handlers receive it, they do not make one.
  explicit micro_responder(std::shared_ptr<state> s) : s_(std::move(s)) {}
  micro_responder(micro_responder&&) noexcept = default;
  micro_responder& operator=(micro_responder&& other) noexcept;
  micro_responder(const micro_responder&) = delete;
  micro_responder& operator=(const micro_responder&) = delete;
  ~micro_responder();

  /// Publishes `reply` to the request's reply subject (natsConnection_PublishMsg) and records the
  /// request in STATS. Errors: already answered (invalid_value; nothing is sent), publishing
  /// failed (nats_error, nats_unavailable). A request without a reply subject is only recorded.
  status respond(const micro_reply& reply);
  /// True once respond() was called (or the responder was moved from).
  bool answered() const;
  /// The subject the answer goes to (empty when the request named none, or moved from).
  std::string reply_subject() const;

 private:
  std::shared_ptr<state> s_;
};

/// An endpoint handler: answers through `responder`, now or later.
using micro_handler = std::function<void(const micro_request& request, micro_responder responder)>;

/// Adapts a handler that answers by returning its reply.
micro_handler sync_handler(std::function<micro_reply(const micro_request&)> handler);

/// One endpoint of a service.
struct micro_endpoint {
  std::string name;     ///< [A-Za-z0-9_-]+
  std::string subject;  ///< a NATS subject (wildcards allowed); empty means `name`
  micro_handler handler;
  std::map<std::string, std::string> metadata;  ///< reported by INFO
};

/// A service's configuration, fixed once started.
struct micro_config {
  std::string name;     ///< the kind of service, shared by its instances: [A-Za-z0-9_-]+
  std::string version;  ///< SemVer, e.g. "1.2.0"
  std::string description;
  std::string queue_group = "q";  ///< empty: plain subscriptions (every instance gets each request)
  std::map<std::string, std::string> metadata;  ///< reported by every discovery answer
  std::vector<micro_endpoint> endpoints;
  /// When the service started, in ms since the epoch: take it from the engine's
  /// `runtime::clock` (now_ms()); STATS reports it as `started` (RFC 3339, UTC).
  int64_t started_ms = 0;
  /// How long stop() waits for the subscriptions to drain and their handlers to return.
  int64_t stop_timeout_ms = 10'000;
};

/// What STATS reports for one endpoint.
struct micro_endpoint_stats {
  std::string name;
  std::string subject;
  std::string queue_group;
  uint64_t num_requests = 0;       ///< requests answered (or dropped) so far
  uint64_t num_errors = 0;         ///< of which answered with an error
  std::string last_error;          ///< "<code>:<description>" of the last error, or empty
  int64_t processing_time_ns = 0;  ///< receipt to answer, summed over the requests
  int64_t average_processing_time_ns = 0;
};

/// A running service instance: its subscriptions live from start() to stop().
class micro_service {
 public:
  /// Validates `config`, draws the instance id, and subscribes the endpoints and the discovery
  /// subjects on `nc`. Errors: an invalid name, version, endpoint or queue group
  /// (invalid_config); a subscription failed (nats_error, nats_unavailable), in which case the
  /// subscriptions already made are removed again.
  static result<std::unique_ptr<micro_service>> start(natsConnection* nc, micro_config config);
  micro_service(const micro_service&) = delete;
  micro_service& operator=(const micro_service&) = delete;
  /// Calls stop().
  ~micro_service();

  /// Drains every subscription (requests already received are still handled), then waits up to
  /// stop_timeout_ms for the handlers to return. Idempotent. Responders handed out earlier stay
  /// valid. Errors: the wait timed out (nats_error); the subscriptions are released anyway.
  status stop();

  /// The random id of this instance (22 characters of [0-9A-Za-z]).
  const std::string& id() const;
  const micro_config& config() const;
  /// The statistics of every endpoint, in configuration order.
  std::vector<micro_endpoint_stats> stats() const;

  struct core;  ///< state shared with the nats.c callbacks (nats_micro.cpp)

 private:
  explicit micro_service(std::shared_ptr<core> c) : core_(std::move(c)) {}
  std::shared_ptr<core> core_;
  std::vector<natsSubscription*> subs_;  // owned; emptied by stop()
};

}  // namespace sy::api
