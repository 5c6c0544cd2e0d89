#include "actors/slot_ledger.hpp"

#include <algorithm>

namespace sy::actors {

slot_ledger::slot_ledger(int limit) : limit_(std::max(1, limit)), cap_(limit_) {}

int32_t slot_ledger::held(uint64_t key) const {
  auto it = held_.find(key);
  return it == held_.end() ? 0 : it->second;
}

int32_t slot_ledger::wanted() const {
  int32_t n = 0;
  for (const auto& [key, w] : wish_) n += w;
  return n;
}

void slot_ledger::grant(std::vector<slot_grant>& out, uint64_t key, int32_t n) {
  held_[key] += n;
  held_total_ += n;
  for (auto& g : out)
    if (g.key == key) {
      g.n += n;
      return;
    }
  out.push_back({key, n});
}

int32_t slot_ledger::want(uint64_t key, int32_t more) {
  if (auto w = wish_.find(key); w != wish_.end()) {
    if (more > 0) {
      w->second = more;  // it keeps its place in the queue
      return 0;
    }
    wish_.erase(w);
    std::erase(queue_, key);
    return 0;
  }
  if (more <= 0) return 0;
  int32_t now = 0;
  if (queue_.empty()) {
    now = std::min(more, free());
    if (now > 0) {
      std::vector<slot_grant> ignored;
      grant(ignored, key, now);
    }
  }
  if (more > now) {
    wish_[key] = more - now;
    queue_.push_back(key);
  }
  return now;
}

std::vector<slot_grant> slot_ledger::hand_off() {
  std::vector<slot_grant> out;
  while (free() > 0 && !queue_.empty()) {
    const uint64_t key = queue_.front();
    queue_.pop_front();
    grant(out, key, 1);
    if (--wish_[key] > 0) {
      queue_.push_back(key);  // its next slot waits for its next turn
    } else {
      wish_.erase(key);
    }
  }
  return out;
}

std::vector<slot_grant> slot_ledger::release(uint64_t key, int32_t n) {
  auto it = held_.find(key);
  if (it == held_.end() || n <= 0) return hand_off();
  n = std::min(n, it->second);
  it->second -= n;
  held_total_ -= n;
  if (it->second == 0) held_.erase(it);
  if (auto a = asked_.find(key); a != asked_.end()) {
    a->second -= n;
    if (a->second <= 0) asked_.erase(a);
  }
  return hand_off();
}

std::vector<slot_grant> slot_ledger::leave(uint64_t key) {
  want(key, 0);
  reusers_.erase(key);
  auto out = release(key, held(key));
  asked_.erase(key);
  return out;
}

std::vector<slot_grant> slot_ledger::set_cap(int32_t cap) {
  cap_ = std::clamp(cap, 0, limit_);
  return hand_off();
}

int32_t slot_ledger::asked() const {
  int32_t n = 0;
  for (const auto& [key, a] : asked_) n += a;
  return n;
}

std::vector<uint64_t> slot_ledger::yields() {
  // What must come back: everything held beyond the cap, and a slot per waiter when none is
  // free (a waiter with a free slot is served by hand_off, not by a yield).
  int32_t need = std::max(0, held_total_ - cap_);
  if (free() == 0) need += static_cast<int32_t>(queue_.size());
  need -= asked();
  std::vector<uint64_t> out;
  // Ask the reusers with the most slots not yet asked for first, one slot at a time.
  while (need-- > 0) {
    uint64_t best = 0;
    int32_t most = 0;
    for (uint64_t key : reusers_) {
      if (wish_.count(key)) continue;  // waiting itself: it has nothing to spare
      auto a = asked_.find(key);
      const int32_t left = held(key) - (a == asked_.end() ? 0 : a->second);
      if (left > most) {
        most = left;
        best = key;
      }
    }
    if (most == 0) break;
    ++asked_[best];
    out.push_back(best);
  }
  return out;
}

}  // namespace sy::actors
