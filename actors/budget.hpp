#pragma once
/// The global concurrency budget shared by every model dispatcher: at most `limit` attempts run
/// at once across all models. A dispatcher that finds the budget empty queues itself as a waiter;
/// released slots wake waiters in FIFO order, so a hot model cannot starve another one.
/// Thread-safe (dispatchers acquire on their threads, attempts release on Asio threads).

#include <deque>
#include <functional>
#include <mutex>

namespace sy::actors {

class global_budget {
 public:
  explicit global_budget(int limit) : limit_(limit), free_(limit) {}

  /// Takes up to `want` slots. When none is free, remembers `wake` (called once, later, when
  /// slots are released) and returns 0.
  int acquire(int want, uint64_t waiter_id, std::function<void()> wake);
  /// Takes one slot if one is free, registering nothing; false otherwise.
  bool try_acquire();
  /// Gives `n` slots back and wakes waiters.
  void release(int n);
  int free() const;
  /// Slots in all (free or taken).
  int limit() const { return limit_; }
  /// Forgets every waiter (shutdown: they hold actor handles).
  void clear_waiters();

 private:
  struct waiter {
    uint64_t id;
    std::function<void()> wake;
  };
  mutable std::mutex mu_;
  const int limit_;
  int free_;
  std::deque<waiter> waiters_;
};

}  // namespace sy::actors
