#pragma once
/// One HTTP exchange with a target outside the engine that the user names — a webhook receiver,
/// the URL of an `http` task — under a network policy (webhook_policy.hpp): the host is resolved
/// at every exchange and only the addresses that pass the policy are tried, so a name cannot be
/// pointed at a denied network after it was checked. One new connection per exchange (targets
/// vary); the whole exchange (resolve, connect, TLS, send, answer) is bounded by the policy's
/// timeout_ms, a timer of the injected clock; redirects are not followed; https verifies the
/// chain and the host name (SNI).
///
/// Threading: an `outbound_client` is immutable after construction; `send()` may be awaited
/// concurrently from any thread of the execution context, each exchange runs on its own strand.

#include <utility>  // before any Asio header (Boost 1.74 coroutine support needs it)

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "runtime/clock.hpp"
#include "runtime/gateway_client.hpp"
#include "runtime/webhook_policy.hpp"

namespace sy::runtime {

struct outbound_request {
  std::string method = "POST";
  std::string url;
  std::vector<std::pair<std::string, std::string>> headers;  ///< sent as given, after Host
  std::string body;
};

struct outbound_options {
  uint64_t max_body_bytes = uint64_t{64} * 1024;    ///< a longer answer body fails the exchange
  bool read_success_body = false;                   ///< false: a 2xx answer's body is not read
  std::string peer_noun = "the receiver";           ///< names the other side in error messages
  std::string reached_as = "may receive webhooks";  ///< "no address of <host> <reached_as>: …"
};

/// What came of one exchange.
struct outbound_response {
  bool answered = false;   ///< an HTTP answer (of any status) was read
  bool permanent = false;  ///< retrying cannot help: the URL is invalid, or every address is denied
  bool aborted = false;    ///< the caller's abort_handle stopped it
  bool denied = false;     ///< permanent: the policy denies every address of the host
  int status_code = 0;
  std::string body;   ///< the answer's body (a 2xx's only with read_success_body)
  std::string error;  ///< what failed and why; empty for a 2xx
};

class outbound_client {
 public:
  /// The exchanges' deadlines follow `clock` (nullptr: the system clock).
  outbound_client(boost::asio::any_io_executor ex, webhook_policy policy,
                  std::shared_ptr<const clock> clock = nullptr);
  ~outbound_client();
  outbound_client(const outbound_client&) = delete;
  outbound_client& operator=(const outbound_client&) = delete;

  const webhook_policy& policy() const;

  /// Makes the exchange. `abort` (optional) stops it from any thread. Never throws; the returned
  /// awaitable keeps what it needs alive (the client may go away while exchanges are pending).
  boost::asio::awaitable<outbound_response> send(
      outbound_request req, outbound_options options,
      std::shared_ptr<abort_handle> abort = nullptr) const;

  struct impl;

 private:
  std::shared_ptr<const impl> impl_;
};

}  // namespace sy::runtime
