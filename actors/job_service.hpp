#pragma once
/// The boundary between the HTTP API (and later NATS intake) and the engine. The API parses and
/// authenticates a request, turns it into a `submission`, and calls this service; the service
/// commits through the storage writer actor and answers when the commit is durable.
/// Thread-safety: every method may be called from any Asio thread concurrently.

#include <chrono>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <boost/asio/awaitable.hpp>
#include <nlohmann/json.hpp>

#include "actors/admitted.hpp"
#include "config/result.hpp"
#include "config/s3_scope.hpp"
#include "runtime/clock.hpp"
#include "runtime/trace.hpp"
#include "storage/records.hpp"

namespace sy::actors {

/// One task of a task list as submitted (docs/task-lists.md).
// clang-tidy 14 sees a throw in nlohmann::json's move constructor (its invariant check), which
// the implicitly noexcept moves of this struct call; that check is an assert, not a throw.
// NOLINTNEXTLINE(bugprone-exception-escape)
struct task_input {
  std::string custom_id;  ///< the client's id, unique within the job; empty: none
  /// Its JSON as compact text (admission parsed and checked it): the OpenAI request, an http
  /// task's request (`http`) or a runtime task's input (`runtime`).
  std::string body;
  std::string model;     ///< its queue: body["model"], or http-task:<host> (actors/http_task.hpp)
  bool http = false;     ///< an http task: `body` is {method, url, headers?, body?}
  bool runtime = false;  ///< a task for a runtime's workers: `body` is its `input`; `model` is
                         ///< the job's runtime queue, set once the job is known

  bool operator==(const task_input&) const = default;
};

/// A validated submission (see actors/submission.hpp for how JSON becomes one).
struct submission {
  std::string tenant;
  std::string endpoint;  ///< /v1/chat/completions | /v1/embeddings | /v1/completions
  /// The OpenAI request (a runtime job: its input) as compact JSON text; empty for a task list.
  std::string body;
  std::string model;  ///< a single OpenAI request's `body.model` (non-empty); else empty
  std::vector<task_input> tasks;  ///< a task list instead of `body`; empty: a single request
  int max_inflight = 0;           ///< a task list's most tasks in flight; 0: `task_window`
  bool open = false;              ///< a task list that takes more tasks by appends until closed
  bool task_events = false;       ///< a task list that publishes an event per task transition
  std::string input_file_id;      ///< a staged task list (a file of purpose "tasks")
  std::string runtime;            ///< a job for this runtime's workers: `body` is its `input`
  config::s3_grants grants;       ///< a runtime job's storage grants (docs/workers.md)

  bool task_list() const { return !tasks.empty() || open || !input_file_id.empty(); }
  nlohmann::json metadata = nlohmann::json::object();
  int max_attempts = 0;         ///< 0: the configured default
  std::string idempotency_key;  ///< empty when none
  std::string webhook_url;      ///< empty: the configured default (if any)
  int64_t timeout_ms = 0;       ///< deadline relative to creation; 0: none
  /// The client's trace context (its `traceparent`/`tracestate`); not valid: none was sent, or
  /// it did not parse, and the job starts a trace of its own.
  trace::context trace;

  bool operator==(const submission&) const = default;
};

/// One page of `list`: newest first.
struct job_page {
  std::vector<storage::job_record> jobs;
  bool has_more = false;

  bool operator==(const job_page&) const = default;
};

/// A job and its state changes after some sequence number (the SSE stream).
struct event_batch {
  storage::job_record job;
  std::vector<storage::event_record> events;

  bool operator==(const event_batch&) const = default;
};

/// An append to an open task list (POST /v1/jobs/{id}/tasks; /close is an empty last batch).
struct task_append {
  std::vector<task_input> tasks;
  bool last_batch = false;
  std::string tenant;           ///< whose job it appends to
  std::string idempotency_key;  ///< empty when none

  bool operator==(const task_append&) const = default;
};

/// One page of a task list's tasks, in index order, with the job they belong to.
struct task_page {
  storage::job_record job;
  std::vector<storage::task_record> tasks;
  bool has_more = false;

  bool operator==(const task_page&) const = default;
};

/// What a submit produced: the job, and whether this call created it (false: an earlier
/// submission with the same idempotency key and the same request made it).
struct submit_outcome {
  storage::job_record job;
  bool created = false;

  bool operator==(const submit_outcome&) const = default;
};

// --- inspect (storage/inspect.hpp): the requests and answers of this boundary are plain values
// that CAF's serializers carry (tests/unit/actors/surface_messages_test.cpp round-trips each).

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, task_input& x) {
  return f(x.custom_id, x.body, x.model, x.http, x.runtime);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, submission& x) {
  return f(x.tenant, x.endpoint, x.body, x.model, x.tasks, x.max_inflight, x.open, x.task_events,
           x.input_file_id, x.runtime, x.grants, storage::json_field{x.metadata}, x.max_attempts,
           x.idempotency_key, x.webhook_url, x.timeout_ms, x.trace);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, task_append& x) {
  return f(x.tasks, x.last_batch, x.tenant, x.idempotency_key);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, job_page& x) {
  return f(x.jobs, x.has_more);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, event_batch& x) {
  return f(x.job, x.events);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, task_page& x) {
  return f(x.job, x.tasks, x.has_more);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, submit_outcome& x) {
  return f(x.job, x.created);
}

class job_service {
 public:
  virtual ~job_service() = default;
  /// The time source the service's waits follow; callers that slice a wait use it too.
  virtual const runtime::clock& clock() const = 0;
  /// Durably creates the job (or returns the one its idempotency key already names).
  /// Errors: idempotency_conflict, model_not_found, storage_unavailable, shutting_down.
  /// Takes only what admission (api/admission.hpp) let through.
  virtual boost::asio::awaitable<result<submit_outcome>> submit(admitted<submission> s) = 0;
  /// Reads a job of `tenant` (a batch too, as a job); another tenant's job is `job_not_found`.
  virtual result<storage::job_record> get(const std::string& tenant, const std::string& id) = 0;

  /// Waits until the job is terminal or `timeout` has passed, and returns it as it is then.
  /// Never blocks a thread. Errors: job_not_found.
  virtual boost::asio::awaitable<result<storage::job_record>> wait_terminal(
      std::string tenant, std::string id, std::chrono::milliseconds timeout) = 0;

  /// The job's state changes with sequence > `after_seq`, in order; when there are none yet,
  /// waits for one up to `timeout` (then returns an empty list). Errors: job_not_found.
  virtual boost::asio::awaitable<result<event_batch>> next_events(
      std::string tenant, std::string id, uint64_t after_seq,
      std::chrono::milliseconds timeout) = 0;

  /// Cancels: a queued job is `cancelled` at once; a running one becomes `cancelling`, its
  /// request is aborted, then `cancelled`. Cancelling a cancelled/cancelling job is harmless
  /// (returns it). Errors: job_not_found, job_not_cancellable (completed, failed, expired),
  /// storage_unavailable, shutting_down.
  virtual boost::asio::awaitable<result<storage::job_record>> cancel(std::string tenant,
                                                                     std::string id) = 0;

  /// The tenant's jobs of every kind (batches too), newest first, optionally only those in
  /// `status` and of `kind`, created strictly before job id `after` when given (the cursor), at
  /// most `limit` (1..100).
  virtual result<job_page> list(const std::string& tenant,
                                std::optional<storage::job_status> status,
                                std::optional<storage::job_kind> kind, int limit,
                                const std::string& after) = 0;

  /// The tasks of task-list job `id`, in index order, optionally only those in `status`, after
  /// task id `after` when given (the cursor), at most `limit`. Errors: job_not_found (also a
  /// job that is not a task list: it has no task list), task_not_found (`after`).
  virtual result<task_page> list_tasks(const std::string& tenant, const std::string& id,
                                       std::optional<storage::job_status> status, int limit,
                                       const std::string& after) {
    (void)tenant, (void)status, (void)limit, (void)after;
    return make_error(errc::job_not_found, "no task-list job with id '" + id + "'", "id");
  }
  /// Appends to open task list `id` of `a.tenant` (and latches it with `last_batch`); with an
  /// idempotency key a repeated append adds nothing. Errors: job_not_found, job_not_open,
  /// duplicate_custom_id, too_many_tasks, idempotency_conflict, model_not_found,
  /// storage_unavailable, shutting_down.
  virtual boost::asio::awaitable<result<storage::job_record>> append(std::string id,
                                                                     admitted<task_append> a) {
    (void)a;
    co_return make_error(errc::job_not_found, "no task-list job with id '" + id + "'", "id");
  }
  /// Deletes job `id`: stops it if it runs (its requests in flight are aborted), then removes it
  /// with everything that belongs to it. Returns the job as it was. Errors: job_not_found (also
  /// for a second delete), storage_unavailable, shutting_down.
  virtual boost::asio::awaitable<result<storage::job_record>> remove(std::string tenant,
                                                                     std::string id) {
    (void)tenant;
    co_return make_error(errc::job_not_found, "no job with id '" + id + "'", "id");
  }
  /// Runs the failed and cancelled tasks of finished task list `id` again. Errors:
  /// job_not_found, job_not_rerunnable, storage_unavailable, shutting_down.
  virtual boost::asio::awaitable<result<storage::job_record>> rerun(std::string tenant,
                                                                    std::string id) {
    (void)tenant;
    co_return make_error(errc::job_not_found, "no job with id '" + id + "'", "id");
  }
  /// One task of task-list job `id`, by task id or custom_id, with the job (`tasks` holds it).
  /// Errors: job_not_found, task_not_found.
  virtual result<task_page> get_task(const std::string& tenant, const std::string& id,
                                     const std::string& task) {
    (void)tenant, (void)task;
    return make_error(errc::job_not_found, "no task-list job with id '" + id + "'", "id");
  }
};

}  // namespace sy::actors
