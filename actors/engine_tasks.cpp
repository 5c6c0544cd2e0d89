// The engine's task-list jobs (docs/task-lists.md): submitting a list, and reading its tasks.
// The rest of engine is in engine.cpp.

#include <set>

#include "actors/engine.hpp"
#include "actors/submission.hpp"
#include "actors/write.hpp"

namespace sy::actors {
namespace {

/// The distinct models of `tasks`, with the param naming the first task of each.
std::pair<std::vector<std::string>, std::vector<std::string>> task_models(
    const std::vector<task_input>& tasks) {
  std::pair<std::vector<std::string>, std::vector<std::string>> out;
  std::set<std::string_view> seen;
  for (size_t i = 0; i < tasks.size(); ++i) {
    const auto& model = tasks[i].body["model"].get_ref<const std::string&>();
    if (!seen.insert(model).second) continue;
    out.first.push_back(model);
    out.second.push_back("tasks[" + std::to_string(i) + "].body.model");
  }
  return out;
}

/// The records of `tasks` as the next tasks of `job`, from its `ingested` on (an append's ids
/// and indexes are set again by the writer, which knows the list's length).
std::vector<storage::task_record> task_records(const storage::job_record& job,
                                               std::vector<task_input>& tasks) {
  std::vector<storage::task_record> out;
  out.reserve(tasks.size());
  for (size_t i = 0; i < tasks.size(); ++i) {
    auto& in = tasks[i];
    storage::task_record t;
    const int64_t index = job.ingested + static_cast<int64_t>(i);
    t.id = storage::list_task_id(job.id, index);
    t.job_id = job.id;
    t.tenant = job.tenant;
    t.model = in.body["model"].get<std::string>();
    t.index = static_cast<int>(index);
    t.max_attempts = job.max_attempts;
    t.custom_id = std::move(in.custom_id);
    t.body = in.body.dump();
    out.push_back(std::move(t));
  }
  return out;
}

}  // namespace

boost::asio::awaitable<result<submit_outcome>> engine::submit_list(submission s) {
  const auto n = static_cast<int64_t>(s.tasks.size());
  if (n > deps_.cfg.max_tasks_per_job)
    co_return make_error(errc::too_many_tasks,
                         "The list holds " + std::to_string(n) + " tasks; a job holds at most " +
                             std::to_string(deps_.cfg.max_tasks_per_job) + " (max_tasks_per_job).",
                         "tasks");
  if (n > deps_.cfg.sync_tasks_max)
    co_return make_error(
        errc::too_many_tasks,
        "The list holds " + std::to_string(n) + " tasks; an inline list holds at most " +
            std::to_string(deps_.cfg.sync_tasks_max) +
            " (sync_tasks_max). Larger lists are not taken by this build yet; split the list "
            "into several jobs (docs/task-lists.md).",
        "tasks");
  if (!s.input_file_id.empty())
    co_return make_error(errc::invalid_tasks, "Staged task lists are not taken by this build yet.",
                         "input_file_id");
  auto webhook_url = job_webhook(s);
  if (!webhook_url) co_return webhook_url.error();
  auto models = task_models(s.tasks);
  if (auto st = queue_models(models.first, models.second); !st) co_return st.error();
  const int64_t now = deps_.clock.now_ms();
  storage::job_record job;
  job.id = "job_" + ids_.next(now);
  job.tenant = s.tenant;
  job.endpoint = s.endpoint;
  // An open list's later tasks may name other models: it names none.
  if (models.first.size() == 1 && !s.open) job.model = models.first.front();
  job.metadata = s.metadata;
  job.idempotency_key = s.idempotency_key;
  if (!s.idempotency_key.empty()) job.request_hash = request_hash(s);
  job.max_attempts = s.max_attempts > 0 ? s.max_attempts : deps_.cfg.default_max_attempts;
  job.created_at_ms = job.updated_at_ms = now;
  job.webhook_url = std::move(*webhook_url);
  job.deadline_ms = s.timeout_ms > 0 ? now + s.timeout_ms : 0;
  job.task_list = true;
  job.window = s.max_inflight > 0 ? s.max_inflight : deps_.cfg.task_window;
  storage::create_list_op op;
  op.tasks = task_records(job, s.tasks);
  op.latch = !s.open;
  op.job = std::move(job);
  write_request req{std::move(op)};
  co_return co_await commit_create(std::move(req), s.idempotency_key);
}

boost::asio::awaitable<result<storage::job_record>> engine::append(std::string tenant,
                                                                   std::string id, task_append a,
                                                                   std::string idempotency_key) {
  if (ctx_->stopping) co_return make_error(errc::shutting_down, "the server is shutting down");
  if (static_cast<int64_t>(a.tasks.size()) > deps_.cfg.sync_tasks_max)
    co_return make_error(errc::too_many_tasks,
                         "An append holds at most " + std::to_string(deps_.cfg.sync_tasks_max) +
                             " tasks (sync_tasks_max); send larger lists in several appends.",
                         "tasks");
  auto models = task_models(a.tasks);
  if (auto st = queue_models(models.first, models.second); !st) co_return st.error();
  storage::append_tasks_op op;
  op.tenant = std::move(tenant);
  op.job_id = id;
  op.idempotency_key = std::move(idempotency_key);
  if (!op.idempotency_key.empty()) op.request_hash = request_hash(a);
  storage::job_record placeholder;  // ids and indexes come from the writer
  op.tasks = task_records(placeholder, a.tasks);
  op.last_batch = a.last_batch;
  op.max_tasks = deps_.cfg.max_tasks_per_job;
  op.now_ms = deps_.clock.now_ms();
  write_request req{std::move(op)};
  auto r = co_await write(ctx_->writer, std::move(req));
  if (!r) co_return r.error();
  if (!r->reply) co_return r->err;
  auto& rep = *r->reply;
  using kind = storage::op_reply::kind;
  if (rep.what == kind::not_found)
    co_return make_error(errc::job_not_found, "no task-list job with id '" + id + "'", "id");
  if (rep.what == kind::refused && rep.refusal) co_return *rep.refusal;
  co_return std::move(*rep.job);
}

result<task_page> engine::list_tasks(const std::string& tenant, const std::string& id,
                                     std::optional<storage::job_status> status, int limit,
                                     const std::string& after) {
  task_page page;
  auto txn = deps_.env.begin_read();
  auto job = storage::get_job(txn, id);
  if (!job || job->tenant != tenant || !job->task_list)
    return make_error(errc::job_not_found, "no task-list job with id '" + id + "'", "id");
  int64_t from = 0;
  if (!after.empty()) {
    auto index = storage::list_task_index(id, after);
    if (!index || *index >= job->ingested)
      return make_error(errc::task_not_found, "no task of job " + id + " has id '" + after + "'",
                        "after");
    from = *index + 1;
  }
  // In index order; a status filter reads the tasks it skips (docs/task-lists.md).
  const std::string first = storage::list_task_id(id, from);
  const std::string prefix = first.substr(0, first.find('-') + 1);
  txn.scan(storage::db::tasks, first, [&](std::string_view key, std::string_view value) {
    if (!key.starts_with(prefix)) return false;
    auto task = storage::decode_task(value);
    if (!task) return true;
    if (status && storage::shown_status(*job, *task) != *status) return true;
    if (static_cast<int>(page.tasks.size()) == limit) {
      page.has_more = true;
      return false;
    }
    page.tasks.push_back(std::move(*task));
    return true;
  });
  page.job = std::move(*job);
  return page;
}

result<task_page> engine::get_task(const std::string& tenant, const std::string& id,
                                   const std::string& task) {
  auto txn = deps_.env.begin_read();
  auto job = storage::get_job(txn, id);
  if (!job || job->tenant != tenant || !job->task_list)
    return make_error(errc::job_not_found, "no task-list job with id '" + id + "'", "id");
  std::optional<storage::task_record> found;
  if (storage::list_task_index(id, task)) found = storage::get_task(txn, task);
  if (!found) {
    if (auto by_custom = txn.get(storage::db::task_custom, storage::task_custom_key(id, task)))
      found = storage::get_task(txn, *by_custom);
  }
  if (!found || found->job_id != id)
    return make_error(errc::task_not_found,
                      "job " + id + " has no task with id or custom_id '" + task + "'", "task_id");
  task_page page;
  page.job = std::move(*job);
  page.tasks.push_back(std::move(*found));
  return page;
}

}  // namespace sy::actors
