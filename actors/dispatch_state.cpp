#include "actors/dispatch_state.hpp"

#include <utility>

namespace sy::actors {

dispatch_actions dispatch_state::ask(int max, int held) {
  fetch_out_ = true;
  held_ = held;
  dispatch_actions a;
  a.fetch = max;
  return a;
}

dispatch_actions dispatch_state::on_fetch(bool stopping) {
  dispatch_actions a;
  if (fetch_out_) return a;  // its answer looks again
  if (stopping) {
    if (pending_) a.hand_back.push_back(std::move(*pending_));
    pending_.reset();
    return a;
  }
  if (finishing_ >= limit_) return a;  // woken by the next `done`
  if (pending_) {
    if (slots_.take(1) == 0) return a;  // woken when a slot frees up
    a.start.push_back(std::move(*pending_));
    pending_.reset();
    return a;
  }
  // Idle: wait for one message without holding a slot, so a model with nothing to do keeps no
  // slot from batches or other models. A message that arrives when no slot is free waits here.
  if (last_fetch_empty_) return ask(1, 0);
  // Busy: take slots first, then fetch at most that many.
  const int got = slots_.take(limit_);
  if (got == 0) return a;  // woken when a slot frees up
  return ask(got, got);
}

dispatch_actions dispatch_state::on_fetched(std::vector<runtime::delivery> got,
                                            const std::string& error, bool stopping) {
  dispatch_actions a;
  fetch_out_ = false;
  const int held = std::exchange(held_, 0);
  if (!error.empty()) {
    slots_.release(held);
    a.pause = true;
    return a;
  }
  error_logged_ = false;
  const int n = static_cast<int>(got.size());
  if (stopping) {
    // Fetched while shutdown began: hand the messages straight back for the next run.
    a.hand_back = std::move(got);
    slots_.release(held);
    return a;
  }
  if (held == 0) {  // an idle fetch of one
    if (n == 0) return a;
    last_fetch_empty_ = false;
    if (slots_.take(1) == 0) {
      pending_ = std::move(got.front());
      return a;
    }
    a.start.push_back(std::move(got.front()));
    return a;
  }
  slots_.release(held - n);
  last_fetch_empty_ = n == 0;
  a.start = std::move(got);
  return a;
}

void dispatch_state::on_answered() {
  slots_.release(1);
  ++finishing_;
}

void dispatch_state::on_done(bool answered) {
  if (answered) {
    --finishing_;
  } else {
    slots_.release(1);
  }
}

}  // namespace sy::actors
