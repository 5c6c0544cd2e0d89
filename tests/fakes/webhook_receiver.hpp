#pragma once
/// A webhook receiver for integration and system tests: a real HTTP/1.1 server (Boost.Beast, its
/// own io thread; optionally https) on 127.0.0.1 that accepts a POST on any path, checks the
/// signature with the configured secret the way a user's receiver does — the Standard Webhooks
/// headers (webhook-id, webhook-timestamp, webhook-signature) always, the deprecated
/// X-Switchyard-Signature and X-Switchyard-Delivery when present (they must then verify and
/// agree with webhook-id) — records every delivery and counts them per
/// (job_id, sequence) taken from the JSON body. It can answer the next N deliveries with an error
/// status, or delay every answer, to exercise the deliverer's retries and timeouts.
///
/// It verifies signatures with its own HMAC code (OpenSSL) rather than the engine's, so a bug in
/// the engine's signing cannot hide in its test double.
///
/// In-process tests use the methods below (all thread-safe). Other processes (system tests,
/// across an engine restart) use the standalone `fake_webhook_receiver` binary and:
///   GET  /_receiver/deliveries  → to_json()
///   POST /_receiver/control     ← {"fail_next": N, "status": S, "delay_ms": D, "reset": true}
/// (every key optional). Described in docs/webhooks.md.

#include <cstdint>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

namespace sy::fakes {

/// How to start a receiver.
struct webhook_receiver_options {
  uint16_t port = 0;  ///< 0 picks a free port; read it back with port()
  /// The webhook secret as in `webhook_secret_file`: `whsec_<base64>` (the key is the decoded
  /// bytes) or raw text (the key is its bytes); empty: signatures are not checked.
  std::string secret;
  /// Largest allowed distance between the signed timestamp and the receiver's clock, in seconds;
  /// negative: the timestamp is not checked.
  int64_t tolerance_s = 300;
  /// PEM certificate chain and key: when both are set the receiver speaks https only.
  std::string tls_cert_file;
  std::string tls_key_file;
};

/// One POST as the receiver got it (control requests excluded).
struct received_webhook {
  std::string path;                            ///< the request target, query included
  std::map<std::string, std::string> headers;  ///< names in lower case
  std::string raw_body;
  nlohmann::json body;        ///< the parsed body; null when it is not JSON
  bool signature_ok = false;  ///< always true when no secret is configured
  int answered = 0;           ///< the status the receiver answered (or will answer)
};

/// The receiver. A delivery with a bad or missing signature is answered 401 and counted in
/// bad_signatures() only. Every other delivery is recorded and counted under its body's
/// (job_id, sequence) — including the ones answered with an injected failure, since the sender
/// did deliver them — then answered 200 (or the injected status) after the configured delay.
/// Stops (and closes every connection) when destroyed.
class webhook_receiver {
 public:
  explicit webhook_receiver(webhook_receiver_options options = {});
  ~webhook_receiver();
  webhook_receiver(const webhook_receiver&) = delete;
  webhook_receiver& operator=(const webhook_receiver&) = delete;

  /// Binds the listener and starts the io thread. Returns an empty string on success, else what
  /// failed (e.g. the port is taken).
  std::string start();
  /// Stops serving; idempotent.
  void stop();

  uint16_t port() const;
  /// "http://127.0.0.1:<port>" ("https://..." with TLS).
  std::string url() const;

  // --- behaviour on demand
  /// The next `n` correctly signed deliveries are answered `status`.
  void fail_next(int n, int status = 500);
  /// Waits `ms` before answering every delivery (recorded at once, answered late).
  void set_delay_ms(int64_t ms);
  /// Forgets every delivery and counter and clears fail_next and the delay.
  void reset();

  // --- observation
  /// Every delivery, in arrival order, bad signatures included.
  std::vector<received_webhook> deliveries() const;
  /// Correctly signed deliveries received (whatever they were answered).
  int64_t delivered() const;
  /// Deliveries refused for a missing, malformed, stale or wrong signature.
  int64_t bad_signatures() const;
  /// TCP connections accepted, control requests' included.
  int64_t connections() const;
  /// Correctly signed deliveries whose body had this job_id and sequence.
  int64_t count(const std::string& job_id, int64_t sequence) const;
  /// Every (job_id, sequence) seen, with its count.
  std::map<std::pair<std::string, int64_t>, int64_t> counts() const;
  /// Waits until delivered() >= n or `timeout_ms` passes; returns whether it happened.
  bool wait_delivered(int64_t n, int64_t timeout_ms) const;
  /// {"deliveries":[{path, headers, body, signature_ok, status}], "delivered": n,
  ///  "bad_signatures": n, "connections": n, "counts":[{job_id, sequence, count}]}
  nlohmann::json to_json() const;

  struct state;

 private:
  std::unique_ptr<state> s_;
};

}  // namespace sy::fakes
