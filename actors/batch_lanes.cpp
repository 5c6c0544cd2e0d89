// A batch's lanes: one per model, each reading its plan in order and starting a line whenever it
// holds an idle slot of the model's budget, which it asks the model's dispatcher for by message
// and keeps for its next lines until the dispatcher asks for it back. A slot in use carries a
// window of lines, sent back to back on the gateway client's executor, whose results come back
// to the batch's actor in one message; results are committed in groups through the storage
// writer.

#include <utility>  // before any Asio header (Boost 1.74)

#include <algorithm>
#include <array>
#include <optional>
#include <vector>

#include <boost/asio/awaitable.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/this_coro.hpp>

#include "actors/attempt.hpp"
#include "actors/batch_response.hpp"
#include "actors/detail/actor_timer.hpp"
#include "actors/detail/batch_state.hpp"
#include "runtime/log.hpp"
#include "runtime/metrics.hpp"

namespace sy::actors::detail {
namespace {

namespace asio = boost::asio;
namespace plan = runtime::batch;
using runtime::batch::error_line;
using runtime::batch::request_id_for;

/// Results gathered before a commit (it groups fsyncs), on the engine's clock: a test that holds
/// a manual clock still holds the batch's results uncommitted until it moves the clock.
constexpr int64_t record_gather_ms = 5;

/// A slot sends a window of lines back to back and reports them in one message, so a line costs
/// no crossing between the actor's thread and the gateway client's. A window holds about this
/// much work at the lane's pace: a slot the dispatcher asks back comes free within about that.
/// Measured (the clock's monotonic reading) and waited for on the engine's clock. On a manual
/// clock held still a line takes no time, so the lane's pace stays unknown and its windows hold
/// one line each (reported at its end); the cut after twice the target never comes.
constexpr int64_t window_target_us = 10'000;
constexpr size_t max_window = 64;

/// Lines of the lane not started yet: the rest of its plan and those waiting for a slot.
uint64_t lines_left(const batch_lane& lane) {
  return lane.reader.size() - lane.position + lane.pending.size();
}

/// Tells the lane's dispatcher that it gives `give_back` slots back and how many more it wants:
/// enough for the per-model limit while lines remain, none once it ended.
void update(batch_ptr self, batch_lane& lane, int32_t give_back) {
  auto& st = self->state;
  give_back = std::clamp(give_back, 0, lane.held - lane.busy);
  lane.held -= give_back;
  lane.owed = std::max(0, lane.owed - give_back);
  int32_t want = 0;
  if (!lane.ended) {
    auto desired = static_cast<int32_t>(std::min<uint64_t>(
        std::max(1, st.d->at->cfg.per_model_concurrency), lane.busy + lines_left(lane)));
    // The batch's own cap: what the other lanes hold or asked for is not this lane's to ask for.
    if (st.max_inflight > 0) {
      int64_t others = 0;
      for (const auto& l : st.lanes)
        if (&l != &lane) others += l.held + l.wished;
      desired = static_cast<int32_t>(
          std::min<int64_t>(desired, std::max<int64_t>(0, st.max_inflight - others)));
    }
    want = std::max(0, desired - lane.held);
  }
  if (give_back == 0 && want == lane.wished) return;
  if (!lane.owner) return;  // its dispatcher is not known yet: it holds nothing and asks later
  lane.wished = want;
  self->send(lane.owner, slot_update{lane.key, give_back, want, true}, slot_holder_actor{self});
  // Under the batch's cap, what this lane gave up or stopped asking for may go to another lane.
  if (st.max_inflight > 0 && (give_back > 0 || want == 0))
    for (auto& other : st.lanes)
      if (&other != &lane && !other.ended && other.wished == 0 && other.held == other.busy)
        update(self, other, 0);
}

/// Hands a result to the next commit of results. A result not yet committed when the process
/// dies is simply run again; the first committed result per line wins (storage/batch_ops.hpp).
void record(batch_ptr self, storage::batch_line line) {
  auto& st = self->state;
  st.unrecorded.push_back(std::move(line));
  if (st.recording) return;
  st.recording = true;
  arm_on<flush_atom>(st.gather, st.d->at->clock, st.d->at->exec, record_gather_ms,
                     batch_actor{self});
}

/// The lane's next line without a result: a pending one, else the next of its plan that has no
/// result yet (one may have it from before a restart); false when there is none.
std::optional<line_ref> next_line(batch_ptr self, batch_lane& lane) {
  auto& st = self->state;
  if (!lane.pending.empty()) {
    auto line = lane.pending.front();
    lane.pending.pop_front();
    return line;
  }
  plan::plan_entry e{};
  while (lane.reader.next(e)) {
    const uint64_t slot = storage::batch_slot(lane.model_index, lane.position++);
    if (!st.fresh) {
      auto txn = st.d->env->begin_read();
      if (storage::has_batch_line(txn, st.id, slot)) continue;  // done before a restart
    }
    return line_ref{e, slot};
  }
  return std::nullopt;
}

/// A window of lines as the gateway side gets it: everything it needs, copied or shared.
struct window_job {
  batch_actor me;
  std::string batch_id;
  uint64_t key = 0;
  std::vector<line_ref> lines;
  std::shared_ptr<const input_file> input;
  std::array<uint64_t, 2> seed{};
  std::string endpoint;
  runtime::gateway_client* gw = nullptr;
  const runtime::clock* clock = nullptr;  ///< the engine's
  std::shared_ptr<runtime::abort_handle> abort;
  std::string model;  ///< the lane's model (for the metrics)
  std::string traceparent;
  std::string tracestate;
  int max_tries = 1;  ///< the batch's max_attempts: HTTP exchanges per line
};

/// The result line of a request that got no response.
storage::batch_line unreachable_line(uint64_t slot, const std::string& request_id,
                                     const std::string& custom_id,
                                     const runtime::gateway_outcome& out) {
  return storage::batch_line{slot,
                             false,
                             error_line(request_id, custom_id, errc::gateway_unreachable,
                                        "The gateway could not be reached after " +
                                            std::to_string(out.tries) + " tries: " + out.error),
                             {},
                             {}};
}

/// A line whose retryable failures (transport, 408, 429, 5xx) used up its attempts is also a
/// dead letter for SY_DLQ, named by its request id (the `id` of its error line) and carrying the
/// job's error code and message for that outcome (actors/attempt.hpp). A final 4xx is not.
void mark_dead(storage::batch_line& line, const window_job& j, const std::string& request_id,
               const std::string& custom_id, const runtime::gateway_outcome& out) {
  if (line.ok || !out.retryable) return;
  auto verdict = judge(out, false);
  line.dead =
      storage::dead_letter{j.batch_id,
                           1,  // the batch's run, set when the line is recorded
                           request_id,
                           custom_id,
                           j.model,
                           out.tries,
                           {std::move(verdict.error_code), std::move(verdict.error_message)},
                           j.clock->now_ms()};
}

/// Results of a window not yet reported, and the timer that reports them when a later line of
/// the window takes long. Touched on the gateway client's strand only.
struct window_results {
  window_results(const runtime::clock& clock, const asio::any_io_executor& ex)
      : timer(clock.make_timer(ex)) {}
  std::vector<storage::batch_line> lines;
  std::unique_ptr<runtime::timer> timer;  ///< of the engine's clock
  bool armed = false;
};

/// Reports `r`'s results after `window_target_us` unless the window's end reports them first:
/// the results of fast lines do not wait for a slow line after them.
void report_later(const std::shared_ptr<window_results>& r, const batch_actor& me, uint64_t key) {
  if (r->armed || r->lines.empty()) return;
  r->armed = true;
  r->timer->wait(window_target_us / 1'000, [r, me, key](bool fired) {
    r->armed = false;
    if (!fired || r->lines.empty()) return;
    window_done partial{key, std::move(r->lines), false, 0, 0, {}};
    r->lines.clear();
    caf::anon_send(me, std::move(partial));
  });
}

/// Sends the window's lines one after another on the gateway client's strand (reading, parsing
/// and rendering there too, so the actor's thread only keeps the books). It stops at the first
/// line that cannot be read or parsed, when aborted, and once it ran twice `window_target_us`.
asio::awaitable<window_done> run_window(window_job j) {
  window_done done{j.key, {}, true, 0, 0, {}};
  auto results = std::make_shared<window_results>(*j.clock, co_await asio::this_coro::executor);
  const int64_t t0 = j.clock->monotonic_us();
  for (const auto& [e, slot] : j.lines) {
    if (j.abort->aborted() ||
        (done.started > 0 && j.clock->monotonic_us() - t0 > 2 * window_target_us))
      break;
    auto text = plan::read_at(j.input->fd, e.offset, e.length);
    if (!text) {
      done.failure = "cannot read the input file: " + text.error().message;
      break;
    }
    auto parsed = plan::parse_request_line(*text);
    if (!parsed) {
      done.failure = "input line at byte " + std::to_string(e.offset) +
                     " no longer parses: " + parsed.error().message;
      break;
    }
    ++done.started;
    report_later(results, j.me, j.key);
    runtime::gateway_request request{j.endpoint, std::move(parsed->body), j.model, j.traceparent,
                                     j.tracestate};
    request.max_tries = j.max_tries;
    auto out = co_await j.gw->send(std::move(request), j.abort);
    if (j.abort->aborted()) break;  // drained with the stop code, or run again after a restart
    const std::string request_id = request_id_for(j.seed, e.offset);
    results->lines.push_back(out.got_response
                                 ? response_line(slot, request_id, parsed->custom_id, out)
                                 : unreachable_line(slot, request_id, parsed->custom_id, out));
    mark_dead(results->lines.back(), j, request_id, parsed->custom_id, out);
    if (const auto& used = results->lines.back().usage)
      metrics::batch_tokens(j.model, used->input, used->output);
  }
  results->timer->cancel();
  done.lines = std::move(results->lines);
  results->lines.clear();
  done.elapsed_us = j.clock->monotonic_us() - t0;
  co_return done;
}

/// How many lines the lane's next window takes: about `window_target_us` of work at the lane's
/// recent pace (one line until it has one), never more than its share of the lines left, so
/// that every slot of the lane has work to the end.
size_t window_size(const batch_lane& lane) {
  double n = 1;
  if (lane.line_us > 0)
    n = std::clamp(static_cast<double>(window_target_us) / lane.line_us, 1.0,
                   static_cast<double>(max_window));
  const auto held = static_cast<uint64_t>(std::max(1, lane.held));
  const uint64_t share = (lines_left(lane) + held - 1) / held;
  return static_cast<size_t>(std::clamp<uint64_t>(share, 1, static_cast<uint64_t>(n)));
}

/// A line of `lane` no longer needs its slot: a slot asked back (or of an ended lane) goes back
/// now, the others serve the lane's next lines.
void line_done(batch_ptr self, batch_lane& lane) {
  --lane.busy;
  update(self, lane, lane.owed > 0 || lane.ended ? 1 : 0);
}

/// Every line of a model no gateway serves gets its error line (read here; there is no wait).
void no_gateway(batch_ptr self, const batch_lane& lane, const std::vector<line_ref>& lines) {
  auto& st = self->state;
  const std::string why = "No gateway serves model '" + lane.model + "'.";
  for (const auto& [e, slot] : lines)
    record(self, unrun_line(st.input.get(), st.id_seed, e, slot, errc::model_not_found, why));
}

/// Starts a window of the lane's next lines on one of its slots, holding the slot until the
/// window ends; false when the lane has no line left to start.
bool start_window(batch_ptr self, size_t lane_index) {
  auto& st = self->state;
  auto& lane = st.lanes[lane_index];
  std::vector<line_ref> lines;
  const size_t n = window_size(lane);
  while (lines.size() < n) {
    auto line = next_line(self, lane);
    if (!line) break;
    lines.push_back(*line);
  }
  if (lines.empty()) return false;
  if (!lane.gw) {
    no_gateway(self, lane, lines);
    return true;
  }
  ++lane.busy;
  const uint64_t key = st.next_key++;
  auto abort = std::make_shared<runtime::abort_handle>();
  window_job j{batch_actor{self}, st.id,          key,         lines,
               st.input,          st.id_seed,     st.endpoint, lane.gw,
               &st.d->at->clock,  abort,          lane.model,  st.traceparent,
               st.tracestate,     st.max_attempts};
  st.inflight.emplace(key, window_request{lane_index, std::move(lines), std::move(abort)});
  asio::co_spawn(lane.gw->executor(), run_window(std::move(j)),
                 [me = batch_actor{self}, key](const std::exception_ptr& ex, window_done w) {
                   if (ex)
                     w = window_done{key, {}, true, 0, 0, "the requests failed inside the engine"};
                   caf::anon_send(me, std::move(w));
                 });
  return true;
}

/// Starts windows on one lane while it has idle slots. A lane with no line left to start gives
/// its idle slots back, and ends once its last window ended.
void pump_lane(batch_ptr self, size_t lane_index) {
  auto& st = self->state;
  auto& lane = st.lanes[lane_index];
  bool started_all = false;
  while (!st.halted && !lane.ended && lane.held > lane.busy)
    if (!start_window(self, lane_index)) {
      started_all = true;
      break;
    }
  if (!started_all && !lane.ended && !st.halted && lane.pending.empty()) {
    if (auto line = next_line(self, lane))
      lane.pending.push_front(*line);
    else
      started_all = true;
  }
  if (started_all && lane.busy == 0) lane.ended = true;
  update(self, lane, started_all || lane.ended ? lane.held - lane.busy : 0);
}

/// Asks the dispatcher directory for the dispatcher of every lane's model, which owns the model's
/// budget; the lanes start once it answers (until then they hold no slot and ask for none).
void find_owners(batch_ptr self) {
  auto& st = self->state;
  dispatchers_wanted want;
  for (const auto& lane : st.lanes) want.models.push_back(lane.model);
  if (want.models.empty()) return pump(self);
  self->request(st.d->dispatchers, caf::infinite, std::move(want))
      .then(
          [self](dispatchers_found& found) {
            auto& s = self->state;
            if (found.owners.size() != s.lanes.size())
              return fail(self, "no dispatcher for the batch's models: " + found.refusal.message,
                          nullptr);
            for (size_t i = 0; i < s.lanes.size(); ++i) s.lanes[i].owner = found.owners[i];
            pump(self);
          },
          [self](caf::error& e) {
            fail(self, "the dispatcher directory did not answer: " + self->system().render(e),
                 nullptr);
          });
}

}  // namespace

void dispatch(batch_ptr self) {
  auto& st = self->state;
  log::info(
      "batch", "dispatching",
      {{"batch_id", st.id}, {"lines", st.plans->line_count}, {"models", st.plans->models.size()}});
  st.dispatching = true;
  const auto& models = st.plans->models;
  for (uint64_t i = 0; i < models.size() && !st.halted; ++i) {
    auto reader = plan::plan_reader::open(st.d->paths.batch(st.id) + "/plans/" +
                                          models[i].safe_name + ".plan");
    if (!reader) {
      fail(self, "cannot open the plan of model " + models[i].model + ": " + reader.error().message,
           nullptr);
      break;
    }
    batch_lane lane{std::move(*reader)};
    lane.model = models[i].model;
    lane.model_index = i;
    lane.gw = st.d->gateways->for_model(lane.model);
    lane.key = next_slot_key();
    st.lanes.push_back(std::move(lane));
  }
  find_owners(self);
}

void pump(batch_ptr self) {
  auto& st = self->state;
  for (size_t i = 0; i < st.lanes.size(); ++i) pump_lane(self, i);
  check_dispatched(self);
}

void on_window_done(batch_ptr self, window_done& w) {
  auto& st = self->state;
  auto it = st.inflight.find(w.key);
  if (it == st.inflight.end()) return;
  for (auto& line : w.lines) record(self, std::move(line));
  if (!w.last) return;
  auto& lane = st.lanes[it->second.lane];
  if (w.started > 0) {
    const double per_line = static_cast<double>(w.elapsed_us) / w.started;
    lane.line_us = lane.line_us > 0 ? 0.75 * lane.line_us + 0.25 * per_line : per_line;
  }
  // Lines of a window cut short go back to the lane (aborted ones are drained or run again).
  const auto& lines = it->second.lines;
  if (w.failure.empty() && !it->second.abort->aborted())
    lane.pending.insert(lane.pending.begin(), lines.begin() + w.started, lines.end());
  st.inflight.erase(it);
  line_done(self, lane);
  if (!w.failure.empty()) return fail(self, std::move(w.failure), nullptr);
  pump(self);
}

void flush(batch_ptr self) {
  auto& st = self->state;
  if (st.unrecorded.empty()) {
    st.recording = false;
    return check_dispatched(self);
  }
  std::vector<storage::batch_line> lines;
  lines.swap(st.unrecorded);
  commit(self, storage::batch_lines_op{st.id, std::move(lines)}, [self](write_reply& r) {
    auto& s = self->state;
    if (r.reply) {
      // While this commit was under way the next results gathered; they go in the next one.
      if (s.unrecorded.empty()) {
        s.recording = false;
        return check_dispatched(self);
      }
      return arm_on<flush_atom>(s.gather, s.d->at->clock, s.d->at->exec, record_gather_ms,
                                batch_actor{self});
    }
    // A storage that cannot commit fails the batch rather than spinning; the lines not
    // recorded are drained with batch_failed (or run again after a restart).
    s.unrecorded.clear();
    s.recording = false;
    fail(self, "cannot record results: " + r.err.message, nullptr);
  });
}

void leave_budgets(batch_ptr self) {
  for (auto& lane : self->state.lanes) {
    lane.ended = true;
    update(self, lane, lane.held - lane.busy);
  }
}

void on_slots(batch_ptr self, uint64_t key, int32_t granted, int32_t asked) {
  auto& st = self->state;
  for (size_t i = 0; i < st.lanes.size(); ++i) {
    auto& lane = st.lanes[i];
    if (lane.key != key) continue;
    lane.held += granted;
    lane.wished = std::max(0, lane.wished - granted);
    lane.owed += asked;
    if (asked > 0) update(self, lane, std::min(lane.owed, lane.held - lane.busy));
    pump_lane(self, i);
    return check_dispatched(self);
  }
}

void abort_inflight(batch_ptr self) {
  for (auto& [key, req] : self->state.inflight) req.abort->abort();
}

void check_dispatched(batch_ptr self) {
  auto& st = self->state;
  if (!st.dispatching || !st.inflight.empty() || st.recording || st.failing > 0) return;
  for (const auto& lane : st.lanes)
    if (!lane.ended) return;
  st.dispatching = false;
  leave_budgets(self);
  if (st.shutting_down) return end(self);  // resumed at the next start
  finish(self);
}

}  // namespace sy::actors::detail
