// A batch's lanes: one per model, each reading its plan in order and starting a line whenever it
// holds an idle slot of the model's budget, which it asks the model's dispatcher for by message
// and keeps for its next lines until the dispatcher asks for it back. Each request runs on its
// gateway client's executor and its outcome comes back to the batch's actor as a message;
// results are committed in groups through the storage writer.

#include <utility>  // before any Asio header (Boost 1.74)

#include <algorithm>
#include <chrono>

#include <boost/asio/co_spawn.hpp>

#include "actors/batch_response.hpp"
#include "actors/detail/batch_state.hpp"
#include "runtime/log.hpp"

namespace sy::actors::detail {
namespace {

namespace asio = boost::asio;
namespace plan = runtime::batch;
using runtime::batch::error_line;
using runtime::batch::request_id_for;

/// Results gathered before a commit. A scheduling delay on the real clock (CAF's), not a time
/// the engine keeps (it only groups fsyncs), so it does not follow the injected clock: a test
/// that holds its manual clock still must not stall every result commit.
constexpr std::chrono::milliseconds record_gather{5};

/// Tells the lane's dispatcher that it gives `give_back` slots back and how many more it wants:
/// enough for the per-model limit while lines remain, none once it ended.
void update(batch_ptr self, batch_lane& lane, int32_t give_back) {
  auto& st = self->state;
  give_back = std::clamp(give_back, 0, lane.held - lane.busy);
  lane.held -= give_back;
  lane.owed = std::max(0, lane.owed - give_back);
  int32_t want = 0;
  if (!lane.ended) {
    const uint64_t left = lane.reader.size() - lane.position + (lane.next ? 1 : 0);
    const auto desired = static_cast<int32_t>(
        std::min<uint64_t>(std::max(1, st.ctx->cfg.per_model_concurrency), lane.busy + left));
    want = std::max(0, desired - lane.held);
  }
  if (give_back == 0 && want == lane.wished) return;
  lane.wished = want;
  self->send(lane.owner, slot_update{lane.key, give_back, want, true}, slot_holder_actor{self});
}

/// Hands a result to the next commit of results. A result not yet committed when the process
/// dies is simply run again; the first committed result per line wins (storage/batch_ops.hpp).
void record(batch_ptr self, storage::batch_line line) {
  auto& st = self->state;
  st.unrecorded.push_back(std::move(line));
  if (st.recording) return;
  st.recording = true;
  self->delayed_send(self, record_gather, flush_atom::value);
}

/// The next line of the lane's plan that has no result yet; false at its end.
bool next_line(batch_ptr self, batch_lane& lane) {
  auto& st = self->state;
  plan::plan_entry e{};
  while (lane.reader.next(e)) {
    const uint64_t slot = storage::batch_slot(lane.model_index, lane.position++);
    if (!st.fresh) {
      auto txn = st.mgr->env_.begin_read();
      if (storage::has_batch_line(txn, st.id, slot)) continue;  // done before a restart
    }
    lane.next.emplace(e, slot);
    return true;
  }
  return false;
}

/// A line of `lane` no longer needs its slot: a slot asked back (or of an ended lane) goes back
/// now, the others serve the lane's next lines.
void line_done(batch_ptr self, batch_lane& lane) {
  --lane.busy;
  update(self, lane, lane.owed > 0 || lane.ended ? 1 : 0);
}

/// Reads the line and sends it, holding one of the lane's slots until it ends.
void start_line(batch_ptr self, size_t lane_index, plan::plan_entry e, uint64_t slot) {
  auto& st = self->state;
  auto& lane = st.lanes[lane_index];
  ++lane.busy;
  auto text = plan::read_at(st.fd, e.offset, e.length);
  if (!text) {
    line_done(self, lane);
    return fail(self, "cannot read the input file: " + text.error().message, nullptr);
  }
  auto parsed = plan::parse_request_line(*text);
  if (!parsed) {
    line_done(self, lane);
    return fail(self,
                "input line at byte " + std::to_string(e.offset) +
                    " no longer parses: " + parsed.error().message,
                nullptr);
  }
  std::string req_id = request_id_for(st.id_seed, e.offset);
  if (!lane.gw) {
    line_done(self, lane);
    return record(self,
                  storage::batch_line{slot,
                                      false,
                                      error_line(req_id, parsed->custom_id, errc::model_not_found,
                                                 "No gateway serves model '" + lane.model + "'."),
                                      {}});
  }
  const uint64_t key = st.next_key++;
  auto abort = std::make_shared<runtime::abort_handle>();
  st.inflight.emplace(key,
                      line_request{lane_index, slot, std::move(req_id), parsed->custom_id, abort});
  asio::co_spawn(
      lane.gw->executor(),
      lane.gw->send(runtime::gateway_request{st.endpoint, std::move(parsed->body)},
                    std::move(abort)),
      [me = batch_actor{self}, key](const std::exception_ptr& ex, runtime::gateway_outcome o) {
        if (ex) {
          o = {};
          o.error = "the request failed inside the engine";
        }
        caf::anon_send(me, line_outcome{key, std::move(o)});
      });
}

/// Starts lines on one lane while it has idle slots; an ended lane gives its idle slots back.
void pump_lane(batch_ptr self, size_t lane_index) {
  auto& st = self->state;
  auto& lane = st.lanes[lane_index];
  while (!st.halted && !lane.ended && lane.held > lane.busy) {
    if (!lane.next && !next_line(self, lane)) {
      lane.ended = true;
      break;
    }
    auto [e, slot] = *lane.next;
    lane.next.reset();
    start_line(self, lane_index, e, slot);
  }
  if (!lane.ended && !st.halted && !lane.next && !next_line(self, lane)) lane.ended = true;
  update(self, lane, lane.ended ? lane.held - lane.busy : 0);
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
    auto reader = plan::plan_reader::open(st.mgr->batch_dir(st.id) + "/plans/" +
                                          models[i].safe_name + ".plan");
    if (!reader) {
      fail(self, "cannot open the plan of model " + models[i].model + ": " + reader.error().message,
           nullptr);
      break;
    }
    batch_lane lane{std::move(*reader)};
    lane.model = models[i].model;
    lane.model_index = i;
    lane.gw = st.ctx->gateway_for(lane.model);
    lane.owner = st.ctx->dispatcher_for(lane.model);
    lane.key = next_slot_key();
    st.lanes.push_back(std::move(lane));
  }
  pump(self);
}

void pump(batch_ptr self) {
  auto& st = self->state;
  for (size_t i = 0; i < st.lanes.size(); ++i) pump_lane(self, i);
  check_dispatched(self);
}

void on_line_outcome(batch_ptr self, line_outcome& o) {
  auto& st = self->state;
  auto it = st.inflight.find(o.key);
  if (it == st.inflight.end()) return;
  auto req = std::move(it->second);
  st.inflight.erase(it);
  line_done(self, st.lanes[req.lane]);
  // Aborted (stopped): drained with the stop code, or run again after the restart.
  if (!req.abort->aborted()) {
    const auto& out = o.outcome;
    if (out.got_response) {
      record(self, response_line(req.slot, req.request_id, req.custom_id, out));
    } else {
      record(self, storage::batch_line{
                       req.slot,
                       false,
                       error_line(req.request_id, req.custom_id, errc::gateway_unreachable,
                                  "The gateway could not be reached after " +
                                      std::to_string(out.tries) + " tries: " + out.error),
                       {}});
    }
  }
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
      return self->delayed_send(self, record_gather, flush_atom::value);
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
