#include "runtime/sigv4.hpp"

#include <openssl/evp.h>
#include <openssl/hmac.h>

#include <algorithm>
#include <array>
#include <ctime>
#include <map>

#include "config/http_token.hpp"
#include "config/sha256.hpp"

namespace sy::runtime {
namespace {

std::string hex(const unsigned char* p, size_t n) {
  constexpr char digits[] = "0123456789abcdef";
  std::string out;
  out.reserve(n * 2);
  for (size_t i = 0; i < n; ++i) {
    out.push_back(digits[p[i] >> 4]);
    out.push_back(digits[p[i] & 15]);
  }
  return out;
}

std::string hmac(std::string_view key, std::string_view data) {
  std::array<unsigned char, EVP_MAX_MD_SIZE> mac{};
  unsigned int len = 0;
  HMAC(EVP_sha256(), key.data(), static_cast<int>(key.size()),
       reinterpret_cast<const unsigned char*>(data.data()), data.size(), mac.data(),  // NOLINT
       &len);
  return {reinterpret_cast<const char*>(mac.data()), len};  // NOLINT
}

/// A header value as SigV4 canonicalizes it: trimmed, runs of spaces collapsed to one.
std::string trim_value(std::string_view v) {
  std::string out;
  bool space = false;
  for (char c : v) {
    if (c == ' ' || c == '\t') {
      space = !out.empty();
      continue;
    }
    if (space) out.push_back(' ');
    space = false;
    out.push_back(c);
  }
  return out;
}

std::string amz_date(int64_t unix_seconds) {
  const auto t = static_cast<std::time_t>(unix_seconds);
  std::tm tm{};
  gmtime_r(&t, &tm);
  std::array<char, 17> buf{};
  std::strftime(buf.data(), buf.size(), "%Y%m%dT%H%M%SZ", &tm);
  return buf.data();
}

}  // namespace

std::string sigv4_uri_encode(std::string_view s, bool keep_slash) {
  constexpr char digits[] = "0123456789ABCDEF";
  std::string out;
  for (unsigned char c : s) {
    const bool unreserved = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') ||
                            (c >= '0' && c <= '9') || c == '-' || c == '_' || c == '.' ||
                            c == '~' || (keep_slash && c == '/');
    if (unreserved) {
      out.push_back(static_cast<char>(c));
    } else {
      out.push_back('%');
      out.push_back(digits[c >> 4]);
      out.push_back(digits[c & 15]);
    }
  }
  return out;
}

sigv4_result sigv4_sign(const sigv4_request& r, const aws_credentials& c,
                        const sigv4_scope& scope) {
  sigv4_result out;
  const std::string date_time = amz_date(scope.unix_seconds);
  const std::string date = date_time.substr(0, 8);
  const std::string payload_hash = config::sha256_hex(r.body);
  out.headers.emplace_back("X-Amz-Date", date_time);
  if (scope.content_sha256_header) out.headers.emplace_back("x-amz-content-sha256", payload_hash);
  if (!c.session_token.empty()) out.headers.emplace_back("X-Amz-Security-Token", c.session_token);

  // Canonical headers: lowercase names, sorted; values of a repeated name joined by ','.
  std::map<std::string, std::string> canonical;
  auto add = [&](const std::string& name, const std::string& value) {
    auto& v = canonical[config::header_key(name)];
    v += (v.empty() ? "" : ",") + trim_value(value);
  };
  for (const auto& [n, v] : r.headers) add(n, v);
  for (const auto& [n, v] : out.headers) add(n, v);
  std::string header_block;
  std::string signed_headers;
  for (const auto& [n, v] : canonical) {
    header_block.append(n).append(":").append(v).append("\n");
    signed_headers += (signed_headers.empty() ? "" : ";") + n;
  }
  std::vector<std::pair<std::string, std::string>> q;
  for (const auto& [k, v] : r.query) q.emplace_back(sigv4_uri_encode(k), sigv4_uri_encode(v));
  std::sort(q.begin(), q.end());
  std::string query;
  for (const auto& [k, v] : q)
    query.append(query.empty() ? "" : "&").append(k).append("=").append(v);

  out.canonical_request = r.method + "\n" + (r.path.empty() ? "/" : r.path) + "\n" + query + "\n" +
                          header_block + "\n" + signed_headers + "\n" + payload_hash;
  const std::string credential_scope =
      date + "/" + scope.region + "/" + scope.service + "/aws4_request";
  out.string_to_sign = "AWS4-HMAC-SHA256\n" + date_time + "\n" + credential_scope + "\n" +
                       config::sha256_hex(out.canonical_request);
  std::string key = hmac("AWS4" + c.secret_access_key, date);
  key = hmac(key, scope.region);
  key = hmac(key, scope.service);
  key = hmac(key, "aws4_request");
  const std::string sig = hmac(key, out.string_to_sign);
  out.signature = hex(reinterpret_cast<const unsigned char*>(sig.data()), sig.size());  // NOLINT
  out.headers.emplace_back(
      "Authorization", "AWS4-HMAC-SHA256 Credential=" + c.access_key_id + "/" + credential_scope +
                           ", SignedHeaders=" + signed_headers + ", Signature=" + out.signature);
  return out;
}

}  // namespace sy::runtime
