#include "actors/list_ingest.hpp"

#include <unistd.h>

#include <memory>
#include <set>

#include <caf/stateful_actor.hpp>
#include <caf/typed_event_based_actor.hpp>

#include "actors/detail/actor_timer.hpp"
#include "actors/http_task.hpp"
#include "actors/task_file.hpp"
#include "runtime/failpoint.hpp"
#include "runtime/log.hpp"
#include "runtime/thread_name.hpp"

namespace sy::actors {
namespace {

/// Errors kept in the job: the first bad lines, as a batch keeps them.
constexpr size_t max_errors = 100;
constexpr int64_t retry_pause_ms = 1'000;  // of the engine's clock
constexpr int max_io_tries = 3;

struct ingest_state {
  ingest_deps d;
  storage::job_record job;  ///< as last committed: ingested and ingest_offset say where it is
  bool loaded = false;
  int io_failures = 0;                    ///< reads of the file that failed in a row
  std::shared_ptr<runtime::timer> pause;  ///< the wait before the next try
  static inline const char* name = "list_ingest";
};

using ingest_ptr = list_ingest_actor::stateful_pointer<ingest_state>;

void tick_later(ingest_ptr self) {
  auto& st = self->state;
  detail::arm_on<tick_atom>(st.pause, st.d.at->clock, st.d.at->exec, retry_pause_ms,
                            list_ingest_actor{self});
}

/// Commits `op`; `then` gets the reply. A write that fails is tried again after a pause.
template <class F>
void commit(ingest_ptr self, storage::write_op op, F then) {
  self->request(self->state.d.writer, caf::infinite, write_request{std::move(op)})
      .then(
          [self, then](write_reply& r) {
            if (!r.reply) {
              log::warn("ingest", "a write failed; trying again",
                        {{"job_id", self->state.job.id}, {"error", r.err.message}});
              return tick_later(self);
            }
            then(*r.reply);
          },
          [self](caf::error&) { self->quit(); });  // the writer is gone: shutdown
}

/// The list fails. `recoverable` (a system failure): its file stays for a rerun to resume.
void fail(ingest_ptr self, storage::job_error why, std::vector<storage::batch_error> errors,
          bool recoverable = false) {
  auto& st = self->state;
  log::warn("ingest", "task list failed its ingest",
            {{"job_id", st.job.id},
             {"code", why.code},
             {"error", why.message},
             {"recoverable", recoverable}});
  const std::string path = st.job.ingest_path;
  commit(self,
         storage::ingest_failed_op{st.job.id, std::move(why), std::move(errors),
                                   st.d.at->clock.now_ms(), recoverable},
         [self, path, recoverable](storage::op_reply&) {
           if (!recoverable) ::unlink(path.c_str());
           self->quit();
         });
}

/// A system failure (the file cannot be read): tried again after a pause, then the list fails
/// recoverably (a rerun resumes it) with a dead letter.
void failed_io(ingest_ptr self, const sy::error& e) {
  auto& st = self->state;
  if (++st.io_failures < max_io_tries) {
    log::warn("ingest", "reading the task list failed; trying again",
              {{"job_id", st.job.id}, {"error", e.message}, {"try", st.io_failures}});
    return tick_later(self);
  }
  fail(self, {e.code, e.message + " (after " + std::to_string(max_io_tries) + " tries)"}, {}, true);
}

/// The whole file, before any task is written.
bool check(ingest_ptr self) {
  auto& st = self->state;
  const auto& d = st.d;
  const job_task_kind kind = task_kind_of(st.job);
  auto task_ok = [&d, &kind](task_input& t) -> status {
    if (auto st = check_task_kind(t, kind, *d.http_policy, ""); !st) return st;
    if (!kind.http && kind.runtime_queue.empty() && d.gateways->for_model(t.model) == nullptr)
      return make_error(errc::model_not_found, "No gateway serves model '" + t.model + "'.",
                        "body.model");
    return ok;
  };
  auto checked = check_task_file(st.job.ingest_path, d.at->cfg.max_tasks_per_job, task_ok,
                                 max_errors, d.stopping);
  if (!checked && checked.error().code == errc::shutting_down) {
    self->quit();  // the next start checks it again
    return false;
  }
  if (!checked) {
    failed_io(self, checked.error());
    return false;
  }
  if (checked->error_count > 0) {
    const auto n = checked->error_count;
    fail(self,
         {std::string(errc::invalid_task_file),
          "The staged task list is invalid: " + std::to_string(n) +
              (n == 1 ? " problem" : " problems") + "; the job's errors list " +
              (n <= static_cast<int64_t>(max_errors) ? "them"
                                                     : "the first " + std::to_string(max_errors)) +
              " with their line numbers."},
         std::move(checked->errors));
    return false;
  }
  log::info("ingest", "task list checked",
            {{"job_id", st.job.id}, {"tasks", checked->tasks}, {"models", checked->models}});
  return true;
}

void latch(ingest_ptr self) {
  auto& st = self->state;
  runtime::failpoint("ingest_before_latch");
  commit(self, storage::latch_list_op{st.job.id, st.job.ingested, st.d.at->clock.now_ms()},
         [self](storage::op_reply& r) {
           auto& s = self->state;
           log::info("ingest", "task list ingested",
                     {{"job_id", s.job.id}, {"tasks", s.job.ingested}});
           if (r.job && r.job->ingest_path.empty()) ::unlink(s.job.ingest_path.c_str());
           self->quit();
         });
}

void commit_chunk(ingest_ptr self, task_chunk& chunk);

void next_chunk(ingest_ptr self) {
  auto& st = self->state;
  auto chunk = read_task_chunk(st.job.ingest_path, st.job.ingest_offset, ingest_chunk_tasks);
  if (!chunk && chunk.error().code == errc::invalid_task_file)
    return fail(self, {chunk.error().code, chunk.error().message}, {});
  if (!chunk) return failed_io(self, chunk.error());
  st.io_failures = 0;
  if (chunk->tasks.empty()) return latch(self);
  std::set<std::string> distinct;
  const job_task_kind kind = task_kind_of(st.job);
  for (auto& t : chunk->tasks) {
    if (t.runtime) t.model = kind.runtime_queue;  // checked by check() before the first chunk
    distinct.insert(t.model);
  }
  auto read = std::make_shared<task_chunk>(std::move(*chunk));
  // A runtime's queue is its workers', not a dispatcher's.
  if (!kind.runtime_queue.empty()) return commit_chunk(self, *read);
  // The chunk's models take their queues first (each must have a gateway, within max_models).
  dispatchers_wanted want{{distinct.begin(), distinct.end()}, {}, true, false};
  self->request(st.d.dispatchers, caf::infinite, std::move(want))
      .then(
          [self, read](dispatchers_found& found) {
            const auto& no = found.refusal;
            if (!no.code.empty() && *self->state.d.stopping) return self->quit();  // resumed
            if (!no.code.empty()) return fail(self, {no.code, no.message}, {});
            commit_chunk(self, *read);
          },
          [self](caf::error&) { self->quit(); });  // the directory is gone: shutdown
}

/// Commits the tasks of `chunk`, read from where the list stands, and goes on.
void commit_chunk(ingest_ptr self, task_chunk& chunk) {
  auto& st = self->state;
  storage::ingest_chunk_op op;
  op.job_id = st.job.id;
  op.first_index = st.job.ingested;
  op.tasks = make_task_records(st.job, st.job.ingested, chunk.tasks);
  op.next_offset = chunk.next_offset;
  op.now_ms = st.d.at->clock.now_ms();
  runtime::failpoint("ingest_chunk_read");
  const bool eof = chunk.eof;
  commit(self, std::move(op), [self, eof](storage::op_reply& r) {
    auto& s = self->state;
    if (!r.job || r.job->status != storage::job_status::ingesting || r.job->ingest_path.empty())
      return self->quit();      // cancelled, expired or latched meanwhile
    s.job = std::move(*r.job);  // written now, or already (stale): go on from where it stands
    runtime::failpoint("ingest_chunk_committed");
    if (eof && r.what == storage::op_reply::kind::done) return latch(self);
    self->send(self, tick_atom::value);
  });
}

/// The job as stored, while it is still being ingested (null: cancelled, expired, failed,
/// latched or deleted meanwhile).
std::optional<storage::job_record> still_ingesting(const ingest_state& st) {
  std::optional<storage::job_record> job;
  {
    auto txn = st.d.env->begin_read();
    job = storage::get_job(txn, st.job.id);
  }
  if (!job || job->status != storage::job_status::ingesting || job->ingest_path.empty())
    return std::nullopt;
  return job;
}

/// Its owner committed a change to the job: it ends if the list is no longer being ingested.
void recheck(ingest_ptr self) {
  if (still_ingesting(self->state)) return;
  log::info("ingest", "the list stopped being ingested; ending its ingest",
            {{"job_id", self->state.job.id}});
  self->quit();
}

void step(ingest_ptr self) {
  auto& st = self->state;
  if (*st.d.stopping) return self->quit();  // the next start resumes it
  if (!st.loaded) {
    auto job = still_ingesting(st);
    if (!job) return self->quit();
    st.job = std::move(*job);
    if (st.job.ingested == 0 && st.job.ingest_offset == 0 && !check(self)) return;
    st.loaded = true;
  }
  next_chunk(self);
}

list_ingest_actor::behavior_type ingest(ingest_ptr self, ingest_deps deps, std::string job_id) {
  runtime::name_this_thread("sy-ingest");
  self->attach_functor([alive = deps.alive] { --*alive; });  // counted up by spawn_list_ingest
  self->state.d = std::move(deps);
  self->state.job.id = std::move(job_id);
  // Its job's owner holds it like an attempt, under no task id.
  self->send(self->state.d.jobs, register_atom::value, self->state.job.id, std::string{},
             job_control_actor{self});
  self->send(self, tick_atom::value);
  return {
      [=](tick_atom) { step(self); },
      [=](cancel_atom) { recheck(self); },
      [=](expire_atom) { recheck(self); },
      [=](release_atom) { self->quit(); },  // shutdown: the next start resumes it
      [=](beat_atom) {},
  };
}

}  // namespace

list_ingest_actor spawn_list_ingest(ingest_deps d, std::string job_id) {
  ++*d.alive;  // before the spawn: shutdown must never see zero while one starts
  auto& sys = d.at->sys;
  return sys.spawn<caf::detached>(ingest, std::move(d), std::move(job_id));
}

}  // namespace sy::actors
