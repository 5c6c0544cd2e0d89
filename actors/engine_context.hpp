#pragma once
/// What the engine's actors and attempt runners share. Owned by `engine`; it outlives every actor
/// and coroutine that points at it (the engine stops them before it is destroyed).

#include <utility>

#include <atomic>
#include <map>
#include <memory>
#include <mutex>
#include <string>

#include <boost/asio/io_context.hpp>
#include <caf/actor_system.hpp>

#include "actors/budget.hpp"
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
      : sys(s), cfg(c), clock(k), js(j), exec(e), budget(c.global_concurrency), watch(k) {}

  caf::actor_system& sys;
  const config::settings& cfg;
  const runtime::clock& clock;
  runtime::js_client& js;
  boost::asio::io_context& exec;  ///< attempt runners and gateway clients run here
  storage_writer_actor writer;
  storage::environment* env = nullptr;  ///< for short read transactions
  global_budget budget;
  std::string holder;  ///< lease holder id of this process: "<node>/<boot ULID>"
  std::map<std::string, std::unique_ptr<runtime::gateway_client>> gateways;  ///< by model; "*"
  job_registry_actor jobs;  ///< the jobs with work in flight here (set once at start)
  std::mutex model_budgets_mu;
  std::map<std::string, std::unique_ptr<global_budget>> model_budgets;
  job_watch watch;                    ///< wakes waiters (Prefer: wait, SSE) when a job changes
  std::atomic<bool> stopping{false};  ///< shutdown began: dispatchers fetch no more

  /// The per-model concurrency budget of `model` (created on first use), shared by the model's
  /// dispatcher and every batch that runs requests for it, so the per-model limit holds for
  /// everything the engine sends to one model.
  global_budget& model_budget(const std::string& model) {
    std::lock_guard lock{model_budgets_mu};
    auto& b = model_budgets[model];
    if (!b) b = std::make_unique<global_budget>(cfg.per_model_concurrency);
    return *b;
  }
  /// Forgets every waiter of every budget (shutdown).
  void clear_budget_waiters() {
    budget.clear_waiters();
    std::lock_guard lock{model_budgets_mu};
    for (auto& [m, b] : model_budgets) b->clear_waiters();
  }

  /// The client for `model`, or nullptr when no gateway serves it.
  runtime::gateway_client* gateway_for(const std::string& model) const {
    auto it = gateways.find(cfg.gateway ? std::string("*") : model);
    return it == gateways.end() ? nullptr : it->second.get();
  }
};

}  // namespace sy::actors
