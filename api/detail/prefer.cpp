#include "api/detail/prefer.hpp"

#include <string>

#include <boost/beast/core/string.hpp>

#include "api/detail/http_text.hpp"

namespace sy::api::detail {
namespace {

constexpr size_t max_wait_digits = 18;  // fits an int64 without overflow

/// Splits `s` at `sep` characters that are outside quoted-strings.
std::vector<std::string_view> split_unquoted(std::string_view s, char sep) {
  std::vector<std::string_view> out;
  bool quoted = false;
  size_t start = 0;
  for (size_t i = 0; i < s.size(); ++i) {
    char c = s[i];
    if (quoted && c == '\\') {
      ++i;  // quoted-pair: the next character is literal
    } else if (c == '"') {
      quoted = !quoted;
    } else if (c == sep && !quoted) {
      out.push_back(s.substr(start, i - start));
      start = i + 1;
    }
  }
  out.push_back(s.substr(start));
  return out;
}

/// A quoted-string's content (backslash escapes removed), or the token itself.
std::string unquote(std::string_view v) {
  if (v.size() < 2 || v.front() != '"' || v.back() != '"') return std::string(v);
  std::string out;
  for (size_t i = 1; i + 1 < v.size(); ++i) {
    if (v[i] == '\\' && i + 2 < v.size()) ++i;
    out += v[i];
  }
  return out;
}

std::optional<int64_t> delta_seconds(const std::string& v) {
  if (v.empty() || v.size() > max_wait_digits) return std::nullopt;
  int64_t n = 0;
  for (char c : v) {
    if (c < '0' || c > '9') return std::nullopt;
    n = n * 10 + (c - '0');
  }
  return n;
}

}  // namespace

std::optional<int64_t> prefer_wait_seconds(const std::vector<std::string_view>& header_values) {
  for (std::string_view header : header_values) {
    for (std::string_view pref : split_unquoted(header, ',')) {
      // preference = token [ BWS "=" BWS word ] *( OWS ";" [ OWS parameter ] )
      std::string_view head = split_unquoted(pref, ';').front();
      size_t eq = head.find('=');
      std::string_view name = trim_ows(head.substr(0, eq));
      if (!boost::beast::iequals(name, "wait")) continue;
      // The first `wait` decides, even when its value is unusable (RFC 7240 §2).
      if (eq == std::string_view::npos) return std::nullopt;
      return delta_seconds(unquote(trim_ows(head.substr(eq + 1))));
    }
  }
  return std::nullopt;
}

}  // namespace sy::api::detail
