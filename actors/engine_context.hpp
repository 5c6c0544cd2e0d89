#pragma once
/// What the engine's actors and attempt runners share. Owned by `engine`; it outlives every actor
/// and coroutine that points at it (the engine stops them before it is destroyed).

#include <utility>

#include <atomic>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include <boost/asio/io_context.hpp>
#include <caf/actor_system.hpp>

#include "actors/ambient.hpp"
#include "actors/dispatch_deps.hpp"
#include "actors/dispatcher_directory.hpp"
#include "actors/gateway_table.hpp"
#include "actors/global_budget.hpp"
#include "actors/http_task.hpp"
#include "actors/job_registry.hpp"
#include "actors/job_watch.hpp"
#include "actors/lease_reaper.hpp"
#include "actors/list_ingest.hpp"
#include "actors/storage_writer.hpp"
#include "config/settings.hpp"
#include "runtime/clock.hpp"
#include "runtime/gateway_client.hpp"
#include "runtime/jetstream.hpp"

namespace sy::actors {

/// The engine's own record of what it made at start: the ambient part every actor gets, the
/// actors' handles, the gateway clients. Owned by `engine` (and the flow tests' environment); an
/// actor is given only its `*_deps`, built from it (`exec`: attempt runners and gateway clients
/// run there).
struct engine_context : ambient {
  engine_context(caf::actor_system& s, const config::settings& c, const runtime::clock& k,
                 runtime::js_client& j, boost::asio::io_context& e)
      : ambient{s, c, k, e}, js(j), gateways(e, k, c.gateway.has_value()), watch(k) {}

  runtime::js_client& js;
  storage_writer_actor writer;
  storage::environment* env = nullptr;  ///< for short read transactions
  global_budget_actor budget;           ///< owns the global concurrency slots (set once at start)
  std::string holder;                   ///< lease holder id of this process: "<node>/<boot ULID>"
  gateway_table gateways;               ///< filled at start, read-only after
  /// Sends the requests of http tasks, under the http_task_* policy (set once at start).
  std::unique_ptr<runtime::outbound_client> http_tasks;
  job_registry_actor jobs;            ///< the jobs with work in flight here (set once at start)
  job_watch watch;                    ///< wakes waiters (Prefer: wait, SSE) when a job changes
  std::atomic<bool> stopping{false};  ///< shutdown began: dispatchers fetch no more
  /// Task-list ingest actors alive: shutdown waits for them before this context is destroyed.
  std::atomic<int> ingests{0};
  /// The directory of model dispatchers (actors/dispatcher_directory.hpp): submissions, list
  /// ingests and batch lanes ask it for a model's dispatcher. Set once at start.
  dispatcher_directory_actor dispatchers;

  /// The lease reaper's dependencies (`node_prefix`: see spawn_lease_reaper).
  reaper_deps reaper(std::string node_prefix) const {
    return {this, env, &js, writer, jobs, holder, std::move(node_prefix)};
  }

  /// What a task fetcher, a job actor and a model dispatcher get.
  fetch_deps fetch() const { return {this, &js, &stopping}; }
  std::shared_ptr<const job_deps> job() const {
    return std::make_shared<const job_deps>(
        job_deps{this, &js, writer, jobs, &gateways, http_tasks.get(), holder});
  }
  dispatcher_deps dispatcher() const { return {fetch(), budget, job()}; }
  /// What a task list's ingest gets.
  ingest_deps ingest() {
    return {this,      env,     writer, jobs, dispatchers, &gateways, &http_tasks->policy(),
            &stopping, &ingests};
  }
};

}  // namespace sy::actors
