#pragma once
/// What an owner of slots keeps (the global budget actor, a model's dispatcher): its ledger and
/// the handle of each holder, so that grants and yields reach them. Keys with no handle are the
/// owner's own (a dispatcher's attempts): their grants are returned to the owner instead.

#include <cstdint>
#include <map>
#include <vector>

#include <caf/actor_addr.hpp>

#include "actors/slot_ledger.hpp"
#include "actors/slots.hpp"

namespace sy::actors::detail {

class slot_book {
 public:
  explicit slot_book(int limit) : ledger(limit) {}

  slot_ledger ledger;

  /// Applies a holder's update (monitoring the holder the first time); returns the grants it
  /// makes — to the holder itself and to waiters — for `deliver`.
  template <class Self>
  std::vector<slot_grant> update(Self* self, const slot_update& u, const slot_holder_actor& h) {
    if (!holders_.count(u.key)) {
      holders_.emplace(u.key, h);
      if (monitored_.emplace(h.address(), 0).second) self->monitor(h);
      ++monitored_[h.address()];
    }
    if (u.reuses) ledger.reuses(u.key);
    std::vector<slot_grant> grants;
    if (u.give_back > 0) {
      // What it gives back goes to those waiting; asking again, it queues behind them.
      (void)ledger.want(u.key, 0);
      grants = ledger.release(u.key, u.give_back);
    }
    if (int32_t now = ledger.want(u.key, u.want); now > 0) grants.push_back({u.key, now});
    return grants;
  }

  /// A holder ended: every key it held for leaves (its slots go to the waiters).
  std::vector<slot_grant> holder_down(const caf::actor_addr& who) {
    std::vector<slot_grant> out;
    for (auto it = holders_.begin(); it != holders_.end();) {
      if (it->second.address() != who) {
        ++it;
        continue;
      }
      for (auto& g : ledger.leave(it->first)) out.push_back(g);
      it = holders_.erase(it);
    }
    monitored_.erase(who);
    return out;
  }

  /// Sends each grant to its holder and the yields the ledger asks for; returns the slots
  /// granted to keys without a handle (the owner's own).
  template <class Self>
  int32_t deliver(Self* self, const std::vector<slot_grant>& grants) {
    int32_t own = 0;
    for (const auto& g : grants) {
      if (g.n <= 0) continue;
      if (auto it = holders_.find(g.key); it != holders_.end()) {
        self->send(it->second, slot_atom::value, g.key, g.n);
      } else {
        own += g.n;
      }
    }
    std::map<uint64_t, int32_t> asked;
    for (uint64_t key : ledger.yields()) ++asked[key];
    for (const auto& [key, n] : asked)
      if (auto it = holders_.find(key); it != holders_.end())
        self->send(it->second, yield_atom::value, key, n);
    return own;
  }

  /// Forgets every holder (shutdown).
  void clear() {
    holders_.clear();
    monitored_.clear();
  }

 private:
  std::map<uint64_t, slot_holder_actor> holders_;
  std::map<caf::actor_addr, int> monitored_;  ///< holders monitored, with their keys' count
};

}  // namespace sy::actors::detail
