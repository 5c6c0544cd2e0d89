#include "actors/model_dispatcher.hpp"

#include <utility>

#include <boost/asio/co_spawn.hpp>
#include <caf/actor_system.hpp>
#include <caf/send.hpp>
#include <caf/stateful_actor.hpp>
#include <caf/typed_event_based_actor.hpp>

#include "actors/attempt.hpp"
#include "runtime/log.hpp"

namespace sy::actors {
namespace {

constexpr int64_t fetch_wait_ms = 250;
constexpr std::chrono::milliseconds error_pause{500};

struct dispatcher_state {
  engine_context* ctx = nullptr;
  std::string model;
  std::unique_ptr<runtime::pull_subscription> sub;
  int free = 0;
  bool fetch_scheduled = false;
  bool last_fetch_empty = true;  ///< an idle model asks for one message at a time
  bool error_logged = false;
  static inline const char* name = "model_dispatcher";
};

using dispatcher_ptr = model_dispatcher_actor::stateful_pointer<dispatcher_state>;

void schedule_fetch(dispatcher_ptr self) {
  if (self->state.fetch_scheduled || self->state.ctx->stopping) return;
  self->state.fetch_scheduled = true;
  self->send(self, fetch_atom::value);
}

void launch(dispatcher_ptr self, runtime::js_message m) {
  auto& ctx = *self->state.ctx;
  auto msg = std::make_shared<runtime::js_message>(std::move(m));
  model_dispatcher_actor me = self;
  boost::asio::co_spawn(ctx.exec, run_attempt(ctx, self->state.model, std::move(msg)),
                        [me](std::exception_ptr e) {
                          if (e) {
                            try {
                              std::rethrow_exception(e);
                            } catch (const std::exception& ex) {
                              log::error("dispatcher", "attempt crashed", {{"what", ex.what()}});
                            }
                          }
                          caf::anon_send(me, done_atom::value);
                        });
}

void fetch(dispatcher_ptr self) {
  auto& st = self->state;
  st.fetch_scheduled = false;
  if (st.ctx->stopping || st.free <= 0) return;
  int want = st.last_fetch_empty ? 1 : st.free;
  model_dispatcher_actor me = self;
  int got_slots = st.ctx->budget.acquire(want, self->id(), [me] {
    caf::anon_send(me, fetch_atom::value);
  });
  if (got_slots == 0) return;  // woken by the budget when a slot frees up
  auto msgs = st.sub->fetch(got_slots, fetch_wait_ms);
  if (!msgs) {
    st.ctx->budget.release(got_slots);
    if (!st.error_logged)
      log::warn("dispatcher", "fetch failed; retrying",
                {{"model", st.model}, {"error", msgs.error().message}});
    st.error_logged = true;
    st.fetch_scheduled = true;
    self->delayed_send(self, error_pause, fetch_atom::value);
    return;
  }
  st.error_logged = false;
  int n = static_cast<int>(msgs->size());
  st.ctx->budget.release(got_slots - n);
  st.last_fetch_empty = n == 0;
  if (st.ctx->stopping) {
    // Fetched while shutdown began: hand the messages straight back for the next run.
    for (auto& m : *msgs) (void)m.nak_with_delay(0);
    st.ctx->budget.release(n);
    return;
  }
  st.free -= n;
  for (auto& m : *msgs) launch(self, std::move(m));
  schedule_fetch(self);
}

model_dispatcher_actor::behavior_type dispatcher(dispatcher_ptr self, engine_context* ctx,
                                                 std::string model,
                                                 std::unique_ptr<runtime::pull_subscription>* sub) {
  self->state.ctx = ctx;
  self->state.model = std::move(model);
  self->state.sub = std::move(*sub);
  delete sub;
  self->state.free = ctx->cfg.per_model_concurrency;
  schedule_fetch(self);
  return {
      [=](fetch_atom) { fetch(self); },
      [=](done_atom) {
        ++self->state.free;
        self->state.ctx->budget.release(1);
        schedule_fetch(self);
      },
  };
}

}  // namespace

model_dispatcher_actor spawn_model_dispatcher(engine_context& ctx, std::string model,
                                              std::unique_ptr<runtime::pull_subscription> sub) {
  // CAF copies spawn arguments; a unique_ptr travels as a raw owning pointer.
  auto* owned = new std::unique_ptr<runtime::pull_subscription>(std::move(sub));
  return ctx.sys.spawn<caf::detached>(dispatcher, &ctx, std::move(model), owned);
}

}  // namespace sy::actors
