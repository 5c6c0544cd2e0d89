#include "actors/model_dispatcher.hpp"

#include <utility>

#include <algorithm>
#include <atomic>
#include <memory>
#include <optional>
#include <unordered_map>

#include <caf/actor_system.hpp>
#include <caf/send.hpp>
#include <caf/stateful_actor.hpp>
#include <caf/typed_event_based_actor.hpp>

#include "actors/detail/actor_timer.hpp"
#include "actors/detail/slot_book.hpp"
#include "actors/dispatch_state.hpp"
#include "actors/event_json.hpp"
#include "actors/job_actor.hpp"
#include "runtime/log.hpp"
#include "runtime/thread_name.hpp"

namespace sy::actors {
namespace {

constexpr int64_t fetch_wait_ms = 250;
constexpr int64_t fetch_error_pause_ms = 500;  // of the engine's clock

// --- the fetcher ---------------------------------------------------------------------------------

struct fetcher_state {
  fetch_deps d;
  std::string model;
  std::unique_ptr<runtime::pull_subscription> sub;
  uint64_t generation = 0;  ///< the JetStream layout generation `sub` was bound under
  static inline const char* name = "task_fetcher";
};

using fetcher_ptr = task_fetcher_actor::stateful_pointer<fetcher_state>;

/// Binds the model's consumer when it is not bound yet (NATS was down) or the streams were made
/// again since it was bound (see spawn_model_dispatcher); a failure is retried before the next
/// fetch. False while it is not bound.
bool bind_consumer(fetcher_state& st, std::string& error) {
  const uint64_t generation = st.d.js->layout_generation();  // read before binding
  if (st.sub && generation == st.generation) return true;
  auto sub = st.d.js->subscribe_tasks(st.model);
  if (!sub) {
    error = "cannot subscribe to the model's queue: " + sub.error().message;
    return st.sub != nullptr;  // a stale binding still fetches what the server kept
  }
  const bool again = st.sub != nullptr;
  st.sub = std::move(sub.value());
  st.generation = generation;
  log::info("dispatcher",
            again ? "bound the model's consumer again (the streams were made again)"
                  : "bound the model's consumer",
            {{"model", st.model}, {"generation", generation}});
  error.clear();
  return true;
}

fetched_tasks fetch_now(fetcher_state& st, int32_t max) {
  fetched_tasks out;
  out.asked = max;
  if (!st.d.js->consuming()) {
    // The store's claim on the streams is not held: another store's tasks may be there.
    out.error =
        "this store's registration on the streams is not held (runtime/store_registration.hpp)";
    return out;
  }
  if (!bind_consumer(st, out.error)) return out;
  out.error.clear();
  auto msgs = st.sub->fetch(max, fetch_wait_ms);
  if (!msgs) {
    out.error = msgs.error().message;
    return out;
  }
  if (*st.d.stopping) {
    // Shutdown began during the fetch; the dispatcher may be gone already, so hand the messages
    // back here (else they would wait out the consumer's AckWait before the next run sees them).
    for (auto& m : *msgs) (void)m.nak_with_delay(0);
    return out;
  }
  out.got.reserve(msgs->size());
  for (const auto& m : *msgs) out.got.push_back(m.to_delivery());
  return out;
}

task_fetcher_actor::behavior_type fetcher(fetcher_ptr self, fetch_deps deps, std::string model,
                                          runtime::pull_subscription* sub, uint64_t generation,
                                          const fetch_reply_actor& dispatcher, bool own_thread) {
  if (own_thread) runtime::name_this_thread("sy-fetch");  // detached: its fetches block it only
  self->state.d = deps;
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
  dispatcher_deps d;
  std::string model;
  task_fetcher_actor fetcher;                  ///< set once it takes the model's queue
  std::optional<dispatch_state> logic;         ///< the decisions (actors/dispatch_state.hpp)
  bool fetch_scheduled = false;                ///< a `fetch` to self is on its way
  std::shared_ptr<runtime::timer> pause;       ///< the wait after a failed fetch
  std::shared_ptr<runtime::timer> keep_alive;  ///< in_progress for the kept tasks' messages
  bool keep_alive_armed = false;
  std::unordered_map<uint64_t, job_actor> ready;  ///< leased attempts waiting for a slot, by id
  // The model's budget (its owner) and the global slots behind it (their holder).
  std::optional<detail::slot_book> slots;  ///< model slots: its attempts and batch lanes
  uint64_t own_key = next_slot_key();      ///< its attempts' key in `slots`
  uint64_t global_key = next_slot_key();   ///< its key at the global budget
  int32_t credit = 0;       ///< model slots handed to its attempts' key, not yet taken
  int32_t global_held = 0;  ///< global slots it holds (the model slots' cap, less `owed`)
  int32_t owed = 0;         ///< global slots the global budget asked back, not yet returned
  int32_t global_wish = 0;  ///< global slots it asked for and has not been granted
  static inline const char* name = "model_dispatcher";
};

using dispatcher_ptr = model_dispatcher_actor::stateful_pointer<dispatcher_state>;

void schedule_fetch(dispatcher_ptr self) {
  auto& st = self->state;
  if (!st.fetcher || st.fetch_scheduled || *st.d.fetch.stopping) return;
  st.fetch_scheduled = true;
  self->send(self, fetch_atom::value);
}

/// Starts one attempt as a job actor: it commits its lease, then reports `lease` and waits for
/// a slot. The slot goes back when the gateway has answered (`answered`), or when the attempt
/// ends if it never sent (`done`, stage). The job actor settles the task in its message.
void launch(dispatcher_ptr self, woken_task t) {
  auto& st = self->state;
  if (*st.d.fetch.stopping) {
    t.msg->redeliver(0);  // shutdown began after the fetch: leave it to the next run
    st.logic->on_done(attempt_stage::starting, 0);
    return;
  }
  spawn_job_actor(st.d.job, st.model, std::move(t), model_dispatcher_actor{self});
}

/// Carries out what the logic decided.
void carry_out(dispatcher_ptr self, dispatch_actions a) {
  auto& st = self->state;
  if (a.fetch > 0) self->send(st.fetcher, fetch_atom::value, static_cast<int32_t>(a.fetch));
  for (auto& d : a.term) {
    log::error("dispatcher", "not a task message; terminated", {{"subject", d.subject}});
    (void)st.d.fetch.js->term(d);
  }
  for (auto& t : a.hand_back) t.msg->redeliver(0);
  for (auto id : a.go) {
    auto it = st.ready.find(id);
    if (it == st.ready.end()) continue;  // cannot be: a ready id is forgotten only once granted
    self->send(it->second, start_atom::value, st.logic->leasing_ahead());
    st.ready.erase(it);
  }
  for (auto& t : a.start) launch(self, std::move(t));
}

/// Looks for work: what a `fetch` message does, and what a slot handed to its attempts does.
void look(dispatcher_ptr self) {
  auto& st = self->state;
  if (!st.fetcher) return;  // not taking the model's queue yet: no attempt, nothing to fetch
  carry_out(self, st.logic->on_fetch(*st.d.fetch.stopping));
  // Nothing more until its answer, a slot, a `lease`, an `answered` or a `done` wakes us.
}

/// Sends the grants and yields of the model's budget; slots handed to its own attempts' key
/// become credit for the logic, which looks for work next (`fetch`; never from inside the
/// logic, which may be what released the slot).
void deliver(dispatcher_ptr self, const std::vector<slot_grant>& grants) {
  auto& st = self->state;
  if (int32_t own = st.slots->deliver(self, grants); own > 0) {
    st.credit += own;
    schedule_fetch(self);
  }
}

/// After every event: model slots handed to its attempts that the logic did not take go back
/// (so they serve the lanes waiting); lanes are asked to yield what waiters need; global slots
/// asked back go once not in use; and the global budget hears how many more slots the model's
/// waiters need.
void settle(dispatcher_ptr self) {
  auto& st = self->state;
  if (st.logic->kept() > 0 && !st.keep_alive_armed) {
    // Kept tasks' messages stay ours while they wait for a slot: in_progress every third of
    // the consumer's AckWait.
    st.keep_alive_armed = true;
    detail::arm_on<tick_atom>(st.keep_alive, st.d.fetch.at->clock, st.d.fetch.at->exec,
                              std::max<int64_t>(st.d.fetch.js->layout().ack_wait_ms / 3, 50),
                              model_dispatcher_actor{self});
  }
  auto& ledger = st.slots->ledger;
  if (st.credit > 0 && !st.fetch_scheduled) {  // else the coming `fetch` takes them
    (void)ledger.want(st.own_key, 0);
    const int32_t n = std::exchange(st.credit, 0);
    st.slots->deliver(self, ledger.release(st.own_key, n));
  }
  (void)st.slots->deliver(self, {});  // yields, when its own attempts now wait for a lane's slot
  slot_update u{st.global_key, 0, 0, true};
  u.give_back = std::min(st.owed, std::max(0, st.global_held - ledger.held()));
  st.global_held -= u.give_back;
  st.owed -= u.give_back;
  if (ledger.waiting() > 0 && ledger.free() == 0 && ledger.cap() < ledger.limit())
    u.want = std::min(ledger.limit() - ledger.cap(), ledger.wanted());
  if (u.give_back == 0 && u.want == st.global_wish) return;
  st.global_wish = u.want;
  self->send(st.d.budget, u, slot_holder_actor{self});
}

/// The logic's view of the model's budget: slots handed to its attempts' key first (credit),
/// then free ones; when it gets none it waits in turn, and `deliver` wakes it.
dispatch_state::slot_source slots_of(dispatcher_ptr self) {
  return {
      [self](int want) {
        auto& st = self->state;
        int got = std::min(want, st.credit);
        st.credit -= got;
        if (got < want) {
          got += st.slots->ledger.want(st.own_key, want - got);
          if (got > 0) (void)st.slots->ledger.want(st.own_key, 0);  // waits only when it got none
        }
        return got;
      },
      [self](int n) {
        auto& st = self->state;
        if (n > 0) deliver(self, st.slots->ledger.release(st.own_key, n));
      },
  };
}

void on_fetched(dispatcher_ptr self, fetched_tasks& r) {
  auto& st = self->state;
  auto a = st.logic->on_fetched(std::move(r.got), r.error, *st.d.fetch.stopping);
  if (a.pause) {
    if (!st.logic->error_reported(true))
      log::warn("dispatcher", "fetch failed; retrying", {{"model", st.model}, {"error", r.error}});
    st.fetch_scheduled = true;
    detail::arm_on<fetch_atom>(st.pause, st.d.fetch.at->clock, st.d.fetch.at->exec,
                               fetch_error_pause_ms, model_dispatcher_actor{self});
    return;
  }
  carry_out(self, std::move(a));
  schedule_fetch(self);
}

/// The global budget changed what this dispatcher holds: `granted` more, or `asked` back.
void on_global(dispatcher_ptr self, int32_t granted, int32_t asked) {
  auto& st = self->state;
  st.global_held += granted;
  st.global_wish = std::max(0, st.global_wish - granted);
  st.owed = std::min(st.global_held, st.owed + asked);
  deliver(self, st.slots->ledger.set_cap(st.global_held - st.owed));
}

/// Starts taking the model's queue: spawns the task fetcher (over `sub`, or binding the
/// consumer itself when it is null) and fetches.
void take_queue(dispatcher_ptr self, runtime::pull_subscription* sub, uint64_t generation,
                runs_on fetcher_on) {
  auto& st = self->state;
  st.fetcher = spawn_task_fetcher(self, st.d.fetch, st.model, model_dispatcher_actor{self}, sub,
                                  generation, fetcher_on);
  schedule_fetch(self);
}

/// The model's budget and the decisions' state; a message's hold acks or naks through `js`.
void set_up(dispatcher_ptr self, dispatcher_deps deps, std::string model) {
  auto& st = self->state;
  st.d = std::move(deps);
  st.model = std::move(model);
  const int concurrency = concurrency_for(st.d.fetch.at->cfg, st.model);
  st.slots.emplace(concurrency);
  (void)st.slots->ledger.set_cap(0);  // no model slot without a global slot behind it
  st.logic.emplace(concurrency, slots_of(self),
                   [js = st.d.fetch.js](const runtime::delivery& d, std::optional<int64_t> again) {
                     if (again) {
                       (void)js->nak(d, *again);
                     } else {
                       (void)js->ack(d);
                     }
                   });
}

model_dispatcher_actor::behavior_type dispatcher(dispatcher_ptr self, dispatcher_deps deps,
                                                 std::string model, runtime::pull_subscription* sub,
                                                 uint64_t generation, runs_on fetcher_on) {
  set_up(self, std::move(deps), std::move(model));
  if (sub != nullptr) take_queue(self, sub, generation, fetcher_on);
  self->set_down_handler([self](caf::down_msg& m) {
    deliver(self, self->state.slots->holder_down(m.source));
    settle(self);
  });
  return {
      [=](wake_atom) {
        if (!self->state.fetcher) take_queue(self, nullptr, 0, fetcher_on);
      },
      [=](fetch_atom) {
        self->state.fetch_scheduled = false;
        look(self);
        settle(self);
      },
      [=](fetched_tasks& r) {
        on_fetched(self, r);
        settle(self);
      },
      [=](tick_atom) {
        auto& s = self->state;
        s.keep_alive_armed = false;
        for (const auto& m : s.logic->kept_messages())
          (void)s.d.fetch.js->in_progress(m->delivery());
        settle(self);
      },
      [=](lease_atom, uint64_t id, job_actor& a, bool chained) {
        auto& s = self->state;
        s.ready.emplace(id, std::move(a));
        if (chained) {
          s.logic->on_chained(id);
        } else {
          s.logic->on_ready(id);
        }
        if (*s.d.fetch.stopping) {
          // Leased after shutdown's release went out (a chain): it gives the task back at once.
          self->send(s.ready[id], release_atom::value);
          return;
        }
        look(self);
        settle(self);
      },
      [=](answered_atom, int64_t exchange_ms) {
        self->state.logic->on_answered(exchange_ms);
        look(self);
        settle(self);
      },
      [=](done_atom, int32_t stage, uint64_t id) {
        auto& s = self->state;
        s.ready.erase(id);
        s.logic->on_done(static_cast<attempt_stage>(stage), id);
        look(self);
        settle(self);
      },
      [=](slot_update& u, slot_holder_actor& h) {
        deliver(self, self->state.slots->update(self, u, h));
        settle(self);
      },
      [=](slot_atom, uint64_t, int32_t n) {
        on_global(self, n, 0);
        settle(self);
      },
      [=](yield_atom, uint64_t, int32_t n) {
        on_global(self, 0, n);
        settle(self);
      },
  };
}

}  // namespace

task_fetcher_actor spawn_task_fetcher(caf::local_actor* parent, fetch_deps deps, std::string queue,
                                      fetch_reply_actor reply_to, runtime::pull_subscription* sub,
                                      uint64_t generation, runs_on where) {
  if (where == runs_on::own_thread)
    return parent->spawn<caf::detached + caf::linked>(fetcher, deps, std::move(queue), sub,
                                                      generation, reply_to, true);
  return parent->spawn<caf::linked>(fetcher, deps, std::move(queue), sub, generation, reply_to,
                                    false);
}

model_dispatcher_actor spawn_model_dispatcher(dispatcher_deps deps, std::string model,
                                              std::unique_ptr<runtime::pull_subscription> sub,
                                              uint64_t generation, runs_on fetcher_on) {
  // CAF copies spawn arguments; the subscription travels as a raw owning pointer to the fetcher.
  auto& sys = deps.fetch.at->sys;
  return sys.spawn(dispatcher, std::move(deps), std::move(model), sub.release(), generation,
                   fetcher_on);
}

}  // namespace sy::actors
