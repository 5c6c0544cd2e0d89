// After dispatch: the lines that never ran are drained into the error file with the stop code,
// the recorded lines are written into the output and error files, and the batch is made
// terminal — each step retried with backoff (batch_retry_policy) when it fails. The file work
// runs on the batch manager's blocking thread and answers the actor by message.

#include <unistd.h>

#include <filesystem>

#include "actors/detail/actor_timer.hpp"
#include "actors/detail/batch_io.hpp"
#include "actors/detail/batch_state.hpp"
#include "runtime/backoff.hpp"
#include "runtime/batch_output.hpp"
#include "runtime/failpoint.hpp"
#include "runtime/log.hpp"
#include "runtime/metrics.hpp"

namespace sy::actors::detail {
namespace {

namespace fs = std::filesystem;
namespace plan = runtime::batch;
using runtime::batch::error_line;
using runtime::batch::request_id_for;
using runtime::batch::stop_message;

constexpr size_t drain_chunk = 1'000;  ///< error lines per commit when draining

/// What a drain step needs, copied for the blocking thread.
struct drain_job {
  std::shared_ptr<drain_cursor> cursor;
  storage::environment* env;
  std::string id, dir, code, message;
  std::array<uint64_t, 2> seed;
  std::shared_ptr<const input_file> input;  ///< none when it could not be opened
};

}  // namespace

storage::batch_line unrun_line(const input_file* input, const std::array<uint64_t, 2>& seed,
                               const plan::plan_entry& e, uint64_t slot, const std::string& code,
                               const std::string& message) {
  std::string custom_id;
  if (input)
    if (auto text = plan::read_at(input->fd, e.offset, e.length))
      if (auto parsed = plan::parse_request_line(*text)) custom_id = parsed->custom_id;
  return storage::batch_line{
      slot, false, error_line(request_id_for(seed, e.offset), custom_id, code, message), {}, {}};
}

namespace {

/// The next chunk of error lines for lines without a result (on the blocking thread): reading
/// and matching a chunk at a time, each committed before the next is read, so a try that fails
/// part way keeps what it committed and the next try skips those lines.
drained_lines next_chunk(const drain_job& j) {
  drained_lines out;
  auto& c = *j.cursor;
  auto txn = j.env->begin_read();
  while (out.lines.size() < drain_chunk && c.model_index < c.models.size()) {
    const auto& model = c.models[c.model_index];
    if (!c.reader) {
      auto r = plan::plan_reader::open(j.dir + "/plans/" + model.safe_name + ".plan");
      if (!r) {
        out.failure = "cannot open the plan of model " + model.model + ": " + r.error().message;
        return out;
      }
      c.reader.emplace(std::move(*r));
      c.position = 0;
    }
    plan::plan_entry e{};
    if (!c.reader->next(e)) {
      if (c.reader->failed()) {
        out.failure = "cannot read the plan of model " + model.model;
        return out;
      }
      c.reader.reset();
      ++c.model_index;
      continue;
    }
    const uint64_t slot = storage::batch_slot(c.model_index, c.position++);
    if (storage::has_batch_line(txn, j.id, slot)) continue;
    out.lines.push_back(unrun_line(j.input.get(), j.seed, e, slot, j.code, j.message));
  }
  return out;
}

void drain_step(batch_ptr self) {
  auto& st = self->state;
  drain_job j{st.cursor,    st.d->env,
              st.id,        st.d->paths.batch(st.id),
              st.stop_code, stop_message(st.stop_code),
              st.id_seed,   st.input};
  off_thread(self, [j = std::move(j)] { return next_chunk(j); });
}

/// Every line without a result gets an error line with the stop code; try `tries`.
void drain(batch_ptr self, int tries) {
  auto& st = self->state;
  st.tries = tries;
  st.cursor = std::make_shared<drain_cursor>();
  st.cursor->models = st.plans->models;
  drain_step(self);
}

void finalize(batch_ptr self, int tries);

/// Logs failed try `tries` of `what` and waits the policy's delay before `next`; ends the actor
/// instead when the engine is shutting down (the batch resumes at the next start).
void back_off(batch_ptr self, const char* what, const std::string& failure,
              std::function<void()> next) {
  auto& st = self->state;
  const batch_retry_policy policy = st.d->tries->policy();
  // Jitter (1.0: none) spreads clients that failed together; one batch's retries need none.
  const int64_t delay =
      runtime::backoff_delay_ms(st.tries - 1, policy.initial.count(), policy.max.count(), 1.0);
  log::warn("batch", std::string("cannot ") + what + " the batch; retrying",
            {{"batch_id", st.id}, {"try", st.tries}, {"retry_in_ms", delay}, {"error", failure}});
  if (st.shutting_down || !st.pause) return end(self);
  st.pausing = true;
  st.after_pause = std::move(next);
  arm<tick_atom>(st.pause, delay, batch_actor{self});
}

/// The drain is over: "" when every line has its result, else why the last try gave up.
void drained(batch_ptr self, std::string undrained) {
  auto& st = self->state;
  st.undrained = std::move(undrained);
  st.cursor.reset();
  close_input(self);
  disarm(st.window);
  finalize(self, 1);
}

void drain_failed(batch_ptr self, const std::string& failure) {
  auto& st = self->state;
  st.d->tries->failed();
  if (st.tries >= st.d->tries->policy().tries) {
    log::error("batch", "cannot drain the batch; giving up",
               {{"batch_id", st.id}, {"tries", st.tries}, {"error", failure}});
    return drained(self, "after " + std::to_string(st.tries) + " tries: " + failure);
  }
  back_off(self, "drain", failure, [self, next = st.tries + 1] { drain(self, next); });
}

/// Streams the recorded lines into the output and error files (on the blocking thread).
written_files write_files(const batch_deps& d, const storage::batch_record& b,
                          const std::string& out_id, const std::string& err_id, int64_t now_s) {
  runtime::batch::result_file out(d.paths.file(out_id)), err(d.paths.file(err_id));
  // A rerun's output file holds the previous run's output lines, then this run's.
  if (b.run > 1 && !b.output_file_id.empty()) out.append_file(d.paths.file(b.output_file_id));
  {
    auto txn = d.env->begin_read();
    storage::scan_batch_lines(txn, b.id, [&](uint64_t, bool ok, std::string_view text) {
      (ok ? out : err).append(text);
      return !(out.failed() && err.failed());  // nothing more can be written
    });
  }
  // Each file on its own: when one cannot be written the other may still be kept.
  out.commit();
  err.commit();
  fsync_dir(d.paths.files_dir);
  auto record = [&](const runtime::batch::result_file& f, const std::string& fid,
                    const char* kind) {
    storage::file_record r;
    r.id = fid;
    r.tenant = b.tenant;
    r.filename = b.id + "_" + kind + ".jsonl";
    r.purpose = "batch_output";
    r.bytes = f.bytes();
    r.created_at = now_s;
    r.expires_at = b.output_expires_after > 0 ? now_s + b.output_expires_after : 0;
    return r;
  };
  written_files w;
  if (out.created()) w.output = record(out, out_id, "output");
  if (err.created()) w.error = record(err, err_id, "error");
  w.output_failure = out.failure();
  w.error_failure = err.failure();
  w.output_lines = out.lines();
  w.error_lines = err.lines();
  return w;
}

/// Removes the files of `w` that are in place (not referenced by any record).
void remove(batch_ptr self, const written_files& w) {
  if (w.output) ::unlink(self->state.d->paths.file(w.output->id).c_str());
  if (w.error) ::unlink(self->state.d->paths.file(w.error->id).c_str());
}

/// Both files are written from the recorded lines in slot order (model by model, each in its
/// plan's order; OpenAI does not keep input order either), so each line appears exactly once
/// whatever happened before; a crash here redoes finalization from the same lines.
void finalize(batch_ptr self, int tries) {
  auto& st = self->state;
  st.tries = tries;
  runtime::failpoint("batch_finalize_start");
  auto b = read_batch(st);
  if (!b) return end(self);
  const int64_t now_ms = st.d->at->clock.now_ms();
  if (tries == 1) st.step_started_ms = now_ms;
  finalize_try f{"file-" + st.ids.next(now_ms), "file-" + st.ids.next(now_ms), std::move(*b),
                 tries >= st.d->tries->policy().tries};
  off_thread(self, [d = st.d, f, now_s = now_ms / 1000] {
    return write_files(*d, f.batch, f.output_id, f.error_id, now_s);
  });
  st.finalizing = std::move(f);
}

/// A try failed: the last one gives up until the next start (only a storage that cannot commit
/// ends here: files that cannot be written are given up on the last try), others back off.
void finalize_failed(batch_ptr self, const std::string& failure) {
  auto& st = self->state;
  if (st.finalizing->last) {
    log::error("batch", "cannot finalize the batch; giving up until the next start",
               {{"batch_id", st.id}, {"tries", st.tries}, {"error", failure}});
    return end(self);
  }
  back_off(self, "finalize", failure, [self, next = st.tries + 1] { finalize(self, next); });
}

/// The finalization committed (or found the batch terminal or gone): the plans go, the actor
/// ends.
void finalized(batch_ptr self, const written_files& w, const storage::op_reply& r) {
  auto& st = self->state;
  if (!r.batch) {  // the batch is gone: nothing to finalize
    remove(self, w);
    return end(self);
  }
  const auto& b = *r.batch;
  // Already terminal (finalized before): the files just written are not referenced.
  if (r.what != storage::op_reply::kind::done) remove(self, w);
  std::error_code ec;
  fs::remove_all(st.d->paths.batch(st.id), ec);
  log::info("batch", "batch finished",
            {{"batch_id", st.id},
             {"status", storage::to_string(b.status)},
             {"total", b.total},
             {"completed", b.completed},
             {"failed", b.failed},
             {"output_file_id", b.output_file_id},
             {"error_file_id", b.error_file_id},
             {"finalize_ms", st.d->at->clock.now_ms() - st.step_started_ms}});
  end(self);
}

}  // namespace

void finish(batch_ptr self) {
  auto& st = self->state;
  if (st.shutting_down) return end(self);  // resumed at the next start
  auto b = read_batch(st);
  if (!b || storage::is_terminal(b->status)) return end(self);
  if (b->stop_code.empty()) {
    close_input(self);
    disarm(st.window);
    storage::batch_finalizing_op op{st.id, st.d->at->clock.now_ms()};
    return commit(self, std::move(op), [self](write_reply&) { finalize(self, 1); });
  }
  st.stop_code = b->stop_code;
  // Also without the input file (a system failure may be just that): the lines then carry no
  // custom_id, but every one of them is accounted for.
  if (st.plans) return drain(self, 1);
  drained(self, "");
}

void on_drained(batch_ptr self, drained_lines& d) {
  auto& st = self->state;
  if (!d.failure.empty()) return drain_failed(self, d.failure);
  if (d.lines.empty()) return drained(self, "");
  storage::batch_lines_op op{st.id, std::move(d.lines)};
  commit(self, std::move(op), [self](write_reply& r) {
    if (!r.reply) return drain_failed(self, "cannot record drained lines: " + r.err.message);
    drain_step(self);
  });
}

void on_written(batch_ptr self, written_files& w) {
  auto& st = self->state;
  const auto& f = *st.finalizing;
  const bool incomplete = !w.output_failure.empty() || !w.error_failure.empty();
  metrics::file_operation("store", "processor",
                          !incomplete ? "success"
                          : f.last    ? "exhausted"
                                      : "retry");
  if (incomplete) {
    st.d->tries->failed();
    const auto& failure = w.output_failure.empty() ? w.error_failure : w.output_failure;
    if (!f.last) {
      remove(self, w);  // all or nothing until the last try
      return finalize_failed(self, failure);
    }
    log::error("batch", "cannot write the result files; giving up, the batch fails",
               {{"batch_id", st.id}, {"tries", st.tries}, {"error", failure}});
  }
  runtime::failpoint("batch_files_written");
  storage::batch_finish_op op{st.id, w.output, w.error, st.d->at->clock.now_ms(), std::nullopt};
  if (f.batch.run > 1 && !incomplete) {  // a rerun's counts are the lines of its files
    op.completed = w.output_lines;
    op.failed = w.error_lines;
  }
  const runtime::batch::line_counts counts{f.batch.total, f.batch.completed, f.batch.failed};
  if (auto lost = runtime::batch::lost_message(counts, f.batch.stop_code, st.undrained,
                                               w.output_failure, w.error_failure, st.tries);
      !lost.empty())
    op.failure = storage::batch_error{errc::batch_failed, std::move(lost), "", 0};
  commit(self, std::move(op), [self, w, incomplete](write_reply& r) {
    if (!r.reply) {
      if (!incomplete) self->state.d->tries->failed();
      remove(self, w);  // without a record they would only be removed at the next start
      return finalize_failed(self, "cannot record finalization: " + r.err.message);
    }
    finalized(self, w, *r.reply);
  });
}

void on_pause_over(batch_ptr self) {
  auto& st = self->state;
  st.pausing = false;
  auto next = std::move(st.after_pause);
  st.after_pause = nullptr;
  if (st.shutting_down) return end(self);
  if (next) next();
}

}  // namespace sy::actors::detail
