#pragma once
/// Text rules of HTTP header values that several parsers of the API share. Pure functions.

#include <string_view>

namespace sy::api::detail {

/// `s` without the optional whitespace around it (spaces and tabs, RFC 9110 §5.6.3).
inline std::string_view trim_ows(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

}  // namespace sy::api::detail
