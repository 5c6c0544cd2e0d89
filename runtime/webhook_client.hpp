#pragma once
/// The webhook transport: the client that POSTs one signed delivery to a target that passes the
/// network policy (webhook_policy.hpp; signature schemes in webhook_signature.hpp).
/// Retries and the durable queue of deliveries belong to the webhook deliverer (actors/), which
/// calls `deliver()` once per attempt. Wire format and policy: docs/webhooks.md.
///
/// Threading: a `webhook_client` is immutable after construction; `deliver()` may be awaited
/// concurrently from any thread of the execution context, each delivery runs on its own strand.

#include <utility>  // before any Asio header (Boost 1.74 coroutine support needs it)

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>
#include <memory>
#include <string>

#include "runtime/clock.hpp"
#include "runtime/webhook_policy.hpp"
#include "runtime/webhook_signature.hpp"

namespace sy::runtime {

/// What came of one delivery attempt.
struct webhook_outcome {
  bool delivered = false;  ///< the receiver answered 2xx
  /// Retrying cannot help: the URL is invalid, or no resolved address passes the policy.
  bool permanent = false;
  int status_code = 0;  ///< the receiver's HTTP status, 0 when there was no answer
  std::string error;    ///< what failed and why; empty when delivered
};

/// Sends webhooks: one new connection per delivery (targets vary, and a fresh resolve each time
/// is what lets the policy see where a name points now).
class webhook_client {
 public:
  /// `key` (the HMAC key: webhook_key() of the secret) signs every delivery; `clock` supplies
  /// the signatures' timestamp (nullptr: the system clock); `legacy_headers` (the setting
  /// `webhook_legacy_signature`) adds the deprecated X-Switchyard-Signature and
  /// X-Switchyard-Delivery beside the Standard Webhooks headers.
  webhook_client(boost::asio::any_io_executor ex, webhook_policy policy, std::string key,
                 std::shared_ptr<const clock> clock = nullptr, bool legacy_headers = true);
  ~webhook_client();
  webhook_client(const webhook_client&) = delete;
  webhook_client& operator=(const webhook_client&) = delete;

  /// POSTs `body` (JSON text) to `url` with the headers Content-Type: application/json,
  /// User-Agent: switchyard-webhook, webhook-id: `delivery_id`, webhook-timestamp (now, in unix
  /// seconds) and webhook-signature (standard_webhook_signature), plus, with legacy headers,
  /// X-Switchyard-Signature (webhook_signature, same timestamp) and X-Switchyard-Delivery:
  /// `delivery_id`. Resolves the host, keeps only the addresses that pass
  /// the policy (none: permanent failure naming each address and the rule it broke), and tries
  /// them in order. The whole exchange is bounded by the policy's timeout_ms. Redirects are not
  /// followed. A 2xx answer is delivered; any other answer, a timeout or a connection failure is
  /// a retryable failure. https verifies the certificate chain and the host name, and sends SNI.
  /// Never throws. The returned awaitable keeps what it needs alive; the client may be destroyed
  /// while deliveries are in flight.
  /// `extra` headers are sent too (the job's trace context).
  boost::asio::awaitable<webhook_outcome> deliver(
      std::string url, std::string body, std::string delivery_id,
      std::vector<std::pair<std::string, std::string>> extra = {});

  struct impl;

 private:
  std::shared_ptr<const impl> impl_;
};

}  // namespace sy::runtime
