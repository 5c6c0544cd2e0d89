#pragma once
/// A concurrency budget: at most `limit` slots taken at once. The engine has one across all
/// models (`global_concurrency`) and one per model (`per_model_concurrency`), each shared by the
/// model dispatchers and the batch lanes that send to those models.
///
/// Fairness: a caller that finds no free slot queues itself as a waiter. A released slot is not
/// put back for anyone to take: it is handed to the first waiter (reserved under its id) and the
/// waiter is woken; only that waiter can take it, with its next acquire(). While waiters queue,
/// nobody else takes a slot. So a hot model that releases and asks again at once goes behind the
/// models already waiting, and cannot starve them.
/// Thread-safe (dispatchers acquire on their threads, attempts release on Asio threads).

#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <mutex>

namespace sy::actors {

class global_budget {
 public:
  explicit global_budget(int limit) : limit_(limit), free_(limit) {}

  /// Takes up to `want` slots: first whatever was reserved for `waiter_id`, then free slots if no
  /// one else is waiting. When it gets none, queues `waiter_id` (once) with `wake`, called once,
  /// later, when a slot has been reserved for it, and returns 0.
  int acquire(int want, uint64_t waiter_id, std::function<void()> wake);
  /// Takes one free slot when no one is waiting, registering nothing; false otherwise.
  bool try_acquire();
  /// Gives `n` slots back: each goes to the first waiter (reserved for it, and it is woken) or,
  /// when none waits, becomes free.
  void release(int n);
  /// `waiter_id` gives up: it leaves the queue, and a slot reserved for it goes to the next
  /// waiter (a stopped batch must not keep a slot it will never take).
  void cancel(uint64_t waiter_id);
  /// Free slots: neither taken nor reserved.
  int free() const;
  /// Slots reserved for woken waiters that have not taken them yet.
  int reserved() const;
  /// Slots in all (free, reserved or taken).
  int limit() const { return limit_; }
  /// Forgets every waiter and reservation (shutdown: they hold actor handles).
  void clear_waiters();

 private:
  struct waiter {
    uint64_t id;
    std::function<void()> wake;
  };
  /// Hands free slots to waiters; returns the wake-ups to call once the lock is released.
  std::deque<std::function<void()>> hand_off();

  mutable std::mutex mu_;
  const int limit_;
  int free_;
  std::deque<waiter> waiters_;
  std::map<uint64_t, int> reserved_;  ///< waiter id -> slots handed to it, not yet taken
};

}  // namespace sy::actors
