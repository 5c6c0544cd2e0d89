#pragma once
/// Durations in settings. Every `*_ms` setting accepts either an integer (milliseconds) or a
/// duration string made of <integer><unit> parts, units ms, s, m, h: "250ms", "30s", "2m",
/// "1h", "1m30s". The value is always stored as milliseconds.

#include <cstdint>
#include <string>
#include <string_view>

#include "config/result.hpp"

namespace sy::config {

/// Milliseconds for `text`; error code "invalid_config" (without a setting name; callers add
/// it) for anything else, including negative values and overflow.
result<int64_t> parse_duration_ms(std::string_view text);

/// The shortest exact rendering of `ms` for docs and help: "30s", "2m", "250ms", "1h".
std::string format_duration_ms(int64_t ms);

}  // namespace sy::config
