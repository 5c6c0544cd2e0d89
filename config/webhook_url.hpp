#pragma once
/// THE parser of webhook URLs: a job's `webhook_url` (checked at submission), the configured
/// default `webhook_url` (checked at startup) and every delivery read a URL with this one
/// function. Pure, thread-safe. Policy on where webhooks may go: runtime/webhook_policy.hpp.

#include <cstdint>
#include <string>
#include <string_view>

#include "config/result.hpp"

namespace sy::config {

/// A webhook URL split into what a delivery needs.
struct webhook_url {
  bool tls = false;         ///< https
  std::string host;         ///< lower-cased name, IPv4 literal, or IPv6 literal without brackets
  uint16_t port = 80;       ///< 80 or 443 unless given
  std::string target;       ///< path and query, "/" when the URL has none
  std::string host_header;  ///< host[:port] as the Host header carries it
};

/// Parses "http[s]://host[:port][/path][?query]". Refused, with code "invalid_webhook_url", param
/// "webhook_url" and a message saying why: another scheme, user info, no host, a malformed host
/// or IPv6 literal, a numeric host that is not a dotted-quad IPv4 address ("127.1", "0x7f.1"),
/// a port outside 1..65535, a fragment, spaces or control characters, more than 2048 bytes.
result<webhook_url> parse_webhook_url(std::string_view url);

/// The error parse_webhook_url and the submission check answer: code "invalid_webhook_url",
/// param "webhook_url", message "webhook_url '<url>' <why>".
sy::error webhook_url_error(std::string_view url, const std::string& why);

/// How a URL's errors name it: "<what> '<url>' <why>", with `code` and `param`.
struct url_label {
  std::string what;
  error_code code;
  std::string param;
};
/// parse_webhook_url's rules for a URL that `label` names (an `http` task's request.url).
result<webhook_url> parse_http_url(std::string_view url, const url_label& label);
sy::error url_error(const url_label& label, std::string_view url, const std::string& why);

}  // namespace sy::config
