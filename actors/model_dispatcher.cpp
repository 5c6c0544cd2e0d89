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

struct dispatcher_state {
  engine_context* ctx = nullptr;
  std::string model;
  std::unique_ptr<runtime::pull_subscription> sub;
  global_budget* model_budget = nullptr;  ///< the per-model limit, shared with batches
  /// A message fetched while idle that waits for a slot (at most one).
  std::optional<runtime::js_message> pending;
  bool fetch_scheduled = false;
  bool last_fetch_empty = true;  ///< an idle model asks for one message at a time
  bool error_logged = false;
  uint64_t generation = 0;  ///< the JetStream layout generation `sub` was bound under
  /// Attempts whose gateway exchange is over and whose slots are back, waiting for their outcome
  /// to commit. Bounded by the per-model limit (no fetch while it is reached), so at most twice
  /// the limit of this model's attempts are alive at once.
  int finishing = 0;
  static inline const char* name = "model_dispatcher";
};

using dispatcher_ptr = model_dispatcher_actor::stateful_pointer<dispatcher_state>;

void schedule_fetch(dispatcher_ptr self) {
  if (self->state.fetch_scheduled || self->state.ctx->stopping) return;
  self->state.fetch_scheduled = true;
  self->send(self, fetch_atom::value);
}

/// Runs one attempt on the execution context holding one slot of each budget. The slots go back
/// when the gateway has answered (`answered`), or when the attempt ends if it never sent
/// (`done`, false); an answered attempt ends with `done`, true.
void launch(dispatcher_ptr self, runtime::js_message m) {
  auto& ctx = *self->state.ctx;
  auto msg = std::make_shared<runtime::js_message>(std::move(m));
  model_dispatcher_actor me = self;
  // Set and read on the execution context only: by the attempt, then by its completion.
  auto answered = std::make_shared<std::atomic<bool>>(false);
  auto on_answered = [me, answered] {
    answered->store(true);
    caf::anon_send(me, answered_atom::value);
  };
  boost::asio::co_spawn(ctx.exec, run_attempt(ctx, self->state.model, std::move(msg), on_answered),
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
  self->state.ctx->budget.release(n);
  self->state.model_budget->release(n);
}

/// Logs a failed fetch once and retries after a pause.
void fetch_failed(dispatcher_ptr self, const sy::error& e) {
  auto& st = self->state;
  if (!st.error_logged)
    log::warn("dispatcher", "fetch failed; retrying", {{"model", st.model}, {"error", e.message}});
  st.error_logged = true;
  st.fetch_scheduled = true;
  self->delayed_send(self, error_pause, fetch_atom::value);
}

/// Binds the model's consumer again when the streams were made again since it was bound (see
/// spawn_model_dispatcher); a failure is retried before the next fetch.
void rebind_if_layout_remade(dispatcher_ptr self) {
  auto& st = self->state;
  const uint64_t generation = st.ctx->js.layout_generation();
  if (generation == st.generation) return;
  auto sub = st.ctx->js.subscribe_tasks(st.model);
  if (!sub) return;
  st.sub = std::move(sub.value());
  st.generation = generation;
  log::info("dispatcher", "bound the model's consumer again (the streams were made again)",
            {{"model", st.model}, {"generation", generation}});
}

void fetch(dispatcher_ptr self) {
  auto& st = self->state;
  st.fetch_scheduled = false;
  if (st.ctx->stopping) {
    if (st.pending) (void)st.pending->nak_with_delay(0);
    st.pending.reset();
    return;
  }
  rebind_if_layout_remade(self);
  // Enough answered attempts still committing: woken by their `done`.
  if (st.finishing >= std::max(1, st.ctx->cfg.per_model_concurrency)) return;
  if (st.pending) {
    if (take_slots(self, 1) == 0) return;  // woken when a slot frees up
    auto m = std::move(*st.pending);
    st.pending.reset();
    launch(self, std::move(m));
    schedule_fetch(self);
    return;
  }
  if (st.last_fetch_empty) {
    // Idle: wait for one message without holding a slot, so a model with nothing to do keeps no
    // slot from batches or other models. A message that arrives when no slot is free waits here.
    auto msgs = st.sub->fetch(1, fetch_wait_ms);
    if (!msgs) return fetch_failed(self, msgs.error());
    st.error_logged = false;
    if (msgs->empty()) return schedule_fetch(self);
    st.last_fetch_empty = false;
    auto m = std::move(msgs->front());
    if (st.ctx->stopping) {
      (void)m.nak_with_delay(0);
      return;
    }
    if (take_slots(self, 1) == 0) {
      st.pending = std::move(m);
      return;
    }
    launch(self, std::move(m));
    schedule_fetch(self);
    return;
  }
  // Busy: take slots first, then fetch at most that many.
  int got_slots = take_slots(self, st.ctx->cfg.per_model_concurrency);
  if (got_slots == 0) return;  // woken when a slot frees up
  auto msgs = st.sub->fetch(got_slots, fetch_wait_ms);
  if (!msgs) {
    release_slots(self, got_slots);
    return fetch_failed(self, msgs.error());
  }
  st.error_logged = false;
  int n = static_cast<int>(msgs->size());
  release_slots(self, got_slots - n);
  st.last_fetch_empty = n == 0;
  if (st.ctx->stopping) {
    // Fetched while shutdown began: hand the messages straight back for the next run.
    for (auto& m : *msgs) (void)m.nak_with_delay(0);
    release_slots(self, n);
    return;
  }
  for (auto& m : *msgs) launch(self, std::move(m));
  schedule_fetch(self);
}

model_dispatcher_actor::behavior_type dispatcher(dispatcher_ptr self, engine_context* ctx,
                                                 std::string model,
                                                 std::unique_ptr<runtime::pull_subscription>* sub,
                                                 uint64_t generation) {
  runtime::name_this_thread("sy-dispatch");  // detached: this actor has its own thread
  self->state.ctx = ctx;
  self->state.model = std::move(model);
  self->state.sub = std::move(*sub);
  delete sub;
  self->state.generation = generation;
  self->state.model_budget = &ctx->model_budget(self->state.model);
  schedule_fetch(self);
  return {
      [=](fetch_atom) { fetch(self); },
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
  // CAF copies spawn arguments; a unique_ptr travels as a raw owning pointer.
  auto* owned = new std::unique_ptr<runtime::pull_subscription>(std::move(sub));
  return ctx.sys.spawn<caf::detached>(dispatcher, &ctx, std::move(model), owned, generation);
}

}  // namespace sy::actors
