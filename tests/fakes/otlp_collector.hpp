#pragma once
/// An OpenTelemetry collector's OTLP/HTTP receiver for tests: it accepts `POST /v1/traces` with
/// the JSON encoding, keeps every span, and checks their links — each span's parent is a span it
/// received in the same trace, or one the test names as coming from outside (the client's).
/// Built on the webhook receiver's HTTP server (no signatures); it can fail or delay its answers
/// to stand for a collector that is down or slow. Thread-safe.

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "tests/fakes/webhook_receiver.hpp"

namespace sy::fakes {

/// One span as the collector read it.
struct collected_span {
  std::string trace_id;
  std::string span_id;
  std::string parent_span_id;  ///< empty: a root
  std::string name;
  int kind = 0;
  int64_t start_ns = 0;
  int64_t end_ns = 0;
  int status_code = 0;                            ///< 2: error
  std::map<std::string, std::string> attributes;  ///< string and int values, as text
  std::string service;                            ///< the resource's service.name
};

class otlp_collector {
 public:
  otlp_collector();
  /// Starts listening on 127.0.0.1 (a free port); empty, or what failed.
  std::string start();
  uint16_t port() const { return rx_.port(); }
  std::string url() const { return rx_.url(); }
  /// The next `n` exports are answered `status` (their spans are not kept).
  void fail_next(int n, int status = 503) { rx_.fail_next(n, status); }

  /// Every span of every export that was answered 200, in arrival order.
  std::vector<collected_span> spans() const;
  /// The spans named `name` (in arrival order).
  std::vector<collected_span> named(const std::string& name) const;
  /// What is wrong with the links of the spans received: a malformed id, a span id seen twice, a
  /// parent that is neither a received span of the same trace nor in `external`. Empty: none.
  std::string link_problems(const std::set<std::string>& external = {}) const;
  /// Exports received on a path other than /v1/traces, or with a body that is not OTLP JSON.
  int64_t malformed() const;

 private:
  webhook_receiver rx_;
};

}  // namespace sy::fakes
