#pragma once
/// The queue of one runtime (docs/workers.md): tasks that external workers lease over the worker
/// protocol. One actor per configured runtime. It owns the runtime's waiting lease requests (the
/// long polls) and its task fetcher (actors/model_dispatcher.hpp), and it fetches from the
/// runtime's JetStream queue only while a lease request waits, only as many tasks as the waiting
/// requests ask for.
///
/// Each fetched task is started as every attempt is: a lease committed in the store through the
/// storage writer (fenced: a stale or duplicate delivery is dropped), with the runtime's
/// `lease_ttl_ms` and the holder `worker:<runtime>`. Then the JetStream message is acked — from
/// here the store's lease is the only claim on the task, the worker heartbeats it, and when it
/// runs out the lease reaper queues the task again — and the credential minter signs the
/// attempt's capability token. A request is answered as soon as it holds tasks, or empty when its
/// wait ends; tasks fetched after every request left go back to the queue (nak, no delay).

#include <cstdint>
#include <string>
#include <vector>

#include <caf/replies_to.hpp>
#include <caf/typed_actor.hpp>

#include "actors/credential_minter.hpp"
#include "actors/model_dispatcher.hpp"
#include "actors/runtime_names.hpp"

namespace sy::actors {

/// One task handed to a worker.
struct leased_task {
  std::string task_id;
  std::string job_id;
  int32_t attempt = 0;
  std::string input;  ///< the job's `input` as JSON text
  int64_t lease_expires_at_ms = 0;
  int64_t lease_ttl_ms = 0;
  std::string capability_token;
  /// The attempt's span (runtime/trace.hpp) under the job's: the worker's spans are its children.
  std::string traceparent;
  std::string tracestate;

  bool operator==(const leased_task&) const = default;
};
template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, leased_task& x) {
  return f(x.task_id, x.job_id, x.attempt, x.input, x.lease_expires_at_ms, x.lease_ttl_ms,
           x.capability_token, x.traceparent, x.tracestate);
}

struct lease_reply {
  std::vector<leased_task> tasks;

  bool operator==(const lease_reply&) const = default;
};
template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, lease_reply& x) {
  return f(x.tasks);
}

/// Receives (`lease`, max_tasks, wait_ms, call) → lease_reply; (`withdraw`, call): the caller of
/// that lease left, so it takes no more tasks and, holding none, is answered empty at once;
/// `fetched_tasks` from its fetcher; `tick` (a wait may have ended). `call` is a number the
/// sender picks to name its lease (0: never withdrawn).
using runtime_queue_actor =
    caf::typed_actor<caf::replies_to<lease_atom, int32_t, int64_t, uint64_t>::with<lease_reply>,
                     caf::reacts_to<withdraw_atom, uint64_t>, caf::reacts_to<fetched_tasks>,
                     caf::reacts_to<tick_atom>>;

/// What a runtime's queue uses: its fetcher's, the writer its leases are committed through, and
/// the minter of the leases' capability tokens (none: the runtime's tasks carry no token).
struct runtime_queue_deps {
  fetch_deps fetch;
  storage_writer_actor writer;
  credential_minter_actor minter;
};

/// `fetcher_on`: runs_on::scheduler only for flow tests on CAF's test coordinator.
runtime_queue_actor spawn_runtime_queue(runtime_queue_deps d, std::string runtime,
                                        runs_on fetcher_on = runs_on::own_thread);

}  // namespace sy::actors
