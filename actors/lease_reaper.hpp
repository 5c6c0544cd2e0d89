#pragma once
/// The lease reaper: the only actor that takes work away from a holder. Every `interval` it reads
/// the leases and expires each one that ran out, or whose holder is an earlier run of this node
/// (everything in flight when the process was killed): the attempt ends as a retryable failure,
/// so the task is re-queued with attempt + 1 or the job fails after max_attempts. No job stays
/// non-terminal forever. It also runs the reconcile sweeper: a queued task whose JetStream
/// message was lost is queued again.

#include <caf/replies_to.hpp>
#include <caf/typed_actor.hpp>

#include "actors/atoms.hpp"
#include "actors/engine_context.hpp"
#include "actors/storage_writer.hpp"
#include "storage/lmdb_env.hpp"

namespace sy::actors {

/// `tick` runs one pass and schedules the next.
using lease_reaper_actor = caf::typed_actor<caf::reacts_to<tick_atom>>;

/// The holder prefix shared by every run of this node, e.g. "local/" (holders are
/// "local/<boot ULID>"). The engine runs it on its own thread (`sy-reaper`): its tick reads
/// LMDB and, for the reconcile sweep, asks JetStream for consumer backlogs, which blocks while
/// NATS is slow or down, and must not hold up the one CAF worker the job actors run on.
/// `runs_on::scheduler` is for tests on CAF's test coordinator.
lease_reaper_actor spawn_lease_reaper(engine_context& ctx, storage::environment& env,
                                      std::string node_prefix, runs_on where = runs_on::own_thread);

/// Whether a lease must be expired now (pure; unit-tested).
bool lease_is_dead(const storage::lease_record& l, int64_t now_ms, const std::string& my_holder,
                   const std::string& node_prefix);

}  // namespace sy::actors
