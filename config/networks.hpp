#pragma once
/// CIDR network lists for the webhook network policy (`webhook_allow_networks`,
/// `webhook_deny_networks`): "10.0.0.0/8, 192.168.1.7, fd00::/8". Parsed once at validation;
/// the webhook client matches every address it is about to connect to against them.

#include <utility>  // before any Asio header (Boost 1.74 coroutine support needs it)

#include <boost/asio/ip/address.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "config/result.hpp"

namespace sy::config {

/// One CIDR block. `base` has no bits set past `prefix_length`. An IPv4-mapped IPv6 network
/// (::ffff:a.b.c.d/96 or longer) is stored as the IPv4 network it denotes.
struct network {
  boost::asio::ip::address base;
  int prefix_length = 0;

  /// True when `addr` lies in this network. An IPv4-mapped IPv6 address (::ffff:a.b.c.d) is
  /// matched as its IPv4 address; otherwise an IPv4 address never lies in an IPv6 network.
  bool contains(const boost::asio::ip::address& addr) const;
  /// "10.0.0.0/8", "fe80::/10".
  std::string to_string() const;
};

/// An ordered list of networks; empty when the setting is empty.
class network_list {
 public:
  network_list() = default;
  explicit network_list(std::vector<network> networks) : networks_(std::move(networks)) {}

  /// True when some network of the list contains `addr` (see network::contains).
  bool contains(const boost::asio::ip::address& addr) const;
  /// The first network containing `addr`, or nullptr; for messages that name the rule.
  const network* find(const boost::asio::ip::address& addr) const;

  bool empty() const { return networks_.empty(); }
  const std::vector<network>& networks() const { return networks_; }
  /// The networks joined with ",", e.g. "10.0.0.0/8,fe80::/10".
  std::string to_string() const;

 private:
  std::vector<network> networks_;
};

/// Parses one CIDR ("10.0.0.0/8", "fe80::/10") or bare address (= /32 or /128). Refused, with
/// code "invalid_config" and a message quoting the text: a malformed address, a zone id
/// ("fe80::1%eth0"), a prefix length that is not a number in 0..32 (IPv4) or 0..128 (IPv6), and
/// host bits set past the prefix ("10.1.0.0/8" — the message suggests "10.0.0.0/8").
result<network> parse_network(std::string_view text);

/// Parses a comma-separated list of CIDRs; spaces around entries are ignored, an empty or
/// all-blank text is the empty list, an empty entry ("a,,b", a trailing comma) is refused.
result<network_list> parse_network_list(std::string_view text);

/// `addr` itself, or the IPv4 address inside an IPv4-mapped IPv6 address (::ffff:a.b.c.d).
boost::asio::ip::address unmap_v4(const boost::asio::ip::address& addr);

}  // namespace sy::config
