#pragma once
/// Parsing of the `listen` setting into a TCP endpoint, without DNS.

#include <utility>  // before any Asio/Beast header

#include <string_view>

#include <boost/asio/ip/tcp.hpp>

#include "config/result.hpp"

namespace sy::api::detail {

/// "HOST:PORT" (config::parse_host_port) with HOST an IP address, "localhost" (127.0.0.1)
/// or empty (all interfaces). Error: invalid_listen.
result<boost::asio::ip::tcp::endpoint> parse_listen_address(std::string_view listen);

}  // namespace sy::api::detail
