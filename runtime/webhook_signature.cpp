#include "runtime/webhook_signature.hpp"

#include <openssl/evp.h>
#include <openssl/hmac.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <optional>
#include <random>
#include <vector>

#include "config/sha256.hpp"
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

std::string hmac_sha256_hex(std::string_view key, std::string_view data) {
  unsigned char mac[EVP_MAX_MD_SIZE];
  unsigned int size = 0;
  // OpenSSL treats a null key as "no key"; an empty key is still a key.
  static const unsigned char empty = 0;
  const void* key_ptr = key.empty() ? static_cast<const void*>(&empty) : key.data();
  const auto* data_ptr =
      data.empty() ? &empty : reinterpret_cast<const unsigned char*>(data.data());
  if (HMAC(EVP_sha256(), key_ptr, static_cast<int>(key.size()), data_ptr, data.size(), mac,
           &size) == nullptr) {
    return {};  // only on allocation failure; an empty signature never verifies
  }
  return to_hex(mac, size);
}

}  // namespace

std::string webhook_signature(std::string_view secret, int64_t unix_seconds,
                              std::string_view body) {
  const std::string t = std::to_string(unix_seconds);
  std::string signed_text;
  signed_text.reserve(t.size() + 1 + body.size());
  signed_text.append(t).append(".").append(body);
  return "t=" + t + ",v1=" + hmac_sha256_hex(secret, signed_text);
}

status verify_webhook_signature(std::string_view secret, std::string_view header,
                                std::string_view body, int64_t now_unix_seconds,
                                int64_t tolerance_s) {
  auto fail = [](const std::string& why) {
    return make_error(errc::invalid_webhook_signature, "webhook signature rejected: " + why,
                      "X-Switchyard-Signature");
  };
  std::optional<int64_t> t;
  std::vector<std::string_view> signatures;
  for (size_t start = 0; start <= header.size();) {
    const size_t comma = std::min(header.find(',', start), header.size());
    std::string_view item = header.substr(start, comma - start);
    start = comma + 1;
    while (!item.empty() && item.front() == ' ') item.remove_prefix(1);
    while (!item.empty() && item.back() == ' ') item.remove_suffix(1);
    const size_t eq = item.find('=');
    if (eq == std::string_view::npos) return fail("malformed header (expected t=...,v1=...)");
    const std::string_view key = item.substr(0, eq), value = item.substr(eq + 1);
    if (key == "t") {
      int64_t v = 0;
      auto [end, ec] = std::from_chars(value.data(), value.data() + value.size(), v);
      if (t || value.empty() || ec != std::errc{} || end != value.data() + value.size()) {
        return fail("malformed timestamp");
      }
      t = v;
    } else if (key == "v1") {
      signatures.push_back(value);
    }  // other schemes are ignored, so that a future v2 does not break today's receivers
  }
  if (!t) return fail("no t= timestamp");
  if (signatures.empty()) return fail("no v1= signature");
  if (*t < now_unix_seconds - tolerance_s || *t > now_unix_seconds + tolerance_s) {
    return fail("timestamp " + std::to_string(*t) + " is more than " + std::to_string(tolerance_s) +
                " s away from now (" + std::to_string(now_unix_seconds) + ")");
  }
  const std::string expected = webhook_signature(secret, *t, body);
  const std::string_view expected_v1 = std::string_view(expected).substr(expected.find(",v1=") + 4);
  bool match = false;
  // Every candidate is compared, so the time taken does not say which one matched.
  for (auto s : signatures) match = config::constant_time_equal(s, expected_v1) || match;
  if (!match) return fail("no v1 signature matches the body");
  return ok;
}

/// The key that signs webhooks: the configured file's, else `<data_dir>/webhook_secret`, created
/// with 32 random bytes (hex) and mode 0600 on first start.
result<std::string> load_or_create_webhook_secret(const config::settings& cfg) {
  if (!cfg.webhook_secret.empty()) return cfg.webhook_secret;
  const auto path = std::filesystem::path(cfg.data_dir) / "webhook_secret";
  if (std::ifstream in{path}; in) {
    std::string secret;
    std::getline(in, secret);
    if (!secret.empty()) return secret;
  }
  unsigned char raw[32];
  std::random_device rd;
  for (auto& b : raw) b = static_cast<unsigned char>(rd());
  static constexpr char hex[] = "0123456789abcdef";
  std::string secret;
  for (auto b : raw) secret += {hex[b >> 4], hex[b & 0xf]};
  if (auto failed = write_private_file(path.string(), secret + "\n"); !failed.empty())
    return make_error(errc::webhook_secret, "webhook secret: " + failed);
  log::info("engine", "created a webhook signing secret", {{"path", path.string()}});
  return secret;
}

}  // namespace sy::runtime
