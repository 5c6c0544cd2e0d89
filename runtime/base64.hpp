#pragma once
/// Base64 (RFC 4648): the standard alphabet with `=` padding (Standard Webhooks secrets and
/// signatures) and base64url without padding (JWS: capability tokens, JWK thumbprints). One
/// codec for both. Pure functions, thread-safe.

#include <optional>
#include <string>
#include <string_view>

namespace sy::runtime {

/// Standard base64 (§4) with `=` padding.
std::string base64_encode(std::string_view bytes);
/// Decodes standard base64; the `=` padding may be left out, but when present it must complete
/// the last group. nullopt on any character outside the alphabet (whitespace included), a
/// misplaced `=` or an impossible length. Unused bits of the last character are ignored, as
/// Python's and Node's decoders ignore them.
std::optional<std::string> base64_decode(std::string_view text);

/// Base64url without padding (§5), as JWS uses.
std::string base64url_encode(std::string_view bytes);
/// Decodes base64url without padding; nullopt on any other character, a bad length, or unused
/// bits of the last character that are not zero (one spelling per byte string).
std::optional<std::string> base64url_decode(std::string_view text);

}  // namespace sy::runtime
