#include "actors/model_dispatcher.hpp"

#include <utility>

#include <algorithm>
#include <atomic>
#include <optional>

#include <boost/asio/co_spawn.hpp>
#include <caf/actor_system.hpp>
#include <caf/send.hpp>
#include <caf/stateful_actor.hpp>
#include <caf/typed_event_based_actor.hpp>

#include "actors/attempt.hpp"
#include "runtime/log.hpp"
#include "runtime/thread_name.hpp"

namespace sy::actors {
namespace {

constexpr int64_t fetch_wait_ms = 250;
constexpr std::chrono::milliseconds error_pause{500};

// --- the fetcher ---------------------------------------------------------------------------------

struct fetcher_state {
  engine_context* ctx = nullptr;
  std::string model;
  std::unique_ptr<runtime::pull_subscription> sub;
  uint64_t generation = 0;  ///< the JetStream layout generation `sub` was bound under
  static inline const char* name = "task_fetcher";
};

using fetcher_ptr = task_fetcher_actor::stateful_pointer<fetcher_state>;

/// Binds the model's consumer again when the streams were made again since it was bound (see
/// spawn_model_dispatcher); a failure is retried before the next fetch.
void rebind_if_layout_remade(fetcher_state& st) {
  const uint64_t generation = st.ctx->js.layout_generation();
  if (generation == st.generation) return;
  auto sub = st.ctx->js.subscribe_tasks(st.model);
  if (!sub) return;
  st.sub = std::move(sub.value());
  st.generation = generation;
  log::info("dispatcher", "bound the model's consumer again (the streams were made again)",
            {{"model", st.model}, {"generation", generation}});
}

fetched_tasks fetch_now(fetcher_state& st, int32_t max) {
  fetched_tasks out;
  out.asked = max;
  rebind_if_layout_remade(st);
  auto msgs = st.sub->fetch(max, fetch_wait_ms);
  if (!msgs) {
    out.error = msgs.error().message;
    return out;
  }
  out.got.reserve(msgs->size());
  for (const auto& m : *msgs) out.got.push_back(m.to_delivery());
  return out;
}

task_fetcher_actor::behavior_type fetcher(fetcher_ptr self, engine_context* ctx, std::string model,
                                          runtime::pull_subscription* sub, uint64_t generation,
                                          model_dispatcher_actor dispatcher) {
  runtime::name_this_thread("sy-fetch");  // detached: its fetches block this thread only
  self->state.ctx = ctx;
  self->state.model = std::move(model);
  self->state.sub.reset(sub);
  self->state.generation = generation;
  return {
      [=](fetch_atom, int32_t max) {
        self->send(dispatcher, fetch_now(self->state, std::max<int32_t>(max, 1)));
      },
  };
}

// --- the dispatcher ------------------------------------------------------------------------------

struct dispatcher_state {
  engine_context* ctx = nullptr;
  std::string model;
  task_fetcher_actor fetcher;
  global_budget* model_budget = nullptr;  ///< the per-model limit, shared with batches
  /// A delivery fetched while idle that waits for a slot (at most one).
  std::optional<runtime::delivery> pending;
  bool fetch_scheduled = false;  ///< a `fetch` to self is on its way
  bool fetch_out = false;        ///< the fetcher is fetching for us
  int held = 0;                  ///< slots taken for the outstanding fetch (0: an idle fetch)
  bool last_fetch_empty = true;  ///< an idle model asks for one message at a time
  bool error_logged = false;
  /// Attempts whose gateway exchange is over and whose slots are back, waiting for their outcome
  /// to commit. Bounded by the per-model limit (no fetch while it is reached), so at most twice
  /// the limit of this model's attempts are alive at once.
  int finishing = 0;
  static inline const char* name = "model_dispatcher";
};

using dispatcher_ptr = model_dispatcher_actor::stateful_pointer<dispatcher_state>;

void schedule_fetch(dispatcher_ptr self) {
  auto& st = self->state;
  if (st.fetch_scheduled || st.fetch_out || st.ctx->stopping) return;
  st.fetch_scheduled = true;
  self->send(self, fetch_atom::value);
}

/// Runs one attempt on the execution context holding one slot of each budget. The slots go back
/// when the gateway has answered (`answered`), or when the attempt ends if it never sent
/// (`done`, false); an answered attempt ends with `done`, true.
void launch(dispatcher_ptr self, runtime::delivery d) {
  auto& ctx = *self->state.ctx;
  model_dispatcher_actor me = self;
  // Set and read on the execution context only: by the attempt, then by its completion.
  auto answered = std::make_shared<std::atomic<bool>>(false);
  auto on_answered = [me, answered] {
    answered->store(true);
    caf::anon_send(me, answered_atom::value);
  };
  boost::asio::co_spawn(ctx.exec, run_attempt(ctx, self->state.model, std::move(d), on_answered),
                        [me, answered](std::exception_ptr e) {
                          if (e) {
                            try {
                              std::rethrow_exception(e);
                            } catch (const std::exception& ex) {
                              log::error("dispatcher", "attempt crashed", {{"what", ex.what()}});
                            }
                          }
                          caf::anon_send(me, done_atom::value, answered->load());
                        });
}

/// Takes up to `want` slots of both budgets (per-model first, then global); 0 when none is free,
/// and then the dispatcher is woken with fetch_atom once one frees up.
int take_slots(dispatcher_ptr self, int want) {
  auto& st = self->state;
  model_dispatcher_actor me = self;
  auto wake = [me] { caf::anon_send(me, fetch_atom::value); };
  int got_model = st.model_budget->acquire(want, self->id(), wake);
  if (got_model == 0) return 0;
  int got = st.ctx->budget.acquire(got_model, self->id(), wake);
  st.model_budget->release(got_model - got);
  return got;
}

void release_slots(dispatcher_ptr self, int n) {
  if (n <= 0) return;
  self->state.ctx->budget.release(n);
  self->state.model_budget->release(n);
}

void ask_fetcher(dispatcher_ptr self, int max, int held) {
  auto& st = self->state;
  st.fetch_out = true;
  st.held = held;
  self->send(st.fetcher, fetch_atom::value, static_cast<int32_t>(max));
}

/// `fetch`: start the next fetch if slots (or, when idle, none) allow.
void fetch(dispatcher_ptr self) {
  auto& st = self->state;
  st.fetch_scheduled = false;
  if (st.fetch_out) return;  // its answer schedules the next
  if (st.ctx->stopping) {
    if (st.pending) (void)st.ctx->js.nak(*st.pending, 0);
    st.pending.reset();
    return;
  }
  // Enough answered attempts still committing: woken by their `done`.
  if (st.finishing >= std::max(1, st.ctx->cfg.per_model_concurrency)) return;
  if (st.pending) {
    if (take_slots(self, 1) == 0) return;  // woken when a slot frees up
    auto d = std::move(*st.pending);
    st.pending.reset();
    launch(self, std::move(d));
    schedule_fetch(self);
    return;
  }
  if (st.last_fetch_empty) {
    // Idle: wait for one message without holding a slot, so a model with nothing to do keeps no
    // slot from batches or other models. A message that arrives when no slot is free waits here.
    return ask_fetcher(self, 1, 0);
  }
  // Busy: take slots first, then fetch at most that many.
  int got_slots = take_slots(self, st.ctx->cfg.per_model_concurrency);
  if (got_slots == 0) return;  // woken when a slot frees up
  ask_fetcher(self, got_slots, got_slots);
}

/// `fetched_tasks`: the fetcher's answer.
void fetched(dispatcher_ptr self, fetched_tasks& r) {
  auto& st = self->state;
  st.fetch_out = false;
  const int held = std::exchange(st.held, 0);
  if (!r.error.empty()) {
    release_slots(self, held);
    if (!st.error_logged)
      log::warn("dispatcher", "fetch failed; retrying", {{"model", st.model}, {"error", r.error}});
    st.error_logged = true;
    st.fetch_scheduled = true;
    self->delayed_send(self, error_pause, fetch_atom::value);
    return;
  }
  st.error_logged = false;
  const int n = static_cast<int>(r.got.size());
  if (st.ctx->stopping) {
    // Fetched while shutdown began: hand the messages straight back for the next run.
    for (auto& d : r.got) (void)st.ctx->js.nak(d, 0);
    release_slots(self, held);
    return;
  }
  if (held == 0) {  // an idle fetch of one
    if (n == 0) return schedule_fetch(self);
    st.last_fetch_empty = false;
    if (take_slots(self, 1) == 0) {
      st.pending = std::move(r.got.front());
      return;
    }
    launch(self, std::move(r.got.front()));
    return schedule_fetch(self);
  }
  release_slots(self, held - n);
  st.last_fetch_empty = n == 0;
  for (auto& d : r.got) launch(self, std::move(d));
  schedule_fetch(self);
}

model_dispatcher_actor::behavior_type dispatcher(dispatcher_ptr self, engine_context* ctx,
                                                 std::string model, runtime::pull_subscription* sub,
                                                 uint64_t generation) {
  auto& st = self->state;
  st.ctx = ctx;
  st.model = std::move(model);
  st.model_budget = &ctx->model_budget(st.model);
  model_dispatcher_actor me = self;
  st.fetcher =
      self->spawn<caf::detached + caf::linked>(fetcher, ctx, st.model, sub, generation, me);
  schedule_fetch(self);
  return {
      [=](fetch_atom) { fetch(self); },
      [=](fetched_tasks& r) { fetched(self, r); },
      [=](answered_atom) {
        release_slots(self, 1);
        ++self->state.finishing;
        schedule_fetch(self);
      },
      [=](done_atom, bool answered) {
        if (answered) {
          --self->state.finishing;
        } else {
          release_slots(self, 1);
        }
        schedule_fetch(self);
      },
  };
}

}  // namespace

model_dispatcher_actor spawn_model_dispatcher(engine_context& ctx, std::string model,
                                              std::unique_ptr<runtime::pull_subscription> sub,
                                              uint64_t generation) {
  // CAF copies spawn arguments; the subscription travels as a raw owning pointer to the fetcher.
  return ctx.sys.spawn(dispatcher, &ctx, std::move(model), sub.release(), generation);
}

}  // namespace sy::actors
