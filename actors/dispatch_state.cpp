#include "actors/dispatch_state.hpp"

#include <algorithm>
#include <utility>

#include "actors/event_json.hpp"

namespace sy::actors {

void task_message_hold::settle(std::optional<int64_t> again) {
  std::optional<int64_t> done;
  {
    std::lock_guard lock(mu_);
    if (open_ <= 0) return;
    if (again) again_ = again_ ? std::min(*again_, *again) : *again;
    if (--open_ > 0) return;
    done = again_;
  }
  if (finish_) finish_(d_, done);
}

dispatch_state::~dispatch_state() {
  for (auto& t : kept_) t.msg->redeliver(0);
}

std::vector<std::shared_ptr<task_message_hold>> dispatch_state::kept_messages() const {
  std::vector<std::shared_ptr<task_message_hold>> out;
  for (const auto& t : kept_)
    if (out.empty() || out.back() != t.msg) out.push_back(t.msg);  // a message's tasks are adjacent
  return out;
}

std::vector<woken_task> dispatch_state::tasks_of(std::vector<runtime::delivery> got,
                                                 dispatch_actions& a) {
  std::vector<woken_task> out;
  for (auto& d : got) {
    auto named = parse_task_messages(d.data);
    if (!named) {
      a.term.push_back(std::move(d));
      continue;
    }
    auto hold =
        std::make_shared<task_message_hold>(std::move(d), static_cast<int>(named->size()), finish_);
    for (auto& [id, attempt] : *named) out.push_back({hold, std::move(id), attempt});
  }
  return out;
}

void dispatch_state::start_kept(int n, dispatch_actions& a) {
  for (; n > 0 && !kept_.empty(); --n) {
    a.start.push_back(std::move(kept_.front()));
    kept_.pop_front();
  }
}

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
    a.hand_back.assign(std::make_move_iterator(kept_.begin()),
                       std::make_move_iterator(kept_.end()));
    kept_.clear();
    return a;
  }
  if (finishing_ >= limit_) return a;  // woken by the next `done`
  if (!kept_.empty()) {
    // Kept tasks first, without a fetch: as many as there are slots.
    const int want = static_cast<int>(std::min<size_t>(kept_.size(), static_cast<size_t>(limit_)));
    start_kept(slots_.take(want), a);  // none: woken when a slot frees up
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
  const bool none = got.empty();
  auto tasks = tasks_of(std::move(got), a);
  if (stopping) {
    // Fetched while shutdown began: hand the messages straight back for the next run.
    a.hand_back = std::move(tasks);
    slots_.release(held);
    return a;
  }
  for (auto& t : tasks) kept_.push_back(std::move(t));
  const int n = static_cast<int>(kept_.size());
  if (held == 0) {  // an idle fetch of one message
    if (none) return a;
    last_fetch_empty_ = false;
    if (n > 0) start_kept(slots_.take(std::min(n, limit_)), a);  // none free: they wait here
    return a;
  }
  last_fetch_empty_ = none;
  slots_.release(held - std::min(held, n));
  start_kept(std::min(held, n), a);
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
