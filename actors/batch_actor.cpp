// The batch's job actor: its start (claim, ingestion, plans, the input file), its control
// messages (cancel, the completion window, shutdown), failure and its end. Lanes:
// batch_lanes.cpp; after dispatch: batch_finalize.cpp.

#include "actors/batch_actor.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <filesystem>
#include <limits>

#include <boost/asio/strand.hpp>
#include <caf/actor_system.hpp>

#include "actors/detail/actor_timer.hpp"
#include "actors/detail/batch_io.hpp"
#include "actors/detail/batch_state.hpp"
#include "runtime/failpoint.hpp"
#include "runtime/log.hpp"
#include "runtime/trace.hpp"

namespace sy::actors {
namespace detail {
namespace {

namespace fs = std::filesystem;
namespace plan = runtime::batch;

void after_plans(batch_ptr self, bool have_plan);

/// Ingestion failed or found the batch invalid: a batch that is terminal now (failed
/// validation) leaves no plans; one whose failure only set its stop code finishes without them.
void after_failed_ingest(batch_ptr self) {
  auto& st = self->state;
  if (auto now = read_batch(st); now && storage::is_terminal(now->status)) {
    std::error_code ec;
    fs::remove_all(st.d->paths.batch(st.id), ec);
    return end(self);
  }
  finish(self);
}

/// Scans and validates the input file into plans, on the blocking thread.
void ingest(batch_ptr self, const storage::batch_record& b) {
  auto& st = self->state;
  plan::ingest_options o;
  o.input_path = st.d->paths.file(b.input_file_id);
  o.endpoint = b.endpoint;
  o.work_dir = st.d->paths.batch(st.id);
  o.max_lines = st.d->at->cfg.batch_max_lines;
  const gateway_table* gateways = st.d->gateways;
  o.model_known = [gateways](std::string_view model) {
    return gateways->for_model(std::string(model)) != nullptr;
  };
  st.step_started_ms = st.d->at->clock.now_ms();
  off_thread(self, [o = std::move(o), file = b.input_file_id] {
    batch_plans out;
    out.ingested = true;
    auto r = plan::ingest(o);
    if (r)
      out.plans = std::move(*r);
    else
      out.failure = "cannot read the input file " + file + ": " + r.error().message;
    return out;
  });
}

/// A rerun's plans (docs/batches.md, "Rerun"): the lines of the input file whose custom_id is
/// in the previous run's error file, validated and planned as at the first run, but with every
/// model known (a model gone since gets model_not_found lines at dispatch) and no line limit
/// (the file was accepted once). The same files give the same plans, so a rerun resumed after a
/// crash plans its lines into the same slots again and skips those that have a result.
void replan(batch_ptr self, const storage::batch_record& b) {
  auto& st = self->state;
  st.replanning = true;
  plan::ingest_options o;
  o.input_path = st.d->paths.file(b.input_file_id);
  o.endpoint = b.endpoint;
  o.work_dir = st.d->paths.batch(st.id);
  o.max_lines = std::numeric_limits<int64_t>::max();
  st.step_started_ms = st.d->at->clock.now_ms();
  off_thread(self, [o = std::move(o), file = b.input_file_id, errors = b.error_file_id,
                    error_path = st.d->paths.file(b.error_file_id)] {
    batch_plans out;
    out.ingested = true;
    auto ids = plan::result_custom_ids(error_path);
    if (!ids) {
      out.failure = "cannot read the error file " + errors + ": " + ids.error().message;
      return out;
    }
    auto opts = o;  // the selection, on the copy: the task itself is const
    opts.only = std::move(*ids);
    auto r = plan::ingest(opts);
    if (!r)
      out.failure = "cannot read the input file " + file + ": " + r.error().message;
    else if (!r->errors.empty())
      out.failure = "the input file " + file + " changed: " + r->errors.front().message;
    else
      out.plans = std::move(*r);
    return out;
  });
}

/// A rerun's plans are written: they are loaded and dispatched (or drained when it stopped).
void on_replanned(batch_ptr self, batch_plans& p) {
  auto& st = self->state;
  st.replanning = false;
  if (!p.failure.empty()) return fail(self, p.failure, [self] { finish(self); });
  uint64_t lines = 0;
  for (const auto& m : p.plans.models) lines += m.count;
  log::info("batch", "rerun planned",
            {{"batch_id", st.id},
             {"lines", lines},
             {"models", p.plans.models.size()},
             {"ms", st.d->at->clock.now_ms() - st.step_started_ms}});
  // The plans are in place, nothing of this run dispatched yet: a restart plans them again.
  runtime::failpoint("batch_rerun_planned");
  after_plans(self, true);
}

/// Records what ingestion found; a valid batch is then in progress and its plans are loaded.
void on_ingested(batch_ptr self, batch_plans& p) {
  auto& st = self->state;
  if (!p.failure.empty()) return fail(self, p.failure, [self] { after_failed_ingest(self); });
  // The plans and model_map.json are in place, the batch is still validating: a restart must
  // ingest again from scratch rather than trust them.
  if (p.plans.errors.empty()) runtime::failpoint("batch_ingest_map_written");
  storage::batch_ingested_op op;
  op.id = st.id;
  op.total = p.plans.line_count;
  op.now_ms = st.d->at->clock.now_ms();
  for (auto& e : p.plans.errors)
    op.errors.push_back(storage::batch_error{e.code, e.message, e.param, e.line});
  log::info("batch", op.errors.empty() ? "input validated" : "input invalid; batch failed",
            {{"batch_id", st.id},
             {"lines", p.plans.line_count},
             {"bytes", p.plans.bytes},
             {"errors", op.errors.size()},
             {"models", p.plans.models.size()},
             {"ms", st.d->at->clock.now_ms() - st.step_started_ms}});
  commit(self, std::move(op), [self](write_reply& r) {
    if (!r.reply)
      return fail(self, "cannot record validation: " + r.err.message,
                  [self] { after_failed_ingest(self); });
    if (!r.reply->batch || r.reply->batch->status == storage::batch_status::failed)
      return after_failed_ingest(self);
    // Committed in_progress, nothing dispatched yet: a restart loads the plans as they are.
    runtime::failpoint("batch_ingest_committed");
    after_plans(self, true);
  });
}

/// The plans are loaded: open the input file and dispatch, unless the batch stopped meanwhile.
void on_loaded(batch_ptr self, batch_plans& p) {
  auto& st = self->state;
  if (!p.failure.empty())
    return fail(self, "cannot load the batch's plan: " + p.failure, [self] { finish(self); });
  st.plans = std::move(p.plans);
  const auto input = st.d->paths.file(st.input_file_id);
  const int fd = ::open(input.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    return fail(self, sys_error("cannot open the input file", input), [self] { finish(self); });
  st.input = std::make_shared<const input_file>(fd);
  if (st.shutting_down) return end(self);  // resumed at the next start
  if (st.stopped()) return finish(self);
  dispatch(self);
}

void after_plans(batch_ptr self, bool have_plan) {
  auto& st = self->state;
  if (st.shutting_down) return end(self);
  if (!have_plan) return finish(self);
  off_thread(self, [dir = st.d->paths.batch(st.id)] {
    batch_plans out;
    auto r = plan::load_plan(dir);
    if (r)
      out.plans = std::move(*r);
    else
      out.failure = r.error().message;
    return out;
  });
}

/// Runs the batch from where its record says it is.
void start(batch_ptr self) {
  auto& st = self->state;
  auto b = read_batch(st);
  if (!b || storage::is_terminal(b->status)) return end(self);
  st.endpoint = b->endpoint;
  const auto at = trace::of(b->id, b->trace, b->trace_state);
  st.traceparent = at.self.traceparent();
  st.tracestate = at.self.state;
  st.input_file_id = b->input_file_id;
  st.max_inflight = b->max_inflight;
  st.max_attempts = b->max_attempts;
  st.stop_code = b->stop_code;
  // Only this actor records the batch's lines (its claim), so the counts stay as read here.
  st.fresh = b->completed == 0 && b->failed == 0;
  if (b->deadline_ms > 0) {
    st.window = st.d->at->clock.make_timer(boost::asio::make_strand(st.d->at->exec));
    arm<expire_atom>(st.window, b->deadline_ms - st.d->at->clock.now_ms(), batch_actor{self});
  }
  const bool validating = b->status == storage::batch_status::validating;
  if (validating && !st.stopped()) return ingest(self, *b);
  const bool planned = fs::exists(st.d->paths.batch(st.id) + "/model_map.json");
  // A rerun not planned yet is planned even when it stopped meanwhile: its lines are drained
  // from the plans into the new error file.
  if (b->run > 1 && !planned && b->status != storage::batch_status::finalizing)
    return replan(self, *b);
  after_plans(self, !validating && planned);
}

/// The completion window passed: commit the expiry, then stop.
void expire(batch_ptr self) {
  auto& st = self->state;
  if (st.stopped()) return;
  storage::stop_batch_op op{st.id, errc::batch_expired, "", st.d->at->clock.now_ms()};
  commit(self, std::move(op), [self](write_reply& r) {
    if (r.reply && r.reply->batch && r.reply->batch->stop_code == errc::batch_expired) {
      log::info("batch", "completion window passed; stopping", {{"batch_id", self->state.id}});
      stop(self, errc::batch_expired);
    }
  });
}

void on_release(batch_ptr self) {
  stop(self, "");
  // Waiting for a retry: the batch resumes at the next start. Otherwise the step under way
  // (ingestion, dispatch, a commit) sees `shutting_down` when it ends.
  if (self->state.pausing) end(self);
}

constexpr int claim_tries = 200;  ///< a patient claim's tries, claim_retry_ms apart
constexpr int64_t claim_retry_ms = 10;

/// Claims the batch in the job registry, then starts it. With `tries` > 1 (a rerun: the actor of
/// the run that just ended may hold the claim a moment longer) a refused claim is tried again.
void claim(batch_ptr self, int tries) {
  auto& st = self->state;
  self->request(st.d->jobs, caf::infinite, claim_atom::value, st.id, job_control_actor{self})
      .then(
          [self, tries](bool mine) {
            auto& st = self->state;
            if (mine) return start(self);
            if (tries <= 1 || *st.d->stopping) {
              if (tries > 1)
                log::warn("batch",
                          "another actor still runs the batch; it resumes "
                          "at the next start",
                          {{"batch_id", st.id}});
              return self->quit();
            }
            st.pausing = true;
            st.after_pause = [self, tries] { claim(self, tries - 1); };
            arm<tick_atom>(st.pause, claim_retry_ms, batch_actor{self});
          },
          [self](caf::error&) { self->quit(); });
}

batch_actor::behavior_type batch(batch_ptr self, std::shared_ptr<const batch_deps> deps,
                                 std::string id, bool patient) {
  auto& st = self->state;
  st.d = std::move(deps);
  st.id = std::move(id);
  st.id_seed = plan::request_id_seed(st.id);
  st.pause = st.d->at->clock.make_timer(boost::asio::make_strand(st.d->at->exec));
  claim(self, patient ? claim_tries : 1);
  return {
      [=](cancel_atom) { stop(self, errc::batch_cancelled); },
      [=](expire_atom) { expire(self); },
      [=](release_atom) { on_release(self); },
      [=](beat_atom) {},  // no lease to extend: a batch is fenced per line, not per lease
      [=](slot_atom, uint64_t key, int32_t n) { on_slots(self, key, n, 0); },
      [=](yield_atom, uint64_t key, int32_t n) { on_slots(self, key, 0, n); },
      [=](flush_atom) { flush(self); },
      [=](tick_atom) { on_pause_over(self); },
      [=](batch_plans& p) {
        if (!p.ingested) return on_loaded(self, p);
        self->state.replanning ? on_replanned(self, p) : on_ingested(self, p);
      },
      [=](window_done& w) { on_window_done(self, w); },
      [=](drained_lines& d) { on_drained(self, d); },
      [=](written_files& w) { on_written(self, w); },
  };
}

}  // namespace

void commit(batch_ptr self, storage::write_op op, const std::function<void(write_reply&)>& then) {
  self->request(self->state.d->writer, caf::infinite, write_request{std::move(op)})
      .then([then](write_reply& r) { then(r); },
            [self, then](caf::error& e) {
              write_reply r;
              r.err = make_error(errc::storage_unavailable, self->system().render(e));
              then(r);
            });
}

void stop(batch_ptr self, const std::string& code) {
  auto& st = self->state;
  if (code.empty()) {
    st.shutting_down = true;
    disarm(st.pause);  // a retry waiting for its backoff ends; the next start resumes the batch
  } else if (st.stop_code.empty()) {
    st.stop_code = code;
  }
  st.halted = true;
  abort_inflight(self);
  leave_budgets(self);
  check_dispatched(self);
}

void fail(batch_ptr self, std::string why, std::function<void()> next) {
  auto& st = self->state;
  log::error("batch", "batch failed", {{"batch_id", st.id}, {"error", why}});
  storage::stop_batch_op op{st.id, errc::batch_failed, std::move(why), st.d->at->clock.now_ms()};
  ++st.failing;
  commit(self, std::move(op), [self, next = std::move(next)](write_reply&) {
    --self->state.failing;
    stop(self, errc::batch_failed);
    if (next) next();
  });
}

input_file::~input_file() { ::close(fd); }

void close_input(batch_ptr self) { self->state.input.reset(); }

void end(batch_ptr self) {
  auto& st = self->state;
  disarm(st.window);
  disarm(st.pause);
  disarm(st.gather);
  leave_budgets(self);
  close_input(self);
  st.after_pause = nullptr;
  self->quit();
}

}  // namespace detail

batch_actor spawn_batch_actor(std::shared_ptr<const batch_deps> d, std::string id, bool patient) {
  auto& sys = d->at->sys;
  return sys.spawn(detail::batch, std::move(d), std::move(id), patient);
}

}  // namespace sy::actors
