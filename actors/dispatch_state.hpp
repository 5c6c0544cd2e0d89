#pragma once
/// The model dispatcher's decisions, as a plain state class: when to fetch and how many, which
/// deliveries to start, which to hand back, when to pause. The actor (model_dispatcher.cpp) is a
/// thin behaviour around it that carries the decisions out (messages to its fetcher, attempts on
/// the execution context, naks); unit tests drive it without an actor system or NATS.
///
/// Slots: a request holds one slot of its model's budget (backed by one of the global budget)
/// while it is sent; `take` gets up to N and `release` gives N back (the dispatcher owns the
/// budget: actors/slot_ledger.hpp).
/// An idle model fetches one message without holding a slot; a busy one takes slots first and
/// fetches at most that many. Owner: the model's dispatcher (one thread at a time).

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "runtime/jetstream.hpp"

namespace sy::actors {

/// What the dispatcher is to do after an event.
struct dispatch_actions {
  int fetch = 0;                             ///< > 0: ask the fetcher for up to this many messages
  std::vector<runtime::delivery> start;      ///< run an attempt for each (one slot each is held)
  std::vector<runtime::delivery> hand_back;  ///< nak each at once (shutdown began)
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
  dispatch_state(int limit, slot_source slots)
      : limit_(limit < 1 ? 1 : limit), slots_(std::move(slots)) {}

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
  bool has_pending() const { return pending_.has_value(); }
  int finishing() const { return finishing_; }
  /// A fetch failure was already logged (log once per outage).
  bool error_reported(bool now) { return std::exchange(error_logged_, now); }

 private:
  dispatch_actions ask(int max, int held);

  const int limit_;
  slot_source slots_;
  std::optional<runtime::delivery> pending_;  ///< fetched while idle, waiting for a slot
  bool fetch_out_ = false;                    ///< the fetcher is fetching for us
  int held_ = 0;                  ///< slots taken for the outstanding fetch (0: an idle fetch)
  bool last_fetch_empty_ = true;  ///< an idle model asks for one message at a time
  bool error_logged_ = false;
  /// Attempts whose gateway exchange is over and whose slots are back, waiting for their outcome
  /// to commit. No fetch while they reach the limit, so at most twice the limit of this model's
  /// attempts are alive at once.
  int finishing_ = 0;
};

}  // namespace sy::actors
