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

std::string subject_for(const store_policy& p, const std::string& model) {
  if (p.task_subject) return p.task_subject(model);
  return p.subject_prefix + ".tasks." + model;
}

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
      break;
  }
  return c.queued;
}

/// Publishes the next tasks of the list while the window has room.
status refill(op_ctx& c, job_record& job, int64_t now_ms) {
  while (job.live < job.window && job.next_publish < job.ingested) {
    const auto id = list_task_id(job.id, job.next_publish);
    auto task = get_task(c.txn, id);
    if (!task)
      return make_error(errc::storage_corrupt,
                        "task list " + job.id + " has no task " + std::to_string(job.next_publish));
    ++job.next_publish;
    if (task->state != task_state::queued) continue;
    SY_TRY(publish_task(c, *task, now_ms, subject_for(c.policy, task->model)));
    SY_TRY(c.txn.put(db::list_live, task->id, ""));
    SY_TRY(put_task(c.txn, *task));
    ++job.live;
  }
  return ok;
}

/// The task's attempt ended for good with `status`.
void finish_task(job_record& job, task_record& task, job_status status,
                 std::optional<job_error> why, std::optional<gateway_result> response,
                 int64_t now_ms) {
  task.state = task_state::done;
  task.status = status;
  task.result = std::move(response);
  task.error = std::move(why);
  task.finished_at_ms = now_ms;
  ++count_of(job.counts, status);
  --job.live;
}

/// The job completes once its list is latched and every task has finished.
status complete_if_done(op_ctx& c, job_record& job, int64_t now_ms) {
  if (is_terminal(job.status) || job.counts.total < 0 || job.counts.finished() < job.counts.total)
    return ok;
  return set_status(c, job, job_status::completed, now_ms);
}

}  // namespace

result<op_reply> apply_create_list(op_ctx& c, const create_list_op& op) {
  auto& txn = c.txn;
  auto answered = claim_idempotency(c, op.job);
  if (!answered) return answered.error();
  if (*answered) return c.reply;
  job_record job = op.job;
  job.status = job_status::queued;
  job.event_seq = 0;
  job.task_list = true;
  job.ingested = static_cast<int64_t>(op.tasks.size());
  job.counts = task_counts{};
  job.counts.total = job.ingested;
  job.counts.queued = job.ingested;
  job.next_publish = job.live = 0;
  SY_TRY(txn.put(db::job_index, job_index_key(job.tenant, job.id), "queued"));
  if (job.deadline_ms > 0)
    SY_TRY(txn.put(db::deadlines, time_index_key(job.deadline_ms, job.id), ""));
  std::set<std::string_view> models;
  for (const auto& t : op.tasks) {
    SY_TRY(put_task(txn, t));
    if (!t.custom_id.empty())
      SY_TRY(txn.put(db::task_custom, task_custom_key(job.id, t.custom_id), t.id));
    if (models.insert(t.model).second) {
      if (const auto known = known_model_key(t.model); !txn.get(db::meta, known))
        SY_TRY(txn.put(db::meta, known, ""));
    }
  }
  SY_TRY(refill(c, job, job.created_at_ms));
  SY_TRY(record_event(c, job, std::nullopt, std::nullopt, job.created_at_ms));
  return answer_done(c, std::move(job), std::nullopt);
}

status list_task_started(op_ctx& c, job_record& job, task_record& task, int64_t now_ms) {
  task.status = job_status::in_progress;
  if (task.started_at_ms == 0) task.started_at_ms = now_ms;
  --job.counts.queued;
  ++job.counts.in_progress;
  job.updated_at_ms = now_ms;
  if (job.started_at_ms == 0) job.started_at_ms = now_ms;
  if (job.status == job_status::queued) SY_TRY(set_status(c, job, job_status::in_progress, now_ms));
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
        break;
      }
      task.state = task_state::queued;
      task.status = job_status::queued;
      task.attempt = op.attempt + 1;
      task.not_before_ms = now + op.backoff_ms;
      ++job.counts.queued;
      return publish_task(c, task, now, op.subject);
    case attempt_end::released:  // shutdown: the nak'ed message runs it again, uncounted
      task.state = task_state::queued;
      task.status = job_status::queued;
      task.queued_at_ms = now;
      ++job.counts.queued;
      return c.txn.put(db::queued, task.id, "");
  }
  c.txn.del(db::list_live, task.id);
  if (past_deadline(job, now)) {
    SY_TRY(put_task(c.txn, task));  // stop_list reads it back as finished
    return stop_list(c, job, job_status::expired, deadline_error(job, ""), now);
  }
  SY_TRY(refill(c, job, now));
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
    SY_TRY(close_task(c.txn, *task));
  }
  // What is still counted queued was never published: it ends with the list, unwritten.
  count_of(job.counts, task_end) += job.counts.queued;
  job.counts.queued = 0;
  job.live = 0;
  job.error = why;
  return set_status(c, job, to, now_ms, why);
}

void purge_list(write_txn& t, const job_record& job) {
  std::vector<std::string> keys;
  const auto prefix = task_prefix(job.id);
  t.scan(db::tasks, prefix, [&](std::string_view key, std::string_view) {
    if (!key.starts_with(prefix)) return false;
    keys.emplace_back(key);
    return true;
  });
  for (const auto& id : keys) {
    del_lease(t, id);
    t.del(db::queued, id);
    t.del(db::list_live, id);
    t.del(db::tasks, id);
  }
  keys.clear();
  const auto custom = job.id + "/";
  t.scan(db::task_custom, custom, [&](std::string_view key, std::string_view) {
    if (!key.starts_with(custom)) return false;
    keys.emplace_back(key);
    return true;
  });
  for (const auto& k : keys) t.del(db::task_custom, k);
}

}  // namespace detail

std::string list_task_id(std::string_view job_id, int64_t index) {
  char digits[24];
  std::snprintf(digits, sizeof digits, "%08lld", static_cast<long long>(index));
  return detail::task_prefix(job_id) + digits;
}

std::string task_custom_key(std::string_view job_id, std::string_view custom_id) {
  std::string k;
  k.reserve(job_id.size() + 1 + custom_id.size());
  k.append(job_id).append("/").append(custom_id);
  return k;
}

job_status shown_status(const job_record& job, const task_record& task) {
  if (task.state == task_state::done || !is_terminal(job.status)) return task.status;
  return job.status == job_status::cancelled ? job_status::cancelled : job_status::failed;
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
