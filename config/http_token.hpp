#pragma once
/// HTTP header names and values as RFC 9110 spells them: a gateway's configured headers
/// (config/validate.cpp) and an http task's request headers (actors/http_request.cpp) are
/// checked with these functions.

#include <string>
#include <string_view>

namespace sy::config {

/// Letters, digits and !#$%&'*+-.^_`|~, at least one.
bool is_header_name(std::string_view name);

/// `name` in lower case: header names compare case-insensitively.
std::string header_key(std::string_view name);

/// The offset of the first control character (below 0x20, or DEL) of a header value, or npos.
size_t header_value_control(std::string_view value);

}  // namespace sy::config
