// The engine's task-list jobs (docs/task-lists.md): submitting a list, and reading its tasks;
// and the record every new job starts from. The rest of engine is in engine.cpp.

#include <unistd.h>

#include <set>

#include "actors/ask.hpp"
#include "actors/engine.hpp"
#include "actors/http_task.hpp"
#include "actors/list_ingest.hpp"
#include "actors/runtime_names.hpp"
#include "actors/submission.hpp"
#include "actors/task_file.hpp"
#include "runtime/log.hpp"
#include "runtime/trace.hpp"

namespace sy::actors {

/// How long a change waits for its job's owner: its commit, behind the writer's queue, and the
/// aborts it sends. Long: it bounds only a writer that stopped answering.
constexpr std::chrono::milliseconds owner_answer_within{std::chrono::minutes(5)};
namespace {

/// The distinct models of `tasks`, with the param naming the first task of each.
std::pair<std::vector<std::string>, std::vector<std::string>> task_models(
    const std::vector<task_input>& tasks) {
  std::pair<std::vector<std::string>, std::vector<std::string>> out;
  std::set<std::string_view> seen;
  for (size_t i = 0; i < tasks.size(); ++i) {
    const auto& model = tasks[i].model;
    if (!seen.insert(model).second) continue;
    out.first.push_back(model);
    out.second.push_back("tasks[" + std::to_string(i) +
                         (tasks[i].http      ? "].request.url"
                          : tasks[i].runtime ? "].input"
                                             : "].body.model"));
  }
  return out;
}

/// Every task is of the job's kind (an append does not know it when it parses), and the URLs of
/// http tasks pass the policy as far as it can be judged before they run; runtime tasks get the
/// job's queue.
status check_task_kinds(std::vector<task_input>& tasks, const job_task_kind& k,
                        const runtime::webhook_policy& policy) {
  for (size_t i = 0; i < tasks.size(); ++i) {
    if (auto st = check_task_kind(tasks[i], k, policy, "tasks[" + std::to_string(i) + "]"); !st)
      return st.error();
  }
  return ok;
}

}  // namespace

result<std::string> engine::uploaded_list(const submission& s) {
  if (s.input_file_id.empty()) return std::string();
  auto file = batches_->get_file(s.tenant, s.input_file_id);
  if (!file)
    return make_error(errc::file_not_found, "No such file: '" + s.input_file_id + "'.",
                      "input_file_id");
  if (file->purpose != "tasks")
    return make_error(
        errc::invalid_tasks,
        "The input file must have been uploaded with purpose 'tasks', not '" + file->purpose + "'.",
        "input_file_id");
  return batches_->file_path(s.input_file_id);
}

boost::asio::awaitable<result<submit_outcome>> engine::submit_list(submission s) {
  const auto n = static_cast<int64_t>(s.tasks.size());
  if (n > deps_.cfg.max_tasks_per_job)
    co_return make_error(errc::too_many_tasks,
                         "The list holds " + std::to_string(n) + " tasks; a job holds at most " +
                             std::to_string(deps_.cfg.max_tasks_per_job) + " (max_tasks_per_job).",
                         "tasks");
  if (s.open && n > deps_.cfg.sync_tasks_max)
    co_return make_error(errc::too_many_tasks,
                         "An open job starts with at most " +
                             std::to_string(deps_.cfg.sync_tasks_max) +
                             " tasks (sync_tasks_max); append the rest in batches.",
                         "tasks");
  // A list too long to commit at once, or a staged one, is read in chunks after the answer.
  const bool staged = !s.input_file_id.empty() || n > deps_.cfg.sync_tasks_max;
  auto staged_source = uploaded_list(s);
  if (!staged_source) co_return staged_source.error();
  auto webhook_url = job_webhook(s);
  if (!webhook_url) co_return webhook_url.error();
  std::string runtime_queue;
  if (!s.runtime.empty()) {
    auto queue = runtime_model(s);
    if (!queue) co_return queue.error();
    runtime_queue = std::move(*queue);
  }
  const job_task_kind kind{s.endpoint == http_endpoint, runtime_queue};
  if (auto st = check_task_kinds(s.tasks, kind, http_task_policy_); !st) co_return st.error();
  auto models = task_models(s.tasks);
  if (runtime_queue.empty()) {
    if (auto st = co_await queue_models(models.first, models.second); !st) co_return st.error();
  }
  storage::job_record job = new_job(s, std::move(*webhook_url));
  // An open list's later tasks may name other models: it names none. A runtime job's tasks all
  // go to its runtime's queue.
  if (models.first.size() == 1 && !s.open) job.model = models.first.front();
  if (!runtime_queue.empty()) job.model = runtime_queue;
  job.task_list = true;
  job.window = s.max_inflight > 0 ? s.max_inflight : deps_.cfg.task_window;
  job.task_events = s.task_events;
  storage::create_list_op op;
  if (staged) {
    // The list is on disk before the job is: a crash after the answer finds it and goes on.
    job.ingest_path = deps_.cfg.data_dir + "/task-lists/" + job.id + ".jsonl";
    auto st = staged_source->empty() ? write_task_file(job.ingest_path, s.tasks)
                                     : link_task_file(*staged_source, job.ingest_path);
    if (!st) co_return st.error();
  } else {
    op.tasks = make_task_records(job, 0, s.tasks);
  }
  op.latch = !s.open && !staged;
  const std::string path = job.ingest_path;
  op.job = std::move(job);
  write_request req{std::move(op)};
  auto out = co_await commit_create(std::move(req), s.idempotency_key);
  if (!staged) co_return out;
  if (out && out->created) {
    start_ingest(out->job.id);
  } else {
    ::unlink(path.c_str());  // not ours: the key named another job, or the commit failed
  }
  co_return out;
}

boost::asio::awaitable<result<storage::job_record>> engine::append(std::string id,
                                                                   admitted<task_append> in) {
  task_append a = std::move(in).take();
  std::string tenant = std::move(a.tenant);
  std::string idempotency_key = std::move(a.idempotency_key);
  if (ctx_->stopping) co_return make_error(errc::shutting_down, "the server is shutting down");
  if (static_cast<int64_t>(a.tasks.size()) > deps_.cfg.sync_tasks_max)
    co_return make_error(errc::too_many_tasks,
                         "An append holds at most " + std::to_string(deps_.cfg.sync_tasks_max) +
                             " tasks (sync_tasks_max); send larger lists in several appends.",
                         "tasks");
  job_task_kind kind;  // a job's kind never changes: read before the append commits
  {
    auto txn = deps_.env.begin_read();
    auto job = storage::get_job(txn, id);
    if (job && job->owned_by(tenant)) kind = task_kind_of(*job);
  }
  if (auto st = check_task_kinds(a.tasks, kind, http_task_policy_); !st) co_return st.error();
  auto models = task_models(a.tasks);
  if (kind.runtime_queue.empty()) {
    if (auto st = co_await queue_models(models.first, models.second); !st) co_return st.error();
  }
  storage::append_tasks_op op;
  op.tenant = std::move(tenant);
  op.job_id = id;
  op.idempotency_key = std::move(idempotency_key);
  if (!op.idempotency_key.empty()) op.request_hash = request_hash(a);
  storage::job_record placeholder;  // ids, indexes and attempts come from the writer
  op.tasks = make_task_records(placeholder, 0, a.tasks);
  op.last_batch = a.last_batch;
  op.max_tasks = deps_.cfg.max_tasks_per_job;
  op.now_ms = deps_.clock.now_ms();
  storage::write_op write_op = std::move(op);  // named: see remove()
  auto rep = co_await commit_job_op(std::move(write_op), id, "task-list job");
  if (!rep) co_return rep.error();
  co_return std::move(*rep->job);
}

boost::asio::awaitable<result<write_reply>> engine::ask_owner(storage::write_op op,
                                                              const std::string& id) {
  write_request req{std::move(op)};
  co_return co_await ask<write_reply>(*sys_, ctx_->jobs, owner_answer_within, commit_atom::value,
                                      id, std::move(req));
}

boost::asio::awaitable<result<storage::op_reply>> engine::commit_job_op(storage::write_op op,
                                                                        const std::string& id,
                                                                        std::string_view what) {
  auto r = co_await ask_owner(std::move(op), id);
  if (!r) co_return r.error();
  if (!r->reply) co_return r->err;
  auto& rep = *r->reply;
  if (rep.what == storage::op_reply::kind::not_found)
    co_return make_error(errc::job_not_found, "no " + std::string(what) + " with id '" + id + "'",
                         "id");
  if (rep.what == storage::op_reply::kind::refused && rep.refusal) co_return *rep.refusal;
  co_return std::move(rep);
}

boost::asio::awaitable<result<storage::job_record>> engine::remove(std::string tenant,
                                                                   std::string id) {
  if (ctx_->stopping) co_return make_error(errc::shutting_down, "the server is shutting down");
  if (storage::is_batch_id(id)) co_return co_await remove_batch(std::move(tenant), std::move(id));
  // Named, not a temporary in the co_await expression: GCC 12 mishandles the lifetime of
  // aggregate temporaries passed to a coroutine there (engine::submit).
  storage::write_op op = storage::delete_job_op{std::move(tenant), id, deps_.clock.now_ms()};
  auto r = co_await commit_job_op(std::move(op), id, "job");
  if (!r) co_return r.error();
  auto& rep = *r;
  // A staged list still being read: its ingest finds the job gone and stops; the file goes.
  if (!rep.job->ingest_path.empty()) ::unlink(rep.job->ingest_path.c_str());
  log::info("engine", "job deleted", {{"job_id", id}});
  co_return std::move(*rep.job);
}

boost::asio::awaitable<result<storage::job_record>> engine::rerun(std::string tenant,
                                                                  std::string id) {
  if (ctx_->stopping) co_return make_error(errc::shutting_down, "the server is shutting down");
  if (storage::is_batch_id(id)) co_return co_await rerun_batch(std::move(tenant), std::move(id));
  // Named, not a temporary in the co_await expression: GCC 12 mishandles the lifetime of
  // aggregate temporaries passed to a coroutine there (engine::submit).
  storage::write_op op = storage::rerun_list_op{std::move(tenant), id, deps_.clock.now_ms()};
  auto r = co_await commit_job_op(std::move(op), id, "job");
  if (!r) co_return r.error();
  auto& rep = *r;
  if (rep.job->status == storage::job_status::ingesting) start_ingest(rep.job->id);
  co_return std::move(*rep.job);
}

void engine::start_ingest(const std::string& job_id) { spawn_list_ingest(ctx_->ingest(), job_id); }

void engine::resume_ingests() {
  std::vector<std::string> ids;
  {
    auto txn = deps_.env.begin_read();
    txn.scan(storage::db::list_ingest, "", [&](std::string_view id, std::string_view) {
      ids.emplace_back(id);
      return true;
    });
  }
  if (!ids.empty()) log::info("ingest", "resuming task-list ingests", {{"count", ids.size()}});
  for (const auto& id : ids) start_ingest(id);
}

result<task_page> engine::list_tasks(const std::string& tenant, const std::string& id,
                                     std::optional<storage::job_status> status, int limit,
                                     const std::string& after) {
  if (storage::is_batch_id(id)) return list_batch_tasks(tenant, id, status, limit, after);
  task_page page;
  auto txn = deps_.env.begin_read();
  auto job = storage::get_job(txn, id);
  if (!job || !job->owned_by(tenant) || !job->task_list)
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
  if (auto st = load_results(page); !st) return st.error();
  return page;
}

status engine::load_results(task_page& page) const {
  for (auto& task : page.tasks) {
    if (task.result_offset < 0 || !task.result) continue;
    auto body = results_->read(page.job.id, task.result_offset, task.result_length);
    if (!body) {
      log::error("tasks", "a task's result cannot be read from its segment",
                 {{"job", page.job.id}, {"task", task.id}, {"error", body.error().message}});
      return body.error();
    }
    task.result->body = std::move(*body);
    task.result_offset = -1;
  }
  return ok;
}

result<task_page> engine::get_task(const std::string& tenant, const std::string& id,
                                   const std::string& task) {
  if (storage::is_batch_id(id)) return get_batch_task(tenant, id, task);
  auto txn = deps_.env.begin_read();
  auto job = storage::get_job(txn, id);
  if (!job || !job->owned_by(tenant) || !job->task_list)
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
  if (auto st = load_results(page); !st) return st.error();
  return page;
}

storage::job_record engine::new_job(const submission& s, std::string webhook_url) {
  const int64_t now = deps_.clock.now_ms();
  storage::job_record job;
  job.id = "job_" + ids_.next(now);
  job.tenant = s.tenant;
  job.endpoint = s.endpoint;
  job.metadata = s.metadata;
  job.idempotency_key = s.idempotency_key;
  // Only an idempotency key is ever compared against it (storage/ops.cpp); without one the
  // SHA-256 of the re-serialised request would be spent for nothing.
  if (!s.idempotency_key.empty()) job.request_hash = request_hash(s);
  job.max_attempts = s.max_attempts > 0 ? s.max_attempts : deps_.cfg.default_max_attempts;
  job.created_at_ms = job.updated_at_ms = now;
  job.webhook_url = std::move(webhook_url);
  job.deadline_ms = s.timeout_ms > 0 ? now + s.timeout_ms : 0;
  if (!s.grants.empty()) job.grants = config::s3_grants_json(s.grants).dump();
  // The job's span: a child of the client's when it sent one, else the root of a new trace.
  job.trace = trace::to_keep(s.trace);
  job.trace_state = s.trace.state;
  return job;
}

}  // namespace sy::actors
