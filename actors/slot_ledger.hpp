#pragma once
/// A concurrency budget as its owner's plain state (no lock, no callbacks): who holds how many
/// of at most `limit` slots, and who waits for more. The engine has two kinds of owners, each an
/// actor that keeps one ledger: the global budget actor (`global_concurrency` slots, held by the
/// model dispatchers) and each model's dispatcher (`per_model_concurrency` slots of its model,
/// held by its own single-request attempts and by the lanes of batches that send to the model).
///
/// Holders are named by a key the holder chooses (unique in the process). A holder states how
/// many more slots it wants (`want`, which replaces its earlier wish); it gets what is usable
/// and free at once when nobody waits, else it queues. Freed slots are handed out one at a time
/// in turn: the first waiter gets one and, if it wants more, goes to the back of the queue — so
/// a hot holder that asks again at once queues behind the others and cannot starve them.
///
/// Holders that keep their slots for their next requests (a batch lane, a dispatcher towards the
/// global budget) are *reusers*: while anyone waits, the ledger asks them to give slots back
/// (`yields`), one per waiter in turn, the reuser holding the most first (never one that waits
/// itself: it has nothing to spare).
///
/// `cap` bounds what may be held below `limit`: a dispatcher sets it to the global slots it
/// holds, so every model slot in use is backed by a global one. Lowering it below what is held
/// asks reusers for the difference.

#include <cstddef>
#include <cstdint>
#include <deque>
#include <map>
#include <set>
#include <vector>

namespace sy::actors {

/// `n` slots handed to the holder `key`.
struct slot_grant {
  uint64_t key = 0;
  int32_t n = 0;

  bool operator==(const slot_grant&) const = default;
};

class slot_ledger {
 public:
  explicit slot_ledger(int limit);

  /// `key` wants `more` slots beyond what it holds (0: none; leaves the queue). Returns the
  /// slots granted at once; the rest, if any, wait in turn. A holder already waiting keeps its
  /// place and only changes how many it waits for.
  int32_t want(uint64_t key, int32_t more);
  /// `key` gives `n` of its slots back; returns the grants the freed slots make.
  std::vector<slot_grant> release(uint64_t key, int32_t n);
  /// `key` is gone: its wish is dropped and its slots are freed.
  std::vector<slot_grant> leave(uint64_t key);
  /// Sets what may be held at most (clamped to [0, limit]); returns the grants a raise makes.
  std::vector<slot_grant> set_cap(int32_t cap);
  /// `key` keeps its slots for its next requests: `yields` may name it.
  void reuses(uint64_t key) { reusers_.insert(key); }
  /// The holders to ask for one slot back each (a key may appear more than once), so that every
  /// waiter gets its turn and the held slots come down to the cap. A slot asked for counts as
  /// asked until its holder releases one, so calling again asks only for what is new.
  std::vector<uint64_t> yields();

  int32_t limit() const { return limit_; }
  int32_t cap() const { return cap_; }
  int32_t held() const { return held_total_; }
  int32_t held(uint64_t key) const;
  /// Slots neither held nor beyond the cap.
  int32_t free() const { return held_total_ < cap_ ? cap_ - held_total_ : 0; }
  /// Slots the waiters still want, in all.
  int32_t wanted() const;
  size_t waiting() const { return queue_.size(); }
  /// Slots asked back and not yet released.
  int32_t asked() const;

 private:
  std::vector<slot_grant> hand_off();
  void grant(std::vector<slot_grant>& out, uint64_t key, int32_t n);

  const int32_t limit_;
  int32_t cap_;
  int32_t held_total_ = 0;
  std::map<uint64_t, int32_t> held_;
  std::map<uint64_t, int32_t> wish_;  ///< of the holders in `queue_`
  std::deque<uint64_t> queue_;
  std::set<uint64_t> reusers_;
  /// Slots asked back (yields) from each reuser and not yet released by it.
  std::map<uint64_t, int32_t> asked_;
};

}  // namespace sy::actors
