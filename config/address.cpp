#include "config/address.hpp"

#include <arpa/inet.h>

#include <algorithm>
#include <cstdio>
#include <iterator>

#include "config/detail/text.hpp"

namespace sy::config {
namespace {

sy::error bad(std::string message) { return make_error(errc::invalid_config, std::move(message)); }

/// Splits "host:port" or "[v6]:port"; `port_text` is empty when there is no port.
bool split_host_port(std::string_view text, std::string_view& host, std::string_view& port_text,
                     bool& has_port) {
  has_port = false;
  if (!text.empty() && text.front() == '[') {
    auto close = text.find(']');
    if (close == std::string_view::npos) return false;
    host = text.substr(1, close - 1);
    auto rest = text.substr(close + 1);
    if (rest.empty()) return true;
    if (rest.front() != ':') return false;
    has_port = true;
    port_text = rest.substr(1);
    return true;
  }
  auto colon = text.rfind(':');
  if (colon == std::string_view::npos) {
    host = text;
    return true;
  }
  if (text.find(':') != colon) return false;  // a bare IPv6 address needs brackets
  host = text.substr(0, colon);
  port_text = text.substr(colon + 1);
  has_port = true;
  return true;
}

bool parse_port(std::string_view text, uint16_t& port) {
  int64_t value = 0;
  if (!detail::parse_int64(text, value) || value < 0 || value > 65535) return false;
  port = static_cast<uint16_t>(value);
  return true;
}

bool valid_host(std::string_view host) {
  if (host.empty()) return false;
  for (char c : host) {
    if (c == '/' || c == '@' || c == '?' || c == '#' || c == ' ' || c == '[' || c == ']') {
      return false;
    }
  }
  return true;
}

}  // namespace

result<host_port> parse_host_port(std::string_view text) {
  std::string_view host, port_text;
  bool has_port = false;
  host_port out;
  if (!split_host_port(text, host, port_text, has_port) || !has_port || !valid_host(host) ||
      !parse_port(port_text, out.port)) {
    return bad("expected HOST:PORT (e.g. 127.0.0.1:8080 or [::1]:8080), got " +
               detail::quoted(text));
  }
  out.host = std::string(host);
  return out;
}

bool is_loopback_host(std::string_view host) {
  if (host == "localhost" || host == "::1") return true;
  in_addr v4{};
  std::string host_text(host);
  if (inet_pton(AF_INET, host_text.c_str(), &v4) == 1) {
    return (ntohl(v4.s_addr) >> 24) == 127;
  }
  in6_addr v6{};
  if (inet_pton(AF_INET6, host_text.c_str(), &v6) == 1) {
    in6_addr loopback = IN6ADDR_LOOPBACK_INIT;
    return std::equal(std::begin(v6.s6_addr), std::end(v6.s6_addr), std::begin(loopback.s6_addr));
  }
  return false;
}

result<gateway_url> parse_gateway_url(std::string_view url) {
  gateway_url out;
  out.tls = url.substr(0, 8) == "https://";
  const std::string_view scheme = out.tls ? "https://" : "http://";
  if (out.tls) out.port = 443;
  if (url.substr(0, scheme.size()) != scheme) {
    return bad("expected a URL http(s)://host[:port][/prefix], got " + detail::quoted(url));
  }
  // The prefix goes into the request line as it is. (Not echoed: it would break the message.)
  if (const size_t at = detail::find_control(url); at != std::string_view::npos) {
    char code[8];
    std::snprintf(code, sizeof code, "0x%02x", static_cast<unsigned char>(url[at]));
    return bad("a gateway URL may not hold control characters; character " +
               std::to_string(at + 1) + " is " + code);
  }
  auto rest = url.substr(scheme.size());
  if (rest.find_first_of("?#@ ") != std::string_view::npos) {
    return bad("a gateway URL may not have user info, a query or a fragment, got " +
               detail::quoted(url));
  }
  auto slash = rest.find('/');
  auto authority = rest.substr(0, slash);
  std::string_view host, port_text;
  bool has_port = false;
  if (!split_host_port(authority, host, port_text, has_port) || !valid_host(host) ||
      (has_port && !parse_port(port_text, out.port)) || (has_port && out.port == 0)) {
    return bad("expected a URL http(s)://host[:port][/prefix], got " + detail::quoted(url));
  }
  out.host = std::string(host);
  if (slash != std::string_view::npos) {
    auto prefix = rest.substr(slash);
    while (!prefix.empty() && prefix.back() == '/') prefix.remove_suffix(1);
    out.prefix = std::string(prefix);
  }
  return out;
}

result<std::vector<std::string>> split_nats_urls(std::string_view list) {
  std::vector<std::string> out;
  for (size_t start = 0; start <= list.size();) {
    const size_t comma = std::min(list.find(',', start), list.size());
    auto item = detail::trim(list.substr(start, comma - start));
    if (!item.empty()) out.emplace_back(item);
    start = comma + 1;
  }
  if (out.empty())
    return make_error(errc::invalid_config,
                      "nats_url: names no NATS server (expected nats://host[:port], several "
                      "separated by commas), got " +
                          detail::quoted(list),
                      "nats_url");
  return out;
}

status check_nats_server_url(std::string_view url) {
  const size_t colon = url.find("://");
  const auto scheme = url.substr(0, colon);
  auto rest = colon == std::string_view::npos ? std::string_view{} : url.substr(colon + 3);
  // User info may hold a password: the item is named without it.
  const size_t at = rest.rfind('@');
  const auto authority = at == std::string_view::npos ? rest : rest.substr(at + 1);
  const std::string shown = at == std::string_view::npos
                                ? std::string(url)
                                : std::string(scheme) + "://…@" + std::string(authority);
  std::string_view host, port_text;
  bool has_port = false;
  uint16_t port = 0;
  if ((scheme != "nats" && scheme != "tls") || colon == std::string_view::npos ||
      !split_host_port(authority, host, port_text, has_port) || !valid_host(host) ||
      (has_port && (!parse_port(port_text, port) || port == 0))) {
    return bad("expected nats://host[:port] or tls://host[:port], got " + detail::quoted(shown));
  }
  return ok;
}

}  // namespace sy::config
