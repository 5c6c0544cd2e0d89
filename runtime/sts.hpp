#pragma once
/// STS AssumeRole for the credential minter (issue 19 item 6): the signed request and the
/// reading of its answer. Pure: the minter sends the request with its HTTP client.
///
/// The request is `POST /` with a form body (`Action=AssumeRole&Version=2011-06-15&RoleArn=…&
/// RoleSessionName=…&Policy=…&DurationSeconds=…`), every value percent-encoded (a space as %20,
/// never '+': some servers do not decode '+'), signed with SigV4 for service `sts`.

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "config/result.hpp"
#include "runtime/sigv4.hpp"

namespace sy::runtime {

struct sts_target {
  std::string host;      ///< the Host header: `name[:port]` of the STS endpoint
  std::string region;    ///< e.g. "us-east-1"
  std::string role_arn;  ///< the role the minter assumes
  aws_credentials minter;
};

struct assume_role_params {
  std::string session_name;  ///< 2–64 of [\w+=,.@-]; e.g. the task id and attempt
  std::string policy;        ///< the session policy, compact JSON
  int64_t duration_s = 900;  ///< 900–43200 on AWS (3600 at most on some servers)
};

struct signed_http_request {
  std::string method;
  std::string target;
  std::vector<std::pair<std::string, std::string>> headers;  ///< all of them, Host included
  std::string body;
};

/// The AssumeRole call for `p` against `t`, signed at `unix_seconds`.
signed_http_request assume_role_request(const sts_target& t, const assume_role_params& p,
                                        int64_t unix_seconds);

struct minted_credentials {
  aws_credentials credentials;
  std::string expiration;  ///< as STS wrote it (ISO 8601, UTC)
};

/// Reads an AssumeRole answer: on 200, `<Credentials>` with AccessKeyId, SecretAccessKey,
/// SessionToken and Expiration; otherwise `credentials_unavailable` with the status and the
/// error's `<Code>`.
result<minted_credentials> parse_assume_role_response(int status, std::string_view body);

}  // namespace sy::runtime
