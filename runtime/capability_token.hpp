#pragma once
/// Task capability tokens (issue 19 item 4): one ES256 JWT per (task, attempt), signed by the
/// key ring's current key. Claims: `iss`, `aud`, `sub` = `task:<id>`, `iat`, `nbf`, `exp` (no
/// later than the lease's expiry plus a small skew), `jti`, `tenant`, `job_id`, `task_id`,
/// `attempt`, `runtime`, `lease` (the attempt's lease token, which the store fences by), and
/// `grants` (`read` / `write` / `scratch`: canonical s3:// prefixes).
/// The header is `{"alg":"ES256","kid":…,"typ":"JWT"}`.
///
/// `check_token` does what the token alone can tell: a published key by `kid`, the signature,
/// `iss`, `aud`, `nbf`/`exp` against the clock (with `skew_s`), `sub` matching `task_id`, and
/// grants that are canonical. That the attempt is still the task's current one is the caller's
/// check, against the store (a token for attempt n is refused once attempt n+1 exists).

#include <cstdint>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "config/result.hpp"
#include "config/s3_scope.hpp"
#include "runtime/key_ring.hpp"

namespace sy::runtime {

struct capability_claims {
  std::string iss;
  std::string aud;
  std::string jti;
  std::string tenant;
  std::string job_id;
  std::string task_id;
  std::string runtime;
  std::string lease;  ///< the attempt's lease token: what fences its calls in the store
  int attempt = 0;
  int64_t iat_s = 0;
  int64_t nbf_s = 0;
  int64_t exp_s = 0;
  config::s3_grants grants;
};

/// The claims as the token carries them.
nlohmann::json claims_json(const capability_claims& c);

/// Signs `c` with the ring's key of `now_ms`.
result<std::string> mint_token(const key_ring& ring, const capability_claims& c, int64_t now_ms);

struct token_expectations {
  std::string iss;
  std::string aud;
  int64_t now_ms = 0;
  int64_t skew_s = 30;  ///< clock skew tolerated on nbf and exp
};

/// The token's claims when it passes every check above; `invalid_capability_token` saying which
/// check failed otherwise.
result<capability_claims> check_token(std::string_view token, const key_ring& ring,
                                      const token_expectations& e);

}  // namespace sy::runtime
