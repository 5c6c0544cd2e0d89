#include "actors/model_dispatcher.hpp"

#include <utility>

#include <algorithm>
#include <atomic>
#include <optional>

#include <caf/actor_system.hpp>
#include <caf/send.hpp>
#include <caf/stateful_actor.hpp>
#include <caf/typed_event_based_actor.hpp>

#include "actors/dispatch_state.hpp"
#include "actors/job_actor.hpp"
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
  if (st.ctx->stopping) {
    // Shutdown began during the fetch; the dispatcher may be gone already, so hand the messages
    // back here (else they would wait out the consumer's AckWait before the next run sees them).
    for (auto& m : *msgs) (void)m.nak_with_delay(0);
    return out;
  }
  out.got.reserve(msgs->size());
  for (const auto& m : *msgs) out.got.push_back(m.to_delivery());
  return out;
}

task_fetcher_actor::behavior_type fetcher(fetcher_ptr self, engine_context* ctx, std::string model,
                                          runtime::pull_subscription* sub, uint64_t generation,
                                          model_dispatcher_actor dispatcher, bool own_thread) {
  if (own_thread) runtime::name_this_thread("sy-fetch");  // detached: its fetches block it only
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
  std::optional<dispatch_state> logic;  ///< the decisions (actors/dispatch_state.hpp)
  bool fetch_scheduled = false;         ///< a `fetch` to self is on its way
  static inline const char* name = "model_dispatcher";
};

using dispatcher_ptr = model_dispatcher_actor::stateful_pointer<dispatcher_state>;

void schedule_fetch(dispatcher_ptr self) {
  auto& st = self->state;
  if (st.fetch_scheduled || st.logic->fetch_outstanding() || st.ctx->stopping) return;
  st.fetch_scheduled = true;
  self->send(self, fetch_atom::value);
}

/// Starts one attempt as a job actor holding one slot of each budget. The slots go back when
/// the gateway has answered (`answered`), or when the attempt ends if it never sent
/// (`done`, false); an answered attempt ends with `done`, true.
void launch(dispatcher_ptr self, runtime::delivery d) {
  auto& st = self->state;
  auto& ctx = *st.ctx;
  auto parsed = storage::parse_task_message(d.data);
  if (!parsed) {
    log::error("dispatcher", "not a task message; terminated", {{"subject", d.subject}});
    (void)ctx.js.term(d);
    st.logic->on_done(false);
    return;
  }
  if (ctx.stopping) {
    (void)ctx.js.nak(d, 0);  // shutdown began after the fetch: leave it to the next run
    st.logic->on_done(false);
    return;
  }
  spawn_job_actor(ctx, st.model, std::move(d), std::move(parsed->first), parsed->second,
                  model_dispatcher_actor{self});
}

/// Carries out what the logic decided.
void carry_out(dispatcher_ptr self, dispatch_actions a) {
  auto& st = self->state;
  if (a.fetch > 0) self->send(st.fetcher, fetch_atom::value, static_cast<int32_t>(a.fetch));
  for (auto& d : a.hand_back) (void)st.ctx->js.nak(d, 0);
  for (auto& d : a.start) launch(self, std::move(d));
}

/// The budgets as the logic sees them: per-model first, then global; a dispatcher that gets no
/// slot is queued as a waiter and woken with `fetch` once one is handed to it.
dispatch_state::slot_source slots_of(dispatcher_ptr self) {
  engine_context* ctx = self->state.ctx;
  model_dispatcher_actor me = self;
  return dispatch_state::both(ctx->model_budget(self->state.model), ctx->budget, self->id(),
                              [me] { caf::anon_send(me, fetch_atom::value); });
}

void on_fetched(dispatcher_ptr self, fetched_tasks& r) {
  auto& st = self->state;
  auto a = st.logic->on_fetched(std::move(r.got), r.error, st.ctx->stopping);
  if (a.pause) {
    if (!st.logic->error_reported(true))
      log::warn("dispatcher", "fetch failed; retrying", {{"model", st.model}, {"error", r.error}});
    st.fetch_scheduled = true;
    self->delayed_send(self, error_pause, fetch_atom::value);
    return;
  }
  carry_out(self, std::move(a));
  schedule_fetch(self);
}

model_dispatcher_actor::behavior_type dispatcher(dispatcher_ptr self, engine_context* ctx,
                                                 std::string model, runtime::pull_subscription* sub,
                                                 uint64_t generation, runs_on fetcher_on) {
  auto& st = self->state;
  st.ctx = ctx;
  st.model = std::move(model);
  st.logic.emplace(ctx->cfg.per_model_concurrency, slots_of(self));
  model_dispatcher_actor me = self;
  st.fetcher = fetcher_on == runs_on::own_thread
                   ? self->spawn<caf::detached + caf::linked>(fetcher, ctx, st.model, sub,
                                                              generation, me, true)
                   : self->spawn<caf::linked>(fetcher, ctx, st.model, sub, generation, me, false);
  schedule_fetch(self);
  return {
      [=](fetch_atom) {
        auto& s = self->state;
        s.fetch_scheduled = false;
        auto a = s.logic->on_fetch(s.ctx->stopping);
        const bool started = !a.start.empty();
        carry_out(self, std::move(a));
        if (started) schedule_fetch(self);  // else: its answer, a slot or a `done` wakes us
      },
      [=](fetched_tasks& r) { on_fetched(self, r); },
      [=](answered_atom) {
        self->state.logic->on_answered();
        schedule_fetch(self);
      },
      [=](done_atom, bool answered) {
        self->state.logic->on_done(answered);
        schedule_fetch(self);
      },
  };
}

}  // namespace

model_dispatcher_actor spawn_model_dispatcher(engine_context& ctx, std::string model,
                                              std::unique_ptr<runtime::pull_subscription> sub,
                                              uint64_t generation, runs_on fetcher_on) {
  // CAF copies spawn arguments; the subscription travels as a raw owning pointer to the fetcher.
  return ctx.sys.spawn(dispatcher, &ctx, std::move(model), sub.release(), generation, fetcher_on);
}

}  // namespace sy::actors
