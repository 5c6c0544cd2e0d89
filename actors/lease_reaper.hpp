#pragma once
/// The lease reaper: the only actor that takes work away from a holder. Every `interval` it reads
/// the leases and expires each one that ran out, or whose holder is an earlier run of this node
/// (everything in flight when the process was killed): the attempt ends as a retryable failure,
/// so the task is re-queued with attempt + 1 or the job fails after max_attempts. No job stays
/// non-terminal forever. It also runs the reconcile sweeper: a queued task whose JetStream
/// message was lost is queued again.

#include <caf/replies_to.hpp>
#include <caf/typed_actor.hpp>

#include "actors/ambient.hpp"
#include "actors/atoms.hpp"
#include "actors/job_registry.hpp"
#include "actors/storage_writer.hpp"
#include "runtime/jetstream.hpp"
#include "storage/lmdb_env.hpp"

namespace sy::actors {

struct reaper_deps {
  const ambient* at = nullptr;
  storage::environment* env = nullptr;
  runtime::js_client* js = nullptr;
  storage_writer_actor writer;
  job_registry_actor jobs;
  std::string holder;
  std::string node_prefix;
};

/// `tick` runs one pass and schedules the next.
using lease_reaper_actor = caf::typed_actor<caf::reacts_to<tick_atom>>;

/// What the reaper uses: the store it reads, JetStream (consumer backlogs for the reconcile
/// sweep), the writer its expiries, re-queues and purges go to, the registry it tells of the
/// running attempts it expired, and this process's lease holder id. `node_prefix`: the holder
/// prefix shared by every run of this node, e.g. "local/" (holders are
/// "local/<boot ULID>"). The engine runs it on its own thread (`sy-reaper`): its tick reads
/// LMDB and, for the reconcile sweep, asks JetStream for consumer backlogs, which blocks while
/// NATS is slow or down, and must not hold up the one CAF worker the job actors run on.
/// `runs_on::scheduler` is for tests on CAF's test coordinator.
lease_reaper_actor spawn_lease_reaper(reaper_deps d, runs_on where = runs_on::own_thread);

/// Whether a lease must be expired now (pure; unit-tested).
bool lease_is_dead(const storage::lease_record& l, int64_t now_ms, const std::string& my_holder,
                   const std::string& node_prefix);

}  // namespace sy::actors
