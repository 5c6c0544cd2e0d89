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

#include "actors/dispatcher_directory.hpp"
#include "actors/global_budget.hpp"
#include "actors/http_task.hpp"
#include "actors/job_registry.hpp"
#include "actors/job_watch.hpp"
#include "actors/storage_writer.hpp"
#include "config/settings.hpp"
#include "runtime/clock.hpp"
#include "runtime/gateway_client.hpp"
#include "runtime/jetstream.hpp"

namespace sy::actors {

struct engine_context {
  engine_context(caf::actor_system& s, const config::settings& c, const runtime::clock& k,
                 runtime::js_client& j, boost::asio::io_context& e)
      : sys(s), cfg(c), clock(k), js(j), exec(e), watch(k) {}

  caf::actor_system& sys;
  const config::settings& cfg;
  const runtime::clock& clock;
  runtime::js_client& js;
  boost::asio::io_context& exec;  ///< attempt runners and gateway clients run here
  storage_writer_actor writer;
  storage::environment* env = nullptr;  ///< for short read transactions
  global_budget_actor budget;           ///< owns the global concurrency slots (set once at start)
  std::string holder;                   ///< lease holder id of this process: "<node>/<boot ULID>"
  std::vector<std::unique_ptr<runtime::gateway_client>>
      gateway_clients;                                       ///< one per distinct settings
  std::map<std::string, runtime::gateway_client*> gateways;  ///< by model; "*" for the global one
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

  /// Serves `key` (a model, or "*") by the client made for settings equal to `g` — entries that
  /// are equal share one client and its keep-alive pool — or by a new client on `exec`.
  void add_gateway(const std::string& key, const config::gateway_settings& g) {
    for (const auto& client : gateway_clients) {
      if (client->settings() == g) {
        gateways[key] = client.get();
        return;
      }
    }
    gateways[key] =
        gateway_clients
            .emplace_back(std::make_unique<runtime::gateway_client>(exec.get_executor(), g, clock))
            .get();
  }

  /// Requests in flight at once on `model`'s queue: the per-host limit for an http task queue.
  int concurrency_for(const std::string& model) const {
    return is_http_queue(model) ? cfg.http_task_host_concurrency : cfg.per_model_concurrency;
  }

  /// The client for `model`, or nullptr when no gateway serves it.
  runtime::gateway_client* gateway_for(const std::string& model) const {
    auto it = gateways.find(cfg.gateway ? std::string("*") : model);
    return it == gateways.end() ? nullptr : it->second;
  }
};

}  // namespace sy::actors
