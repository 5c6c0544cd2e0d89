#include "runtime/base64.hpp"

#include <algorithm>
#include <cstdint>

namespace sy::runtime {
namespace {

constexpr std::string_view standard_digits =
    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
constexpr std::string_view url_digits =
    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

/// Each group of 3 bytes as 4 digits; a short last group as 2 or 3 digits, then `=` to 4 when
/// `pad`.
std::string encode(std::string_view bytes, std::string_view digits, bool pad) {
  std::string out;
  out.reserve((bytes.size() + 2) / 3 * 4);
  for (size_t i = 0; i < bytes.size(); i += 3) {
    const size_t n = std::min<size_t>(3, bytes.size() - i);
    uint32_t v = 0;
    for (size_t k = 0; k < 3; ++k)
      v = (v << 8) | (k < n ? static_cast<unsigned char>(bytes[i + k]) : 0u);
    for (size_t k = 0; k < 4; ++k) {
      if (k <= n) {
        out += digits[(v >> (18 - 6 * k)) & 0x3F];
      } else if (pad) {
        out += '=';
      }
    }
  }
  return out;
}

/// Decodes unpadded digits; `zero_tail`: the unused bits of the last digit must be zero.
std::optional<std::string> decode(std::string_view text, std::string_view digits, bool zero_tail) {
  if (text.size() % 4 == 1) return std::nullopt;
  std::string out;
  out.reserve(text.size() * 3 / 4);
  uint32_t acc = 0;
  int bits = 0;
  for (char c : text) {
    const auto pos = digits.find(c);
    if (pos == std::string_view::npos) return std::nullopt;
    acc = ((acc << 6) | static_cast<uint32_t>(pos)) & 0xFFFF;
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out += static_cast<char>((acc >> bits) & 0xFF);
    }
  }
  if (zero_tail && (acc & ((1u << bits) - 1)) != 0) return std::nullopt;
  return out;
}

}  // namespace

std::string base64_encode(std::string_view bytes) { return encode(bytes, standard_digits, true); }

std::optional<std::string> base64_decode(std::string_view text) {
  size_t pad = 0;
  while (pad < 2 && !text.empty() && text.back() == '=') {
    text.remove_suffix(1);
    ++pad;
  }
  if (pad > 0 && (text.size() + pad) % 4 != 0) return std::nullopt;
  return decode(text, standard_digits, false);
}

std::string base64url_encode(std::string_view bytes) { return encode(bytes, url_digits, false); }

std::optional<std::string> base64url_decode(std::string_view text) {
  return decode(text, url_digits, true);
}

}  // namespace sy::runtime
