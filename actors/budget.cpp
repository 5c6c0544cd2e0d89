#include "actors/budget.hpp"

#include <algorithm>

namespace sy::actors {

int global_budget::acquire(int want, uint64_t waiter_id, std::function<void()> wake) {
  std::lock_guard lock{mu_};
  int got = 0;
  if (auto it = reserved_.find(waiter_id); it != reserved_.end()) {
    got = it->second;
    reserved_.erase(it);
  }
  if (got < want && waiters_.empty()) {
    int more = std::min(want - got, free_);
    free_ -= more;
    got += more;
  }
  if (got > 0) return got;
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

std::deque<std::function<void()>> global_budget::hand_off() {
  std::deque<std::function<void()>> to_wake;
  while (free_ > 0 && !waiters_.empty()) {
    --free_;
    ++reserved_[waiters_.front().id];
    to_wake.push_back(std::move(waiters_.front().wake));
    waiters_.pop_front();
  }
  return to_wake;
}

void global_budget::release(int n) {
  if (n <= 0) return;
  std::deque<std::function<void()>> to_wake;
  {
    std::lock_guard lock{mu_};
    free_ += n;
    to_wake = hand_off();
  }
  for (auto& w : to_wake) w();
}

void global_budget::cancel(uint64_t waiter_id) {
  std::deque<std::function<void()>> to_wake;
  {
    std::lock_guard lock{mu_};
    waiters_.erase(std::remove_if(waiters_.begin(), waiters_.end(),
                                  [&](const waiter& w) { return w.id == waiter_id; }),
                   waiters_.end());
    auto it = reserved_.find(waiter_id);
    if (it == reserved_.end()) return;
    free_ += it->second;
    reserved_.erase(it);
    to_wake = hand_off();
  }
  for (auto& w : to_wake) w();
}

void global_budget::clear_waiters() {
  std::lock_guard lock{mu_};
  waiters_.clear();
  for (auto& [id, n] : reserved_) free_ += n;
  reserved_.clear();
}

int global_budget::free() const {
  std::lock_guard lock{mu_};
  return free_;
}

int global_budget::reserved() const {
  std::lock_guard lock{mu_};
  int n = 0;
  for (auto& [id, r] : reserved_) n += r;
  return n;
}

}  // namespace sy::actors
