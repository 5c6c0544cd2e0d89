#include "actors/job_registry.hpp"

#include <caf/actor_system.hpp>
#include <caf/stateful_actor.hpp>
#include <caf/typed_event_based_actor.hpp>

#include "runtime/log.hpp"

namespace sy::actors {
namespace {

struct registry_state {
  job_table<job_actor> table;
  std::vector<caf::typed_response_promise<bool>> drains;  ///< answered when the table empties
  const char* component = "jobs";                         ///< in its log lines
  static inline const char* name = "job_registry";
};

using registry_ptr = job_registry_actor::stateful_pointer<registry_state>;

/// Forwards `msg` to every actor of job `id`; logs where it went.
template <class Atom>
void forward(registry_ptr self, const std::string& id, const char* what) {
  auto actors = self->state.table.find(id);
  for (auto& a : actors) self->send(a, Atom::value);
  log::info(self->state.component, what, {{"task_id", id}, {"running_here", !actors.empty()}});
}

/// `component`: the name its log lines carry. (Also: CAF 0.17 spawns a function actor without
/// arguments by binding a reference to a null tuple pointer, which UBSan reports.)
job_registry_actor::behavior_type registry(registry_ptr self, const char* component) {
  self->state.component = component;
  self->set_down_handler([self](caf::down_msg& m) {
    auto& st = self->state;
    if (!st.table.remove(m.source.id()) || !st.table.empty()) return;
    for (auto& p : st.drains) p.deliver(true);
    st.drains.clear();
  });
  return {
      [=](register_atom, const std::string& id, job_actor a) {
        self->monitor(a);
        const auto actor_id = a.id();
        self->state.table.add(id, actor_id, std::move(a));
      },
      [=](cancel_atom, const std::string& id) {
        forward<cancel_atom>(self, id, "cancelling a running job");
      },
      [=](expire_atom, const std::string& id) {
        forward<expire_atom>(self, id, "a running job's timeout passed");
      },
      [=](release_atom) {
        log::info(self->state.component, "giving running attempts back to the queue",
                  {{"jobs", self->state.table.jobs()}});
        self->state.table.for_each([&](const job_actor& a) { self->send(a, release_atom::value); });
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

job_registry_actor spawn_job_registry(caf::actor_system& sys) {
  return sys.spawn(registry, "jobs");
}

}  // namespace sy::actors
