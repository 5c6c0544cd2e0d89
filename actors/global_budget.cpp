#include "actors/global_budget.hpp"

#include <atomic>
#include <optional>

#include <caf/stateful_actor.hpp>
#include <caf/typed_event_based_actor.hpp>

#include "actors/detail/slot_book.hpp"

namespace sy::actors {
namespace {

struct budget_state {
  std::optional<detail::slot_book> book;
  static inline const char* name = "global_budget";
};

using budget_ptr = global_budget_actor::stateful_pointer<budget_state>;

global_budget_actor::behavior_type budget(budget_ptr self, int limit) {
  self->state.book.emplace(limit);
  self->set_down_handler([self](caf::down_msg& m) {
    auto& book = *self->state.book;
    book.deliver(self, book.holder_down(m.source));
  });
  return {
      [=](slot_update& u, slot_holder_actor& h) {
        auto& book = *self->state.book;
        book.deliver(self, book.update(self, u, h));
      },
  };
}

}  // namespace

uint64_t next_slot_key() {
  static std::atomic<uint64_t> next{1};
  return next++;
}

global_budget_actor spawn_global_budget(caf::actor_system& sys, int limit) {
  return sys.spawn(budget, limit);
}

}  // namespace sy::actors
