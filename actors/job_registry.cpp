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

#include "runtime/log.hpp"
#include "runtime/metrics.hpp"

namespace sy::actors {
namespace {

struct registry_state {
  job_table<job_control_actor> table;
  std::vector<caf::typed_response_promise<bool>> drains;  ///< answered when the table empties
  std::shared_ptr<runtime::timer> tick;                   ///< the heartbeat tick (on its strand)
  int64_t tick_ms = 0;
  const char* component = "jobs";  ///< in its log lines
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
  }
};

using registry_ptr = job_registry_actor::stateful_pointer<registry_state>;

/// Forwards `msg` to every actor of job `id`; logs where it went.
template <class Atom>
void forward(registry_ptr self, const std::string& id, const char* what) {
  auto actors = self->state.table.find(id);
  for (auto& a : actors) self->send(a, Atom::value);
  log::info(self->state.component, what, {{"task_id", id}, {"running_here", !actors.empty()}});
}

/// Shutdown: every registered job (or only the claimed ones) gives its work back.
void release(registry_ptr self, bool claimed_only) {
  log::info(self->state.component,
            claimed_only ? "stopping running batches" : "giving running attempts back to the queue",
            {{"jobs", self->state.table.jobs()}});
  self->state.table.for_each(
      [&](const job_control_actor& a) { self->send(a, release_atom::value); }, claimed_only);
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

/// `component`: the name its log lines carry.
job_registry_actor::behavior_type registry(registry_ptr self, const char* component,
                                           const std::shared_ptr<runtime::timer>& tick,
                                           int64_t tick_ms) {
  self->state.component = component;
  self->state.tick = tick;
  self->state.tick_ms = tick_ms;
  arm_tick(self);
  self->set_down_handler([self](caf::down_msg& m) {
    auto& st = self->state;
    if (!st.table.remove(m.source.id())) return;
    metrics::set_active_jobs(static_cast<int64_t>(st.table.jobs()));
    if (!st.table.empty()) return;
    for (auto& p : st.drains) p.deliver(true);
    st.drains.clear();
  });
  return {
      [=](register_atom, const std::string& id, job_control_actor a) {
        self->monitor(a);
        const auto actor_id = a.id();
        self->state.table.add(id, actor_id, std::move(a));
        metrics::set_active_jobs(static_cast<int64_t>(self->state.table.jobs()));
      },
      [=](claim_atom, const std::string& id, job_control_actor a) {
        if (self->state.table.has(id)) return false;
        self->monitor(a);
        const auto actor_id = a.id();
        self->state.table.add(id, actor_id, std::move(a), true);
        metrics::set_active_jobs(static_cast<int64_t>(self->state.table.jobs()));
        return true;
      },
      [=](cancel_atom, const std::string& id) {
        forward<cancel_atom>(self, id, "cancelling a running job");
      },
      [=](expire_atom, const std::string& id) {
        forward<expire_atom>(self, id, "a running job's timeout passed");
      },
      [=](release_atom) { release(self, false); },
      [=](release_atom, bool claimed_only) { release(self, claimed_only); },
      [=](beat_atom) {
        self->state.table.for_each(
            [&](const job_control_actor& a) { self->send(a, beat_atom::value); });
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

job_registry_actor spawn_job_registry(caf::actor_system& sys, const runtime::clock& clock,
                                      const boost::asio::any_io_executor& ex,
                                      int64_t beat_tick_ms) {
  std::shared_ptr<runtime::timer> tick = clock.make_timer(boost::asio::make_strand(ex));
  return sys.spawn(registry, "jobs", std::move(tick), std::max<int64_t>(beat_tick_ms, 1));
}

}  // namespace sy::actors
