#pragma once
/// The credential minter (DESIGN.md, issue 19): the one owner of the signing keys of task
/// capability tokens (runtime/key_ring.hpp). It mints a token for an attempt that was just leased
/// or heartbeated, checks a token a worker presents, and serves the JWKS verifiers fetch. A
/// detached actor: its work is a few ECDSA operations, and the key files it writes at a rotation
/// are fsynced, so it keeps that off the scheduler's threads.
///
/// Receives: (`mint`, claims) → mint_reply — it sets `iss`, `aud`, `iat`, `nbf` and `jti`; the
/// caller sets the rest, `exp` from the lease; (`verify`, token) → verify_reply — the token's
/// claims when runtime::check_token accepts it; (`jwks`) → the JWKS document as JSON text;
/// (`rotate`) → mint_reply: the JWKS after a key rotation as its `token`, or why it failed; (`sts`,
/// grants, session name) → sts_reply: the STS AssumeRole call for the grants' session policy,
/// signed with the minter's own STS keys (the caller sends it: the minter does no network I/O);
/// `tick` from its own clock timer every `signing_key_rotation_ms`: a rotation, and the files of
/// keys no longer published are deleted.

#include <cstdint>
#include <memory>
#include <string>

#include <caf/replies_to.hpp>
#include <caf/typed_actor.hpp>

#include "actors/ambient.hpp"
#include "actors/atoms.hpp"
#include "runtime/capability_token.hpp"
#include "runtime/sts.hpp"

namespace sy::runtime {
template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, capability_claims& x) {
  return f(x.iss, x.aud, x.jti, x.tenant, x.job_id, x.task_id, x.runtime, x.lease, x.attempt,
           x.iat_s, x.nbf_s, x.exp_s, x.grants);
}
}  // namespace sy::runtime

namespace sy::runtime {
template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, signed_http_request& x) {
  return f(x.method, x.target, x.headers, x.body);
}
}  // namespace sy::runtime

namespace sy::actors {

struct sts_reply {
  runtime::signed_http_request call;
  sy::error err;  ///< empty code: signed; credentials_unavailable when no STS is configured
};
template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, sts_reply& x) {
  return f(x.call, x.err);
}

struct mint_reply {
  std::string token;  ///< the token; for a rotation, the JWKS after it
  sy::error err;      ///< empty code: minted
};
template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, mint_reply& x) {
  return f(x.token, x.err);
}

struct verify_reply {
  runtime::capability_claims claims;
  sy::error err;  ///< empty code: the token passed every check of runtime::check_token
};
template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, verify_reply& x) {
  return f(x.claims, x.err);
}

using credential_minter_actor =
    caf::typed_actor<caf::replies_to<mint_atom, runtime::capability_claims>::with<mint_reply>,
                     caf::replies_to<verify_atom, std::string>::with<verify_reply>,
                     caf::replies_to<jwks_atom>::with<std::string>,
                     caf::replies_to<rotate_atom>::with<mint_reply>,
                     caf::replies_to<sts_atom, config::s3_grants, std::string>::with<sts_reply>,
                     caf::reacts_to<tick_atom>>;

/// The issuer and audience of the engine's tokens, and the clock skew tolerated on nbf and exp.
inline constexpr std::string_view token_issuer = "switchyard";
inline constexpr std::string_view token_audience = "switchyard-task";
inline constexpr int64_t token_skew_s = 30;

/// Opens the key ring under `<data_dir>/signing-keys` (its first key is made when there is
/// none), then spawns the minter owning it. Errors: those of key_ring::open (the engine does not
/// start without its keys).
result<credential_minter_actor> spawn_credential_minter(const ambient& at);

}  // namespace sy::actors
