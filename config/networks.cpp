#include "config/networks.hpp"

#include <array>
#include <cstdint>

#include "config/detail/text.hpp"

namespace sy::config {
namespace {

namespace ip = boost::asio::ip;

sy::error bad(std::string_view text, const std::string& why) {
  return make_error(errc::invalid_config, "invalid network " + detail::quoted(text) + ": " + why);
}

/// The address as 16 bytes (IPv4 in the first 4) and its bit width.
struct raw_address {
  std::array<unsigned char, 16> bytes{};
  int bits = 0;
};

raw_address raw(const ip::address& addr) {
  raw_address out;
  if (addr.is_v4()) {
    const auto b = addr.to_v4().to_bytes();
    std::copy(b.begin(), b.end(), out.bytes.begin());
    out.bits = 32;
  } else {
    out.bytes = addr.to_v6().to_bytes();
    out.bits = 128;
  }
  return out;
}

/// True when the first `prefix` bits of `a` and `b` are equal.
bool same_prefix(const raw_address& a, const raw_address& b, int prefix) {
  int i = 0;
  for (; prefix >= 8; prefix -= 8, ++i) {
    if (a.bytes[i] != b.bytes[i]) return false;
  }
  if (prefix == 0) return true;
  const auto mask = static_cast<unsigned char>(0xFF << (8 - prefix));
  return (a.bytes[i] & mask) == (b.bytes[i] & mask);
}

/// `addr` with every bit past `prefix` cleared.
ip::address masked(const ip::address& addr, int prefix) {
  raw_address r = raw(addr);
  for (int bit = prefix; bit < r.bits; ++bit) {
    r.bytes[bit / 8] &= static_cast<unsigned char>(~(0x80 >> (bit % 8)));
  }
  if (addr.is_v4()) {
    ip::address_v4::bytes_type b{};
    std::copy(r.bytes.begin(), r.bytes.begin() + 4, b.begin());
    return ip::make_address_v4(b);
  }
  return ip::make_address_v6(r.bytes);
}

}  // namespace

ip::address unmap_v4(const ip::address& addr) {
  if (addr.is_v6() && addr.to_v6().is_v4_mapped()) {
    return ip::make_address_v4(ip::v4_mapped, addr.to_v6());
  }
  return addr;
}

bool network::contains(const ip::address& addr) const {
  const ip::address a = unmap_v4(addr);
  if (a.is_v4() != base.is_v4()) return false;
  return same_prefix(raw(a), raw(base), prefix_length);
}

std::string network::to_string() const {
  return base.to_string() + "/" + std::to_string(prefix_length);
}

bool network_list::contains(const ip::address& addr) const { return find(addr) != nullptr; }

const network* network_list::find(const ip::address& addr) const {
  for (const auto& n : networks_) {
    if (n.contains(addr)) return &n;
  }
  return nullptr;
}

std::string network_list::to_string() const {
  std::string out;
  for (const auto& n : networks_) {
    if (!out.empty()) out += ',';
    out += n.to_string();
  }
  return out;
}

result<network> parse_network(std::string_view text) {
  const std::string_view t = detail::trim(text);
  const size_t slash = t.find('/');
  const std::string addr_text(t.substr(0, slash));
  if (addr_text.find('%') != std::string::npos) {
    return bad(t, "zone ids (%) are not allowed");
  }
  boost::system::error_code ec;
  ip::address addr = ip::make_address(addr_text, ec);
  if (ec) return bad(t, "expected an IPv4 or IPv6 address, optionally followed by /PREFIX");
  const int max_prefix = addr.is_v4() ? 32 : 128;
  int64_t prefix = max_prefix;
  if (slash != std::string_view::npos &&
      (!detail::parse_int64(t.substr(slash + 1), prefix) || t[slash + 1] == '+' ||
       t[slash + 1] == '-' || prefix < 0 || prefix > max_prefix)) {
    return bad(t, std::string("the prefix length must be a number from 0 to ") +
                      (addr.is_v4() ? "32 for IPv4" : "128 for IPv6"));
  }
  network out{addr, static_cast<int>(prefix)};
  if (masked(addr, out.prefix_length) != addr) {
    return bad(t, "has bits set past the prefix length (did you mean " +
                      network{masked(addr, out.prefix_length), out.prefix_length}.to_string() +
                      "?)");
  }
  // ::ffff:0:0/96 and longer are IPv4 networks written in IPv6 form; store them as IPv4 so that
  // they match IPv4 addresses (which is how every address is compared, see unmap_v4).
  if (addr.is_v6() && addr.to_v6().is_v4_mapped() && out.prefix_length >= 96) {
    out.base = unmap_v4(addr);
    out.prefix_length -= 96;
  }
  return out;
}

result<network_list> parse_network_list(std::string_view text) {
  std::vector<network> networks;
  if (detail::trim(text).empty()) return network_list{};
  size_t start = 0;
  for (;;) {
    const size_t comma = text.find(',', start);
    const std::string_view entry = detail::trim(text.substr(start, comma - start));
    if (entry.empty()) {
      return make_error(errc::invalid_config, "empty entry in the network list " +
                                                  detail::quoted(text) +
                                                  " (separate CIDRs with single commas)");
    }
    auto n = parse_network(entry);
    if (!n) return n.error();
    networks.push_back(std::move(*n));
    if (comma == std::string_view::npos) break;
    start = comma + 1;
  }
  return network_list{std::move(networks)};
}

}  // namespace sy::config
