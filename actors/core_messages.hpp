#pragma once
/// The requests a surface makes of the core and the core's answers, as messages: one struct per
/// call of `job_service` and `worker_service`, each a plain value with `inspect`, so that a request
/// can cross a process (the cluster forwards a request for a job owned elsewhere over NATS
/// request-reply: api/core_bridge.hpp) and the answer come back. A job's request names the job by
/// id, the address of its owner. `encode` / `decode` are their bytes on the wire: CAF's binary
/// format, behind a version byte.

#include <utility>  // before any Asio header

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <variant>

#include <boost/asio/awaitable.hpp>

#include "actors/batch_service.hpp"
#include "actors/job_service.hpp"
#include "actors/worker_service.hpp"
#include "config/result.hpp"
#include "storage/inspect.hpp"

namespace sy::actors::core {

struct submit_job {
  admitted<submission> request;
  bool operator==(const submit_job&) const = default;
};
struct get_job {
  std::string tenant, id;
  bool operator==(const get_job&) const = default;
};
/// Waits until the job is terminal or `timeout_ms` passed (Prefer: wait).
struct wait_job {
  std::string tenant, id;
  int64_t timeout_ms = 0;
  bool operator==(const wait_job&) const = default;
};
/// The job's state changes after `after_seq`, waiting up to `timeout_ms` for one (SSE).
struct job_events {
  std::string tenant, id;
  uint64_t after_seq = 0;
  int64_t timeout_ms = 0;
  bool operator==(const job_events&) const = default;
};
struct cancel_job {
  std::string tenant, id;
  bool operator==(const cancel_job&) const = default;
};
struct delete_job {
  std::string tenant, id;
  bool operator==(const delete_job&) const = default;
};
struct rerun_job {
  std::string tenant, id;
  bool operator==(const rerun_job&) const = default;
};
struct list_jobs {
  std::string tenant;
  std::optional<storage::job_status> status;
  int limit = 20;
  std::string after;
  std::optional<storage::job_kind> kind;
  bool operator==(const list_jobs&) const = default;
};
struct list_tasks {
  std::string tenant, id;
  std::optional<storage::job_status> status;
  int limit = 20;
  std::string after;
  bool operator==(const list_tasks&) const = default;
};
struct get_task {
  std::string tenant, id, task;
  bool operator==(const get_task&) const = default;
};
struct append_tasks {
  std::string id;
  admitted<task_append> request;
  bool operator==(const append_tasks&) const = default;
};
/// A worker's lease, heartbeat, complete, fail or credentials call (its `what`). A lease that
/// crossed a process waits without a caller presence: it ends at its wait.
struct worker_call {
  admitted<worker_request> request;
  bool operator==(const worker_call&) const = default;
};
struct get_jwks {
  bool operator==(const get_jwks&) const = default;
};
/// Makes a new signing key (the admin's rotation, docs/workers.md); answers the JWKS.
struct rotate_keys {
  bool operator==(const rotate_keys&) const = default;
};

// The Files and Batch API (actors/batch_service.hpp): one message per call of batch_service.
// Where an upload is staged and where a file's bytes are read are not requests: they are paths
// on the node that serves the route (docs/storage.md, "State outside LMDB").
struct create_file {
  admitted<staged_file> request;
  bool operator==(const create_file&) const = default;
};
struct get_file {
  std::string tenant, id;
  bool operator==(const get_file&) const = default;
};
struct list_files {
  std::string tenant, purpose;
  bool ascending = false;
  std::string after;
  int limit = 0;
  bool operator==(const list_files&) const = default;
};
struct delete_file {
  std::string tenant, id;
  bool operator==(const delete_file&) const = default;
};
// clang-tidy 14 sees a throw in nlohmann::json's move constructor (the request's metadata), which
// the implicitly noexcept moves of this struct call; that check is an assert, not a throw.
// NOLINTNEXTLINE(bugprone-exception-escape)
struct create_batch {
  admitted<batch_request> request;
  bool operator==(const create_batch&) const = default;
};
struct get_batch {
  std::string tenant, id;
  bool operator==(const get_batch&) const = default;
};
struct list_batches {
  std::string tenant, after;
  int limit = 0;
  bool operator==(const list_batches&) const = default;
};
struct cancel_batch {
  std::string tenant, id;
  bool operator==(const cancel_batch&) const = default;
};
/// POST /v1/jobs/{id}/rerun of a finished batch: the engine's request of the batch manager
/// (actors/batch_manager.hpp), not a surface's (a surface sends rerun_job).
struct rerun_batch {
  std::string tenant, id;
  bool operator==(const rerun_batch&) const = default;
};
/// DELETE /v1/jobs/{id} of a batch: the engine's request of the batch manager, as rerun_batch.
struct delete_batch {
  std::string tenant, id;
  bool operator==(const delete_batch&) const = default;
};

using request = std::variant<submit_job, get_job, wait_job, job_events, cancel_job, delete_job,
                             rerun_job, list_jobs, list_tasks, get_task, append_tasks, worker_call,
                             get_jwks, rotate_keys, create_file, get_file, list_files, delete_file,
                             create_batch, get_batch, list_batches, cancel_batch>;

/// A call that succeeded with nothing to say (complete, fail).
struct done {
  bool operator==(const done&) const = default;
};

/// What a request gets: its error, or its value.
using reply =
    std::variant<sy::error, done, submit_outcome, storage::job_record, event_batch, job_page,
                 task_page, lease_reply, heartbeat_answer, storage_credentials, std::string,
                 storage::file_record, file_page, storage::batch_record, batch_page>;

/// The core's services in this process. A null one answers its calls not_found.
struct services {
  job_service& jobs;
  worker_service* workers = nullptr;
  batch_service* batches = nullptr;
};

/// Runs `r` against the core's services and answers it: what a node does with a request that
/// reached it, from one of its own surfaces or forwarded by another node. `caller`: a local
/// lease's connection (its poll ends when it goes); a forwarded one has none.
boost::asio::awaitable<reply> serve(const services& core, request r,
                                    std::shared_ptr<caller_presence> caller = nullptr);

/// What every surface (HTTP, the NATS micro service and intake, the worker calls) holds of the
/// core: one call, a request in and its reply out. A job's request names the job by id, which
/// addresses it: the local client serves it here; the cluster's client forwards a request for a
/// job owned by another node (api/core_bridge.hpp) and answers with that node's reply.
class client {
 public:
  virtual ~client() = default;
  /// The core's time source; a surface that slices a wait or times a request follows it.
  virtual const runtime::clock& clock() const = 0;
  virtual boost::asio::awaitable<reply> call(request r,
                                             std::shared_ptr<caller_presence> caller = nullptr) = 0;
};

/// The core of this process: `serve` on its services.
class local_client final : public client {
 public:
  explicit local_client(job_service& jobs, worker_service* workers = nullptr,
                        batch_service* batches = nullptr)
      : core_{jobs, workers, batches} {}
  const runtime::clock& clock() const override { return core_.jobs.clock(); }
  boost::asio::awaitable<reply> call(request r, std::shared_ptr<caller_presence> caller) override {
    return serve(core_, std::move(r), std::move(caller));
  }

 private:
  services core_;
};

/// A reply as a `T`, or its error; a reply of another type is an internal_error.
template <class T>
result<T> take(reply&& rep) {
  if (auto* e = std::get_if<sy::error>(&rep)) return std::move(*e);
  if (auto* v = std::get_if<T>(&rep)) return std::move(*v);
  return make_error(errc::internal_error, "the core answered a request with another type");
}

/// `r`'s reply as a `T`, or its error (take). The hot paths (a submission) await `call` and
/// `take` the reply themselves, which spares this coroutine's frame and a move of the answer.
template <class T>
boost::asio::awaitable<result<T>> ask(client& c, request r,
                                      std::shared_ptr<caller_presence> caller = nullptr) {
  co_return take<T>(co_await c.call(std::move(r), std::move(caller)));
}

/// A call that answers nothing but whether it was done (a worker's complete or fail).
boost::asio::awaitable<status> ask_done(client& c, request r);

/// The request or reply as bytes: a version byte, then CAF's binary serialization.
std::string encode(const request& r);
std::string encode(const reply& r);
/// Errors: invalid_request (another version, bytes that do not load, bytes left over).
result<request> decode_request(std::string_view bytes);
result<reply> decode_reply(std::string_view bytes);

// --- inspect (storage/inspect.hpp)

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, submit_job& x) {
  return f(x.request);
}
template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, get_job& x) {
  return f(x.tenant, x.id);
}
template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, wait_job& x) {
  return f(x.tenant, x.id, x.timeout_ms);
}
template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, job_events& x) {
  return f(x.tenant, x.id, x.after_seq, x.timeout_ms);
}
template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, cancel_job& x) {
  return f(x.tenant, x.id);
}
template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, delete_job& x) {
  return f(x.tenant, x.id);
}
template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, rerun_job& x) {
  return f(x.tenant, x.id);
}
template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, list_jobs& x) {
  return f(x.tenant, storage::optional_field{x.status}, x.limit, x.after,
           storage::optional_field{x.kind});
}
template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, list_tasks& x) {
  return f(x.tenant, x.id, storage::optional_field{x.status}, x.limit, x.after);
}
template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, get_task& x) {
  return f(x.tenant, x.id, x.task);
}
template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, append_tasks& x) {
  return f(x.id, x.request);
}
template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, worker_call& x) {
  return f(x.request);
}
template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, get_jwks&) {
  return f();
}
template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, rotate_keys&) {
  return f();
}
template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, create_file& x) {
  return f(x.request);
}
template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, get_file& x) {
  return f(x.tenant, x.id);
}
template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, list_files& x) {
  return f(x.tenant, x.purpose, x.ascending, x.after, x.limit);
}
template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, delete_file& x) {
  return f(x.tenant, x.id);
}
template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, create_batch& x) {
  return f(x.request);
}
template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, get_batch& x) {
  return f(x.tenant, x.id);
}
template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, list_batches& x) {
  return f(x.tenant, x.after, x.limit);
}
template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, cancel_batch& x) {
  return f(x.tenant, x.id);
}
template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, rerun_batch& x) {
  return f(x.tenant, x.id);
}
template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, delete_batch& x) {
  return f(x.tenant, x.id);
}
template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, done&) {
  return f();
}

}  // namespace sy::actors::core
