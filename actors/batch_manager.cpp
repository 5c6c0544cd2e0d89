// The batch manager's actor: the changes of the Files and Batch API, starting the batches' actors
// (actors/batch_actor.hpp), recovery at start and the file-expiry sweep. Its file I/O runs on the
// blocking executor and answers by message (io_done); its commits are requests to the writer.

#include "actors/batch_manager.hpp"

#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <functional>
#include <map>
#include <set>

#include <boost/asio/post.hpp>
#include <caf/stateful_actor.hpp>
#include <caf/typed_event_based_actor.hpp>

#include "actors/batch_front.hpp"
#include "actors/detail/actor_timer.hpp"
#include "actors/detail/batch_io.hpp"
#include "config/validate.hpp"
#include "runtime/log.hpp"
#include "runtime/metrics.hpp"
#include "runtime/trace.hpp"
#include "runtime/ulid.hpp"

namespace sy::actors {
namespace {

namespace asio = boost::asio;
namespace fs = std::filesystem;

constexpr int64_t sweep_interval_ms = 1'000;

struct manager_state {
  batch_manager_deps d;
  std::optional<batch_reads> reads;
  runtime::ulid_generator ids;
  bool stopping = false;                  ///< `stop` came: no batch starts, the sweep ends
  std::shared_ptr<runtime::timer> sweep;  ///< the file-expiry sweep's wait
  uint64_t next_step = 0;
  /// What to do when each file I/O step under way answers, by its key.
  std::map<uint64_t, std::function<void(std::string&)>> steps;
  static inline const char* name = "batch_manager";

  const batch_deps& b() const { return *d.batches; }
  int64_t now_ms() const { return b().at->clock.now_ms(); }
};

using manager_ptr = batch_manager_actor::stateful_pointer<manager_state>;
using promise = caf::typed_response_promise<batch_answer>;
using committed = result<storage::op_reply>;

template <class T>
batch_answer answer(T value) {
  return batch_answer{core::reply{std::move(value)}};
}

/// Answers the request of `rp` with `value` (an error, a record, done).
template <class T>
void reply(promise& rp, T value) {
  rp.deliver(answer(std::move(value)));
}

error shutting_down() { return make_error(errc::shutting_down, "the server is shutting down"); }
error no_batch(const std::string& id) {
  return make_error(errc::batch_not_found, "No such batch: '" + id + "'.", "batch_id");
}

bool refuses(const manager_state& st) { return st.stopping || *st.b().stopping; }

/// A request answered at once with `e` (refused before anything was done).
promise answered(manager_ptr self, error e) {
  auto rp = self->make_response_promise<batch_answer>();
  reply(rp, std::move(e));
  return rp;
}

/// Runs `work` (file I/O: it returns why it failed, or nothing) on the blocking executor; `then`
/// gets the answer on the actor.
void off_thread(manager_ptr self, std::function<std::string()> work,
                std::function<void(std::string&)> then) {
  auto& st = self->state;
  const uint64_t key = ++st.next_step;
  st.steps.emplace(key, std::move(then));
  asio::post(st.b().blocking, [work = std::move(work), key, me = batch_manager_actor{self}] {
    caf::anon_send(me, io_done{key, work()});
  });
}

/// Runs `work` on the blocking executor; nothing waits for it (removing bytes nobody needs).
void in_background(manager_ptr self, std::function<void()> work) {
  asio::post(self->state.b().blocking, std::move(work));
}

void on_io_done(manager_ptr self, io_done& done) {
  auto it = self->state.steps.find(done.key);
  if (it == self->state.steps.end()) return;
  auto then = std::move(it->second);
  self->state.steps.erase(it);
  then(done.failure);
}

/// Commits `op` through the storage writer; `then` gets the reply or why it was not committed.
void commit(manager_ptr self, storage::write_op op, const std::function<void(committed)>& then) {
  self->request(self->state.b().writer, caf::infinite, write_request{std::move(op)})
      .then(
          [then](write_reply& r) {
            if (!r.reply) return then(std::move(r.err));
            then(std::move(*r.reply));
          },
          [self, then](caf::error& e) {
            then(make_error(errc::storage_unavailable, self->system().render(e)));
          });
}

/// Spawns the batch's actor (it ends at once when one already runs the batch; `patient`:
/// spawn_batch_actor's), unless the manager stopped.
void launch(manager_ptr self, const std::string& batch_id, bool patient = false) {
  if (!self->state.stopping) spawn_batch_actor(self->state.d.batches, batch_id, patient);
}

// --- recovery and the file-expiry sweep ---------------------------------------------------------

/// The file I/O of recovery: the directories, and the leftovers of a crash — partial uploads,
/// files without a record (written by a finalization that did not commit), plans of batches that
/// are finished or gone (not in `active`).
std::string recover_files(const batch_deps& b, const std::string& uploads,
                          const std::set<std::string>& active) {
  std::error_code ec;
  for (const auto& dir : {b.paths.files_dir, uploads, b.paths.batches_dir}) {
    fs::create_directories(dir, ec);
    if (ec) return "cannot create " + dir + ": " + ec.message();
  }
  for (const auto& entry : fs::directory_iterator(uploads, ec)) fs::remove(entry.path(), ec);
  {
    auto txn = b.env->begin_read();
    for (const auto& entry : fs::directory_iterator(b.paths.files_dir, ec)) {
      auto name = entry.path().filename().string();
      if (name == "uploads" || storage::get_file(txn, name)) continue;
      log::warn("batch", "removing a file without a record", {{"path", entry.path().string()}});
      fs::remove(entry.path(), ec);
    }
  }
  for (const auto& entry : fs::directory_iterator(b.paths.batches_dir, ec))
    if (!active.count(entry.path().filename().string())) fs::remove_all(entry.path(), ec);
  return {};
}

void arm_sweep(manager_ptr self) {
  auto& st = self->state;
  if (st.stopping) return;
  detail::arm_on<tick_atom>(st.sweep, st.b().at->clock, st.b().at->exec, sweep_interval_ms,
                            batch_manager_actor{self});
}

/// Deletes up to 100 expired files, then waits for the next round.
void sweep(manager_ptr self) {
  auto& st = self->state;
  if (st.stopping) return;
  std::vector<std::string> due;
  {
    auto txn = st.b().env->begin_read();
    due = storage::expired_files(txn, st.now_ms() / 1000, 100);
  }
  if (due.empty()) return arm_sweep(self);
  auto left = std::make_shared<size_t>(due.size());
  for (const auto& id : due) {
    commit(self, storage::delete_file_op{"", id}, [self, id, left](committed r) {
      metrics::file_operation("delete", "garbage-collector", metrics::once(static_cast<bool>(r)));
      if (r && r->file) {
        in_background(self, [path = self->state.b().paths.file(id), id] {
          ::unlink(path.c_str());
          log::info("batch", "file expired and deleted", {{"file_id", id}});
        });
      }
      if (--*left == 0) arm_sweep(self);
    });
  }
}

promise start(manager_ptr self) {
  auto& st = self->state;
  auto rp = self->make_response_promise<batch_answer>();
  std::set<std::string> active;
  {
    auto txn = st.b().env->begin_read();
    for (const auto& id : storage::active_batches(txn)) {  // each resumes from record and plans
      auto b = storage::get_batch(txn, id);
      metrics::batch_recovered(b ? storage::to_string(b->status) : "unknown", "resumed");
      active.insert(id);
    }
  }
  off_thread(
      self,
      [deps = st.d.batches, uploads = st.reads->upload_dir(), active] {
        return recover_files(*deps, uploads, active);
      },
      [self, rp, active](std::string& failure) mutable {
        if (!failure.empty()) return reply(rp, make_error(errc::storage_error, failure));
        for (const auto& id : active) launch(self, id);
        if (!active.empty()) log::info("batch", "resuming batches", {{"count", active.size()}});
        arm_sweep(self);
        reply(rp, core::done{});
      });
  return rp;
}

// --- files --------------------------------------------------------------------------------------

promise create_file(manager_ptr self, core::create_file& m) {
  auto& st = self->state;
  staged_file up = std::move(m.request).take();
  auto& f = up.record;
  if (refuses(st)) {
    in_background(self, [staged = up.path] { ::unlink(staged.c_str()); });
    return answered(self, shutting_down());
  }
  auto rp = self->make_response_promise<batch_answer>();
  if (f.id.empty()) f.id = "file-" + st.ids.next(st.now_ms());
  if (f.created_at == 0) f.created_at = st.now_ms() / 1000;
  if (up.expires_after_s > 0) f.expires_at = f.created_at + up.expires_after_s;
  std::string path = st.b().paths.file(f.id);
  auto move_in = [staged = up.path, path, dir = st.b().paths.files_dir]() -> std::string {
    if (std::rename(staged.c_str(), path.c_str()) != 0) {
      auto e = detail::sys_error("cannot move the upload to", path);
      ::unlink(staged.c_str());
      return e;
    }
    detail::fsync_dir(dir);
    return {};
  };
  off_thread(self, std::move(move_in), [self, rp, f = f, path](std::string& failure) mutable {
    if (!failure.empty()) {
      metrics::file_operation("store", "apiserver", "exhausted");
      return reply(rp, make_error(errc::storage_unavailable, failure));
    }
    commit(self, storage::create_file_op{f}, [self, rp, f, path](const committed& r) mutable {
      metrics::file_operation("store", "apiserver", metrics::once(static_cast<bool>(r)));
      if (!r) {
        in_background(self, [path] { ::unlink(path.c_str()); });
        return reply(rp, r.error());
      }
      reply(rp, std::move(f));
    });
  });
  return rp;
}

promise delete_file(manager_ptr self, core::delete_file& m) {
  if (refuses(self->state)) return answered(self, shutting_down());
  auto rp = self->make_response_promise<batch_answer>();
  commit(self, storage::delete_file_op{m.tenant, m.id}, [self, rp, id = m.id](committed r) mutable {
    metrics::file_operation("delete", "apiserver", metrics::once(static_cast<bool>(r)));
    if (!r) return reply(rp, r.error());
    if (!r->file)
      return reply(rp, make_error(errc::file_not_found, "No such file: '" + id + "'.", "file_id"));
    // A batch still reading the file keeps its descriptor open; the bytes go when it closes it.
    off_thread(
        self,
        [path = self->state.b().paths.file(id)] {
          ::unlink(path.c_str());
          return std::string();
        },
        [rp, file = std::move(*r->file)](std::string&) mutable { reply(rp, file); });
  });
  return rp;
}

// --- batches ------------------------------------------------------------------------------------

/// The new batch's record for `req`, or why it may not be created (its input file, its webhook).
result<storage::batch_record> new_batch(manager_state& st, const batch_request& req) {
  auto input = st.reads->get_file(req.tenant, req.input_file_id);
  if (!input)
    return make_error(errc::file_not_found, "No such file: '" + req.input_file_id + "'.",
                      "input_file_id");
  if (input->purpose != "batch")
    return make_error(errc::invalid_value,
                      "The input file must have been uploaded with purpose 'batch', not '" +
                          input->purpose + "'.",
                      "input_file_id");
  // The configured default applies to a batch as to a job; the target's network is checked here.
  const auto& cfg = st.b().at->cfg;
  std::string webhook_url = req.webhook_url.empty() ? cfg.webhook_url : req.webhook_url;
  if (!webhook_url.empty()) {
    if (auto ok = runtime::check_webhook_url(webhook_url, *st.d.webhooks); !ok) return ok.error();
  }
  const int64_t now = st.now_ms();
  storage::batch_record b;
  b.id = "batch_" + st.ids.next(now);
  b.tenant = req.tenant;
  b.endpoint = req.endpoint;
  b.input_file_id = req.input_file_id;
  b.completion_window = req.completion_window;
  b.created_at = now / 1000;
  b.deadline_ms = now + req.completion_window_ms;
  b.expires_at = b.deadline_ms / 1000;
  b.metadata = req.metadata;
  b.output_expires_after = req.output_expires_after;
  b.trace = trace::to_keep(req.trace);
  b.trace_state = req.trace.state;
  b.max_inflight = req.max_inflight;
  b.webhook_url = std::move(webhook_url);
  b.max_attempts = req.max_attempts > 0 ? req.max_attempts : cfg.default_max_attempts;
  return b;
}

promise create_batch(manager_ptr self, core::create_batch& m) {
  auto& st = self->state;
  if (refuses(st)) return answered(self, shutting_down());
  auto rp = self->make_response_promise<batch_answer>();
  batch_request req = std::move(m.request).take();
  auto b = new_batch(st, req);
  if (!b) {
    reply(rp, b.error());
    return rp;
  }
  const int64_t now = st.now_ms();
  commit(self, storage::create_batch_op{*b}, [self, rp, b = *b, now](committed r) mutable {
    if (!r) return reply(rp, r.error());
    if (r->what == storage::op_reply::kind::not_found)
      return reply(rp, make_error(errc::file_not_found, "No such file: '" + b.input_file_id + "'.",
                                  "input_file_id"));
    trace::record_child(b.id, b.trace, "submit", trace::span_kind::server, now,
                        self->state.now_ms());
    log::info("batch", "batch created",
              {{"batch_id", b.id},
               {"input_file_id", b.input_file_id},
               {"endpoint", b.endpoint},
               {"tenant", b.tenant}});
    launch(self, b.id);
    reply(rp, std::move(*r->batch));
  });
  return rp;
}

promise cancel_batch(manager_ptr self, core::cancel_batch& m) {
  auto& st = self->state;
  if (refuses(st)) return answered(self, shutting_down());
  auto rp = self->make_response_promise<batch_answer>();
  storage::cancel_batch_op op{m.tenant, m.id, st.now_ms()};
  commit(self, std::move(op), [self, rp, id = m.id](committed r) mutable {
    if (!r) return reply(rp, r.error());
    using kind = storage::op_reply::kind;
    if (r->what == kind::not_found) return reply(rp, no_batch(id));
    if (r->what == kind::conflict)
      return reply(
          rp,
          make_error(errc::batch_not_cancellable,
                     "Batch " + id + " is already " +
                         std::string(storage::to_string(r->batch->status)) +
                         "; only validating, in_progress or finalizing batches can be cancelled.",
                     "batch_id"));
    if (r->batch->status == storage::batch_status::cancelling) {
      // The batch's actor stops; when none runs it here (it ended a moment ago, or gave up
      // until the next start), the new one finishes the cancel — the registry lets only one run.
      self->send(self->state.b().jobs, cancel_atom::value, id);
      launch(self, id);
    }
    reply(rp, std::move(*r->batch));
  });
  return rp;
}

// --- rerun (the jobs API's, docs/batches.md "Rerun") --------------------------------------------

/// Why batch `b` cannot be rerun for want of a file's bytes (the operation checks the records),
/// or nothing: file I/O, on the blocking executor.
std::string missing_file(const batch_paths& paths, const storage::batch_record& b) {
  for (const auto& [what, fid] :
       {std::pair{"input", b.input_file_id}, std::pair{"error", b.error_file_id},
        std::pair{"output", b.output_file_id}}) {
    if (!fid.empty() && ::access(paths.file(fid).c_str(), R_OK) != 0) {
      std::string why = "job " + b.id;
      why.append(" cannot be rerun: its ").append(what).append(" file ").append(fid);
      return why.append(" was deleted");
    }
  }
  return {};
}

/// The new run's commit, once its files were found.
void commit_rerun(manager_ptr self, promise rp, const storage::batch_record& b) {
  // The window it was created with, restarted; a window no longer configured still parses.
  int64_t window_ms = b.deadline_ms - b.created_at * 1000;
  if (auto w = config::parse_completion_windows(b.completion_window); w && w->size() == 1)
    window_ms = w->front().ms;
  storage::rerun_batch_op op{b.tenant, b.id, self->state.now_ms(), window_ms};
  commit(self, std::move(op), [self, rp, id = b.id](committed r) mutable {
    if (!r) return reply(rp, r.error());
    using kind = storage::op_reply::kind;
    if (r->what == kind::not_found) return reply(rp, no_batch(id));
    if (r->what == kind::refused && r->refusal) return reply(rp, *r->refusal);
    log::info(
        "batch", "batch rerun",
        {{"batch_id", id}, {"run", r->batch->run}, {"error_file_id", r->batch->error_file_id}});
    launch(self, id, true);
    reply(rp, std::move(*r->batch));
  });
}

promise rerun_batch(manager_ptr self, core::rerun_batch& m) {
  auto& st = self->state;
  if (refuses(st)) return answered(self, shutting_down());
  auto rp = self->make_response_promise<batch_answer>();
  auto b = st.reads->get_batch(m.tenant, m.id);
  if (!b) {
    reply(rp, no_batch(m.id));
    return rp;
  }
  off_thread(
      self, [paths = st.b().paths, b = *b] { return missing_file(paths, b); },
      [self, rp, b = *b](std::string& why) mutable {
        if (!why.empty())
          return reply(rp, make_error(errc::job_not_rerunnable, std::move(why), "id"));
        commit_rerun(self, rp, b);
      });
  return rp;
}

/// Deletes a finished batch (storage::delete_batch_op; a running one is refused
/// job_not_deletable). Its files stay: they are the Files API's.
promise delete_batch(manager_ptr self, core::delete_batch& m) {
  if (refuses(self->state)) return answered(self, shutting_down());
  auto rp = self->make_response_promise<batch_answer>();
  commit(self, storage::delete_batch_op{m.tenant, m.id}, [rp, id = m.id](committed r) mutable {
    if (!r) return reply(rp, r.error());
    using kind = storage::op_reply::kind;
    if (r->what == kind::not_found)
      return reply(rp, make_error(errc::job_not_found, "no job with id '" + id + "'", "id"));
    if (r->what == kind::refused && r->refusal) return reply(rp, *r->refusal);
    log::info("batch", "batch deleted", {{"batch_id", id}});
    reply(rp, std::move(*r->batch));
  });
  return rp;
}

batch_manager_actor::behavior_type manager(manager_ptr self, batch_manager_deps deps) {
  auto& st = self->state;
  st.d = std::move(deps);
  st.reads.emplace(st.b());
  return {
      [=](start_atom) { return start(self); },
      [=](stop_atom) {
        self->state.stopping = true;
        detail::disarm(self->state.sweep);
        return answer(core::done{});
      },
      [=](core::create_file& m) { return create_file(self, m); },
      [=](core::delete_file& m) { return delete_file(self, m); },
      [=](core::create_batch& m) { return create_batch(self, m); },
      [=](core::cancel_batch& m) { return cancel_batch(self, m); },
      [=](core::rerun_batch& m) { return rerun_batch(self, m); },
      [=](core::delete_batch& m) { return delete_batch(self, m); },
      [=](tick_atom) { sweep(self); },
      [=](io_done& d) { on_io_done(self, d); },
  };
}

}  // namespace

std::shared_ptr<const batch_deps> make_batch_deps(const engine_context& ctx,
                                                  storage::environment& env,
                                                  asio::any_io_executor blocking,
                                                  std::shared_ptr<batch_tries> tries) {
  const fs::path data(ctx.cfg.data_dir);
  batch_paths paths{(data / "files").string(), (data / "batches").string()};
  return std::make_shared<const batch_deps>(
      batch_deps{&ctx, &env, ctx.writer, ctx.jobs, ctx.dispatchers, &ctx.gateways, &ctx.stopping,
                 std::move(blocking), std::move(paths), std::move(tries)});
}

batch_manager_actor spawn_batch_manager(batch_manager_deps d) {
  return d.batches->at->sys.spawn(manager, std::move(d));
}

}  // namespace sy::actors
