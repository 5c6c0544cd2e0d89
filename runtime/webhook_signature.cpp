#include "runtime/webhook_signature.hpp"

#include <openssl/evp.h>
#include <openssl/hmac.h>

#include <algorithm>
#include <charconv>
#include <filesystem>
#include <fstream>
#include <optional>
#include <random>
#include <vector>

#include "config/sha256.hpp"
#include "runtime/base64.hpp"
#include "runtime/log.hpp"
#include "runtime/private_file.hpp"

namespace sy::runtime {
namespace {

std::string to_hex(const unsigned char* data, size_t size) {
  static constexpr char digits[] = "0123456789abcdef";
  std::string out;
  out.reserve(size * 2);
  for (size_t i = 0; i < size; ++i) {
    out += digits[data[i] >> 4];
    out += digits[data[i] & 0xF];
  }
  return out;
}

/// The raw HMAC-SHA256; empty only on allocation failure (an empty signature never verifies).
std::string hmac_sha256(std::string_view key, std::string_view data) {
  unsigned char mac[EVP_MAX_MD_SIZE];
  unsigned int size = 0;
  // OpenSSL treats a null key as "no key"; an empty key is still a key.
  static const unsigned char empty = 0;
  const void* key_ptr = key.empty() ? static_cast<const void*>(&empty) : key.data();
  const auto* data_ptr =
      data.empty() ? &empty : reinterpret_cast<const unsigned char*>(data.data());
  if (HMAC(EVP_sha256(), key_ptr, static_cast<int>(key.size()), data_ptr, data.size(), mac,
           &size) == nullptr) {
    return {};
  }
  return std::string(reinterpret_cast<const char*>(mac), size);
}

status rejected(const std::string& why, const char* header) {
  return make_error(errc::invalid_webhook_signature, "webhook signature rejected: " + why, header);
}

/// Refuses a timestamp further than `tolerance_s` from now, either way.
status check_tolerance(int64_t t, int64_t now, int64_t tolerance_s, const char* header) {
  if (t < now - tolerance_s || t > now + tolerance_s) {
    return rejected("timestamp " + std::to_string(t) + " is more than " +
                        std::to_string(tolerance_s) + " s away from now (" + std::to_string(now) +
                        ")",
                    header);
  }
  return ok;
}

}  // namespace

result<std::string> webhook_key(std::string_view secret) {
  if (!secret.starts_with(webhook_secret_prefix)) return std::string(secret);
  auto key = base64_decode(secret.substr(webhook_secret_prefix.size()));
  if (!key) {
    return make_error(errc::webhook_secret,
                      "the text after whsec_ is not standard base64 (A-Z a-z 0-9 + /, optional = "
                      "padding); a secret that is not base64 must not start with whsec_");
  }
  if (key->empty()) return make_error(errc::webhook_secret, "whsec_ is followed by no key");
  return std::move(*key);
}

std::string standard_webhook_signature(std::string_view key, std::string_view id,
                                       int64_t unix_seconds, std::string_view body) {
  const std::string t = std::to_string(unix_seconds);
  std::string signed_text;
  signed_text.reserve(id.size() + 1 + t.size() + 1 + body.size());
  signed_text.append(id).append(".").append(t).append(".").append(body);
  return "v1," + base64_encode(hmac_sha256(key, signed_text));
}

status verify_standard_webhook(std::string_view key, std::string_view id,
                               std::string_view timestamp, std::string_view signature_header,
                               std::string_view body, int64_t now_unix_seconds,
                               int64_t tolerance_s) {
  int64_t t = 0;
  auto [end, ec] = std::from_chars(timestamp.data(), timestamp.data() + timestamp.size(), t);
  if (timestamp.empty() || ec != std::errc{} || end != timestamp.data() + timestamp.size())
    return rejected("malformed webhook-timestamp", "webhook-timestamp");
  if (auto st = check_tolerance(t, now_unix_seconds, tolerance_s, "webhook-timestamp"); !st)
    return st;
  std::vector<std::string_view> signatures;
  for (size_t start = 0; start < signature_header.size();) {
    const size_t space = std::min(signature_header.find(' ', start), signature_header.size());
    const std::string_view entry = signature_header.substr(start, space - start);
    start = space + 1;
    // Other versions (v1a, a future v2) are ignored, so that adding one breaks no receiver.
    if (entry.starts_with("v1,")) signatures.push_back(entry.substr(3));
  }
  if (signatures.empty()) return rejected("no v1, signature", "webhook-signature");
  const std::string expected = standard_webhook_signature(key, id, t, body).substr(3);
  bool match = false;
  // Every candidate is compared, so the time taken does not say which one matched.
  for (auto s : signatures) match = config::constant_time_equal(s, expected) || match;
  if (!match) return rejected("no v1 signature matches the body", "webhook-signature");
  return ok;
}

std::string webhook_signature(std::string_view key, int64_t unix_seconds, std::string_view body) {
  const std::string t = std::to_string(unix_seconds);
  std::string signed_text;
  signed_text.reserve(t.size() + 1 + body.size());
  signed_text.append(t).append(".").append(body);
  const std::string mac = hmac_sha256(key, signed_text);
  return "t=" + t + ",v1=" + to_hex(reinterpret_cast<const unsigned char*>(mac.data()), mac.size());
}

status verify_webhook_signature(std::string_view key, std::string_view header,
                                std::string_view body, int64_t now_unix_seconds,
                                int64_t tolerance_s) {
  constexpr const char* name = "X-Switchyard-Signature";
  std::optional<int64_t> t;
  std::vector<std::string_view> signatures;
  for (size_t start = 0; start <= header.size();) {
    const size_t comma = std::min(header.find(',', start), header.size());
    std::string_view item = header.substr(start, comma - start);
    start = comma + 1;
    while (!item.empty() && item.front() == ' ') item.remove_prefix(1);
    while (!item.empty() && item.back() == ' ') item.remove_suffix(1);
    const size_t eq = item.find('=');
    if (eq == std::string_view::npos)
      return rejected("malformed header (expected t=...,v1=...)", name);
    const std::string_view k = item.substr(0, eq), value = item.substr(eq + 1);
    if (k == "t") {
      int64_t v = 0;
      auto [end, ec] = std::from_chars(value.data(), value.data() + value.size(), v);
      if (t || value.empty() || ec != std::errc{} || end != value.data() + value.size()) {
        return rejected("malformed timestamp", name);
      }
      t = v;
    } else if (k == "v1") {
      signatures.push_back(value);
    }  // other schemes are ignored, so that a future v2 does not break today's receivers
  }
  if (!t) return rejected("no t= timestamp", name);
  if (signatures.empty()) return rejected("no v1= signature", name);
  if (auto st = check_tolerance(*t, now_unix_seconds, tolerance_s, name); !st) return st;
  const std::string expected = webhook_signature(key, *t, body);
  const std::string_view expected_v1 = std::string_view(expected).substr(expected.find(",v1=") + 4);
  bool match = false;
  // Every candidate is compared, so the time taken does not say which one matched.
  for (auto s : signatures) match = config::constant_time_equal(s, expected_v1) || match;
  if (!match) return rejected("no v1 signature matches the body", name);
  return ok;
}

result<std::string> load_or_create_webhook_key(const config::settings& cfg) {
  const auto path = std::filesystem::path(cfg.data_dir) / "webhook_secret";
  auto key_of = [](const std::string& secret, const std::string& file) -> result<std::string> {
    auto key = webhook_key(secret);
    if (!key)
      return make_error(errc::webhook_secret,
                        "webhook secret in " + file + ": " + key.error().message);
    return key;
  };
  if (!cfg.webhook_secret.empty()) return key_of(cfg.webhook_secret, cfg.webhook_secret_file);
  if (std::ifstream in{path}; in) {
    std::string secret;
    std::getline(in, secret);
    if (!secret.empty()) return key_of(secret, path.string());
  }
  // A new secret in the Standard Webhooks form, so that it can be handed as it is to a
  // receiver's library (the openai SDK's webhookSecret, standardwebhooks). Secrets written by
  // earlier releases (64 hex digits) stay what they were: raw bytes.
  std::string raw(32, '\0');
  std::random_device rd;
  for (auto& b : raw) b = static_cast<char>(rd());
  const std::string secret = std::string(webhook_secret_prefix) + base64_encode(raw);
  if (auto failed = write_private_file(path.string(), secret + "\n"); !failed.empty())
    return make_error(errc::webhook_secret, "webhook secret: " + failed);
  log::info("engine", "created a webhook signing secret", {{"path", path.string()}});
  return raw;
}

}  // namespace sy::runtime
