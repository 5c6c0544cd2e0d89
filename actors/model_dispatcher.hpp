#pragma once
/// The model dispatcher: one actor per model. It owns the model's concurrency budget
/// (`per_model_concurrency` slots, actors/slot_ledger.hpp) for everything sent to the model:
/// its own attempts and the lanes of batches, which ask it for slots by message (actors/slots.hpp).
/// Every model slot it hands out is backed by a slot of the global budget that it holds
/// (actors/global_budget.hpp): it asks the global budget for more when its own waiters need
/// them, keeps what it has while nobody else waits, and gives back what the global budget asks
/// for as soon as a slot is not in use.
///
/// It takes from the model's JetStream pull consumer only as many messages as its lookahead has
/// room for; a message may name many tasks (DESIGN rule 3): it spawns a job actor for as many of
/// them as the lookahead allows (actors/job_actor.hpp) and keeps the rest, starting them as room
/// frees before it fetches again, and sending in_progress for their messages every third of the
/// AckWait. A message is acked once every task it names is leased or stale
/// (actors/dispatch_state.hpp, `task_message_hold`). A job actor commits its lease first and then
/// reports (`lease`, id, itself); the dispatcher grants it a slot (`start`) in turn. It sends
/// `answered` once the gateway exchange is over, which frees its slot, and (`done`, stage, id)
/// when it ends.
///
/// No handler blocks: the blocking JetStream fetch runs in the model's task fetcher, a detached
/// actor (its own thread) linked to the dispatcher, which owns the pull subscription. The
/// dispatcher asks it for up to N messages (`fetch`, N) and gets them back as values
/// (`fetched_tasks`); one fetch is outstanding at a time.

#include <utility>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <caf/replies_to.hpp>
#include <caf/typed_actor.hpp>

#include "actors/atoms.hpp"
#include "actors/dispatch_deps.hpp"
#include "actors/http_task.hpp"
#include "actors/job_registry.hpp"
#include "actors/slots.hpp"

namespace sy::actors {

/// Requests in flight at once on `model`'s queue: the per-host limit for an http task queue.
inline int concurrency_for(const config::settings& cfg, const std::string& model) {
  return is_http_queue(model) ? cfg.http_task_host_concurrency : cfg.per_model_concurrency;
}

/// The fetcher's answer to (`fetch`, asked): up to `asked` deliveries of the model's queue, or
/// why the fetch failed (`error` set, `got` empty).
struct fetched_tasks {
  int32_t asked = 0;
  std::vector<runtime::delivery> got;
  std::string error;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, fetched_tasks& x) {
  return f(x.asked, x.got, x.error);
}

/// Receives: `wake` (take the model's JetStream queue from now on; until then it only hands
/// out the model's budget, to batch lanes), `fetch` (look for work now), `fetched_tasks` (its
/// fetcher's answer), `tick` (keep the kept tasks' messages alive), (`lease`, id, attempt,
/// chained) (an attempt's lease is committed: it waits for a slot; chained: the attempt it
/// finished before leased this one with its outcome), (`answered`, ms) (an attempt's gateway
/// exchange is over after that long: its slot is free) and (`done`, stage, id) (an attempt ended at
/// that `attempt_stage`; what it still held is freed now). As the owner of its model's budget:
/// `slot_update`s from batch lanes. As a holder of global slots: grants and yields from the global
/// budget (actors/slots.hpp).
using model_dispatcher_actor = caf::typed_actor<
    caf::reacts_to<wake_atom>, caf::reacts_to<fetch_atom>, caf::reacts_to<fetched_tasks>,
    caf::reacts_to<tick_atom>, caf::reacts_to<lease_atom, uint64_t, job_actor, bool>,
    caf::reacts_to<answered_atom, int64_t>, caf::reacts_to<done_atom, int32_t, uint64_t>,
    caf::reacts_to<slot_update, slot_holder_actor>, caf::reacts_to<slot_atom, uint64_t, int32_t>,
    caf::reacts_to<yield_atom, uint64_t, int32_t>>;

/// The task fetcher of one model: receives (`fetch`, max) and answers its dispatcher with
/// `fetched_tasks` after one blocking fetch (up to 250 ms).
using task_fetcher_actor = caf::typed_actor<caf::reacts_to<fetch_atom, int32_t>>;

/// Whoever a task fetcher answers: a model dispatcher, or a runtime's queue
/// (actors/runtime_queue.hpp).
using fetch_reply_actor = caf::typed_actor<caf::reacts_to<fetched_tasks>>;

/// Spawns the task fetcher of `queue` (a model, or a runtime's queue key), linked to `parent`,
/// answering `reply_to`. It fetches over `sub` (an owning raw pointer; null: it binds the
/// queue's pull consumer itself before its first fetch, see spawn_model_dispatcher).
task_fetcher_actor spawn_task_fetcher(caf::local_actor* parent, fetch_deps deps, std::string queue,
                                      fetch_reply_actor reply_to, runtime::pull_subscription* sub,
                                      uint64_t generation, runs_on where = runs_on::own_thread);

/// Spawns the dispatcher for `model`. With `sub` it takes the model's queue at once; without, it
/// does when it gets `wake`, and its fetcher binds the model's pull consumer itself before its
/// first fetch (retried at each fetch while NATS is down). `sub` is bound while
/// the JetStream layout was at `generation` (js_client::layout_generation()). When the layout is
/// made again (after a reconnect) the fetcher binds the consumer again before its next fetch: a
/// server that came back without its store has lost the consumer, and a fetch from it would
/// never return a message. `fetcher_on`: runs_on::scheduler only for flow tests on CAF's test
/// coordinator (its fetches then block the scheduler's thread).
model_dispatcher_actor spawn_model_dispatcher(dispatcher_deps deps, std::string model,
                                              std::unique_ptr<runtime::pull_subscription> sub,
                                              uint64_t generation,
                                              runs_on fetcher_on = runs_on::own_thread);

}  // namespace sy::actors
