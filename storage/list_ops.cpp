#include <charconv>
#include <cstdio>
#include <set>

#include "storage/detail/list_ops.hpp"

// Task-list jobs (docs/task-lists.md). The job record holds the list's counts and its window:
// tasks [0, next_publish) have been published to JetStream, `live` of them are not finished, and
// at most `window` are live at once, so a large list never floods its model's queue and a small
// job submitted behind it waits for at most a window of its tasks. Each task's transition
// changes the counts in the same transaction; a task that finishes publishes the next one.

namespace sy::storage {
namespace detail {
namespace {

/// The job's ULID and the dash: the prefix of every task id of the list.
std::string task_prefix(std::string_view job_id) {
  if (job_id.starts_with("job_")) job_id.remove_prefix(4);
  return std::string(job_id) + "-";
}

int64_t& count_of(task_counts& c, job_status s) {
  switch (s) {
    case job_status::completed:
      return c.completed;
    case job_status::failed:
    case job_status::expired:
      return c.failed;
    case job_status::cancelled:
    case job_status::cancelling:
      return c.cancelled;
    case job_status::in_progress:
      return c.in_progress;
    case job_status::queued:
    case job_status::ingesting:
      break;
  }
  return c.queued;
}

/// Leases `task` for the finishing attempt's chain (finish_attempt_op::chain_token) instead of
/// publishing it: it is the chain's next task (the reply's `chained`).
status chain_task(op_ctx& c, job_record& job, task_record& task, const finish_attempt_op& op) {
  task.state = task_state::leased;
  task.queued_at_ms = op.now_ms;
  SY_TRY(put_lease(c.txn, lease_record{task.id, task.attempt, op.chain_token,
                                       op.now_ms + op.chain_lease_ttl_ms, op.chain_holder}));
  SY_TRY(list_task_started(c, job, task, op.now_ms));
  c.reply.chained = task;
  return ok;
}

/// Publishes the next tasks of the list while the window has room; with a chain (`chain` set,
/// of a task of `model`), the first one for that model that is due is leased for it instead.
status refill(op_ctx& c, job_record& job, int64_t now_ms, const finish_attempt_op* chain = nullptr,
              std::string_view model = {}) {
  while (job.live < job.window && job.next_publish < job.ingested) {
    const auto id = list_task_id(job.id, job.next_publish);
    auto task = get_task(c.txn, id);
    if (!task)
      return make_error(errc::storage_corrupt,
                        "task list " + job.id + " has no task " + std::to_string(job.next_publish));
    ++job.next_publish;
    if (task->state != task_state::queued) continue;
    if (chain && !c.reply.chained && task->model == model && task->not_before_ms <= now_ms) {
      SY_TRY(chain_task(c, job, *task, *chain));
    } else {
      SY_TRY(publish_task(c, *task, now_ms));
    }
    SY_TRY(c.txn.put(db::list_live, task->id, ""));
    SY_TRY(put_task(c.txn, *task));
    ++job.live;
  }
  return ok;
}

/// Sends a dead letter to SY_DLQ through the outbox (`task` null: the list's ingest failed).
void send_dead_letter(op_ctx& c, const job_record& job, const task_record* task,
                      const job_error& why, int64_t now_ms) {
  dead_letter d{job.id, job.run, {}, {}, {}, 0, why, now_ms};
  if (task) {
    d.task_id = task->id;
    d.custom_id = task->custom_id;
    d.model = task->model;
    d.attempts = task->attempt;
  }
  append_outbox(c.txn, outbox_record{0, std::move(d)});
  c.reply.outbox_appended = true;
}

/// A task's transition, announced when its job asked for task events (`task_events`), the
/// result carried up to the NATS limit.
void announce_task(op_ctx& c, const job_record& job, const task_record& task, int64_t now_ms) {
  if (!job.task_events) return;
  const auto limit = std::min(c.policy.inline_result_bytes, max_nats_inline_result_bytes);
  const bool fits = task.result && static_cast<int64_t>(task.result->body.size()) <= limit;
  task_event e{job.id,      task.id,      task.custom_id, task.index,
               task.status, task.attempt, task.error,     fits ? task.result : std::nullopt,
               now_ms};
  append_outbox(c.txn, outbox_record{0, std::move(e)});
  c.reply.outbox_appended = true;
}

/// The task's attempt ended for good with `status`.
void finish_task(job_record& job, task_record& task, job_status status,
                 std::optional<job_error> why, std::optional<gateway_result> response,
                 int64_t now_ms) {
  task.state = task_state::done;
  task.status = status;
  task.result = std::move(response);
  task.result_offset = -1;
  task.result_length = 0;
  task.error = std::move(why);
  task.finished_at_ms = now_ms;
  ++count_of(job.counts, status);
  --job.live;
}

/// Moves a finished task's result body to the job's result segment when it is larger than the
/// policy's inline size (after its event took the body).
status spill_result(op_ctx& c, const job_record& job, task_record& task) {
  auto* segments = c.policy.results.get();
  if (!segments || !task.result ||
      static_cast<int64_t>(task.result->body.size()) <= segments->inline_bytes())
    return ok;
  auto at = segments->append(job.id, task.result->body);
  if (!at) return at.error();
  task.result_offset = *at;
  task.result_length = static_cast<int64_t>(task.result->body.size());
  task.result->body.clear();
  return ok;
}

/// The job completes once its list is latched and every task has finished.
status complete_if_done(op_ctx& c, job_record& job, int64_t now_ms) {
  if (is_terminal(job.status) || job.status == job_status::ingesting || job.counts.total < 0 ||
      job.counts.finished() < job.counts.total)
    return ok;
  return set_status(c, job, job_status::completed, now_ms);
}

/// Writes the next tasks of the list: records, custom_id index, known models, counts.
status add_tasks(op_ctx& c, job_record& job, const std::vector<task_record>& tasks) {
  std::set<std::string_view> models;
  for (const auto& t : tasks) {
    SY_TRY(put_task(c.txn, t));
    if (!t.custom_id.empty())
      SY_TRY(c.txn.put(db::task_custom, task_custom_key(job.id, t.custom_id), t.id));
    // Written once per model: a put of an existing key would still dirty its page.
    if (models.insert(t.model).second) {
      if (const auto known = known_model_key(t.model); !c.txn.get(db::meta, known))
        SY_TRY(c.txn.put(db::meta, known, ""));
    }
  }
  job.ingested += static_cast<int64_t>(tasks.size());
  job.counts.queued += static_cast<int64_t>(tasks.size());
  return ok;
}

/// Sets the total (absolute: what is ingested) and latches the list in one step; the job leaves
/// `ingesting` and completes if every task has finished already.
status latch(op_ctx& c, job_record& job, int64_t now_ms) {
  job.counts.total = job.ingested;
  job.ingest_path.clear();
  c.txn.del(db::list_ingest, job.id);
  SY_TRY(set_status(c, job, job.started_at_ms > 0 ? job_status::in_progress : job_status::queued,
                    now_ms));
  return complete_if_done(c, job, now_ms);
}

/// The idempotency key of an append: the job's id and the client's key behind a byte that no
/// Idempotency-Key holds (they are printable ASCII), so it never meets a submission's key.
std::string append_key(const std::string& job_id, const std::string& key) {
  return "\x1e" + job_id + "\x1e" + key;
}

op_reply refused(error_code code, std::string message, std::string param = {}) {
  op_reply r = reply(op_reply::kind::refused);
  r.refusal = make_error(code, std::move(message), std::move(param));
  return r;
}

}  // namespace

result<op_reply> apply_create_list(op_ctx& c, const create_list_op& op) {
  auto& txn = c.txn;
  auto answered = claim_idempotency(c, op.job);
  if (!answered) return answered.error();
  if (*answered) return c.reply;
  job_record job = op.job;
  job.status = op.latch ? job_status::queued : job_status::ingesting;
  job.event_seq = 0;
  job.task_list = true;
  job.ingested = 0;
  job.counts = task_counts{};
  job.next_publish = job.live = 0;
  SY_TRY(txn.put(db::job_index, job_index_key(job.tenant, job.id), to_string(job.status)));
  if (job.deadline_ms > 0)
    SY_TRY(txn.put(db::deadlines, time_index_key(job.deadline_ms, job.id), ""));
  if (!job.ingest_path.empty()) SY_TRY(txn.put(db::list_ingest, job.id, ""));
  SY_TRY(add_tasks(c, job, op.tasks));
  if (op.latch) job.counts.total = job.ingested;
  SY_TRY(refill(c, job, job.created_at_ms));
  SY_TRY(record_event(c, job, std::nullopt, std::nullopt, job.created_at_ms));
  return answer_done(c, std::move(job), std::nullopt);
}

result<op_reply> apply_ingest_chunk(op_ctx& c, const ingest_chunk_op& op) {
  auto job = get_job(c.txn, op.job_id);
  if (!job) return reply(op_reply::kind::not_found);
  if (job->status != job_status::ingesting || job->ingest_path.empty() ||
      job->ingested != op.first_index) {
    c.reply.what = op_reply::kind::stale;  // written already, or the list ended: resync
    c.reply.job = std::move(job);
    return c.reply;
  }
  SY_TRY(add_tasks(c, *job, op.tasks));
  job->ingest_offset = op.next_offset;
  job->updated_at_ms = op.now_ms;
  SY_TRY(refill(c, *job, op.now_ms));
  return answer_done(c, std::move(*job), std::nullopt);
}

result<op_reply> apply_latch(op_ctx& c, const latch_list_op& op) {
  auto job = get_job(c.txn, op.job_id);
  if (!job) return reply(op_reply::kind::not_found);
  c.reply.job = job;
  if (job->status != job_status::ingesting) {
    c.reply.what = op_reply::kind::existing;  // latched (or stopped) already
    return c.reply;
  }
  if (op.total != job->ingested)
    return make_error(errc::storage_corrupt, "task list " + job->id + " latched at " +
                                                 std::to_string(op.total) + " tasks, but has " +
                                                 std::to_string(job->ingested));
  SY_TRY(latch(c, *job, op.now_ms));
  return answer_done(c, std::move(*job), std::nullopt);
}

result<op_reply> apply_ingest_failed(op_ctx& c, const ingest_failed_op& op) {
  auto job = get_job(c.txn, op.job_id);
  if (!job) return reply(op_reply::kind::not_found);
  if (is_terminal(job->status)) return reply(op_reply::kind::stale);
  job->errors = op.errors;
  const std::string path = job->ingest_path;
  SY_TRY(stop_list(c, *job, job_status::failed, op.error, op.now_ms));
  if (op.recoverable) {
    job->ingest_path = path;  // kept: a rerun goes on from ingest_offset
    send_dead_letter(c, *job, nullptr, op.error, op.now_ms);
  }
  return answer_done(c, std::move(*job), std::nullopt);
}

result<op_reply> apply_append(op_ctx& c, const append_tasks_op& op) {
  auto& txn = c.txn;
  auto job = get_job(txn, op.job_id);
  if (!job || !job->owned_by(op.tenant) || !job->task_list) return reply(op_reply::kind::not_found);
  const std::string key = op.idempotency_key.empty() ? "" : append_key(job->id, op.idempotency_key);
  if (!key.empty()) {
    if (auto idem = get_idempotency(txn, op.tenant, key)) {
      if (idem->request_hash != op.request_hash)
        return refused(errc::idempotency_conflict,
                       "Idempotency-Key '" + op.idempotency_key +
                           "' was already used for a different append to job " + job->id,
                       "Idempotency-Key");
      c.reply.what = op_reply::kind::existing;
      c.reply.job = std::move(job);
      return c.reply;
    }
  }
  if (job->status != job_status::ingesting || !job->ingest_path.empty())
    return refused(errc::job_not_open,
                   "job " + job->id + " is " + std::string(to_string(job->status)) +
                       (job->status == job_status::ingesting ? " from its staged list" : "") +
                       "; tasks can be appended only to an open job that is not closed",
                   "id");
  if (job->ingested + static_cast<int64_t>(op.tasks.size()) > op.max_tasks)
    return refused(errc::too_many_tasks,
                   "job " + job->id + " holds " + std::to_string(job->ingested) +
                       " tasks; appending " + std::to_string(op.tasks.size()) +
                       " would pass max_tasks_per_job (" + std::to_string(op.max_tasks) + ")",
                   "tasks");
  std::vector<task_record> tasks = op.tasks;
  for (size_t i = 0; i < tasks.size(); ++i) {
    auto& t = tasks[i];
    if (!t.custom_id.empty() && txn.get(db::task_custom, task_custom_key(job->id, t.custom_id)))
      return refused(errc::duplicate_custom_id,
                     "'tasks[" + std::to_string(i) + "].custom_id' is '" + t.custom_id +
                         "', the custom_id of an earlier task of job " + job->id,
                     "tasks[" + std::to_string(i) + "].custom_id");
    t.index = static_cast<int>(job->ingested + static_cast<int64_t>(i));
    t.id = list_task_id(job->id, t.index);
    t.job_id = job->id;
    t.tenant = job->tenant;
    t.max_attempts = job->max_attempts;
  }
  if (!key.empty())
    SY_TRY(put_idempotency(txn, op.tenant, key,
                           idempotency_record{job->id, op.request_hash, op.now_ms}));
  SY_TRY(add_tasks(c, *job, tasks));
  job->updated_at_ms = op.now_ms;
  SY_TRY(refill(c, *job, op.now_ms));
  if (op.last_batch) SY_TRY(latch(c, *job, op.now_ms));
  return answer_done(c, std::move(*job), std::nullopt);
}

result<op_reply> apply_rerun(op_ctx& c, const rerun_list_op& op) {
  auto& txn = c.txn;
  auto job = get_job(txn, op.job_id);
  if (!job || !job->owned_by(op.tenant)) return reply(op_reply::kind::not_found);
  if (!job->task_list || !is_terminal(job->status))
    return refused(errc::job_not_rerunnable,
                   "job " + job->id + " is " + std::string(to_string(job->status)) +
                       (job->task_list ? "; a rerun waits until its run has finished"
                                       : "; only task-list jobs are rerun"),
                   "id");
  // The failed and cancelled tasks go back to the queue; those never published are queued
  // still. Each gets a fresh budget: attempts go on counting (their message ids stay unique).
  std::vector<std::string> ids;
  const auto prefix = task_prefix(job->id);
  txn.scan(db::tasks, prefix, [&](std::string_view key, std::string_view value) {
    if (!key.starts_with(prefix)) return false;
    auto t = decode_task(value);
    if (t && t->state == task_state::done && t->status != job_status::completed)
      ids.emplace_back(key);
    return true;
  });
  for (const auto& id : ids) {
    auto t = get_task(txn, id);
    t->state = task_state::queued;
    t->status = job_status::queued;
    t->max_attempts = t->attempt + job->max_attempts;
    t->attempt += 1;
    t->not_before_ms = 0;
    t->error.reset();
    t->finished_at_ms = 0;
    SY_TRY(put_task(txn, *t));
  }
  txn.del(db::retention,
          time_index_key(job->finished_at_ms + retention_ms(c.policy, job->status), job->id));
  if (job->deadline_ms > 0) {
    job->deadline_ms = op.now_ms + (job->deadline_ms - job->created_at_ms);
    SY_TRY(txn.put(db::deadlines, time_index_key(job->deadline_ms, job->id), ""));
  }
  ++job->run;
  job->counts.queued = job->ingested - job->counts.completed;
  job->counts.in_progress = job->counts.failed = job->counts.cancelled = 0;
  job->next_publish = job->live = 0;
  job->finished_at_ms = 0;
  job->error.reset();
  job->errors.clear();
  // A list whose ingest failed for a system reason kept its file: the ingest goes on from where
  // it stopped (the engine starts its actor), and the list is latched again at its end.
  const bool resume = !job->ingest_path.empty();
  if (resume) {
    job->counts.total = -1;
    SY_TRY(txn.put(db::list_ingest, job->id, ""));
  }
  SY_TRY(set_status(c, *job, resume ? job_status::ingesting : job_status::queued, op.now_ms));
  SY_TRY(refill(c, *job, op.now_ms));
  SY_TRY(complete_if_done(c, *job, op.now_ms));
  return answer_done(c, std::move(*job), std::nullopt);
}

status list_task_started(op_ctx& c, job_record& job, task_record& task, int64_t now_ms) {
  task.status = job_status::in_progress;
  if (task.started_at_ms == 0) task.started_at_ms = now_ms;
  --job.counts.queued;
  ++job.counts.in_progress;
  job.updated_at_ms = now_ms;
  if (job.started_at_ms == 0) job.started_at_ms = now_ms;
  if (job.status == job_status::queued) SY_TRY(set_status(c, job, job_status::in_progress, now_ms));
  announce_task(c, job, task, now_ms);
  return ok;
}

status list_task_finished(op_ctx& c, job_record& job, task_record& task,
                          const finish_attempt_op& op) {
  const int64_t now = op.now_ms;
  --job.counts.in_progress;
  job.updated_at_ms = now;
  if (op.end != attempt_end::succeeded && op.end != attempt_end::released)
    task.last_error = op.error_message;
  switch (op.end) {
    case attempt_end::succeeded:
      finish_task(job, task, job_status::completed, std::nullopt, op.response, now);
      break;
    case attempt_end::rejected:
      finish_task(job, task, job_status::failed, job_error{op.error_code, op.error_message},
                  op.response, now);
      break;
    case attempt_end::retry:
      if (op.attempt >= task.max_attempts) {
        finish_task(
            job, task, job_status::failed,
            job_error{op.error_code, op.error_message + " (attempt " + std::to_string(op.attempt) +
                                         " of " + std::to_string(task.max_attempts) + ")"},
            op.response, now);
        send_dead_letter(c, job, &task, *task.error, now);
        break;
      }
      task.state = task_state::queued;
      task.status = job_status::queued;
      task.attempt = op.attempt + 1;
      task.not_before_ms = now + op.backoff_ms;
      ++job.counts.queued;
      announce_task(c, job, task, now);
      return publish_task(c, task, now);
    case attempt_end::released:  // shutdown: queued again, uncounted, with a fresh message
      task.state = task_state::queued;
      task.status = job_status::queued;
      task.queued_at_ms = now;
      ++job.counts.queued;
      SY_TRY(c.txn.put(db::queued, task.id, ""));
      // Its first message was acked when the lease was taken; a new id (`:r<now>`), as that
      // one may still sit in the duplicate window.
      append_outbox(c.txn, outbox_record{0, task_message{task.model, task.id, task.attempt, now}});
      c.reply.outbox_appended = true;
      return ok;
  }
  announce_task(c, job, task, now);
  SY_TRY(spill_result(c, job, task));
  c.txn.del(db::list_live, task.id);
  if (past_deadline(job, now)) {
    SY_TRY(put_task(c.txn, task));  // stop_list reads it back as finished
    return stop_list(c, job, job_status::expired, deadline_error(job, ""), now);
  }
  SY_TRY(refill(c, job, now, op.chain_token.empty() ? nullptr : &op, task.model));
  return complete_if_done(c, job, now);
}

status stop_list(op_ctx& c, job_record& job, job_status to, const job_error& why, int64_t now_ms) {
  const job_status task_end =
      to == job_status::cancelled ? job_status::cancelled : job_status::failed;
  std::vector<std::string> live;
  const auto prefix = task_prefix(job.id);
  c.txn.scan(db::list_live, prefix, [&](std::string_view key, std::string_view) {
    if (!key.starts_with(prefix)) return false;
    live.emplace_back(key);
    return true;
  });
  for (const auto& id : live) {
    c.txn.del(db::list_live, id);
    auto task = get_task(c.txn, id);
    if (!task || task->state == task_state::done) continue;
    if (task->state == task_state::leased) c.reply.abort_tasks.push_back(id);
    --count_of(job.counts, task->status);
    ++count_of(job.counts, task_end);
    task->status = task_end;
    task->error = why;
    task->finished_at_ms = now_ms;
    announce_task(c, job, *task, now_ms);
    SY_TRY(close_task(c.txn, *task));
  }
  // What is still counted queued was never published: it ends with the list, unwritten.
  count_of(job.counts, task_end) += job.counts.queued;
  job.counts.queued = 0;
  job.counts.total = job.ingested;  // a list stopped while ingesting ends with what it holds
  job.live = 0;
  job.ingest_path.clear();
  c.txn.del(db::list_ingest, job.id);
  job.error = why;
  return set_status(c, job, to, now_ms, why);
}

bool purge_list(write_txn& t, const job_record& job, size_t& budget) {
  std::vector<std::pair<std::string, std::string>> tasks;  // id, custom_id
  const auto prefix = task_prefix(job.id);
  bool more = false;
  t.scan(db::tasks, prefix, [&](std::string_view key, std::string_view value) {
    if (!key.starts_with(prefix)) return false;
    if (tasks.size() == budget) {
      more = true;
      return false;
    }
    auto task = decode_task(value);
    tasks.emplace_back(key, task ? task->custom_id : std::string());
    return true;
  });
  budget -= tasks.size();
  for (const auto& [id, custom_id] : tasks) {
    del_lease(t, id);
    t.del(db::queued, id);
    t.del(db::list_live, id);
    t.del(db::tasks, id);
    if (!custom_id.empty()) t.del(db::task_custom, task_custom_key(job.id, custom_id));
  }
  if (more) return false;
  std::vector<std::string> keys;
  const auto appends = idempotency_db_key(job.tenant, append_key(job.id, ""));
  t.scan(db::idempotency, appends, [&](std::string_view key, std::string_view) {
    if (!key.starts_with(appends)) return false;
    keys.emplace_back(key);
    return true;
  });
  for (const auto& k : keys) t.del(db::idempotency, k);
  t.del(db::list_ingest, job.id);
  return true;
}

}  // namespace detail

std::string list_task_id(std::string_view job_id, int64_t index) {
  char digits[24];
  std::snprintf(digits, sizeof digits, "%08lld", static_cast<long long>(index));
  return detail::task_prefix(job_id) + digits;
}

std::string job_id_of_task(std::string_view task_id) {
  std::string id = "job_";
  id.append(task_id.substr(0, task_id.rfind('-')));
  return id;
}

std::string task_custom_key(std::string_view job_id, std::string_view custom_id) {
  std::string k;
  k.reserve(job_id.size() + 1 + custom_id.size());
  k.append(job_id).append("/").append(custom_id);
  return k;
}

std::optional<int64_t> list_task_index(std::string_view job_id, std::string_view task_id) {
  const auto prefix = detail::task_prefix(job_id);
  if (!task_id.starts_with(prefix)) return std::nullopt;
  auto digits = task_id.substr(prefix.size());
  int64_t index = 0;
  auto [p, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), index);
  if (ec != std::errc{} || p != digits.data() + digits.size() || digits.size() < 8 || index < 0)
    return std::nullopt;
  return index;
}

}  // namespace sy::storage
