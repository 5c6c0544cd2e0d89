#pragma once
/// HTTP header names as RFC 9110 spells them (tokens): a gateway's configured headers and an
/// http task's request headers are checked with this one function.

#include <algorithm>
#include <cctype>
#include <string_view>

namespace sy::config {

/// Letters, digits and !#$%&'*+-.^_`|~, at least one.
inline bool is_header_name(std::string_view name) {
  constexpr std::string_view extra = "!#$%&'*+-.^_`|~";
  return !name.empty() && std::all_of(name.begin(), name.end(), [&](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || extra.find(c) != std::string_view::npos;
  });
}

}  // namespace sy::config
