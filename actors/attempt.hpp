#pragma once
/// One attempt of one task, as plain decisions (no actor, no I/O): the job actor
/// (actors/job_actor.hpp) carries them out, unit tests drive them directly.
///
/// An attempt goes from a task a JetStream message names to a fenced result
/// (docs/architecture.md): start (commit a lease; the task is then settled in its message, which
/// is acked once every task it names is: DESIGN rule 3) → call the gateway while heartbeating
/// the lease → commit the outcome under the lease token. A stale or duplicate task is settled and
/// dropped; one whose backoff has not elapsed asks for the message to be nak'ed.

#include <cstdint>
#include <string>

#include "config/settings.hpp"
#include "runtime/gateway_client.hpp"
#include "storage/ops.hpp"

namespace sy::actors {

/// How a gateway outcome ends an attempt (pure; unit-tested). `released`: the engine is shutting
/// down and aborted the request, so the task goes back to the queue uncounted.
struct attempt_verdict {
  storage::attempt_end end;
  std::string error_code;
  std::string error_message;
};
/// `http`: the outcome of an http task (its codes are http_*, and a permanent failure without an
/// answer — every address denied, an answer too large — ends it at once).
attempt_verdict judge(const runtime::gateway_outcome& o, bool released, bool http = false);

/// A new lease token: 32 random hex digits (also a token id, `jti`). Any thread.
std::string new_lease_token();

/// How long a retried attempt waits before attempt `attempt + 1` may start: the configured
/// exponential backoff (`requeue_*_backoff_ms`) with full jitter. Any thread.
int64_t retry_backoff_ms(const config::settings& cfg, int attempt);

/// What to do with a delivery once its start was committed (or refused).
enum class start_verdict {
  send,       ///< the lease is ours: send the request
  nak_later,  ///< the attempt's backoff has not elapsed: nak with the reply's delay
  drop,       ///< stale or duplicate (fenced, finished, leased elsewhere): ack and forget
};
start_verdict judge_start(const storage::op_reply& r);

/// Why a running attempt is to stop early.
enum class abort_reason {
  none,
  cancel,    ///< the job's cancel was committed
  deadline,  ///< the job's timeout passed
  shutdown,  ///< the engine stops: the task goes back to the queue, the attempt uncounted
};
const char* to_string(abort_reason r);

/// Where one attempt stands, and what an abort means at each point. Owner: its job actor.
class attempt_state {
 public:
  enum class phase {
    starting,    ///< the start is being committed
    leased,      ///< the lease is committed; waiting for a slot (an abort withdraws it)
    sending,     ///< the request is with the gateway (abortable)
    committing,  ///< the gateway exchange is over; the outcome is being committed
  };

  phase now() const { return phase_; }
  /// An abort arrived. True when the request in flight is to be aborted now; an abort that
  /// arrives while starting is kept and applied once the lease is committed (on_leased); one that
  /// arrives while leased (now() == leased) withdraws the attempt, which the job actor does; one
  /// that arrives after the exchange is over changes nothing. The first reason wins, except that a
  /// shutdown always marks the attempt released (its outcome then gives the task back).
  bool on_abort(abort_reason why);
  /// The start committed; the attempt waits for a slot. True when it is to be withdrawn at once
  /// (an abort came while starting).
  bool on_leased();
  /// It got its slot and the request goes out. True when it is to be aborted at once (an abort
  /// came before).
  bool on_sending();
  /// The gateway exchange is over (answered, failed or aborted).
  void on_answered() { phase_ = phase::committing; }

  abort_reason reason() const { return reason_; }
  /// The engine's shutdown aborted the request: its outcome is `released`.
  bool released() const { return released_; }
  /// Heartbeats keep the lease while it waits for a slot and while the request is out, not
  /// before or after.
  bool beating() const {
    return (phase_ == phase::leased || phase_ == phase::sending) && !lease_lost_;
  }
  /// A heartbeat found the lease gone (another attempt was started): beat no more.
  void on_lease_lost() { lease_lost_ = true; }

 private:
  phase phase_ = phase::starting;
  abort_reason reason_ = abort_reason::none;
  bool released_ = false;
  bool lease_lost_ = false;
};

}  // namespace sy::actors
