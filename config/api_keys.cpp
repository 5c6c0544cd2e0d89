#include "config/api_keys.hpp"

#include <cctype>

#include "config/sha256.hpp"

namespace sy::config {

std::optional<std::string> tenant_for_key(const std::vector<api_key_entry>& keys,
                                          std::string_view presented_key) {
  const std::string presented_hash = sha256_hex(presented_key);
  const api_key_entry* match = nullptr;
  for (const auto& entry : keys) {
    // validate() lower-cases the configured hashes, and sha256_hex() produces lower case.
    if (constant_time_equal(entry.sha256_hex, presented_hash) && match == nullptr) {
      match = &entry;
    }
  }
  if (match == nullptr || match->role != "client") return std::nullopt;
  return match->tenant;
}

bool key_has_role(const std::vector<api_key_entry>& keys, std::string_view presented_key,
                  std::string_view role) {
  const std::string presented_hash = sha256_hex(presented_key);
  bool found = false;
  for (const auto& entry : keys) {
    if (constant_time_equal(entry.sha256_hex, presented_hash) && entry.role == role) found = true;
  }
  return found;
}

bool is_sha256_hex(std::string_view text) {
  if (text.size() != 64) return false;
  for (char c : text) {
    if (!std::isxdigit(static_cast<unsigned char>(c))) return false;
  }
  return true;
}

}  // namespace sy::config
