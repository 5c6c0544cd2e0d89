#pragma once
/// SHA-256 and constant-time comparison, shared by every module (API-key hashing, task ids,
/// idempotency request hashes). Backed by OpenSSL's EVP interface and CRYPTO_memcmp.

#include <string>
#include <string_view>

namespace sy::config {

/// The SHA-256 of `data` as 64 lowercase hex characters.
std::string sha256_hex(std::string_view data);

/// True when `a` and `b` are equal. For equal lengths the time taken does not depend on where
/// they differ, so secrets (API-key hashes, tokens) can be compared without a timing leak.
/// Lengths are not secret: a length mismatch returns false at once.
bool constant_time_equal(std::string_view a, std::string_view b);

}  // namespace sy::config
