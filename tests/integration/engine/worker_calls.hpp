#pragma once
// What the worker-protocol tests (worker_*_test.cpp) say to the internal listener and read back:
// the capability header, a reply's error code, a token's claims.

#include <string>

#include <nlohmann/json.hpp>

#include "runtime/es256.hpp"
#include "tests/support/http_client.hpp"

namespace sy::test {

/// The header that carries an attempt's capability token.
inline constexpr const char* cap = "X-Switchyard-Task-Capability";

/// The `error.code` of an error envelope, or "" when the reply is not one.
inline std::string code_of(const http_reply& r) {
  auto j = r.json();
  return j.is_object() && j.contains("error") ? j["error"].value("code", "") : "";
}

/// The claims of a capability token (its payload, not verified here), or null.
inline nlohmann::json token_claims(const std::string& token) {
  const auto from = token.find('.') + 1;
  auto payload = runtime::base64url_decode(token.substr(from, token.find('.', from) - from));
  return payload ? nlohmann::json::parse(*payload) : nlohmann::json();
}

}  // namespace sy::test
