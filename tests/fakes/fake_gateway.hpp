#pragma once
/// A fake OpenAI-compatible gateway for integration, system and benchmark runs: a real HTTP/1.1
/// server (Boost.Beast, keep-alive, its own io threads) on 127.0.0.1 whose faults are switched on
/// demand — latency, error statuses, 429 with Retry-After, dropped connections, refused connects.
///
/// Faults can be set three ways: this in-process API; per request through an optional `"fake"`
/// object in the request body (`status`, `latency_ms`, `fail_times` + `key`, `drop`); and over HTTP
/// (`POST /_fake/control`, `GET /_fake/stats`) for the standalone `fake_gateway` binary.
///
/// With a certificate and key it serves HTTPS instead (TLS 1.2 or later), optionally requiring
/// client certificates signed by a given CA (mutual TLS); the faults work the same over TLS.
/// See docs/gateway.md. Every method is thread-safe.

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace sy::fakes {

/// How to start a fake gateway.
struct fake_gateway_options {
  uint16_t port = 0;       ///< 0 picks a free port; read it back with port()
  int threads = 1;         ///< io threads serving connections
  int64_t latency_ms = 0;  ///< added before every answer
  /// Keep every request for received() / received_bodies(). The standalone binary turns it off:
  /// nothing outside the process can read them, and a list that only grows would make a long
  /// benchmark's fake slower (and bigger) as it runs.
  bool record_requests = true;
  /// PEM certificate (chain) and private key. When both are set, every accepted connection does
  /// a TLS server handshake before HTTP and url() says "https"; setting only one is an error.
  std::string tls_cert_file;
  std::string tls_key_file;
  /// PEM CA certificate(s). When set (TLS only), a client must present a certificate signed by
  /// one of them; a connection whose handshake fails is closed (see tls_handshake_failures()).
  std::string tls_client_ca_file;
};

/// One request as the fake received it (control requests excluded).
struct received_request {
  std::string method;
  std::string target;
  std::map<std::string, std::string> headers;  ///< names in lower case
  std::string body;
};

/// The fake gateway. Stops (and closes every connection) when destroyed.
class fake_gateway {
 public:
  explicit fake_gateway(fake_gateway_options options = {});
  ~fake_gateway();
  fake_gateway(const fake_gateway&) = delete;
  fake_gateway& operator=(const fake_gateway&) = delete;

  /// Loads the TLS files (if any), binds the listener and starts the io threads. Returns an empty
  /// string on success, else what failed (e.g. the port is taken, a certificate cannot be read).
  std::string start();
  /// Stops serving; idempotent.
  void stop();

  uint16_t port() const;
  /// "http://127.0.0.1:<port>", or "https://..." when serving TLS.
  std::string url() const;
  /// The same with another host name, e.g. "localhost" to match a certificate's DNS name.
  std::string url_for_host(const std::string& host) const;

  // --- behaviour on demand
  /// Adds `ms` of latency before every answer.
  void set_latency_ms(int64_t ms);
  /// The next `n` requests answer `status` with an OpenAI error body (429 adds Retry-After: 1).
  void fail_next(int n, int status);
  /// The next `n` requests are read and then their connection is closed without an answer.
  void drop_next(int n);
  /// true: closes the listener (connects are refused) and every open connection; false: listens
  /// again on the same port. Returns once the listener is in the requested state.
  void set_refusing(bool refusing);
  /// Closes every open connection, as a server's idle timeout would (over TLS too, the TCP
  /// connection is closed without a TLS close_notify, as drop_next() does).
  void close_connections();
  /// Clears counters, recorded requests, per-key counts and every fault (latency back to 0).
  void reset();
  /// Called on an io thread for every non-control request, before it is answered.
  void on_request(std::function<void(const received_request&)> callback);

  // --- observation
  int64_t requests() const;      ///< non-control requests received
  int64_t connections() const;   ///< connections accepted in total
  int open_connections() const;  ///< connections open now
  int peak_in_flight() const;    ///< most non-control requests being answered at once
  int in_flight()
      const;  ///< non-control requests being answered now (an aborted one: until its latency ends)
  /// TLS connections closed because their server handshake failed (no or untrusted client
  /// certificate, plain HTTP sent to the TLS port, ...). A handshake cut short by
  /// close_connections(), set_refusing() or stop() is not counted.
  int64_t tls_handshake_failures() const;
  std::vector<std::string> bodies() const;
  std::vector<received_request> received() const;
  std::map<std::string, int64_t> requests_by_key() const;  ///< by the body's fake.key
  /// Waits until open_connections() == n or `timeout_ms` passes; returns whether it happened.
  bool wait_open_connections(int n, int64_t timeout_ms) const;

  struct state;

 private:
  std::unique_ptr<state> s_;
};

}  // namespace sy::fakes
