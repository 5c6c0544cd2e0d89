#pragma once
/// Where webhooks may go: the network policy every target address must pass, and the URL check
/// a job's webhook_url gets at submission. Policy and defaults: docs/webhooks.md.
/// Pure functions, thread-safe.

#include <utility>  // before any Asio header (Boost 1.74 coroutine support needs it)

#include <boost/asio/ip/address.hpp>
#include <cstdint>
#include <string>
#include <string_view>

#include "config/networks.hpp"
#include "config/result.hpp"
#include "config/settings.hpp"
#include "config/webhook_url.hpp"

namespace sy::runtime {

/// Which addresses a webhook may be sent to. An address passes when every rule passes: it is
/// not unspecified (0.0.0.0, ::), multicast or the IPv4 broadcast address; it is in no `deny`
/// network; it is not loopback (127.0.0.0/8, ::1) unless `allow_loopback`; and, when `allow` is
/// not empty, it is in an `allow` network. IPv4-mapped IPv6 addresses are judged as IPv4.
struct webhook_policy {
  config::network_list allow;
  config::network_list deny;
  bool allow_loopback = false;
  int64_t timeout_ms = 10'000;  ///< bounds one whole delivery: resolve, connect, TLS, send, answer
  /// Extra PEM file of trusted CAs for https targets (tests trust a self-signed certificate with
  /// it); empty: the system's default CA paths only.
  std::string ca_file;
  /// The settings' prefix that denials name ("webhook": webhook_deny_networks, …; "http_task").
  std::string setting = "webhook";
};

/// The policy from validated settings (webhook_allow_networks, webhook_deny_networks,
/// webhook_allow_loopback, webhook_timeout_ms). Error "invalid_config" when a network list is
/// malformed (validation already refuses that; this is the backstop).
result<webhook_policy> make_webhook_policy(const config::settings& s);
/// The same from the http_task_* settings (http tasks: docs/task-lists.md).
result<webhook_policy> make_http_task_policy(const config::settings& s);

/// Why `addr` may not receive webhooks under `policy` ("169.254.169.254 is in the denied network
/// 169.254.0.0/16 (webhook_deny_networks)"), or an empty string when it may.
std::string address_denial(const boost::asio::ip::address& addr, const webhook_policy& policy);

/// True when `addr` passes `policy` (see webhook_policy).
bool address_allowed(const boost::asio::ip::address& addr, const webhook_policy& policy);

/// The URL parser is config's (config/webhook_url.hpp); runtime code names it here.
using config::parse_webhook_url;
using config::webhook_url;

/// The submission-time check of a job's webhook_url: parse_webhook_url, then, when the host is an
/// IP literal (or "localhost"), the address must pass `policy`. Host names are judged again at
/// every delivery against what they resolve to then, so this check cannot be dodged by DNS.
status check_webhook_url(std::string_view url, const webhook_policy& policy);

/// The same check of a parsed URL `u` (its text `url`), its errors named by `label`.
status check_target(const webhook_url& u, std::string_view url, const webhook_policy& policy,
                    const config::url_label& label);

}  // namespace sy::runtime
