#pragma once
/// The job registry: the one list of the jobs that have work in flight on this node, by id, and
/// the way to reach each (DESIGN.md "Components"). A job actor registers itself when it starts
/// and is forgotten when it ends (the registry monitors it, so one that dies is forgotten too).
/// Cancel, deadlines and shutdown reach a running job through the registry by message: the
/// engine and the reaper name a job (its task id), the registry forwards to the job's actors.
///
/// Receives: (`register`, id, actor) from a starting job actor; (`cancel`, id) and (`expire`, id)
/// after the cancel or the expiry of `id` committed; `release` (shutdown: every job gives its
/// task back); `drain` → true once no job is registered (answered when the last one ends);
/// `beat` from its own timer.
///
/// Heartbeats are paced here: one timer of the injected clock ticks every `beat_tick_ms` and the
/// registry sends `beat` to every registered job actor, which extends its lease when its last
/// extension is a beat period old. A job that answers within the period (nearly all) costs no
/// timer at all; one per job would cost a strand, a timer and two posts to the executor.

#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include <caf/fwd.hpp>
#include <caf/replies_to.hpp>
#include <caf/typed_actor.hpp>

#include "actors/atoms.hpp"
#include "runtime/clock.hpp"
#include "runtime/gateway_client.hpp"

namespace sy::actors {

/// What the registry and the engine say to a job's actor, whatever its kind: `cancel`, `expire`
/// (its deadline passed), `release` (shutdown: give the work back) and `beat` (the registry's
/// heartbeat tick). A single-request job's actor (actors/job_actor.hpp) and a batch's
/// (actors/batch_actor.hpp) extend it with their own messages.
using job_control_actor = caf::typed_actor<caf::reacts_to<cancel_atom>, caf::reacts_to<expire_atom>,
                                           caf::reacts_to<release_atom>, caf::reacts_to<beat_atom>>;

/// One attempt of a single-request job on this node: the control messages and the gateway's
/// outcome.
using job_actor = job_control_actor::extend<caf::reacts_to<runtime::gateway_outcome>>;

/// Receives (`register`, id, actor) from a starting job actor; (`claim`, id, actor) → true from
/// a job that must be the only one of its id here (a batch: false when one already runs, and
/// the newcomer ends); (`cancel`, id) and (`expire`, id); `release` (every job) and
/// (`release`, true) (only the claimed ones: batches stop at once at shutdown); `beat`; `drain`.
using job_registry_actor =
    caf::typed_actor<caf::reacts_to<register_atom, std::string, job_control_actor>,
                     caf::replies_to<claim_atom, std::string, job_control_actor>::with<bool>,
                     caf::reacts_to<cancel_atom, std::string>,
                     caf::reacts_to<expire_atom, std::string>, caf::reacts_to<release_atom>,
                     caf::reacts_to<release_atom, bool>, caf::reacts_to<beat_atom>,
                     caf::replies_to<drain_atom>::with<bool>>;

/// The registry's table, as a plain class (unit-tested without an actor system): jobs by id,
/// each with the actors working for it (a redelivery can briefly run a second attempt of the
/// same task here), keyed by the actor's id so an ended actor is found by its id alone.
template <class Handle>
class job_table {
 public:
  /// `claimed`: registered with `claim` (the only actor of its id; see job_registry_actor).
  void add(const std::string& id, uint64_t actor_id, Handle h, bool claimed = false) {
    by_id_[id].push_back(entry{actor_id, std::move(h), claimed});
    id_of_[actor_id] = id;
  }
  /// Forgets the actor `actor_id`; false when it was not registered.
  bool remove(uint64_t actor_id) {
    auto it = id_of_.find(actor_id);
    if (it == id_of_.end()) return false;
    auto jobs = by_id_.find(it->second);
    if (jobs != by_id_.end()) {
      std::erase_if(jobs->second, [&](const entry& e) { return e.actor_id == actor_id; });
      if (jobs->second.empty()) by_id_.erase(jobs);
    }
    id_of_.erase(it);
    return true;
  }
  /// The actors working for `id` (none when it runs elsewhere or not at all).
  std::vector<Handle> find(const std::string& id) const {
    std::vector<Handle> out;
    if (auto it = by_id_.find(id); it != by_id_.end())
      for (const auto& e : it->second) out.push_back(e.handle);
    return out;
  }
  bool has(const std::string& id) const { return by_id_.count(id) > 0; }
  /// Calls `f` with every actor (only the claimed ones when `claimed_only`).
  template <class F>
  void for_each(F&& f, bool claimed_only = false) const {
    for (const auto& [id, actors] : by_id_)
      for (const auto& e : actors)
        if (!claimed_only || e.claimed) f(e.handle);
  }
  size_t jobs() const { return by_id_.size(); }
  size_t actors() const { return id_of_.size(); }
  bool empty() const { return id_of_.empty(); }

 private:
  struct entry {
    uint64_t actor_id;
    Handle handle;
    bool claimed;
  };
  std::map<std::string, std::vector<entry>> by_id_;
  std::map<uint64_t, std::string> id_of_;
};

/// The registry; its heartbeat tick runs on a strand of `ex`, every `beat_tick_ms` of `clock`.
job_registry_actor spawn_job_registry(caf::actor_system& sys, const runtime::clock& clock,
                                      const boost::asio::any_io_executor& ex, int64_t beat_tick_ms);

}  // namespace sy::actors
