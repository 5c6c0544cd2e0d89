#pragma once
/// The state of a batch's job actor (actors/batch_actor.hpp) and the functions its three source
/// files share. Everything here belongs to the actor: only its handlers touch it. What runs
/// elsewhere (the blocking thread, a gateway client's executor) gets copies of what it needs,
/// or — the drain's cursor — a piece handed over for the time of one step and not touched by
/// the actor meanwhile.

#include <utility>  // before any Asio header (Boost 1.74)

#include <array>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <boost/asio/post.hpp>
#include <caf/send.hpp>
#include <caf/stateful_actor.hpp>
#include <caf/typed_event_based_actor.hpp>

#include "actors/batch_actor.hpp"
#include "actors/slots.hpp"
#include "runtime/batch_plan.hpp"
#include "runtime/batch_render.hpp"
#include "runtime/clock.hpp"
#include "runtime/ulid.hpp"

namespace sy::actors::detail {

/// A line of a batch: its plan entry and the slot of its result.
using line_ref = std::pair<runtime::batch::plan_entry, uint64_t>;

/// One model's lane: its plan, read in order, and the slots of the model's budget it holds. The
/// model's dispatcher owns that budget (actors/slots.hpp): the lane asks it for as many slots as
/// it can use, keeps them for its next lines, and gives back those the dispatcher asks for
/// (`owed`) as their requests end.
struct batch_lane {
  explicit batch_lane(runtime::batch::plan_reader r) : reader(std::move(r)) {}
  runtime::batch::plan_reader reader;
  std::string model;
  uint64_t model_index = 0;
  uint64_t position = 0;  ///< entries of the plan read so far
  runtime::gateway_client* gw = nullptr;
  slot_owner_actor owner;  ///< the model's dispatcher (null until the directory answered)
  uint64_t key = 0;        ///< its holder key at the dispatcher
  int32_t held = 0;        ///< slots it holds (in use or idle)
  int32_t busy = 0;        ///< of those, in use by a window of lines in flight
  int32_t owed = 0;        ///< slots asked back, to give back as they come free
  int32_t wished = 0;      ///< more slots asked for, not yet granted
  /// Lines read from the plan (or handed back by a window cut short) waiting for a slot.
  std::deque<line_ref> pending;
  /// Every line of the plan was started and every window ended (or the batch halted).
  bool ended = false;
  /// Microseconds a line of this lane took in its windows (a moving average; 0: none ended yet).
  double line_us = 0;
};

/// The batch's input file. The actor holds it while lines are read from it and so does each
/// window in flight and each drain step, so it closes when the last of them is done with it.
struct input_file {
  explicit input_file(int f) : fd(f) {}
  ~input_file();
  input_file(const input_file&) = delete;
  input_file& operator=(const input_file&) = delete;
  const int fd;
};

/// A window of lines in flight: its lane, its lines and the abort handle its requests share.
struct window_request {
  size_t lane = 0;
  std::vector<line_ref> lines;
  std::shared_ptr<runtime::abort_handle> abort;
};

/// Where a drain is: read on the blocking thread only, one chunk at a time.
struct drain_cursor {
  std::vector<runtime::batch::model_plan> models;
  size_t model_index = 0;
  std::optional<runtime::batch::plan_reader> reader;
  uint64_t position = 0;
};

/// Where a finalization try is: the file ids it writes and the batch as it read it.
struct finalize_try {
  std::string output_id, error_id;
  storage::batch_record batch;
  bool last = false;
};

struct batch_state {
  std::shared_ptr<const batch_deps> d;
  runtime::ulid_generator ids;  ///< the result files' ids
  std::string id;
  std::array<uint64_t, 2> id_seed{};  ///< request ids
  std::string endpoint;
  /// The batch's span (runtime/trace.hpp), sent to the gateway with every line as the parent of
  /// the gateway's spans; and the client's tracestate. Empty: a batch stored before tracing.
  std::string traceparent;
  std::string tracestate;
  std::string input_file_id;
  int64_t max_inflight = 0;    ///< the batch's cap on lines in flight; 0: the budgets' only
  int max_attempts = 1;        ///< tries per line across retryable outcomes
  std::string stop_code;       ///< set when dispatch must stop (cancel, expiry, failure)
  bool shutting_down = false;  ///< release: stop and resume at the next start
  bool halted = false;         ///< dispatch stopped (any of the above)
  int failing = 0;             ///< failures being committed: dispatch is not over before they are
  std::shared_ptr<const input_file> input;  ///< while lines are read from it
  std::optional<runtime::batch::ingest_result> plans;
  bool replanning = false;      ///< a rerun's plans are being made (not the first run's ingestion)
  int64_t step_started_ms = 0;  ///< when ingestion or finalization began (its log line's "ms")
  std::shared_ptr<runtime::timer> window;  ///< the completion window's end (the engine clock's)
  std::shared_ptr<runtime::timer> pause;   ///< the wait before a retry of a drain or finalization

  // Dispatch (batch_lanes.cpp)
  bool dispatching = false;
  bool fresh = false;  ///< no line had a result when the actor started: skip the per-line check
  std::vector<batch_lane> lanes;
  uint64_t next_key = 0;
  std::map<uint64_t, window_request> inflight;
  std::vector<storage::batch_line> unrecorded;  ///< results waiting for the next commit
  bool recording = false;                       ///< a commit of results is gathering or under way
  std::shared_ptr<runtime::timer> gather;       ///< the wait that gathers results before a commit

  // After dispatch (batch_finalize.cpp)
  int tries = 0;                      ///< of the step under way (drain or finalization)
  std::string undrained;              ///< why lines without a result could not be drained, if so
  bool pausing = false;               ///< waiting for `pause` before the next try
  std::function<void()> after_pause;  ///< the next try (a continuation, never a message)
  std::shared_ptr<drain_cursor> cursor;
  std::optional<finalize_try> finalizing;

  bool stopped() const { return !stop_code.empty() || shutting_down; }
  static inline const char* name = "batch";
};

using batch_ptr = batch_actor::stateful_pointer<batch_state>;

/// The batch's record as it stands, whichever tenant owns it.
inline std::optional<storage::batch_record> read_batch(const batch_state& st) {
  auto txn = st.d->env->begin_read();
  return storage::get_batch(txn, st.id);
}

/// Runs `fn` on the batch manager's blocking thread and sends its result (a message value) back.
template <class F>
void off_thread(batch_ptr self, F fn) {
  boost::asio::post(self->state.d->blocking,
                    [fn = std::move(fn), me = batch_actor{self}] { caf::anon_send(me, fn()); });
}

/// Commits `op` through the storage writer and calls `then` with the reply (an empty reply and
/// the error when it could not be committed).
void commit(batch_ptr self, storage::write_op op, const std::function<void(write_reply&)>& then);

// batch_actor.cpp
/// Stops dispatch: `code` for cancel, expiry or failure, empty for shutdown.
void stop(batch_ptr self, const std::string& code);
/// Fails the batch (commits batch_failed with `why`), stops it, then calls `next`.
void fail(batch_ptr self, std::string why, std::function<void()> next);
/// The actor is done with the batch for this run: timers off, the input closed, it ends.
void end(batch_ptr self);
void close_input(batch_ptr self);

// batch_lanes.cpp
/// Opens a lane per model and starts as many lines as the budgets allow.
void dispatch(batch_ptr self);
/// Starts lines on every lane while it has idle slots.
void pump(batch_ptr self);
/// The model's dispatcher granted `n` slots to the lane `key`, or asks `n` back (`yield`).
void on_slots(batch_ptr self, uint64_t key, int32_t granted, int32_t asked);
/// A window of lines ended: its results are recorded, its slot serves the lane's next window.
void on_window_done(batch_ptr self, window_done& w);
/// Commits the results gathered so far (`flush`).
void flush(batch_ptr self);
/// Ends every lane: its idle slots go back and it wants no more (stop, end).
void leave_budgets(batch_ptr self);
/// Aborts every window of lines in flight.
void abort_inflight(batch_ptr self);
/// Dispatch is over when every lane ended, nothing is in flight and every result is committed;
/// then the batch resumes later (shutdown) or finishes.
void check_dispatched(batch_ptr self);

// batch_finalize.cpp
/// The error line of a line that never ran (`code`, `message`), its custom_id read from `input`
/// when it can be (a line no longer readable gets none). Any thread.
storage::batch_line unrun_line(const input_file* input, const std::array<uint64_t, 2>& seed,
                               const runtime::batch::plan_entry& e, uint64_t slot,
                               const std::string& code, const std::string& message);
/// Dispatch ended (or never began): drain what never ran when stopped, then finalize.
void finish(batch_ptr self);
void on_drained(batch_ptr self, drained_lines& d);
void on_written(batch_ptr self, written_files& w);
/// A retry's pause is over (`tick`).
void on_pause_over(batch_ptr self);

}  // namespace sy::actors::detail
