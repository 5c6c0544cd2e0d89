#pragma once
/// The messages of the concurrency budgets (their bookkeeping: actors/slot_ledger.hpp). Two kinds
/// of actors own slots: the global budget actor (actors/global_budget.hpp: `global_concurrency`
/// slots, held by the model dispatchers) and each model's dispatcher (actors/model_dispatcher.hpp:
/// `per_model_concurrency` slots of its model, held by its own attempts and by the lanes of the
/// batches that send to the model). A holder names itself by a key it chooses, unique in the
/// process (`next_slot_key`), so one actor can hold for several purposes (a batch, a lane per
/// model).
///
/// Holder → owner: `slot_update` (give some back, want more), with the holder's handle.
/// Owner → holder: (`slot`, key, n): n more slots are yours; (`yield`, key, n): others wait,
/// give n back as soon as you can. A holder that keeps its slots for its next requests must
/// answer yields; the owner monitors its holders and takes back the slots of one that ends.

#include <cstdint>

#include <caf/replies_to.hpp>
#include <caf/typed_actor.hpp>

#include "actors/atoms.hpp"

namespace sy::actors {

/// Receives grants (`slot`, key, n) and requests to give slots back (`yield`, key, n).
using slot_holder_actor = caf::typed_actor<caf::reacts_to<slot_atom, uint64_t, int32_t>,
                                           caf::reacts_to<yield_atom, uint64_t, int32_t>>;

/// What a holder tells an owner: it gives `give_back` of its slots back, then wants `want` more
/// beyond what it holds (replacing what it wanted before; 0: nothing more).
struct slot_update {
  uint64_t key = 0;
  int32_t give_back = 0;
  int32_t want = 0;
  /// It keeps its slots for its next requests: the owner may ask it to yield.
  bool reuses = true;

  bool operator==(const slot_update&) const = default;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, slot_update& x) {
  return f(x.key, x.give_back, x.want, x.reuses);
}

/// An owner of slots (the global budget, a model's dispatcher): receives (`slot_update`, holder).
using slot_owner_actor = caf::typed_actor<caf::reacts_to<slot_update, slot_holder_actor>>;

/// A fresh holder key.
uint64_t next_slot_key();

}  // namespace sy::actors
