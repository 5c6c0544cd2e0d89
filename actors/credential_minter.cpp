#include "actors/credential_minter.hpp"

#include <utility>  // before any Asio header

#include <algorithm>

#include <caf/stateful_actor.hpp>
#include <caf/typed_event_based_actor.hpp>

#include "actors/attempt.hpp"
#include "actors/detail/actor_timer.hpp"
#include "runtime/log.hpp"
#include "runtime/webhook_policy.hpp"

namespace sy::actors {
namespace {

struct minter_state {
  const ambient* at = nullptr;
  std::unique_ptr<runtime::key_ring> ring;
  std::shared_ptr<runtime::timer> rotation;  ///< the next timed rotation
  /// CAF destroys the state before it counts the actor stopped (and runs attached functors only
  /// after), so the engine's wait for its actors covers this cancel (actors/job_registry.cpp).
  ~minter_state() { detail::disarm(rotation); }
  static inline const char* name = "credential_minter";
};

using minter_ptr = credential_minter_actor::stateful_pointer<minter_state>;

mint_reply mint(minter_ptr self, runtime::capability_claims& c) {
  auto& st = self->state;
  const int64_t now = st.at->clock.now_ms();
  c.iss = token_issuer;
  c.aud = token_audience;
  c.iat_s = c.nbf_s = now / 1000;
  c.jti = new_lease_token();  // a random 128-bit id
  auto token = runtime::mint_token(*st.ring, c, now);
  if (!token) return {{}, token.error()};
  return {std::move(*token), {}};
}

verify_reply verify(minter_ptr self, const std::string& token) {
  auto& st = self->state;
  runtime::token_expectations e{std::string(token_issuer), std::string(token_audience),
                                st.at->clock.now_ms(), token_skew_s};
  auto claims = runtime::check_token(token, *st.ring, e);
  if (!claims) return {{}, claims.error()};
  return {std::move(*claims), {}};
}

/// The AssumeRole call for `grants`, signed now with the minter's STS keys.
sts_reply sign_sts(minter_ptr self, const config::s3_grants& grants, const std::string& session) {
  const auto& cfg = self->state.at->cfg;
  if (cfg.sts_endpoint.empty())
    return {{},
            make_error(errc::credentials_unavailable,
                       "This engine mints no storage credentials: sts_endpoint is not configured "
                       "(docs/workers.md, \"Storage credentials\").")};
  auto url = runtime::parse_webhook_url(cfg.sts_endpoint);  // checked by config::validate
  if (!url) return {{}, make_error(errc::credentials_unavailable, url.error().message)};
  runtime::sts_target t{url->host_header,
                        cfg.sts_region,
                        cfg.sts_role_arn,
                        {cfg.sts_access_key_id, cfg.sts_secret_access_key, ""}};
  runtime::assume_role_params p{session, config::s3_session_policy(grants).dump(),
                                cfg.credentials_ttl_ms / 1000};
  return {runtime::assume_role_request(t, p, self->state.at->clock.now_ms() / 1000), {}};
}

/// Rotates now, prunes what is no longer published, and arms the next rotation.
sy::error rotate(minter_ptr self) {
  auto& st = self->state;
  const int64_t now = st.at->clock.now_ms();
  auto rotated = st.ring->rotate(now);
  const size_t pruned = st.ring->prune(now);
  if (rotated)
    log::info("keys", "rotated the signing key", {{"keys", st.ring->size()}, {"pruned", pruned}});
  else
    log::error("keys", "could not rotate the signing key", {{"error", rotated.error().message}});
  return rotated ? sy::error{} : rotated.error();
}

void arm_rotation(minter_ptr self) {
  auto& st = self->state;
  detail::arm_on<tick_atom>(st.rotation, st.at->clock, st.at->exec,
                            st.at->cfg.signing_key_rotation_ms, credential_minter_actor{self});
}

credential_minter_actor::behavior_type minter(minter_ptr self, const ambient* at,
                                              runtime::key_ring* ring) {
  self->state.at = at;
  self->state.ring.reset(ring);
  if (at->cfg.signing_key_file.empty()) arm_rotation(self);  // an operator's key never rotates
  return {
      [=](mint_atom, runtime::capability_claims& c) { return mint(self, c); },
      [=](verify_atom, const std::string& token) { return verify(self, token); },
      [=](jwks_atom) {
        auto& st = self->state;
        return st.ring->jwks(st.at->clock.now_ms()).dump();
      },
      [=](rotate_atom) {
        auto err = rotate(self);
        if (!err.code.empty()) return mint_reply{{}, std::move(err)};
        auto& st = self->state;
        return mint_reply{st.ring->jwks(st.at->clock.now_ms()).dump(), {}};
      },
      [=](sts_atom, const config::s3_grants& g, const std::string& session) {
        return sign_sts(self, g, session);
      },
      [=](tick_atom) {
        (void)rotate(self);
        arm_rotation(self);
      },
  };
}

}  // namespace

result<credential_minter_actor> spawn_credential_minter(const ambient& at) {
  int64_t longest_lease = 0;
  for (const auto& [name, r] : at.cfg.runtimes)
    longest_lease = std::max(longest_lease, r.lease_ttl_ms);
  runtime::key_ring::options o;
  o.dir = at.cfg.data_dir + "/signing-keys";
  o.pem_file = at.cfg.signing_key_file;
  // A rotated key is published a minute before it signs: verifiers that cache the JWKS for
  // less than that never meet a kid they do not know.
  o.publish_lead_ms = 60'000;
  o.max_token_ttl_ms = longest_lease + token_skew_s * 1000;
  auto ring = runtime::key_ring::open(o, at.clock.now_ms());
  if (!ring) return ring.error();
  auto owned = std::make_unique<runtime::key_ring>(std::move(*ring));
  // CAF copies spawn arguments; the ring travels as a raw owning pointer.
  return at.sys.spawn<caf::detached>(minter, &at, owned.release());
}

}  // namespace sy::actors
