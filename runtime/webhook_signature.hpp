#pragma once
/// Webhook signatures. Every delivery carries the Standard Webhooks headers
/// (https://www.standardwebhooks.com, the scheme OpenAI's webhooks use):
///   webhook-id: <delivery id>, webhook-timestamp: <unix seconds>,
///   webhook-signature: v1,<base64 HMAC-SHA256 of "<id>.<timestamp>.<body>">
/// and, while `webhook_legacy_signature` is true, the deprecated
///   X-Switchyard-Signature: t=<unix seconds>,v1=<hex HMAC-SHA256 of "<timestamp>.<body>">.
/// Both are keyed with the same key: the secret's decoded bytes when it is `whsec_<base64>`, else
/// the secret's own bytes. Schemes and a receiver's verification recipe: docs/webhooks.md.
/// Pure functions, thread-safe.

#include <cstdint>
#include <string>
#include <string_view>

#include "config/result.hpp"
#include "config/settings.hpp"

namespace sy::runtime {

/// The prefix that marks a secret as base64 of the key (Standard Webhooks, OpenAI).
inline constexpr std::string_view webhook_secret_prefix = "whsec_";

/// The HMAC key a webhook secret stands for: `whsec_<base64>` → the decoded bytes (standard
/// alphabet, `=` padding optional); any other text → its own bytes. Error code "webhook_secret"
/// when the base64 after `whsec_` is malformed or decodes to nothing.
result<std::string> webhook_key(std::string_view secret);

/// "v1,<base64>": the Standard Webhooks signature, the HMAC-SHA256 with `key` of
/// "<id>.<unix_seconds>.<body>" in standard base64 with padding.
std::string standard_webhook_signature(std::string_view key, std::string_view id,
                                       int64_t unix_seconds, std::string_view body);

/// The receiver's side of the Standard Webhooks scheme: accepts when `timestamp` (the
/// webhook-timestamp header: decimal unix seconds) is within `tolerance_s` seconds of
/// `now_unix_seconds` (either direction) and one of the space-separated entries of
/// `signature_header` is a `v1,` signature equal to standard_webhook_signature's for `id` and
/// `body` (other versions are ignored; several may appear during a secret rotation), compared in
/// constant time. Error code "invalid_webhook_signature" with the reason otherwise.
status verify_standard_webhook(std::string_view key, std::string_view id,
                               std::string_view timestamp, std::string_view signature_header,
                               std::string_view body, int64_t now_unix_seconds,
                               int64_t tolerance_s = 300);

/// Deprecated (X-Switchyard-Signature, sent while `webhook_legacy_signature` is true):
/// "t=<unix_seconds>,v1=<64 lowercase hex>", the HMAC-SHA256 with `key` of "<unix_seconds>.<body>".
std::string webhook_signature(std::string_view key, int64_t unix_seconds, std::string_view body);

/// The receiver's side of the deprecated scheme: accepts `header` when it has one `t=` timestamp
/// within `tolerance_s` seconds of `now_unix_seconds` (either direction) and a `v1=` signature
/// (several may be given; one match suffices; other keys are ignored) equal to
/// webhook_signature's for `body`, compared in constant time. Error code
/// "invalid_webhook_signature" with the reason (malformed, outside the tolerance, no matching
/// signature) otherwise.
status verify_webhook_signature(std::string_view key, std::string_view header,
                                std::string_view body, int64_t now_unix_seconds,
                                int64_t tolerance_s = 300);

/// The key that signs webhooks: webhook_key() of the configured `webhook_secret` (read from
/// `webhook_secret_file`), else of the secret in `<data_dir>/webhook_secret`, which is created on
/// first start as `whsec_` + base64 of 32 random bytes, mode 0600. Error code "webhook_secret",
/// naming the file, when it cannot be written or its `whsec_` value is not base64.
result<std::string> load_or_create_webhook_key(const config::settings& cfg);

}  // namespace sy::runtime
