#pragma once
/// Parsing of the addresses in the settings: the listen address (HOST:PORT), gateway URLs
/// (http://host[:port][/prefix]) and the NATS server list (`nats_url`). The gateway executor, the
/// HTTP server and the NATS connections use these parsers so that what validation accepted is
/// exactly what they connect to or bind.

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "config/result.hpp"

namespace sy::config {

/// A host (IPv6 without brackets) and a port.
struct host_port {
  std::string host;
  uint16_t port = 0;
};

/// Parses "HOST:PORT" ("127.0.0.1:8080", "[::1]:0", "localhost:8080"); port 0..65535.
result<host_port> parse_host_port(std::string_view text);

/// True for 127.0.0.0/8, ::1 and "localhost": hosts only this machine can reach.
bool is_loopback_host(std::string_view host);

/// A gateway endpoint. `prefix` is "" or starts with '/' and has no trailing '/'; the request
/// path (e.g. /v1/chat/completions) is appended to it.
struct gateway_url {
  bool tls = false;  ///< https
  std::string host;
  uint16_t port = 80;
  std::string prefix;
};

/// Parses "http://host[:port][/prefix]" or "https://…" (port defaults to 80 or 443); user info,
/// query and fragment are refused.
result<gateway_url> parse_gateway_url(std::string_view url);

/// The servers of a `nats_url` list ("nats://a:4222,nats://b:4222"): split at commas, each item
/// trimmed of whitespace, empty items dropped, in the given order. A list naming no server
/// ("", ",") is an error (invalid_config, naming `nats_url`). Items are not checked here (nats.c
/// reports a bad one when it connects; validation refuses it first: check_nats_server_url).
result<std::vector<std::string>> split_nats_urls(std::string_view list);

/// Checks one server of the list: "nats://host[:port]" or "tls://host[:port]" (port 1..65535;
/// user info before '@' allowed, never echoed). The error names the item.
status check_nats_server_url(std::string_view url);

}  // namespace sy::config
