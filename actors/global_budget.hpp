#pragma once
/// The global budget: one actor owns the `global_concurrency` slots across all models. Its
/// holders are the model dispatchers, each holding the global slots that back the model slots
/// it hands out (to its own attempts and to batch lanes). A dispatcher keeps its slots while it
/// has use for them and nobody else waits; when another waits, the budget asks the dispatcher
/// holding the most to yield one, and the slot it gives back goes to the first waiter
/// (actors/slot_ledger.hpp: one at a time, in turn). Messages: actors/slots.hpp.

#include <caf/actor_system.hpp>
#include <caf/typed_actor.hpp>

#include "actors/slots.hpp"

namespace sy::actors {

/// Receives (`slot_update`, holder).
using global_budget_actor = slot_owner_actor;

global_budget_actor spawn_global_budget(caf::actor_system& sys, int limit);

}  // namespace sy::actors
