#include "actors/job_registry.hpp"

#include <utility>  // before any Asio header (Boost 1.74)

#include <algorithm>
#include <memory>

#include <boost/asio/post.hpp>
#include <boost/asio/strand.hpp>
#include <caf/actor_system.hpp>
#include <caf/send.hpp>
#include <caf/stateful_actor.hpp>
#include <caf/typed_event_based_actor.hpp>

#include "actors/job_owner.hpp"
#include "runtime/log.hpp"
#include "runtime/metrics.hpp"

namespace sy::actors {
namespace {

struct registry_state {
  const ambient* at = nullptr;
  storage_writer_actor writer;  ///< what the owners it spawns commit through
  owner_table<job_owner_actor, job_control_actor> table;
  std::vector<caf::typed_response_promise<bool>> drains;  ///< answered when the table empties
  std::shared_ptr<runtime::timer> tick;                   ///< the heartbeat tick (on its strand)
  int64_t tick_ms = 0;
  static inline const char* name = "job_registry";

  registry_state() = default;
  registry_state(const registry_state&) = delete;
  registry_state& operator=(const registry_state&) = delete;
  registry_state(registry_state&&) = delete;
  registry_state& operator=(registry_state&&) = delete;
  /// The pending wait holds a handle to the registry: cancel it when the registry ends. Done
  /// here, not in an attached functor: CAF destroys an actor's state before it counts the actor
  /// as stopped, but its attached functors after, so a functor holding the timer could drop the
  /// last reference after the engine saw every actor stopped and destroyed the timer's context.
  ~registry_state() {
    if (tick) boost::asio::post(tick->executor(), [t = tick] { t->cancel(); });
    // Its end (shutdown) ends the owners it still has. Not a link: a link costs every owner an
    // exit message at its end, and one owner is made per job that runs here.
    table.for_each([](auto& e) {
      if (e.owner) caf::anon_send_exit(*e.owner, caf::exit_reason::user_shutdown);
    });
  }
};

using registry_ptr = job_registry_actor::stateful_pointer<registry_state>;
using entry = owner_table<job_owner_actor, job_control_actor>::entry;

void count_jobs(registry_ptr self) {
  metrics::set_active_jobs(static_cast<int64_t>(self->state.table.jobs()));
}

/// The owner of job `id`, made when it has none; the message about to be sent to it is counted.
/// Null when a batch's actor holds the id (a single job's or list's message never names one).
job_owner_actor* route(registry_ptr self, const std::string& id) {
  auto& st = self->state;
  auto* e = st.table.find(id);
  if (e == nullptr) {
    auto owner = spawn_job_owner(*st.at, st.writer, job_registry_actor{self}, id);
    self->monitor(owner);
    const auto actor_id = owner.id();
    e = &st.table.add_owner(id, actor_id, std::move(owner));
    count_jobs(self);
  }
  if (!e->owner) return nullptr;
  ++e->routed;
  return &*e->owner;
}

/// A bare cancel or expiry: to the batch's actor that holds `id`, or to the owner of a job with
/// work here (none: nothing of it runs here, nothing to tell).
template <class Atom>
void forward(registry_ptr self, const std::string& id, const char* what) {
  auto* e = self->state.table.find(id);
  if (e != nullptr && e->claimed) {
    self->send(*e->claimed, Atom::value);
  } else if (e != nullptr) {
    ++e->routed;
    self->send(*e->owner, Atom::value);
  }
  log::info("jobs", what, {{"job_id", id}, {"running_here", e != nullptr}});
}

/// Shutdown: every job (or only the batches) gives its work back.
void release(registry_ptr self, bool claimed_only) {
  log::info("jobs",
            claimed_only ? "stopping running batches" : "giving running attempts back to the queue",
            {{"jobs", self->state.table.jobs()}});
  self->state.table.for_each(
      [&](entry& e) {
        if (e.claimed) self->send(*e.claimed, release_atom::value);
        if (e.owner) self->send(*e.owner, release_atom::value);
      },
      claimed_only);
}

/// Arms the next heartbeat tick: `beat` to the registry when it fires.
void arm_tick(registry_ptr self) {
  auto& st = self->state;
  boost::asio::post(st.tick->executor(),
                    [t = st.tick, ms = st.tick_ms, me = job_registry_actor{self}] {
                      t->wait(ms, [me](bool fired) {
                        if (fired) caf::anon_send(me, beat_atom::value);
                      });
                    });
}

/// A job left the table: the gauge follows, and a drain waiting for the last one is answered.
void left(registry_ptr self) {
  auto& st = self->state;
  count_jobs(self);
  if (!st.table.empty()) return;
  for (auto& p : st.drains) p.deliver(true);
  st.drains.clear();
}

/// An owner asks the registry to wait for `commit_atom`'s or `expire_atom`'s reply.
template <class Atom>
caf::delegated<write_reply> delegate(registry_ptr self, const std::string& id, write_request& req) {
  if (auto* owner = route(self, id)) return self->delegate(*owner, Atom::value, std::move(req));
  // A batch's actor holds the id: its changes are the batch manager's, not an owner's.
  return self->delegate(self->state.writer, std::move(req));
}

job_registry_actor::behavior_type registry(registry_ptr self, const ambient* at,
                                           storage_writer_actor writer,
                                           const std::shared_ptr<runtime::timer>& tick,
                                           int64_t tick_ms) {
  auto& st = self->state;
  st.at = at;
  st.writer = std::move(writer);
  st.tick = tick;
  st.tick_ms = tick_ms;
  arm_tick(self);
  self->set_down_handler([self](caf::down_msg& m) {
    if (self->state.table.remove(m.source.id())) left(self);
  });
  return {
      [=](register_atom, const std::string& job, std::string& task, job_control_actor a) {
        if (auto* owner = route(self, job))
          self->send(*owner, register_atom::value, std::move(task), std::move(a));
      },
      [=](deadline_atom, const std::string& job, int64_t at_ms) {
        if (auto* owner = route(self, job)) self->send(*owner, deadline_atom::value, at_ms);
      },
      [=](commit_atom, const std::string& job, write_request& req) {
        return delegate<commit_atom>(self, job, req);
      },
      [=](expire_atom, const std::string& job, write_request& req) {
        return delegate<expire_atom>(self, job, req);
      },
      [=](claim_atom, const std::string& id, job_control_actor& a) {
        const auto actor_id = a.id();
        self->monitor(a);  // before the move (a refused claim's actor ends: its down is ignored)
        if (!self->state.table.claim(id, actor_id, std::move(a))) return false;
        count_jobs(self);
        return true;
      },
      [=](cancel_atom, const std::string& id) {
        forward<cancel_atom>(self, id, "cancelling a running job");
      },
      [=](expire_atom, const std::string& id) {
        forward<expire_atom>(self, id, "a running job's timeout passed");
      },
      [=](idle_atom, const std::string& job, uint64_t received) {
        auto* e = self->state.table.find(job);
        if (e == nullptr || !e->owner) return;
        auto owner = *e->owner;
        if (!self->state.table.idle(job, owner.id(), received)) return;
        self->demonitor(caf::actor_cast<caf::actor_addr>(owner));
        self->send(owner, stop_atom::value);
        left(self);
      },
      [=](release_atom) { release(self, false); },
      [=](release_atom, bool claimed_only) { release(self, claimed_only); },
      [=](beat_atom) {
        self->state.table.for_each([&](entry& e) {
          if (e.claimed) self->send(*e.claimed, beat_atom::value);
          if (e.owner) self->send(*e.owner, beat_atom::value);
        });
        arm_tick(self);
      },
      [=](drain_atom) -> caf::typed_response_promise<bool> {
        auto p = self->make_response_promise<bool>();
        if (self->state.table.empty()) {
          p.deliver(true);
        } else {
          self->state.drains.push_back(p);
        }
        return p;
      },
  };
}

}  // namespace

job_registry_actor spawn_job_registry(const ambient& at, storage_writer_actor writer,
                                      int64_t beat_tick_ms) {
  std::shared_ptr<runtime::timer> tick = at.clock.make_timer(boost::asio::make_strand(at.exec));
  return at.sys.spawn(registry, &at, std::move(writer), std::move(tick),
                      std::max<int64_t>(beat_tick_ms, 1));
}

}  // namespace sy::actors
