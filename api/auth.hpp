#pragma once
/// API-key authentication: maps `Authorization: Bearer <key>` to a tenant. Keys are configured
/// only as hex SHA-256 hashes (settings.api_keys); a presented key is hashed and compared with
/// every configured hash in constant time, so timing reveals neither which key nor how much of
/// it matched. Immutable after construction: any thread may call `tenant_for` concurrently.

#include <string>
#include <string_view>
#include <vector>

#include "config/result.hpp"
#include "config/settings.hpp"

namespace sy::api {

/// The tenant used when no API keys are configured (loopback-only deployments).
inline constexpr std::string_view default_tenant = "default";

class authenticator {
 public:
  /// Takes a copy of the configured (hash, tenant) pairs.
  explicit authenticator(std::vector<config::api_key_entry> keys);

  /// The tenant for an `Authorization` header value (empty when the header is absent).
  /// No keys configured: always "default". Errors: missing_api_key, invalid_api_key.
  result<std::string> tenant_for(std::string_view authorization_header) const;
  /// Whether an `Authorization` header value names a key with the `worker` role (the worker
  /// protocol). No keys configured: always (loopback only). Errors: missing_api_key,
  /// invalid_api_key (also a client key: it does not lease tasks).
  status worker(std::string_view authorization_header) const;
  /// The same for the `admin` role (the internal listener's admin calls: POST
  /// /internal/keys/rotate).
  status admin(std::string_view authorization_header) const;
  /// The same for `GET /metrics`: a key with the `metrics` or the `admin` role.
  status metrics(std::string_view authorization_header) const;

 private:
  status role(std::string_view authorization_header, std::string_view role,
              std::string_view what) const;
  std::vector<config::api_key_entry> keys_;
};

}  // namespace sy::api
