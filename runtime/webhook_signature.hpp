#pragma once
/// The webhook signature: X-Switchyard-Signature: t=<unix seconds>,v1=<hex HMAC-SHA256>.
/// Scheme and a receiver's verification recipe: docs/webhooks.md. Pure functions, thread-safe.

#include <cstdint>
#include <string>
#include <string_view>

#include "config/result.hpp"
#include "config/settings.hpp"

namespace sy::runtime {

/// "t=<unix_seconds>,v1=<64 lowercase hex>", the HMAC-SHA256 with key `secret` of
/// "<unix_seconds>.<body>".
std::string webhook_signature(std::string_view secret, int64_t unix_seconds, std::string_view body);

/// The receiver's side: accepts `header` when it has one `t=` timestamp within `tolerance_s`
/// seconds of `now_unix_seconds` (either direction) and a `v1=` signature (several may be given;
/// one match suffices; other keys are ignored) equal to webhook_signature's for `body`, compared
/// in constant time. Error code "invalid_webhook_signature" with the reason (malformed, outside
/// the tolerance, no matching signature) otherwise.
status verify_webhook_signature(std::string_view secret, std::string_view header,
                                std::string_view body, int64_t now_unix_seconds,
                                int64_t tolerance_s = 300);

/// The key that signs webhooks: the configured `webhook_secret`, else the one in
/// `<data_dir>/webhook_secret`, created with 32 random bytes (hex) and mode 0600 on first start.
result<std::string> load_or_create_webhook_secret(const config::settings& cfg);

}  // namespace sy::runtime
