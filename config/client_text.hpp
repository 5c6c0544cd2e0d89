#pragma once
/// Quoting a client's text in an error message, a `param` or a log field without echoing it
/// whole: a 900 KB name sent where an id belongs must not come back in a 900 KB answer
/// (docs/limits.md, "No echo"). Pure functions; any thread.

#include <cstddef>
#include <string>
#include <string_view>

namespace sy {

/// The most bytes of one client value an error message, a `param` or a log field quotes.
inline constexpr size_t client_quote_max_bytes = 256;

/// `text` whole when it has at most `max` bytes; else its first bytes up to `max`, cut on a
/// UTF-8 boundary (never inside a character), then "…" and its length ("… (900000 bytes)").
inline std::string quote_client(std::string_view text, size_t max = client_quote_max_bytes) {
  if (text.size() <= max) return std::string(text);
  size_t cut = max;
  // Step back over continuation bytes (10xxxxxx) to the start of the character at `cut`.
  while (cut > 0 && (static_cast<unsigned char>(text[cut]) & 0xC0) == 0x80) --cut;
  return std::string(text.substr(0, cut)) + "… (" + std::to_string(text.size()) + " bytes)";
}

/// True when `text` holds a control character: U+0000–U+001F, U+007F, or U+0080–U+009F
/// (UTF-8 C2 80 – C2 9F). Such a character may not appear in a name that becomes a subject
/// token, a metric label, a file name or a log field.
inline bool has_control_character(std::string_view text) {
  for (size_t i = 0; i < text.size(); ++i) {
    const auto c = static_cast<unsigned char>(text[i]);
    if (c < 0x20 || c == 0x7F) return true;
    if (c == 0xC2 && i + 1 < text.size()) {
      const auto d = static_cast<unsigned char>(text[i + 1]);
      if (d >= 0x80 && d <= 0x9F) return true;
    }
  }
  return false;
}

}  // namespace sy
