#pragma once
/// The model dispatcher's decisions, as a plain state class: when to fetch and how many, which
/// tasks to start, which leased attempts get a slot, which tasks to keep and which to hand back,
/// when to pause. The actor (model_dispatcher.cpp) is a thin behaviour around it that carries the
/// decisions out (messages to its fetcher, attempts on the execution context, naks); unit tests
/// drive it without an actor system or NATS.
///
/// A message may wake many tasks (DESIGN rule 3; the relay's group_outbox): each task it names
/// is one unit of work here, and the message (`task_message_hold`) is acked once every one of
/// them is leased or found finished/stale, not when their attempts end.
///
/// Leases ahead of slots, while the model answers fast (DESIGN rule 3, "a dispatcher with a free
/// slot may start a task it already knows of ... provided the lease is committed first"): an
/// attempt commits its start (its lease) *before* it holds a slot, then reports `ready` and
/// waits; a slot is granted to the ready attempts in turn (`go`), and held only while the request
/// is with the gateway. Up to lookahead_per_slot × the model's limit of attempts may be starting or
/// ready at once (the lookahead), so when a request is answered, the next one is already leased
/// and goes out at once:
/// a slot is not held through a commit's fsync (as a batch lane's window of lines is leased
/// ahead). This holds while the model's recent exchanges are short (an average under
/// `lease_ahead_below_ms`), so an attempt waits milliseconds for its slot. While they are long
/// (or not measured yet), a task is leased only once a slot is taken for it, as before: a job
/// does not show `in_progress` while it waits behind a long request.
///
/// Fetching: an idle model fetches one message at a time; a busy one fetches as many messages as
/// it has lookahead room; neither fetches while it keeps tasks (at most task_group_cap per
/// message fetched), which start as room frees up, without another fetch.
///
/// Slots: a request holds one slot of its model's budget (backed by one of the global budget)
/// while it is sent; `take` gets up to N and `release` gives N back (the dispatcher owns the
/// budget: actors/slot_ledger.hpp). Owner: the model's dispatcher (one thread at a time).

#include <algorithm>
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

/// How far an attempt got when it ended, as its dispatcher counts it.
enum class attempt_stage : int32_t {
  starting = 0,  ///< it never reported `ready` (stale, not yet due, its start failed)
  ready = 1,     ///< leased and waiting for a slot (or withdrawn: cancelled, released)
  granted = 2,   ///< it was given a slot and never reported the exchange over
  answered = 3,  ///< its exchange was over (`answered`): its slot went back then
};

/// What the dispatcher is to do after an event.
struct dispatch_actions {
  int fetch = 0;                  ///< > 0: ask the fetcher for up to this many messages
  std::vector<woken_task> start;  ///< run an attempt for each: it commits its lease, no slot yet
  std::vector<uint64_t> go;       ///< ready attempts (by id) each granted one slot, in turn
  /// Settled at once, to be delivered again (`redeliver(0)`: shutdown began).
  std::vector<woken_task> hand_back;
  std::vector<runtime::delivery> term;  ///< not a task message: terminate it
  bool pause = false;  ///< the fetch failed: send `fetch` again after the error pause
};

/// A model leases ahead of its slots while its exchanges average less than this.
constexpr double lease_ahead_below_ms = 50;
/// Attempts starting or leased (waiting for a slot) per slot of the model's limit, at most: the
/// lookahead covers a start commit's latency at the rate the slots take requests (measured:
/// docs/benchmarks.md, "Leases ahead of slots").
constexpr int lookahead_per_slot = 4;

class dispatch_state {
 public:
  struct slot_source {
    std::function<int(int want)>
        take;  ///< up to `want` slots; 0: none (the dispatcher looks again when one is handed over)
    std::function<void(int n)> release;
  };
  /// `limit`: the per-model concurrency (bounds the lookahead, one fetch and the attempts still
  /// committing).
  /// `finish`: what a message's hold does once its tasks settled (the actor acks or naks).
  /// `per_slot`: the lookahead per slot of `limit` (lookahead_per_slot; tests choose 1).
  dispatch_state(int limit, slot_source slots, task_message_hold::finish_fn finish,
                 int per_slot = lookahead_per_slot)
      : limit_(limit < 1 ? 1 : limit),
        lookahead_(limit_ * std::max(per_slot, 1)),
        slots_(std::move(slots)),
        finish_(std::move(finish)) {}
  dispatch_state(const dispatch_state&) = delete;
  dispatch_state& operator=(const dispatch_state&) = delete;
  /// Tasks still kept go back to JetStream (`redeliver(0)`): the dispatcher is gone.
  ~dispatch_state();

  /// Look for work: grant slots to ready attempts, start kept tasks, fetch (a `fetch` message, a
  /// budget wake-up, or after an event below).
  dispatch_actions on_fetch(bool stopping);
  /// The fetcher answered: `got` deliveries, or `error` (non-empty) when the fetch failed.
  dispatch_actions on_fetched(std::vector<runtime::delivery> got, const std::string& error,
                              bool stopping);
  /// Attempt `id`'s lease is committed: it waits for a slot (granted by a later on_fetch).
  void on_ready(uint64_t id);
  /// An answered attempt's outcome committed and leased the next task of its list for it (a
  /// chain): it is no longer finishing, and now waits for a slot as `id`.
  void on_chained(uint64_t id);
  /// An attempt's gateway exchange is over after `exchange_ms`: its slot is free; it still
  /// commits its outcome.
  void on_answered(int64_t exchange_ms);
  /// Counts an exchange's duration into the model's average (on_answered does).
  void note_exchange_ms(int64_t ms);
  /// It leases ahead of its slots (its exchanges are short).
  bool leasing_ahead() const { return exchange_ms_ >= 0 && exchange_ms_ < lease_ahead_below_ms; }
  /// Attempt `id` ended at `stage`: what it held is given back (a ready one that was granted a
  /// slot it never used gives the slot back).
  void on_done(attempt_stage stage, uint64_t id);

  bool fetch_outstanding() const { return fetch_out_; }
  /// Tasks fetched and not started yet (no slot was free).
  size_t kept() const { return kept_.size(); }
  bool has_pending() const { return !kept_.empty(); }
  /// Attempts committing their start, and leased ones waiting for a slot.
  int starting() const { return starting_; }
  size_t ready() const { return ready_.size(); }
  /// The messages of the kept tasks (each once): the actor keeps them alive (in_progress).
  std::vector<std::shared_ptr<task_message_hold>> kept_messages() const;
  int finishing() const { return finishing_; }
  /// A fetch failure was already logged (log once per outage).
  bool error_reported(bool now) { return std::exchange(error_logged_, now); }

 private:
  /// The tasks the deliveries name, in order; a delivery that is not a task message goes to
  /// `a.term`.
  std::vector<woken_task> tasks_of(std::vector<runtime::delivery> got, dispatch_actions& a);
  /// Starts kept tasks while the lookahead has room.
  void start_kept(dispatch_actions& a);
  /// Room for more attempts to start (the lookahead less those starting or ready).
  int room() const;

  const int limit_;
  const int lookahead_;  ///< attempts starting or leased at most
  slot_source slots_;
  task_message_hold::finish_fn finish_;
  std::deque<woken_task> kept_;  ///< fetched, waiting for lookahead room (in delivery order)
  /// Leased attempts waiting for a slot, in turn: (id, chained). A chained one (its list's next
  /// task, leased with the outcome of the attempt before) does not take lookahead room, so
  /// chains of one list do not keep other jobs' tasks from being fetched and started; they
  /// queue for slots behind what is already waiting.
  std::deque<std::pair<uint64_t, bool>> ready_;
  int fresh_ready_ = 0;           ///< the ready attempts that are not chained
  std::vector<uint64_t> go_now_;  ///< ready attempts whose slot was taken before they started
  int starting_ = 0;              ///< attempts started, not yet ready or ended
  int pregranted_ = 0;  ///< slots taken for starting attempts (not leasing ahead); <= starting_
  double exchange_ms_ = -1;       ///< the model's recent exchanges' average (-1: none yet)
  bool fetch_out_ = false;        ///< the fetcher is fetching for us
  bool last_fetch_empty_ = true;  ///< an idle model asks for one message at a time
  bool error_logged_ = false;
  /// Attempts whose gateway exchange is over and whose slots are back, waiting for their outcome
  /// to commit. No start and no fetch while they reach the limit, so at most
  /// (lookahead_per_slot + 2) times the limit of this model's attempts are alive at once
  /// (starting or ready, sending, finishing).
  int finishing_ = 0;
};

}  // namespace sy::actors
