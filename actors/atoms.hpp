#pragma once
/// Atoms shared by the engine's actors (CAF 0.17 atoms hold at most 10 characters).

#include <caf/atom.hpp>

namespace sy::actors {

using flush_atom = caf::atom_constant<caf::atom("flush")>;
using wake_atom = caf::atom_constant<caf::atom("wake")>;
using tick_atom = caf::atom_constant<caf::atom("tick")>;
using fetch_atom = caf::atom_constant<caf::atom("fetch")>;
using done_atom = caf::atom_constant<caf::atom("done")>;
using answered_atom = caf::atom_constant<caf::atom("answered")>;
using drain_atom = caf::atom_constant<caf::atom("drain")>;
using cancel_atom = caf::atom_constant<caf::atom("cancel")>;
using expire_atom = caf::atom_constant<caf::atom("expire")>;
using release_atom = caf::atom_constant<caf::atom("release")>;
using beat_atom = caf::atom_constant<caf::atom("beat")>;
using register_atom = caf::atom_constant<caf::atom("register")>;
using claim_atom = caf::atom_constant<caf::atom("claim")>;
using slot_atom = caf::atom_constant<caf::atom("slot")>;
using yield_atom = caf::atom_constant<caf::atom("yield")>;
using model_atom = caf::atom_constant<caf::atom("model")>;
using lease_atom = caf::atom_constant<caf::atom("lease")>;
using withdraw_atom = caf::atom_constant<caf::atom("withdraw")>;
using mint_atom = caf::atom_constant<caf::atom("mint")>;
using verify_atom = caf::atom_constant<caf::atom("verify")>;
using jwks_atom = caf::atom_constant<caf::atom("jwks")>;
using rotate_atom = caf::atom_constant<caf::atom("rotate")>;
using sts_atom = caf::atom_constant<caf::atom("sts")>;
using stop_atom = caf::atom_constant<caf::atom("stop")>;
using deadline_atom = caf::atom_constant<caf::atom("deadline")>;
using commit_atom = caf::atom_constant<caf::atom("commit")>;
using idle_atom = caf::atom_constant<caf::atom("idle")>;
using start_atom = caf::atom_constant<caf::atom("start")>;

}  // namespace sy::actors
