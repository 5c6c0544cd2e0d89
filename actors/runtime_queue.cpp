#include "actors/runtime_queue.hpp"

#include <algorithm>
#include <deque>
#include <memory>
#include <unordered_set>

#include <caf/stateful_actor.hpp>
#include <caf/typed_event_based_actor.hpp>

#include "actors/attempt.hpp"
#include "actors/detail/actor_timer.hpp"
#include "actors/event_json.hpp"
#include "runtime/log.hpp"
#include "runtime/trace.hpp"
#include "storage/ops.hpp"

namespace sy::actors {
namespace {

constexpr int32_t max_lease_tasks = 100;
constexpr int64_t queue_error_pause_ms = 500;  // of the engine's clock
constexpr size_t max_withdrawn_early = 1'024;

/// One waiting lease request.
struct waiter {
  caf::typed_response_promise<lease_reply> rp;
  int32_t max = 1;
  int64_t until_ms = 0;                  ///< when its wait ends, on the engine's clock
  std::shared_ptr<runtime::timer> wake;  ///< fires at `until_ms` (a wait of more than 0 ms)
  uint64_t call = 0;                     ///< the sender's name for it, for `withdraw`
  int32_t pending = 0;                   ///< its tasks being started or signed
  bool fetched = false;    ///< a fetch ended since it came: an empty answer is now true
  bool withdrawn = false;  ///< its caller left: no more tasks, answered once it holds none pending
  bool answered = false;
  lease_reply got;
  int32_t room() const {
    return answered || withdrawn ? 0 : max - static_cast<int32_t>(got.tasks.size()) - pending;
  }
};
using waiter_ptr = std::shared_ptr<waiter>;

struct queue_state {
  runtime_queue_deps d;
  std::string runtime;
  std::string queue;  ///< runtime_queue(runtime)
  int64_t ttl_ms = 0;
  task_fetcher_actor fetcher;
  bool fetching = false;
  std::deque<waiter_ptr> waiting;
  /// Leases withdrawn before they arrived (the lease comes through a helper actor, the
  /// withdrawal straight from the caller's thread, so it can overtake): answered empty on arrival.
  std::unordered_set<uint64_t> withdrawn_early;
  std::shared_ptr<runtime::timer> pause;  ///< the wait after a failed fetch
  static inline const char* name = "runtime_queue";
};

using queue_ptr = runtime_queue_actor::stateful_pointer<queue_state>;

/// Fetches when a request waits with room and no fetch is out.
void pump(queue_ptr self) {
  auto& st = self->state;
  if (st.fetching || *st.d.fetch.stopping) return;
  int32_t want = 0;
  for (const auto& w : st.waiting) want += w->room();
  if (want <= 0) return;
  st.fetching = true;
  self->send(st.fetcher, fetch_atom::value, std::min(want, max_lease_tasks));
}

/// Answers every request that holds tasks (and has none in progress) or whose wait is over.
void sweep(queue_ptr self) {
  auto& st = self->state;
  const int64_t now = st.d.fetch.at->clock.now_ms();
  for (auto& w : st.waiting) {
    if (w->answered || w->pending > 0) continue;
    if (w->got.tasks.empty() && !w->withdrawn && !(w->fetched && now >= w->until_ms)) continue;
    w->answered = true;
    w->rp.deliver(std::move(w->got));
  }
  std::erase_if(st.waiting, [](const waiter_ptr& w) { return w->answered; });
  pump(self);
}

void settle(queue_ptr self, const waiter_ptr& w) {
  --w->pending;
  sweep(self);
}

/// Signs the attempt's token; the task joins the request's answer once it has one.
void sign(queue_ptr self, const waiter_ptr& w, leased_task t, std::string lease,
          const storage::job_record& job) {
  runtime::capability_claims c;
  c.tenant = job.tenant;
  c.job_id = job.id;
  c.task_id = t.task_id;
  c.runtime = self->state.runtime;
  c.attempt = t.attempt;
  c.lease = std::move(lease);
  c.exp_s = (t.lease_expires_at_ms + 999) / 1000;
  {  // the attempt's span, under the job's
    const auto at = trace::of(job.id, job.trace, job.trace_state);
    auto attempt = at.self.child();
    t.traceparent = attempt.traceparent();
    t.tracestate = attempt.state;
    auto s = trace::make_span(attempt, at.self.span_id, "worker.lease", trace::span_kind::server,
                              t.lease_expires_at_ms - t.lease_ttl_ms,
                              self->state.d.fetch.at->clock.now_ms());
    s.attributes = {{"job.id", job.id}, {"task.id", t.task_id}, {"runtime", self->state.runtime}};
    s.int_attributes = {{"attempt", t.attempt}};
    trace::record(std::move(s));
  }
  if (!job.grants.empty()) {  // written canonical at submission; read back the same
    if (auto g = config::parse_s3_grants(nlohmann::json::parse(job.grants, nullptr, false)))
      c.grants = std::move(*g);
  }
  self->request(self->state.d.minter, caf::infinite, mint_atom::value, std::move(c))
      .then(
          [self, w, t = std::move(t)](mint_reply& m) mutable {
            if (m.err.code.empty()) {
              t.capability_token = std::move(m.token);
              w->got.tasks.push_back(std::move(t));
            } else {  // the lease runs out unused and the task runs again
              log::error("workers", "could not sign a capability token",
                         {{"task_id", t.task_id}, {"error", m.err.message}});
            }
            settle(self, w);
          },
          [self, w](caf::error&) { settle(self, w); });
}

void on_started(queue_ptr self, const waiter_ptr& w, const runtime::delivery& d, leased_task t,
                std::string lease, write_reply& r) {
  auto& js = *self->state.d.fetch.js;
  if (!r.reply) {
    log::warn("workers", "could not start a leased task; redelivering later",
              {{"task_id", t.task_id}, {"error", r.err.message}});
    (void)js.nak(d, 1'000);
    return settle(self, w);
  }
  switch (judge_start(*r.reply)) {
    case start_verdict::nak_later:
      (void)js.nak(d, r.reply->delay_ms);
      return settle(self, w);
    case start_verdict::drop:
      (void)js.ack(d);
      return settle(self, w);
    case start_verdict::send:
      break;
  }
  // The store's lease is now the claim on the task: the message has done its work.
  (void)js.ack(d);
  t.job_id = r.reply->job->id;
  // A task of a list has its own input; a single job's is the job's body.
  t.input = r.reply->job->task_list && r.reply->task ? r.reply->task->body : r.reply->job->body;
  sign(self, w, std::move(t), std::move(lease), *r.reply->job);
}

void start(queue_ptr self, const waiter_ptr& w, runtime::delivery d) {
  auto& st = self->state;
  auto parsed = parse_task_message(d.data);
  if (!parsed) {
    log::warn("workers", "dropped a message that is not a task", {{"subject", d.subject}});
    (void)st.d.fetch.js->term(d);
    return;
  }
  std::string token = new_lease_token();
  const int64_t now = st.d.fetch.at->clock.now_ms();
  leased_task t;
  t.task_id = parsed->first;
  t.attempt = parsed->second;
  t.lease_expires_at_ms = now + st.ttl_ms;
  t.lease_ttl_ms = st.ttl_ms;
  storage::start_attempt_op op{t.task_id, t.attempt, token, "worker:" + st.runtime, now, st.ttl_ms};
  ++w->pending;
  self->request(st.d.writer, caf::infinite, write_request{std::move(op)})
      .then(
          [self, w, d, t, lease = token](write_reply& r) mutable {
            on_started(self, w, d, std::move(t), std::move(lease), r);
          },
          [self, w, d](caf::error&) {
            (void)self->state.d.fetch.js->nak(d, 1'000);
            settle(self, w);
          });
}

void on_fetched(queue_ptr self, fetched_tasks& r) {
  auto& st = self->state;
  st.fetching = false;
  for (auto& w : st.waiting) w->fetched = true;
  if (!r.error.empty()) {
    log::warn("workers", "could not fetch from the runtime's queue",
              {{"runtime", st.runtime}, {"error", r.error}});
    detail::arm_on<tick_atom>(st.pause, st.d.fetch.at->clock, st.d.fetch.at->exec,
                              queue_error_pause_ms, runtime_queue_actor{self});
  }
  for (auto& d : r.got) {
    auto it = std::find_if(st.waiting.begin(), st.waiting.end(),
                           [](const waiter_ptr& w) { return w->room() > 0; });
    if (it == st.waiting.end()) {
      (void)st.d.fetch.js->nak(d, 0);  // every request left meanwhile: back to the queue
      continue;
    }
    start(self, *it, std::move(d));
  }
  if (r.error.empty()) sweep(self);
}

runtime_queue_actor::behavior_type queue(queue_ptr self, runtime_queue_deps deps,
                                         std::string runtime, runs_on fetcher_on) {
  auto& st = self->state;
  st.d = std::move(deps);
  st.runtime = std::move(runtime);
  st.queue = runtime_queue(st.runtime);
  st.ttl_ms = st.d.fetch.at->cfg.runtimes.at(st.runtime).lease_ttl_ms;
  st.fetcher = spawn_task_fetcher(self, st.d.fetch, st.queue, runtime_queue_actor{self}, nullptr, 0,
                                  fetcher_on);
  return {
      [=](lease_atom, int32_t max, int64_t wait_ms, uint64_t call) {
        auto w = std::make_shared<waiter>();
        w->rp = self->make_response_promise<lease_reply>();
        w->call = call;
        w->withdrawn = call != 0 && self->state.withdrawn_early.erase(call) > 0;
        w->max = std::clamp(max, 1, max_lease_tasks);
        w->until_ms = self->state.d.fetch.at->clock.now_ms() + std::max<int64_t>(wait_ms, 0);
        self->state.waiting.push_back(w);
        if (wait_ms > 0)
          detail::arm_on<tick_atom>(w->wake, self->state.d.fetch.at->clock,
                                    self->state.d.fetch.at->exec, wait_ms,
                                    runtime_queue_actor{self});
        sweep(self);  // answers it at once if withdrawn; fetches for it otherwise
        return w->rp;
      },
      [=](withdraw_atom, uint64_t call) {
        // Tasks it already holds still go out (the answer is written to nobody, and their
        // leases run out): only what a fetch brings from now on goes to another request.
        if (call == 0) return;
        auto& waiting = self->state.waiting;
        auto it = std::find_if(waiting.begin(), waiting.end(),
                               [call](const waiter_ptr& w) { return w->call == call; });
        if (it == waiting.end()) {
          // Not here yet, or answered already (its answer still on the way to a caller that
          // left): bounded, since a withdrawal of an answered lease is never claimed.
          auto& early = self->state.withdrawn_early;
          if (early.size() >= max_withdrawn_early) early.clear();
          early.insert(call);
          return;
        }
        (*it)->withdrawn = true;
        sweep(self);
      },
      [=](fetched_tasks& r) { on_fetched(self, r); },
      [=](tick_atom) { sweep(self); },
  };
}

}  // namespace

runtime_queue_actor spawn_runtime_queue(runtime_queue_deps d, std::string runtime,
                                        runs_on fetcher_on) {
  auto& sys = d.fetch.at->sys;
  return sys.spawn(queue, std::move(d), std::move(runtime), fetcher_on);
}

}  // namespace sy::actors
