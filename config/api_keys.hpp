#pragma once
/// Authentication against the configured API keys. Keys are stored only as SHA-256 hex
/// (settings::api_keys); a presented key is hashed and compared in constant time.

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "config/settings.hpp"

namespace sy::config {

/// The tenant of `presented_key`, or nullopt when it matches none of `keys` (the validated
/// settings::api_keys) that has the client role. THE key check: api::authenticator (HTTP and NATS)
/// calls it. Every entry is compared in constant time and none is skipped, so the time taken
/// reveals neither which entry matched nor how much of a key did.
std::optional<std::string> tenant_for_key(const std::vector<api_key_entry>& keys,
                                          std::string_view presented_key);

/// True when `presented_key` is a configured key with `role`: `worker` (the worker protocol,
/// docs/workers.md) or `admin` (the internal listener's admin calls, such as a key rotation).
/// Constant time like tenant_for_key; such keys have no tenant, so tenant_for_key never accepts
/// them.
bool key_has_role(const std::vector<api_key_entry>& keys, std::string_view presented_key,
                  std::string_view role);

/// True when 'text' is 64 hex characters (either case).
bool is_sha256_hex(std::string_view text);

}  // namespace sy::config
