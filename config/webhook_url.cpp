#include "config/webhook_url.hpp"

#include <algorithm>
#include <cctype>
#include <charconv>

#include <boost/asio/ip/address.hpp>

#include "config/limits.hpp"

namespace sy::config {

namespace ip = boost::asio::ip;
using error_code = boost::system::error_code;

namespace {

constexpr size_t kMaxUrlBytes = limits::webhook_url_max_bytes;

std::string quoted_url(std::string_view url) {
  if (url.size() <= 120) return "'" + std::string(url) + "'";
  return "'" + std::string(url.substr(0, 120)) + "...'";
}

std::string lower(std::string_view text) {
  std::string out(text);
  std::transform(out.begin(), out.end(), out.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return out;
}

bool is_host_char(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '.' || c == '_';
}

/// WHATWG's "ends in a number": a host whose last label is numeric is an IPv4 address to a
/// resolver (inet_aton reads "127.1" and "0x7f.1" as 127.0.0.1), so it must be a plain
/// dotted quad that we can judge, not a name.
bool looks_numeric(std::string_view host) {
  if (!host.empty() && host.back() == '.') host.remove_suffix(1);
  const size_t dot = host.rfind('.');
  const std::string_view last = dot == std::string_view::npos ? host : host.substr(dot + 1);
  if (last.empty()) return false;
  if (last.size() >= 2 && last[0] == '0' && (last[1] == 'x' || last[1] == 'X')) return true;
  return std::all_of(last.begin(), last.end(),
                     [](char c) { return std::isdigit(static_cast<unsigned char>(c)); });
}

/// Splits the authority into host and port text; fills `out.host`. Returns the refusal reason.
std::string split_authority(std::string_view authority, webhook_url& out,
                            std::string_view& port_text, bool& has_port) {
  has_port = false;
  if (authority.empty()) return "has no host";
  if (authority.front() == '[') {
    const size_t close = authority.find(']');
    if (close == std::string_view::npos) return "has an unterminated IPv6 literal";
    const std::string literal(authority.substr(1, close - 1));
    error_code ec;
    (void)ip::make_address_v6(literal, ec);
    if (ec || literal.find('%') != std::string::npos) {
      return "has an invalid IPv6 literal [" + literal + "]";
    }
    out.host = lower(literal);
    const std::string_view rest = authority.substr(close + 1);
    if (rest.empty()) return {};
    if (rest.front() != ':') return "has characters after the IPv6 literal";
    has_port = true;
    port_text = rest.substr(1);
    return {};
  }
  const size_t colon = authority.find(':');
  const std::string_view host = authority.substr(0, colon);
  if (colon != std::string_view::npos) {
    has_port = true;
    port_text = authority.substr(colon + 1);
    if (port_text.find(':') != std::string_view::npos) {
      return "has an IPv6 address without brackets (write http://[::1]:8080/)";
    }
  }
  if (host.empty()) return "has no host";
  if (!std::all_of(host.begin(), host.end(), is_host_char) || host.front() == '.' ||
      host.find("..") != std::string_view::npos) {
    return "has an invalid host name '" + std::string(host) + "'";
  }
  out.host = lower(host);
  if (looks_numeric(out.host)) {
    error_code ec;
    (void)ip::make_address_v4(out.host, ec);
    if (ec) return "has a numeric host '" + out.host + "' that is not a dotted-quad IPv4 address";
  }
  return {};
}

}  // namespace

sy::error webhook_url_error(std::string_view url, const std::string& why) {
  return url_error(url_label{"webhook_url", errc::invalid_webhook_url, "webhook_url"}, url, why);
}

sy::error url_error(const url_label& label, std::string_view url, const std::string& why) {
  return make_error(label.code, label.what + " " + quoted_url(url) + " " + why, label.param);
}

result<webhook_url> parse_webhook_url(std::string_view url) {
  return parse_http_url(url, url_label{"webhook_url", errc::invalid_webhook_url, "webhook_url"});
}

result<webhook_url> parse_http_url(std::string_view url, const url_label& label) {
  auto webhook_url_error = [&label](std::string_view u, const std::string& why) {
    return url_error(label, u, why);
  };
  if (url.size() > kMaxUrlBytes) {
    return webhook_url_error(url, "is longer than " + std::to_string(kMaxUrlBytes) + " bytes");
  }
  if (std::any_of(url.begin(), url.end(), [](char c) {
        const auto u = static_cast<unsigned char>(c);
        return u <= 0x20 || u >= 0x7F;
      })) {
    return webhook_url_error(
        url, "contains a space, a control or a non-ASCII character (percent-encode it)");
  }
  const size_t sep = url.find("://");
  const std::string scheme = lower(url.substr(0, sep));
  if (sep == std::string_view::npos || (scheme != "http" && scheme != "https")) {
    return webhook_url_error(url, "must start with http:// or https://");
  }
  if (url.find('#') != std::string_view::npos)
    return webhook_url_error(url, "must not contain a fragment");
  webhook_url out;
  out.tls = scheme == "https";
  const std::string_view rest = url.substr(sep + 3);
  const size_t auth_end = rest.find_first_of("/?");
  const std::string_view authority = rest.substr(0, auth_end);
  if (authority.find('@') != std::string_view::npos) {
    return webhook_url_error(url, "must not contain user info (user:password@)");
  }
  std::string_view port_text;
  bool has_port = false;
  if (auto why = split_authority(authority, out, port_text, has_port); !why.empty()) {
    return webhook_url_error(url, why);
  }
  const uint16_t default_port = out.tls ? 443 : 80;
  out.port = default_port;
  if (has_port) {
    int value = 0;
    auto [end, ec] = std::from_chars(port_text.data(), port_text.data() + port_text.size(), value);
    if (port_text.empty() || ec != std::errc{} || end != port_text.data() + port_text.size() ||
        value < 1 || value > 65535) {
      return webhook_url_error(url, "has an invalid port (must be 1 to 65535)");
    }
    out.port = static_cast<uint16_t>(value);
  }
  const std::string_view tail = auth_end == std::string_view::npos ? "" : rest.substr(auth_end);
  out.target = tail.empty() || tail.front() == '?' ? "/" + std::string(tail) : std::string(tail);
  out.host_header = out.host.find(':') != std::string::npos ? "[" + out.host + "]" : out.host;
  if (out.port != default_port) out.host_header += ":" + std::to_string(out.port);
  return out;
}

}  // namespace sy::config
