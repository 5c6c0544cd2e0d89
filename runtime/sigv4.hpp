#pragma once
/// AWS Signature Version 4 for the requests the credential minter sends (STS AssumeRole, issue
/// 19), on OpenSSL's EVP/HMAC. Header signing only (no presigned URLs, no chunked bodies).
/// Checked against AWS's published test suite (tests/unit/runtime/sigv4_test.cpp).

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace sy::runtime {

struct aws_credentials {
  std::string access_key_id;
  std::string secret_access_key;
  std::string session_token;  ///< empty for long-term keys; else sent as x-amz-security-token
};

struct sigv4_request {
  std::string method;  ///< e.g. "POST"
  std::string path;    ///< the URI path as sent, already percent-encoded; "/" at least
  std::vector<std::pair<std::string, std::string>> query;    ///< decoded; encoded and sorted here
  std::vector<std::pair<std::string, std::string>> headers;  ///< must include Host
  std::string body;
};

struct sigv4_scope {
  std::string region;   ///< e.g. "us-east-1"
  std::string service;  ///< e.g. "sts", "s3"
  int64_t unix_seconds = 0;
  /// Adds x-amz-content-sha256 (S3 wants it; STS does not need it).
  bool content_sha256_header = false;
};

struct sigv4_result {
  std::string canonical_request;
  std::string string_to_sign;
  std::string signature;  ///< lowercase hex
  /// The headers to add to the request: X-Amz-Date, optionally x-amz-content-sha256 and
  /// X-Amz-Security-Token, and Authorization.
  std::vector<std::pair<std::string, std::string>> headers;
};

/// RFC 3986 percent-encoding as SigV4 wants it: unreserved characters as they are, every other
/// byte as %XX (uppercase); `keep_slash` for paths.
std::string sigv4_uri_encode(std::string_view s, bool keep_slash = false);

/// Signs `r` with `c` for `scope`.
sigv4_result sigv4_sign(const sigv4_request& r, const aws_credentials& c, const sigv4_scope& scope);

}  // namespace sy::runtime
