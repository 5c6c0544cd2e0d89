#pragma once
/// The model dispatcher's decisions, as a plain state class: when to fetch and how many, which
/// tasks to start, which to keep and which to hand back, when to pause. The actor
/// (model_dispatcher.cpp) is a thin behaviour around it that carries the decisions out (messages
/// to its fetcher, attempts on the execution context, naks); unit tests drive it without an actor
/// system or NATS.
///
/// A message may wake many tasks (DESIGN rule 3; the relay's group_outbox): each task it names
/// is one unit of work here, and the message (`task_message_hold`) is acked once every one of
/// them is leased or found finished/stale, not when their attempts end. A fetch brings at most as
/// many messages as it holds slots; the tasks beyond the slots are kept (at most
/// task_group_cap per message fetched) and started as slots free, without another fetch.
///
/// Slots: a request holds one slot of its model's budget (backed by one of the global budget)
/// while it is sent; `take` gets up to N and `release` gives N back (the dispatcher owns the
/// budget: actors/slot_ledger.hpp).
/// An idle model fetches one message without holding a slot; a busy one takes slots first and
/// fetches at most that many; neither fetches while it keeps tasks. Owner: the model's
/// dispatcher (one thread at a time).

#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "runtime/jetstream.hpp"

namespace sy::actors {

/// One delivered task message, shared by the tasks it names until each has settled: acked
/// once all settled without asking for it again, else nak'ed with the shortest delay asked (a
/// redelivery wakes the tasks already leased or finished too; their start's fencing drops them).
/// Any thread (the job actors settle their tasks).
class task_message_hold {
 public:
  /// Called once, when the last task settles: nullopt to ack, else nak with that delay.
  using finish_fn =
      std::function<void(const runtime::delivery&, std::optional<int64_t> nak_delay_ms)>;
  task_message_hold(runtime::delivery d, int tasks, finish_fn finish)
      : d_(std::move(d)), open_(tasks), finish_(std::move(finish)) {}

  /// The task is leased, or finished/stale in LMDB: this message has done its work for it.
  void settled() { settle(std::nullopt); }
  /// The task is to be delivered again after `delay_ms` (its backoff is not over, its start
  /// could not commit, shutdown began before it started).
  void redeliver(int64_t delay_ms) { settle(delay_ms); }

  const runtime::delivery& delivery() const { return d_; }
  int open() const {
    std::lock_guard lock(mu_);
    return open_;
  }

 private:
  void settle(std::optional<int64_t> again);

  mutable std::mutex mu_;
  runtime::delivery d_;
  int open_;
  std::optional<int64_t> again_;
  finish_fn finish_;
};

/// One task a message woke.
struct woken_task {
  std::shared_ptr<task_message_hold> msg;
  std::string task_id;
  int attempt = 0;
};

/// What the dispatcher is to do after an event.
struct dispatch_actions {
  int fetch = 0;                  ///< > 0: ask the fetcher for up to this many messages
  std::vector<woken_task> start;  ///< run an attempt for each (one slot each is held)
  /// Settled at once, to be delivered again (`redeliver(0)`: shutdown began).
  std::vector<woken_task> hand_back;
  std::vector<runtime::delivery> term;  ///< not a task message: terminate it
  bool pause = false;  ///< the fetch failed: send `fetch` again after the error pause
};

class dispatch_state {
 public:
  struct slot_source {
    std::function<int(int want)>
        take;  ///< up to `want` slots; 0: none (the dispatcher looks again when one is handed over)
    std::function<void(int n)> release;
  };
  /// `limit`: the per-model concurrency (bounds one fetch and the attempts still committing).
  /// `finish`: what a message's hold does once its tasks settled (the actor acks or naks).
  dispatch_state(int limit, slot_source slots, task_message_hold::finish_fn finish)
      : limit_(limit < 1 ? 1 : limit), slots_(std::move(slots)), finish_(std::move(finish)) {}
  dispatch_state(const dispatch_state&) = delete;
  dispatch_state& operator=(const dispatch_state&) = delete;
  /// Tasks still kept go back to JetStream (`redeliver(0)`): the dispatcher is gone.
  ~dispatch_state();

  /// Look for work (a `fetch` message, a budget wake-up, or after an event below).
  dispatch_actions on_fetch(bool stopping);
  /// The fetcher answered: `got` deliveries, or `error` (non-empty) when the fetch failed.
  dispatch_actions on_fetched(std::vector<runtime::delivery> got, const std::string& error,
                              bool stopping);
  /// An attempt's gateway exchange is over: its slots are free; it still commits its outcome.
  void on_answered();
  /// An attempt ended; `answered`: it had reported on_answered (else it never sent, and its
  /// slots are freed now).
  void on_done(bool answered);

  bool fetch_outstanding() const { return fetch_out_; }
  /// Tasks fetched and not started yet (no slot was free).
  size_t kept() const { return kept_.size(); }
  bool has_pending() const { return !kept_.empty(); }
  /// The messages of the kept tasks (each once): the actor keeps them alive (in_progress).
  std::vector<std::shared_ptr<task_message_hold>> kept_messages() const;
  int finishing() const { return finishing_; }
  /// A fetch failure was already logged (log once per outage).
  bool error_reported(bool now) { return std::exchange(error_logged_, now); }

 private:
  dispatch_actions ask(int max, int held);
  /// The tasks the deliveries name, in order; a delivery that is not a task message goes to
  /// `a.term`.
  std::vector<woken_task> tasks_of(std::vector<runtime::delivery> got, dispatch_actions& a);
  /// Starts up to `n` kept tasks (their slots are taken).
  void start_kept(int n, dispatch_actions& a);

  const int limit_;
  slot_source slots_;
  task_message_hold::finish_fn finish_;
  std::deque<woken_task> kept_;   ///< fetched, waiting for a slot (in delivery order)
  bool fetch_out_ = false;        ///< the fetcher is fetching for us
  int held_ = 0;                  ///< slots taken for the outstanding fetch (0: an idle fetch)
  bool last_fetch_empty_ = true;  ///< an idle model asks for one message at a time
  bool error_logged_ = false;
  /// Attempts whose gateway exchange is over and whose slots are back, waiting for their outcome
  /// to commit. No fetch while they reach the limit, so at most twice the limit of this model's
  /// attempts are alive at once.
  int finishing_ = 0;
};

}  // namespace sy::actors
