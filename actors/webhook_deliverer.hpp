#pragma once
/// The webhook deliverer (DESIGN.md): delivers the deliveries that state changes committed to
/// `db::webhooks`, at least once — a restart finds them still there — with exponential backoff
/// and jitter between attempts, up to `webhook_max_attempts`; then the delivery is dropped and
/// counted (`counter/webhooks_dropped` in meta). It never changes a job.
///
/// A typed actor (event-based) that owns which deliveries are in flight (at most
/// `max_in_flight`). Each delivery runs as a coroutine on a strand of the engine's executor (the
/// webhook client is Asio), records its outcome through the writer and reports `done` back.
/// Between scans it waits on a timer of the engine's clock, until the next delivery is due or a
/// commit wakes it.

#include <utility>  // before any Asio header

#include <cstdint>
#include <string>

#include <caf/replies_to.hpp>
#include <caf/typed_actor.hpp>

#include "actors/ambient.hpp"
#include "actors/atoms.hpp"
#include "actors/storage_writer.hpp"
#include "runtime/webhook_policy.hpp"
#include "storage/lmdb_env.hpp"

namespace sy::actors {

/// Receives: `wake` (deliveries were committed, or a delivery came due: scan now),
/// (`done`, seq) (delivery `seq` ended; its outcome is committed or logged), and `drain` (take no
/// more; answered true once the deliveries in flight have ended — pending ones stay in storage
/// for the next start).
using webhook_deliverer_actor =
    caf::typed_actor<caf::reacts_to<wake_atom>, caf::reacts_to<done_atom, uint64_t>,
                     caf::replies_to<drain_atom>::with<bool>>;

/// Spawns the deliverer; it scans at once. `key` signs the deliveries (load_or_create_webhook_key),
/// with timestamps of the engine's clock; each outcome is committed through `writer`.
/// `max_in_flight`: deliveries running at once.
webhook_deliverer_actor spawn_webhook_deliverer(const ambient& at, storage::environment& env,
                                                storage_writer_actor writer,
                                                runtime::webhook_policy policy, std::string key,
                                                size_t max_in_flight = 16);

}  // namespace sy::actors
