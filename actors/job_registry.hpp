#pragma once
/// The job registry: the directory of the owners of the jobs that have work on this node, by job
/// id (DESIGN.md "Components"; docs/architecture.md, "Who owns what"). Every active single job
/// or task list here has exactly one owner actor (actors/job_owner.hpp), which the registry
/// spawns on the first message for the job and forgets once the owner is idle; every running
/// batch's actor is its own owner and claims its id here (actors/batch_actor.hpp). Everything
/// that concerns a job reaches its owner through the registry, by job id: an attempt starting
/// (`register`), its deadline, a cancel, delete or stop the engine commits, an expiry the reaper
/// found, shutdown's `release` and the heartbeat tick.
///
/// An owner stops only when the registry agrees: the owner reports `idle` with the number of
/// messages it received from the registry; when that equals the number routed to it, nothing is
/// on its way, so the registry forgets it and tells it to stop, and the next message for the job
/// spawns a new owner. A job thus never has two owners here, and no message for it is lost.
///
/// Heartbeats are paced here: one timer of the injected clock ticks every `beat_tick_ms` and the
/// registry sends `beat` to every owner, which passes it to its attempts; an attempt extends its
/// lease when its last extension is a beat period old. One timer for every job on the node.

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <caf/fwd.hpp>
#include <caf/replies_to.hpp>
#include <caf/typed_actor.hpp>

#include "actors/ambient.hpp"
#include "actors/atoms.hpp"
#include "actors/storage_writer.hpp"
#include "runtime/clock.hpp"
#include "runtime/gateway_client.hpp"

namespace sy::actors {

/// What the registry and the engine say to a job's actor, whatever its kind: `cancel`, `expire`
/// (its deadline passed), `release` (shutdown: give the work back) and `beat` (the registry's
/// heartbeat tick). A single-request job's actor (actors/job_actor.hpp) and a batch's
/// (actors/batch_actor.hpp) extend it with their own messages.
using job_control_actor = caf::typed_actor<caf::reacts_to<cancel_atom>, caf::reacts_to<expire_atom>,
                                           caf::reacts_to<release_atom>, caf::reacts_to<beat_atom>>;

/// One attempt of a task on this node: the control messages, (`start`, may_chain) (its
/// dispatcher granted it a slot: send the request; may_chain: a list's task may lease its next
/// task with its outcome) and the gateway's outcome.
using job_actor = job_control_actor::extend<caf::reacts_to<start_atom, bool>,
                                            caf::reacts_to<runtime::gateway_outcome>>;

/// A single job's or a task list's owner (actors/job_owner.hpp). From the registry: (`register`,
/// task id, attempt) when an attempt of one of its tasks starts; (`deadline`, at_ms) the job's
/// deadline, as the attempt's start read it; (`commit`, write) a change the API asks for
/// (cancel, delete, append, rerun) and (`expire`, write) an expiry the reaper found, each
/// answered with the commit's reply once the attempts it names are told to stop; bare `cancel`
/// and `expire` (abort every attempt); `release`; `beat`; `stop` (the registry forgot it). From
/// its own timer: `deadline`.
using job_owner_actor =
    caf::typed_actor<caf::reacts_to<register_atom, std::string, job_control_actor>,
                     caf::reacts_to<deadline_atom, int64_t>, caf::reacts_to<deadline_atom>,
                     caf::replies_to<commit_atom, write_request>::with<write_reply>,
                     caf::replies_to<expire_atom, write_request>::with<write_reply>,
                     caf::reacts_to<cancel_atom>, caf::reacts_to<expire_atom>,
                     caf::reacts_to<release_atom>, caf::reacts_to<beat_atom>,
                     caf::reacts_to<stop_atom>>;

/// Receives, each addressed by job id: (`register`, job, task, attempt) from a starting attempt;
/// (`deadline`, job, at_ms); (`commit`, job, write) and (`expire`, job, write) → the commit's
/// reply, from the owner; bare (`cancel`, job) and (`expire`, job) (a batch's actor, or a running
/// job's owner); (`claim`, batch, actor) → true when no actor owns that batch here yet (false:
/// the newcomer ends); (`idle`, job, received) from an owner; `release` (every job gives its
/// work back) and (`release`, true) (only the batches: they stop at once at shutdown); `beat`;
/// `drain` → true once no owner is left.
using job_registry_actor =
    caf::typed_actor<caf::reacts_to<register_atom, std::string, std::string, job_control_actor>,
                     caf::reacts_to<deadline_atom, std::string, int64_t>,
                     caf::replies_to<commit_atom, std::string, write_request>::with<write_reply>,
                     caf::replies_to<expire_atom, std::string, write_request>::with<write_reply>,
                     caf::replies_to<claim_atom, std::string, job_control_actor>::with<bool>,
                     caf::reacts_to<cancel_atom, std::string>,
                     caf::reacts_to<expire_atom, std::string>,
                     caf::reacts_to<idle_atom, std::string, uint64_t>, caf::reacts_to<release_atom>,
                     caf::reacts_to<release_atom, bool>, caf::reacts_to<beat_atom>,
                     caf::replies_to<drain_atom>::with<bool>>;

/// The registry's table, as a plain class (unit-tested without an actor system): each job id has
/// one owner — a job owner (`Owner`) or a batch's actor that claimed the id (`Claimed`) — found
/// again by the owner's actor id when it ends. For job owners it counts the messages routed to
/// each, the other half of the idle handshake.
template <class Owner, class Claimed>
class owner_table {
 public:
  struct entry {
    uint64_t actor_id = 0;
    std::optional<Owner> owner;      ///< a single job's or task list's owner
    std::optional<Claimed> claimed;  ///< a batch's actor
    uint64_t routed = 0;             ///< messages routed to `owner` so far
  };
  /// The owner of `id`, or null.
  entry* find(const std::string& id) {
    auto it = by_id_.find(id);
    return it == by_id_.end() ? nullptr : &it->second;
  }
  entry& add_owner(const std::string& id, uint64_t actor_id, Owner h) {
    id_of_[actor_id] = id;
    return by_id_[id] = entry{actor_id, std::move(h), std::nullopt, 0};
  }
  /// False when `id` has an owner already.
  bool claim(const std::string& id, uint64_t actor_id, Claimed h) {
    if (by_id_.count(id) > 0) return false;
    id_of_[actor_id] = id;
    by_id_[id] = entry{actor_id, std::nullopt, std::move(h), 0};
    return true;
  }
  /// The owner of `id` said it is idle, having received `received` messages: true (and it is
  /// forgotten) when that is every message routed to it, so it may stop.
  bool idle(const std::string& id, uint64_t actor_id, uint64_t received) {
    auto* e = find(id);
    if (!e || e->actor_id != actor_id || e->routed != received) return false;
    id_of_.erase(actor_id);
    by_id_.erase(id);
    return true;
  }
  /// Forgets the actor `actor_id` (it ended); false when it was not here.
  bool remove(uint64_t actor_id) {
    auto it = id_of_.find(actor_id);
    if (it == id_of_.end()) return false;
    by_id_.erase(it->second);
    id_of_.erase(it);
    return true;
  }
  /// Calls `f` with every entry (only the claimed ones when `claimed_only`).
  template <class F>
  void for_each(F&& f, bool claimed_only = false) {
    for (auto& [id, e] : by_id_)
      if (!claimed_only || e.claimed) f(e);
  }
  size_t jobs() const { return by_id_.size(); }
  bool empty() const { return by_id_.empty(); }

 private:
  std::map<std::string, entry> by_id_;
  std::map<uint64_t, std::string> id_of_;
};

/// The registry; its heartbeat tick runs on a strand of `at.exec`, every `beat_tick_ms` of the
/// clock. The owners it spawns commit through `writer`.
job_registry_actor spawn_job_registry(const ambient& at, storage_writer_actor writer,
                                      int64_t beat_tick_ms);

}  // namespace sy::actors
