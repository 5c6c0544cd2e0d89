#include "actors/lease_reaper.hpp"

#include <caf/actor_system.hpp>
#include <caf/send.hpp>
#include <caf/stateful_actor.hpp>
#include <caf/typed_event_based_actor.hpp>

#include <algorithm>
#include <map>
#include <memory>

#include "actors/detail/actor_timer.hpp"
#include "runtime/log.hpp"
#include "runtime/log_throttle.hpp"
#include "runtime/metrics.hpp"
#include "runtime/thread_name.hpp"

namespace sy::actors {
namespace {

struct reaper_state {
  int64_t last_reconcile_ms = 0;
  int64_t last_queue_gauges_ms = 0;
  int64_t queue_gauges_every_ms = 0;  ///< the next pass's least wait (scaled by the last's cost)
  bool purging = false;
  reaper_deps d;
  /// A write that keeps failing is retried every tick: logged once a minute, with a count.
  log::throttle write_failures{60'000};
  /// The next tick, `reaper_interval_ms` of the engine's clock after the last pass.
  std::shared_ptr<runtime::timer> tick;
  static inline const char* name = "lease_reaper";
};

using reaper_ptr = lease_reaper_actor::stateful_pointer<reaper_state>;

/// Logs a failed write of the reaper's (retried at a later tick), throttled.
void write_failed(reaper_ptr self, std::string_view what, const sy::error& e,
                  nlohmann::json fields = nlohmann::json::object()) {
  const uint64_t n = self->state.write_failures.occur(self->state.d.at->clock.now_ms());
  if (n == 0) return;
  fields["code"] = e.code;
  fields["error"] = e.message;
  fields["failures"] = n;
  log::error("reaper", what, fields);
}

int reap(reaper_ptr self) {
  auto& st = self->state;
  const auto& d = st.d;
  const int64_t now = d.at->clock.now_ms();
  std::vector<std::pair<storage::lease_record, std::string>> dead;  // lease, model
  {
    auto txn = st.d.env->begin_read();
    for (auto& l : storage::read_leases(txn)) {
      if (!lease_is_dead(l, now, d.holder, st.d.node_prefix)) continue;
      auto task = storage::get_task(txn, l.task_id);
      dead.emplace_back(std::move(l), task ? task->model : std::string{});
    }
  }
  for (auto& [lease, model] : dead) {
    storage::finish_attempt_op op;
    op.task_id = lease.task_id;
    op.attempt = lease.attempt;
    op.token = lease.token;
    op.end = storage::attempt_end::retry;
    op.error_code = errc::lease_expired;
    op.error_message = lease.holder == d.holder || lease.holder.rfind(st.d.node_prefix, 0) != 0
                           ? "the attempt's lease expired without a heartbeat"
                           : "the engine stopped while the attempt was running";
    op.now_ms = now;
    log::warn("reaper", "expiring lease",
              {{"task_id", lease.task_id}, {"attempt", lease.attempt}, {"holder", lease.holder}});
    self->request(d.writer, caf::infinite, write_request{std::move(op)})
        .then([self, task_id = lease.task_id](write_reply& r) {
          if (!r.reply)
            write_failed(self, "expiring a lease failed", r.err, {{"task_id", task_id}});
        });
  }
  return static_cast<int>(dead.size());
}

/// The reconcile sweeper (DESIGN.md rule 6). JetStream fsyncs periodically, so a machine crash
/// can lose a task message that LMDB still counts as queued. A task queued for longer than
/// `reconcile_after_ms` whose model's consumer holds no message at all (and with nothing waiting
/// in the outbox) lost its message: queue it again. A duplicate is fenced out at start.
void reconcile(reaper_ptr self, int64_t now) {
  auto& st = self->state;
  const auto& d = st.d;
  const int64_t after = d.at->cfg.reconcile_after_ms;
  if (now - st.last_reconcile_ms < std::max<int64_t>(after / 4, d.at->cfg.reaper_interval_ms))
    return;
  st.last_reconcile_ms = now;
  std::map<std::string, std::vector<storage::task_record>> stale;  // by model
  {
    auto txn = st.d.env->begin_read();
    if (!storage::read_outbox(txn, 0, 1).empty()) return;  // the relay has work: wait for it
    // Only the tasks in state `queued` (their index), not every task the store still holds.
    txn.scan(storage::db::queued, "", [&](std::string_view task_id, std::string_view) {
      auto t = storage::get_task(txn, task_id);
      if (t && t->state == storage::task_state::queued && t->queued_at_ms + after <= now &&
          t->not_before_ms + after <= now)
        stale[t->model].push_back(std::move(*t));
      return true;
    });
  }
  for (auto& [model, tasks] : stale) {
    auto backlog = d.js->task_backlog(model);
    if (!backlog || *backlog > 0) continue;  // messages are there (or NATS is down): not lost
    log::warn("reaper", "re-queueing tasks whose JetStream message was lost",
              {{"model", model}, {"tasks", tasks.size()}});
    for (const auto& t : tasks) {
      storage::republish_op op{t.id, t.attempt, now};
      self->request(d.writer, caf::infinite, write_request{std::move(op)}).then([](write_reply&) {
      });
    }
  }
}

/// How often the queue gauges are measured: a pass reads every queued task.
constexpr int64_t queue_gauge_interval_ms = 2'000;

/// `switchyard_queue_depth` and `switchyard_queue_oldest_age_seconds`, per queue, from the
/// tasks in state `queued` (their index): the store, not JetStream, says what is waiting, and a
/// task whose backoff has not elapsed counts too. A pass reads every queued task, so the next
/// waits at least 50 times as long as this one took: a million queued tasks (a pass of about a
/// second) are measured about once a minute, at 2 % of a core.
void measure_queues(reaper_ptr self, int64_t now) {
  auto& st = self->state;
  if (now - st.last_queue_gauges_ms < st.queue_gauges_every_ms) return;
  st.last_queue_gauges_ms = now;
  const int64_t t0 = st.d.at->clock.monotonic_us();
  std::map<std::string, metrics::queue_state> queues;
  {
    auto txn = st.d.env->begin_read();
    txn.scan(storage::db::queued, "", [&](std::string_view task_id, std::string_view) {
      auto t = storage::get_task(txn, task_id);
      if (!t || t->state != storage::task_state::queued) return true;
      auto& q = queues[t->model];
      ++q.depth;
      q.oldest_age_seconds =
          std::max(q.oldest_age_seconds, static_cast<double>(now - t->queued_at_ms) / 1000.0);
      return true;
    });
  }
  // After the read transaction: no lock is taken while it holds the store's reader slot.
  metrics::set_queues(queues);
  const int64_t took_ms = (st.d.at->clock.monotonic_us() - t0) / 1'000;
  st.queue_gauges_every_ms =
      std::max({queue_gauge_interval_ms, st.d.at->cfg.reaper_interval_ms, 50 * took_ms});
}

/// Jobs whose timeout has passed become `expired`: each due job's owner commits its expiry and
/// stops what runs of it here (actors/job_owner.hpp); the registry makes the owner when the job
/// has none.
void expire_due(reaper_ptr self, int64_t now) {
  const auto& d = self->state.d;
  std::vector<std::pair<int64_t, std::string>> due;
  {
    auto txn = self->state.d.env->begin_read();
    due = storage::read_due(txn, storage::db::deadlines, now, 256);
  }
  for (auto& [at, id] : due) {
    write_request req{storage::expire_job_op{id, at, now}};
    self->request(d.jobs, caf::infinite, expire_atom::value, id, std::move(req))
        .then([self, id = id](write_reply& r) {
          if (!r.reply) {
            write_failed(self, "expiring a job failed", r.err, {{"job_id", id}});
            return;
          }
          if (r.reply->what != storage::op_reply::kind::done) return;
          const bool running = r.reply->abort_inflight || !r.reply->abort_tasks.empty();
          log::info("reaper", "job expired: its timeout passed",
                    {{"job_id", id}, {"was_running", running}});
        });
  }
}

/// Retention: deletes terminal jobs whose time has come, at most `retention_batch` per tick, in
/// one small write so the writer never stalls behind a large delete.
void purge_due(reaper_ptr self, int64_t now) {
  const auto& d = self->state.d;
  if (self->state.purging) return;  // the previous batch is still being written
  storage::purge_jobs_op op;
  {
    auto txn = self->state.d.env->begin_read();
    op.due = storage::read_due(txn, storage::db::retention, now,
                               static_cast<size_t>(d.at->cfg.retention_batch));
  }
  if (op.due.empty()) return;
  self->state.purging = true;
  self->request(d.writer, caf::infinite, write_request{std::move(op)}).then([self](write_reply& r) {
    self->state.purging = false;
    if (!r.reply) {
      write_failed(self, "retention delete failed", r.err);
      return;
    }
    log::debug("reaper", "retention deleted jobs", {{"jobs", r.reply->purged}});
  });
}

lease_reaper_actor::behavior_type reaper(reaper_ptr self, reaper_deps deps, bool own_thread) {
  if (own_thread) runtime::name_this_thread("sy-reaper");  // detached: its own thread
  self->state.d = std::move(deps);
  const ambient* at = self->state.d.at;
  self->send(self, tick_atom::value);
  return {
      [=](tick_atom) {
        reap(self);
        const int64_t now = at->clock.now_ms();
        expire_due(self, now);
        purge_due(self, now);
        reconcile(self, now);
        measure_queues(self, now);
        detail::arm_on<tick_atom>(self->state.tick, at->clock, at->exec, at->cfg.reaper_interval_ms,
                                  lease_reaper_actor{self});
      },
  };
}

}  // namespace

bool lease_is_dead(const storage::lease_record& l, int64_t now_ms, const std::string& my_holder,
                   const std::string& node_prefix) {
  if (l.expires_at_ms <= now_ms) return true;
  // An earlier run of this node cannot be holding anything any more.
  return l.holder != my_holder && l.holder.rfind(node_prefix, 0) == 0;
}

lease_reaper_actor spawn_lease_reaper(reaper_deps d, runs_on where) {
  auto& sys = d.at->sys;
  if (where == runs_on::scheduler) return sys.spawn(reaper, std::move(d), false);
  return sys.spawn<caf::detached>(reaper, std::move(d), true);
}

}  // namespace sy::actors
