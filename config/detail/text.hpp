#pragma once
/// Private text helpers of sy_config (not for other modules).

#include <string>
#include <string_view>

#include "config/result.hpp"

namespace sy::config::detail {

/// `text` without leading and trailing whitespace (spaces, tabs, CR, LF).
std::string_view trim(std::string_view text);

/// The whole content of the file at `path`; error code "invalid_config" naming `what` and the
/// path when it cannot be read.
result<std::string> read_file(const std::string& path, std::string_view what);

/// Parses a non-negative or negative decimal integer that must fill the whole text.
bool parse_int64(std::string_view text, int64_t& out);

/// Levenshtein distance, used to suggest the key a typo meant.
size_t edit_distance(std::string_view a, std::string_view b);

/// The place of the first ASCII control character (below 0x20, or DEL) in `text`; npos when
/// there is none. For values that go into HTTP header or request lines as they are.
size_t find_control(std::string_view text);

/// "'<text>'" for messages.
std::string quoted(std::string_view text);

}  // namespace sy::config::detail
