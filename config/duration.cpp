#include "config/duration.hpp"

#include <cctype>
#include <limits>

#include "config/detail/text.hpp"

namespace sy::config {
namespace {

/// Milliseconds per unit, or 0 for an unknown unit.
int64_t unit_ms(std::string_view unit) {
  if (unit == "ms") return 1;
  if (unit == "s") return 1'000;
  if (unit == "m") return 60'000;
  if (unit == "h") return 3'600'000;
  return 0;
}

sy::error bad_duration(std::string_view text) {
  return make_error(errc::invalid_config,
                    "expected a duration such as 250ms, 30s, 2m, 1h or an integer number of "
                    "milliseconds, got " +
                        detail::quoted(text));
}

}  // namespace

result<int64_t> parse_duration_ms(std::string_view text) {
  text = detail::trim(text);
  int64_t plain = 0;
  if (detail::parse_int64(text, plain)) {
    if (plain < 0) return bad_duration(text);
    return plain;
  }
  if (text.empty()) return bad_duration(text);
  int64_t total = 0;
  size_t pos = 0;
  while (pos < text.size()) {
    size_t digits_end = pos;
    while (digits_end < text.size() && std::isdigit(static_cast<unsigned char>(text[digits_end])))
      ++digits_end;
    size_t unit_end = digits_end;
    while (unit_end < text.size() && std::isalpha(static_cast<unsigned char>(text[unit_end])))
      ++unit_end;
    int64_t amount = 0;
    int64_t scale = unit_ms(text.substr(digits_end, unit_end - digits_end));
    if (digits_end == pos || scale == 0 ||
        !detail::parse_int64(text.substr(pos, digits_end - pos), amount)) {
      return bad_duration(text);
    }
    constexpr int64_t limit = std::numeric_limits<int64_t>::max();
    if (amount > (limit - total) / scale) return bad_duration(text);
    total += amount * scale;
    pos = unit_end;
  }
  return total;
}

std::string format_duration_ms(int64_t ms) {
  if (ms != 0 && ms % 3'600'000 == 0) return std::to_string(ms / 3'600'000) + "h";
  if (ms != 0 && ms % 60'000 == 0) return std::to_string(ms / 60'000) + "m";
  if (ms != 0 && ms % 1'000 == 0) return std::to_string(ms / 1'000) + "s";
  return std::to_string(ms) + "ms";
}

}  // namespace sy::config
