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

/// One job's work on this node (actors/job_actor.hpp): its attempt, deadline and heartbeat.
/// Receives `cancel`, `expire` (its deadline passed), `release` (shutdown), `beat` (the
/// registry's heartbeat tick) and the gateway's outcome.
using job_actor = caf::typed_actor<caf::reacts_to<cancel_atom>, caf::reacts_to<expire_atom>,
                                   caf::reacts_to<release_atom>, caf::reacts_to<beat_atom>,
                                   caf::reacts_to<runtime::gateway_outcome>>;

using job_registry_actor =
    caf::typed_actor<caf::reacts_to<register_atom, std::string, job_actor>,
                     caf::reacts_to<cancel_atom, std::string>,
                     caf::reacts_to<expire_atom, std::string>, caf::reacts_to<release_atom>,
                     caf::reacts_to<beat_atom>, caf::replies_to<drain_atom>::with<bool>>;

/// The registry's table, as a plain class (unit-tested without an actor system): jobs by id,
/// each with the actors working for it (a redelivery can briefly run a second attempt of the
/// same task here), keyed by the actor's id so an ended actor is found by its id alone.
template <class Handle>
class job_table {
 public:
  void add(const std::string& id, uint64_t actor_id, Handle h) {
    by_id_[id].emplace_back(actor_id, std::move(h));
    id_of_[actor_id] = id;
  }
  /// Forgets the actor `actor_id`; false when it was not registered.
  bool remove(uint64_t actor_id) {
    auto it = id_of_.find(actor_id);
    if (it == id_of_.end()) return false;
    auto jobs = by_id_.find(it->second);
    if (jobs != by_id_.end()) {
      std::erase_if(jobs->second, [&](const auto& e) { return e.first == actor_id; });
      if (jobs->second.empty()) by_id_.erase(jobs);
    }
    id_of_.erase(it);
    return true;
  }
  /// The actors working for `id` (none when it runs elsewhere or not at all).
  std::vector<Handle> find(const std::string& id) const {
    std::vector<Handle> out;
    if (auto it = by_id_.find(id); it != by_id_.end())
      for (const auto& e : it->second) out.push_back(e.second);
    return out;
  }
  template <class F>
  void for_each(F&& f) const {
    for (const auto& [id, actors] : by_id_)
      for (const auto& e : actors) f(e.second);
  }
  size_t jobs() const { return by_id_.size(); }
  size_t actors() const { return id_of_.size(); }
  bool empty() const { return id_of_.empty(); }

 private:
  std::map<std::string, std::vector<std::pair<uint64_t, Handle>>> by_id_;
  std::map<uint64_t, std::string> id_of_;
};

/// The registry; its heartbeat tick runs on a strand of `ex`, every `beat_tick_ms` of `clock`.
job_registry_actor spawn_job_registry(caf::actor_system& sys, const runtime::clock& clock,
                                      boost::asio::any_io_executor ex, int64_t beat_tick_ms);

}  // namespace sy::actors
