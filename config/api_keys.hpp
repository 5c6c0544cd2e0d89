#pragma once
/// Authentication against the configured API keys. Keys are stored only as SHA-256 hex
/// (settings::api_keys); a presented key is hashed and compared in constant time.

#include <optional>
#include <string>
#include <string_view>

#include "config/settings.hpp"

namespace sy::config {

/// The tenant of `presented_key`, or nullopt when it matches no configured key. Every entry is
/// compared (no early exit), so the time taken does not reveal which entry matched.
std::optional<std::string> tenant_for_key(const settings& s, std::string_view presented_key);

/// True when 'text' is 64 hex characters (either case).
bool is_sha256_hex(std::string_view text);

}  // namespace sy::config
