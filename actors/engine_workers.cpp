// The engine's side of the worker protocol (actors/worker_service.hpp, docs/workers.md): the
// credential minter and the runtimes' queues it starts, and the calls of workers.

#include <utility>

#include <chrono>

#include <caf/send.hpp>

#include "actors/ask.hpp"
#include "actors/attempt.hpp"
#include "actors/engine.hpp"
#include "actors/write.hpp"
#include "runtime/log.hpp"

namespace sy::actors {
namespace {

/// Long enough for a commit and a signature on a loaded machine; a worker's call that waits
/// longer fails with internal_error and is retried by the worker.
constexpr std::chrono::milliseconds answer_within{10'000};
/// A lease's own wait plus this.
constexpr std::chrono::milliseconds lease_slack{5'000};

}  // namespace

status engine::start_workers() {
  auto minter = spawn_credential_minter(*ctx_);
  if (!minter) return minter.error();
  minter_ = std::move(*minter);
  for (const auto& [name, r] : deps_.cfg.runtimes)
    runtimes_.emplace(name, spawn_runtime_queue(*ctx_, name, minter_));
  if (!runtimes_.empty()) log::info("engine", "runtimes started", {{"runtimes", runtimes_.size()}});
  return ok;
}

void engine::stop_workers() {
  for (auto& [name, q] : runtimes_) caf::anon_send_exit(q, caf::exit_reason::user_shutdown);
  if (minter_) caf::anon_send_exit(minter_, caf::exit_reason::user_shutdown);
  runtimes_.clear();
  minter_ = nullptr;
}

result<std::string> engine::runtime_model(submission& s) const {
  auto rt = deps_.cfg.runtimes.find(s.runtime);
  if (rt == deps_.cfg.runtimes.end())
    return make_error(errc::runtime_not_found,
                      "no runtime '" + s.runtime +
                          "' is configured (runtimes in the configuration, docs/workers.md)",
                      "runtime");
  if (s.max_attempts == 0) s.max_attempts = rt->second.max_attempts;
  return runtime_queue(s.runtime);
}

boost::asio::awaitable<result<lease_reply>> engine::lease(std::string runtime, int max_tasks,
                                                          int64_t wait_ms) {
  if (ctx_->stopping) co_return make_error(errc::shutting_down, "the server is shutting down");
  auto q = runtimes_.find(runtime);
  if (q == runtimes_.end())
    co_return make_error(errc::runtime_not_found,
                         "no runtime '" + runtime + "' is configured (docs/workers.md)", "runtime");
  auto r =
      co_await ask<lease_reply>(*sys_, q->second, std::chrono::milliseconds(wait_ms) + lease_slack,
                                lease_atom::value, static_cast<int32_t>(max_tasks), wait_ms);
  // The queue stops with the engine: a long poll then ends without tasks, as the server drains.
  if (!r && ctx_->stopping)
    co_return make_error(errc::shutting_down, "the server is shutting down");
  co_return r;
}

boost::asio::awaitable<result<runtime::capability_claims>> engine::verified(std::string token) {
  auto r = co_await ask<verify_reply>(*sys_, minter_, answer_within, verify_atom::value,
                                      std::move(token));
  if (!r) co_return r.error();
  if (!r->err.code.empty()) co_return r->err;
  co_return std::move(r->claims);
}

boost::asio::awaitable<status> engine::commit_attempt_op(storage::write_op op,
                                                         const runtime::capability_claims& c) {
  write_request req{std::move(op)};
  auto r = co_await write(ctx_->writer, std::move(req));
  if (!r) co_return r.error();
  if (!r->reply) co_return r->err;
  using kind = storage::op_reply::kind;
  switch (r->reply->what) {
    case kind::done:
      co_return ok;
    case kind::refused:
      co_return *r->reply->refusal;
    default:
      break;
  }
  // The attempt no longer holds the task. Past the lease end the token carries, the lease ran
  // out (the reaper took the task back); before it, the attempt ended otherwise.
  if (deps_.clock.now_ms() >= c.exp_s * 1000)
    co_return make_error(errc::lease_expired, "The lease of attempt " + std::to_string(c.attempt) +
                                                  " of task " + c.task_id +
                                                  " expired; the task was queued again.");
  co_return make_error(errc::stale_attempt,
                       "Attempt " + std::to_string(c.attempt) + " of task " + c.task_id +
                           " is no longer current: its outcome is recorded, its job was "
                           "cancelled, or a later attempt exists.");
}

boost::asio::awaitable<result<heartbeat_answer>> engine::heartbeat(std::string token) {
  auto c = co_await verified(std::move(token));
  if (!c) co_return c.error();
  auto rt = deps_.cfg.runtimes.find(c->runtime);
  if (rt == deps_.cfg.runtimes.end())
    co_return make_error(errc::stale_attempt, "the runtime '" + c->runtime + "' is gone");
  const int64_t now = deps_.clock.now_ms();
  heartbeat_answer a;
  a.lease_expires_at_ms = now + rt->second.lease_ttl_ms;
  storage::extend_lease_op op{c->task_id, c->attempt, c->lease, a.lease_expires_at_ms, true, now};
  if (auto st = co_await commit_attempt_op(std::move(op), *c); !st) co_return st.error();
  {
    auto txn = deps_.env.begin_read();
    auto job = storage::get_job(txn, c->job_id);
    // Cancelled, or past its timeout: either way its outcome can only end the job now.
    a.cancel_requested = !job || job->status == storage::job_status::cancelling ||
                         storage::is_terminal(job->status) ||
                         (job->deadline_ms > 0 && now >= job->deadline_ms);
  }
  runtime::capability_claims fresh = *c;
  fresh.exp_s = (a.lease_expires_at_ms + 999) / 1000;
  auto m =
      co_await ask<mint_reply>(*sys_, minter_, answer_within, mint_atom::value, std::move(fresh));
  if (!m) co_return m.error();
  if (!m->err.code.empty()) co_return m->err;
  a.capability_token = std::move(m->token);
  co_return a;
}

storage::finish_attempt_op engine::worker_outcome(const runtime::capability_claims& c) const {
  storage::finish_attempt_op op;
  op.task_id = c.task_id;
  op.attempt = c.attempt;
  op.token = c.lease;
  op.now_ms = deps_.clock.now_ms();
  op.subject = deps_.js.task_subject(runtime_queue(c.runtime));
  op.live_lease_only = true;
  return op;
}

boost::asio::awaitable<status> engine::complete(std::string token, std::string output) {
  auto c = co_await verified(std::move(token));
  if (!c) co_return c.error();
  auto op = worker_outcome(*c);
  op.end = storage::attempt_end::succeeded;
  op.response = storage::gateway_result{200, std::move(output)};
  co_return co_await commit_attempt_op(std::move(op), *c);
}

boost::asio::awaitable<status> engine::fail(std::string token, worker_failure f) {
  auto c = co_await verified(std::move(token));
  if (!c) co_return c.error();
  auto op = worker_outcome(*c);
  op.end = f.retryable ? storage::attempt_end::retry : storage::attempt_end::rejected;
  op.error_code = std::move(f.code);
  op.error_message = std::move(f.message);
  op.backoff_ms = retry_backoff_ms(deps_.cfg, c->attempt);
  co_return co_await commit_attempt_op(std::move(op), *c);
}

boost::asio::awaitable<result<std::string>> engine::jwks() {
  co_return co_await ask<std::string>(*sys_, minter_, answer_within, jwks_atom::value);
}

}  // namespace sy::actors
