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

int dispatch_state::room() const { return lookahead_ - starting_ - fresh_ready_; }

void dispatch_state::start_kept(dispatch_actions& a) {
  int n = std::min(room(), static_cast<int>(kept_.size()));
  if (n > 0 && !leasing_ahead()) {
    n = slots_.take(n);  // a slot first, then the lease (none: woken when one is handed over)
    pregranted_ += n;
  }
  for (; n > 0; --n) {
    a.start.push_back(std::move(kept_.front()));
    kept_.pop_front();
    ++starting_;
  }
}

dispatch_actions dispatch_state::on_fetch(bool stopping) {
  dispatch_actions a;
  a.go = std::exchange(go_now_, {});
  if (stopping) {
    // Leased attempts are released by their owners (the engine's `release`), not here.
    a.hand_back.assign(std::make_move_iterator(kept_.begin()),
                       std::make_move_iterator(kept_.end()));
    kept_.clear();
    return a;
  }
  if (!ready_.empty()) {
    // Leased attempts get the slots in turn; none free: woken when one is handed over.
    const int want = static_cast<int>(std::min<size_t>(ready_.size(), static_cast<size_t>(limit_)));
    for (int n = slots_.take(want); n > 0; --n) {  // leasing ahead
      const auto [id, chained] = ready_.front();
      if (!chained) --fresh_ready_;
      a.go.push_back(id);
      ready_.pop_front();
    }
  }
  if (finishing_ >= limit_) return a;  // woken by the next `done`
  start_kept(a);
  if (fetch_out_ || !kept_.empty() || room() <= 0) return a;  // its answer, or room, looks again
  // Idle: wait for one message, so a model with nothing to do asks for little. Busy and leasing
  // ahead: as many messages as the lookahead has room for. Busy with long exchanges: one (a
  // message may wake many tasks; what has no slot waits here, so little is held back from other
  // nodes).
  a.fetch = last_fetch_empty_ || !leasing_ahead() ? 1 : room();
  fetch_out_ = true;
  return a;
}

dispatch_actions dispatch_state::on_fetched(std::vector<runtime::delivery> got,
                                            const std::string& error, bool stopping) {
  dispatch_actions a;
  fetch_out_ = false;
  if (!error.empty()) {
    a.pause = true;
    return a;
  }
  error_logged_ = false;
  last_fetch_empty_ = got.empty();
  auto tasks = tasks_of(std::move(got), a);
  if (stopping) {
    // Fetched while shutdown began: hand the messages straight back for the next run.
    a.hand_back = std::move(tasks);
    return a;
  }
  for (auto& t : tasks) kept_.push_back(std::move(t));
  if (finishing_ < limit_) start_kept(a);
  return a;
}

void dispatch_state::on_ready(uint64_t id) {
  --starting_;
  if (pregranted_ > 0) {  // its slot was taken before it started
    --pregranted_;
    go_now_.push_back(id);
    return;
  }
  ready_.emplace_back(id, false);
  ++fresh_ready_;
}

void dispatch_state::on_chained(uint64_t id) {
  --finishing_;
  ready_.emplace_back(id, true);
}

void dispatch_state::note_exchange_ms(int64_t ms) {
  const auto x = static_cast<double>(std::max<int64_t>(ms, 0));
  exchange_ms_ = exchange_ms_ < 0 ? x : exchange_ms_ + (x - exchange_ms_) / 8;
}

void dispatch_state::on_answered(int64_t exchange_ms) {
  note_exchange_ms(exchange_ms);
  slots_.release(1);
  ++finishing_;
}

void dispatch_state::on_done(attempt_stage stage, uint64_t id) {
  switch (stage) {
    case attempt_stage::starting:
      --starting_;
      if (pregranted_ > starting_) {  // one of the slots taken for starting attempts is unused
        --pregranted_;
        slots_.release(1);
      }
      return;
    case attempt_stage::ready:
      if (auto it = std::find_if(ready_.begin(), ready_.end(),
                                 [id](const auto& r) { return r.first == id; });
          it != ready_.end()) {
        if (!it->second) --fresh_ready_;
        ready_.erase(it);
        return;
      }
      slots_.release(1);  // a `go` was on its way: the slot it carried comes back
      return;
    case attempt_stage::granted:
      slots_.release(1);
      return;
    case attempt_stage::answered:
      --finishing_;
      return;
  }
}

}  // namespace sy::actors
