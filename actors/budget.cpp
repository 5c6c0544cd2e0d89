#include "actors/budget.hpp"

#include <algorithm>
#include <vector>

namespace sy::actors {

int global_budget::acquire(int want, uint64_t waiter_id, std::function<void()> wake) {
  std::lock_guard lock{mu_};
  if (free_ > 0) {
    int n = std::min(want, free_);
    free_ -= n;
    return n;
  }
  bool queued = std::any_of(waiters_.begin(), waiters_.end(),
                            [&](const waiter& w) { return w.id == waiter_id; });
  if (!queued) waiters_.push_back({waiter_id, std::move(wake)});
  return 0;
}

bool global_budget::try_acquire() {
  std::lock_guard lock{mu_};
  if (free_ <= 0 || !waiters_.empty()) return false;  // waiters go first (FIFO fairness)
  --free_;
  return true;
}

void global_budget::release(int n) {
  if (n <= 0) return;
  std::vector<std::function<void()>> to_wake;
  {
    std::lock_guard lock{mu_};
    free_ += n;
    for (int i = 0; i < n && !waiters_.empty(); ++i) {
      to_wake.push_back(std::move(waiters_.front().wake));
      waiters_.pop_front();
    }
  }
  for (auto& w : to_wake) w();
}

void global_budget::clear_waiters() {
  std::lock_guard lock{mu_};
  waiters_.clear();
}

int global_budget::free() const {
  std::lock_guard lock{mu_};
  return free_;
}

}  // namespace sy::actors
