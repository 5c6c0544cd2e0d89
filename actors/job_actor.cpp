#include "actors/job_actor.hpp"

#include <utility>

#include <algorithm>
#include <memory>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/strand.hpp>
#include <caf/actor_system.hpp>
#include <caf/send.hpp>
#include <caf/stateful_actor.hpp>
#include <caf/typed_event_based_actor.hpp>

#include "actors/attempt.hpp"
#include "actors/http_task.hpp"
#include "runtime/failpoint.hpp"
#include "runtime/log.hpp"
#include "runtime/metrics.hpp"
#include "runtime/trace.hpp"

namespace sy::actors {
namespace asio = boost::asio;
namespace {

struct job_state {
  std::shared_ptr<const job_deps> d;
  std::string model;
  /// The message that woke the task, until the task is settled in it (leased or stale).
  std::shared_ptr<task_message_hold> msg;
  model_dispatcher_actor dispatcher;
  std::string task_id;
  int attempt = 0;
  std::string token;  ///< the lease token of this attempt
  /// Its dispatcher leases ahead (`start`, true): a list's task may chain its next task.
  bool may_chain = false;
  std::string chain_token;  ///< the next task's lease token, asked for with the outcome
  std::optional<storage::job_record> job;  ///< as the start committed it
  std::string list_body;                   ///< a task-list task's request (a single job: job.body)
  attempt_state at;
  std::shared_ptr<runtime::abort_handle> abort;
  int64_t lease_from_ms = 0;  ///< when the lease was last committed (its expiry: + the TTL)
  bool extending = false;     ///< an extension is being committed
  /// How far it got, for its dispatcher's `done` (read when it ends).
  std::shared_ptr<attempt_stage> stage = std::make_shared<attempt_stage>(attempt_stage::starting);
  // Tracing (runtime/trace.hpp): the job's span, this attempt's under it, the gateway call's
  // under that (its id goes to the gateway in `traceparent`), and when each began.
  std::optional<trace::stored> trace;
  trace::context attempt_span;
  trace::context call_span;
  int64_t started_ms = 0;
  int64_t sent_ms = 0;
  static inline const char* name = "job";
};

using job_ptr = job_actor::stateful_pointer<job_state>;

/// The job's trace id for the log ("" before the start committed, or for a job stored before
/// tracing).
std::string trace_id(const job_state& st) { return st.trace ? st.trace->self.trace_id : ""; }

/// The attempt is over for this node: the actor ends (its dispatcher hears `done` and its job's
/// owner forgets it, both through what is attached to its exit).
void end(job_ptr self) { self->quit(); }

/// On the registry's tick, while the request is out and the lease is a beat period old: commit a
/// later expiry, so the lease does not run out (the message was acked when the lease was taken).
void heartbeat(job_ptr self) {
  auto& st = self->state;
  const auto& d = *st.d;
  const int64_t now = d.at->clock.now_ms();
  if (!st.at.beating() || st.extending || now - st.lease_from_ms < heartbeat_period_ms(d.at->cfg))
    return;
  st.extending = true;
  storage::extend_lease_op op{st.task_id, st.attempt, st.token, now + d.at->cfg.lease_ttl_ms};
  self->request(d.writer, caf::infinite, write_request{std::move(op)})
      .then(
          [self, now](write_reply& r) {
            auto& s = self->state;
            s.extending = false;
            if (r.reply && r.reply->what != storage::op_reply::kind::done) {
              log::warn(
                  "attempt", "lease lost while running",
                  {{"task_id", s.task_id}, {"attempt", s.attempt}, {"trace_id", trace_id(s)}});
              s.at.on_lease_lost();
              return;
            }
            if (!r.reply) return;  // not committed: the next tick tries again
            s.lease_from_ms = now;
          },
          [self](caf::error&) {
            // The writer is gone (shutdown): the lease runs out and the task is queued again.
            self->state.at.on_lease_lost();
          });
}

void commit_outcome(job_ptr self, const runtime::gateway_outcome& outcome);
void chain(job_ptr self, storage::task_record next, const storage::job_record& job);

/// How an attempt ended, for `switchyard_attempts_total`: from its verdict and the job's status
/// after the commit.
std::string_view attempt_outcome(const storage::op_reply& r, bool succeeded, bool released) {
  if (r.what == storage::op_reply::kind::stale) return "fenced";
  if (released) return "released";
  if (succeeded) return "succeeded";
  if (r.task && r.task->state == storage::task_state::queued) return "retried";
  const auto status = r.job ? r.job->status : storage::job_status::failed;
  if (status == storage::job_status::cancelled || status == storage::job_status::cancelling)
    return "cancelled";
  return status == storage::job_status::expired ? "expired" : "failed";
}

/// The gateway call's span, once it is answered.
void trace_call(const job_state& st, const runtime::gateway_outcome& o, int64_t now) {
  if (!st.trace || !trace::enabled() || st.sent_ms == 0) return;  // 0: no call was made
  auto s = trace::make_span(st.call_span, st.attempt_span.span_id, "gateway.call",
                            trace::span_kind::client, st.sent_ms, now);
  s.attributes = {{"model", st.model}, {"http.route", st.job->endpoint}};
  s.int_attributes = {{"http.status_code", o.status_code}, {"tries", o.tries}};
  s.error = !o.error.empty();
  s.status_message = o.error.substr(0, 200);
  trace::record(std::move(s));
}

/// The attempt's span, once its outcome committed.
void trace_attempt(const job_state& st, std::string_view outcome, int64_t now) {
  if (!st.trace || !trace::enabled()) return;
  auto s = trace::make_span(st.attempt_span, st.trace->self.span_id, "attempt",
                            trace::span_kind::internal, st.started_ms, now);
  s.attributes = {
      {"job.id", st.job->id}, {"task.id", st.task_id}, {"outcome", std::string(outcome)}};
  s.int_attributes = {{"attempt", st.attempt}};
  s.error = outcome != "succeeded" && outcome != "released";
  if (s.error) s.status_message = std::string(outcome);
  trace::record(std::move(s));
}

/// The request goes out on the gateway client's executor; its outcome comes back as a message.
void send_request(job_ptr self) {
  auto& st = self->state;
  const auto& d = *st.d;
  const auto& job = *st.job;
  const bool http = job.endpoint == http_endpoint;
  auto* gw = http ? nullptr : d.gateways->for_model(st.model);
  if (gw == nullptr && !http) {
    st.at.on_sending();
    st.at.on_answered();
    runtime::gateway_outcome o;
    o.got_response = true;
    o.status_code = 404;
    o.body = R"({"error":{"message":"no gateway serves this model","code":"model_not_found"}})";
    commit_outcome(self, o);
    return;
  }
  st.abort = std::make_shared<runtime::abort_handle>();
  if (st.at.on_sending()) st.abort->abort();  // cannot be: an abort while leased withdraws it
  job_actor me = self;
  log::debug("attempt", "sending", [&] {
    return nlohmann::json{{"job_id", job.id}, {"attempt", st.attempt}, {"trace_id", trace_id(st)}};
  });
  st.sent_ms = d.at->clock.now_ms();
  auto answered = [me](const std::exception_ptr& e, runtime::gateway_outcome o) {
    if (e) {
      o = {};
      o.error = "the request failed inside the engine";
    }
    caf::anon_send(me, std::move(o));
  };
  if (http) {
    asio::co_spawn(
        d.at->exec,
        send_http_task(*d.http_tasks, st.list_body,
                       static_cast<uint64_t>(d.at->cfg.http_task_max_response_bytes), st.abort),
        answered);
    return;
  }
  runtime::gateway_request request{job.endpoint, job.task_list ? st.list_body : job.body, st.model,
                                   st.call_span.traceparent(), st.call_span.state};
  asio::co_spawn(gw->executor(), gw->send(std::move(request), st.abort), answered);
}

/// Records how the attempt ended, under its lease token. Its message was acked at the start; a
/// released task goes back to the queue with a fresh message (storage: apply_finish).
void commit_outcome(job_ptr self, const runtime::gateway_outcome& outcome) {
  auto& st = self->state;
  const auto& d = *st.d;
  if (*st.stage == attempt_stage::granted) {  // its slot serves the next request now
    *st.stage = attempt_stage::answered;
    self->send(st.dispatcher, answered_atom::value,
               st.sent_ms > 0 ? d.at->clock.now_ms() - st.sent_ms : int64_t{0});
  }
  trace_call(st, outcome, d.at->clock.now_ms());
  runtime::failpoint("attempt_response_received");
  auto verdict = judge(outcome, st.at.released(), st.job->endpoint == http_endpoint);
  storage::finish_attempt_op finish;
  finish.task_id = st.task_id;
  finish.attempt = st.attempt;
  finish.token = st.token;
  finish.end = verdict.end;
  if (outcome.got_response)
    finish.response = storage::gateway_result{outcome.status_code, outcome.body};
  finish.error_code = verdict.error_code;
  finish.error_message = verdict.error_message;
  finish.backoff_ms = retry_backoff_ms(d.at->cfg, st.attempt);
  finish.now_ms = d.at->clock.now_ms();
  const bool released = verdict.end == storage::attempt_end::released;
  if (st.may_chain && st.job->task_list && st.at.reason() == abort_reason::none && !released) {
    st.chain_token = new_lease_token();
    finish.chain_token = st.chain_token;
    finish.chain_holder = d.holder;
    finish.chain_lease_ttl_ms = d.at->cfg.lease_ttl_ms;
  }
  auto failed = [self](const std::string& why) {
    // Not recorded: the lease will expire and the reaper queues the task again.
    auto& s = self->state;
    log::error(
        "attempt", "could not record the outcome",
        {{"job_id", s.job->id}, {"attempt", s.attempt}, {"trace_id", trace_id(s)}, {"error", why}});
    end(self);
  };
  self->request(d.writer, caf::infinite, write_request{std::move(finish)})
      .then(
          [self, released, failed, code = verdict.error_code](write_reply& r) {
            if (!r.reply) return failed(r.err.message);
            auto& s = self->state;
            log::debug("attempt", "finished", [&] {
              return nlohmann::json{
                  {"job_id", s.job->id},
                  {"attempt", s.attempt},
                  {"trace_id", trace_id(s)},
                  {"end", code.empty() ? "succeeded" : code},
                  {"status", r.reply->job ? storage::to_string(r.reply->job->status) : ""},
                  {"fenced", r.reply->what == storage::op_reply::kind::stale}};
            });
            const auto outcome = attempt_outcome(*r.reply, code.empty(), released);
            metrics::attempt_ended(
                s.model, outcome,
                static_cast<double>(s.d->at->clock.now_ms() - s.started_ms) / 1000);
            trace_attempt(s, outcome, s.d->at->clock.now_ms());
            runtime::failpoint("attempt_result_committed");
            if (r.reply->chained) return chain(self, std::move(*r.reply->chained), *r.reply->job);
            end(self);
          },
          [self, failed](caf::error& e) { failed(self->system().render(e)); });
}

/// The task is settled in its message: leased, stale, or to be delivered again after `again`.
void settle(job_state& st, std::optional<int64_t> again) {
  if (!st.msg) return;
  if (again) {
    st.msg->redeliver(*again);
  } else {
    st.msg->settled();
  }
  st.msg.reset();
}

/// Cancelled, expired or released while it waited for a slot: nothing was sent; the outcome is
/// committed at once as an aborted exchange (judged as any abort: the cancel, the expiry or the
/// release decides it).
void withdraw(job_ptr self) {
  auto& st = self->state;
  log::info("attempt", "withdrawn before it was sent",
            {{"task_id", st.task_id},
             {"attempt", st.attempt},
             {"why", to_string(st.at.reason())},
             {"trace_id", trace_id(st)}});
  st.at.on_answered();
  runtime::gateway_outcome o;
  o.error = "aborted";
  commit_outcome(self, o);
}

/// The lease is committed: give the owner the deadline to watch, and wait for a slot from the
/// dispatcher (`start`), unless an abort came while starting. `chained`: it follows the attempt
/// this actor just finished (the dispatcher counted that one as finishing).
void leased(job_ptr self, bool chained = false) {
  auto& st = self->state;
  // The job's timeout is its owner's to watch: it sends `expire` when it passes (a chain's owner
  // was told by the attempt before: same job, same deadline).
  if (st.job->deadline_ms > 0 && !chained)
    self->send(st.d->jobs, deadline_atom::value, st.job->id, st.job->deadline_ms);
  if (st.at.on_leased()) return withdraw(self);
  *st.stage = attempt_stage::ready;
  self->send(st.dispatcher, lease_atom::value, self->id(), job_actor{self}, chained);
}

/// The outcome's commit also leased the list's next task for this actor (a chain: no message,
/// no start commit, no new actor): it becomes that task's attempt, registers it with the job's
/// owner and waits for a slot as any leased attempt.
void chain(job_ptr self, storage::task_record next, const storage::job_record& job) {
  auto& st = self->state;
  const auto& d = *st.d;
  st.task_id = std::move(next.id);
  st.attempt = next.attempt;
  st.token = std::exchange(st.chain_token, {});
  st.list_body = std::move(next.body);
  st.job = job;
  st.at = attempt_state{};
  st.abort.reset();
  st.extending = false;
  st.lease_from_ms = st.started_ms = d.at->clock.now_ms();
  st.sent_ms = 0;
  st.attempt_span = st.trace->self.child();
  st.call_span = st.attempt_span.child();
  self->send(d.jobs, register_atom::value, st.job->id, st.task_id, job_control_actor{self});
  leased(self, true);
}

void on_started(job_ptr self, write_reply& r) {
  auto& st = self->state;
  if (!r.reply) {
    log::warn("attempt", "could not start; redelivering later",
              {{"task_id", st.task_id}, {"error", r.err.message}});
    settle(st, 1'000);
    return end(self);
  }
  switch (judge_start(*r.reply)) {
    case start_verdict::nak_later:
      settle(st, r.reply->delay_ms);
      return end(self);
    case start_verdict::drop:
      log::debug("attempt", "stale delivery dropped", [&] {
        return nlohmann::json{{"task_id", st.task_id}, {"attempt", st.attempt}};
      });
      settle(st, std::nullopt);
      return end(self);
    case start_verdict::send:
      // The lease in LMDB is now the claim on the task: the message has done its work for it
      // (a crash from here on leaves a lease with a dead holder, which the reaper expires).
      settle(st, std::nullopt);
      st.job = std::move(r.reply->job);
      st.trace = trace::of(st.job->id, st.job->trace, st.job->trace_state);
      st.attempt_span = st.trace->self.child();
      st.call_span = st.attempt_span.child();
      if (st.job->task_list && r.reply->task) st.list_body = std::move(r.reply->task->body);
      return leased(self);
  }
}

/// Registers the job, then commits the attempt's start (its lease).
void begin(job_ptr self) {
  auto& st = self->state;
  const auto& d = *st.d;
  self->send(d.jobs, register_atom::value, storage::job_id_of_task(st.task_id), st.task_id,
             job_control_actor{self});
  st.token = new_lease_token();
  st.lease_from_ms = st.started_ms = d.at->clock.now_ms();
  storage::start_attempt_op start{st.task_id, st.attempt,       st.token,
                                  d.holder,   st.lease_from_ms, d.at->cfg.lease_ttl_ms};
  self->request(d.writer, caf::infinite, write_request{std::move(start)})
      .then([self](write_reply& r) { on_started(self, r); },
            [self](caf::error& e) {
              write_reply r;
              r.err = make_error(errc::storage_unavailable, self->system().render(e));
              on_started(self, r);
            });
}

/// Cancel, deadline or shutdown: abort the request if it is out (else remembered or moot).
void abort_for(job_ptr self, abort_reason why) {
  auto& st = self->state;
  if (st.at.on_abort(why) && st.abort) {
    log::info("attempt", "aborting the request",
              {{"task_id", st.task_id},
               {"attempt", st.attempt},
               {"why", to_string(why)},
               {"trace_id", trace_id(st)}});
    st.abort->abort();
  } else if (st.at.now() == attempt_state::phase::leased) {
    withdraw(self);
  }
}

job_actor::behavior_type job(job_ptr self, std::shared_ptr<const job_deps> deps, std::string model,
                             woken_task t, const model_dispatcher_actor& dispatcher) {
  auto& st = self->state;
  st.d = std::move(deps);
  st.model = std::move(model);
  st.msg = std::move(t.msg);
  st.task_id = std::move(t.task_id);
  st.attempt = t.attempt;
  st.dispatcher = dispatcher;
  self->attach_functor([dispatcher, stage = st.stage, id = self->id()](const caf::error&) {
    caf::anon_send(dispatcher, done_atom::value, static_cast<int32_t>(*stage), id);
  });
  begin(self);
  return {
      [=](cancel_atom) { abort_for(self, abort_reason::cancel); },
      [=](expire_atom) { abort_for(self, abort_reason::deadline); },
      [=](release_atom) { abort_for(self, abort_reason::shutdown); },
      [=](beat_atom) { heartbeat(self); },
      [=](start_atom, bool may_chain) {
        auto& s = self->state;
        if (s.at.now() != attempt_state::phase::leased) return;  // withdrawn: the slot goes back
        *s.stage = attempt_stage::granted;
        s.may_chain = may_chain;
        send_request(self);
      },
      [=](runtime::gateway_outcome& o) {
        self->state.at.on_answered();
        commit_outcome(self, o);
      },
  };
}

}  // namespace

int64_t heartbeat_period_ms(const config::settings& cfg) {
  return std::max<int64_t>(cfg.lease_ttl_ms / 3, 50);
}

job_actor spawn_job_actor(std::shared_ptr<const job_deps> deps, std::string model, woken_task t,
                          model_dispatcher_actor dispatcher) {
  auto& sys = deps->at->sys;
  return sys.spawn(job, std::move(deps), std::move(model), std::move(t), std::move(dispatcher));
}

}  // namespace sy::actors
