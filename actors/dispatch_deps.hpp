#pragma once
/// What the actors of dispatch are given at spawn, by name (issue 40, item 3: no actor gets the
/// engine's context). Built by the engine at start from what it made (engine_context's
/// builders); copied into each actor's state.

#include <atomic>
#include <memory>
#include <string>

#include "actors/ambient.hpp"
#include "actors/gateway_table.hpp"
#include "actors/global_budget.hpp"
#include "actors/job_registry.hpp"
#include "actors/storage_writer.hpp"
#include "runtime/jetstream.hpp"
#include "runtime/outbound_http.hpp"

namespace sy::actors {

/// A task fetcher's: JetStream (the queue's pull consumer) and the engine's shutdown flag (once
/// set it hands back what it fetched).
struct fetch_deps {
  const ambient* at = nullptr;
  runtime::js_client* js = nullptr;
  const std::atomic<bool>* stopping = nullptr;
};

/// A single request's job actor's: its delivery's acks go to JetStream, its commits to the
/// writer; it registers with the registry, sends through its model's gateway client (or, for an
/// http task, the http tasks' client) and holds its lease as `holder`.
struct job_deps {
  const ambient* at = nullptr;
  runtime::js_client* js = nullptr;
  storage_writer_actor writer;
  job_registry_actor jobs;
  const gateway_table* gateways = nullptr;
  runtime::outbound_client* http_tasks = nullptr;
  std::string holder;
};

/// A model dispatcher's: its fetcher's, the global budget its slots come from, and what its job
/// actors get (shared by all of them).
struct dispatcher_deps {
  fetch_deps fetch;
  global_budget_actor budget;
  std::shared_ptr<const job_deps> job;
};

}  // namespace sy::actors
