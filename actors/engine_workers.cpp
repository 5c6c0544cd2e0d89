// The engine's side of the worker protocol (actors/worker_service.hpp, docs/workers.md): the
// credential minter and the runtimes' queues it starts, and the calls of workers.

#include <utility>

#include <algorithm>
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

/// Why an attempt whose calls the store refuses no longer holds its task. Past the lease end the
/// token carries, the lease ran out (the reaper took the task back); before it, the attempt
/// ended otherwise.
sy::error lost_attempt(const runtime::capability_claims& c, int64_t now_ms) {
  if (now_ms >= c.exp_s * 1000)
    return make_error(errc::lease_expired, "The lease of attempt " + std::to_string(c.attempt) +
                                               " of task " + c.task_id +
                                               " expired; the task was queued again.");
  return make_error(errc::stale_attempt,
                    "Attempt " + std::to_string(c.attempt) + " of task " + c.task_id +
                        " is no longer current: its outcome is recorded, its job was "
                        "cancelled, or a later attempt exists.");
}

}  // namespace

status engine::start_workers() {
  auto minter = spawn_credential_minter(*ctx_);
  if (!minter) return minter.error();
  minter_ = std::move(*minter);
  // STS is the operator's own endpoint (often on loopback or a private network): no network
  // policy beyond the exchange's time bound.
  runtime::webhook_policy sts_policy;
  sts_policy.allow_loopback = true;
  sts_policy.timeout_ms = answer_within.count();
  sts_policy.setting = "sts";
  sts_ = std::make_unique<runtime::outbound_client>(
      exec_.get_executor(), std::move(sts_policy),
      std::shared_ptr<const runtime::clock>(std::shared_ptr<void>{}, &ctx_->clock));
  for (const auto& [name, r] : deps_.cfg.runtimes)
    runtimes_.emplace(name, spawn_runtime_queue({ctx_->fetch(), ctx_->writer, minter_}, name));
  for (const auto& [tenant, uris] : deps_.cfg.tenant_storage_prefixes)
    for (const auto& uri : uris)
      if (auto p = config::parse_s3_prefix(uri)) storage_prefixes_[tenant].push_back(std::move(*p));
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
  if (!s.grants.empty()) {
    static const std::vector<config::s3_prefix> none;
    auto t = storage_prefixes_.find(s.tenant);
    const auto& allowed = t == storage_prefixes_.end() ? none : t->second;
    if (auto outside = config::s3_grant_outside(s.grants, allowed); !outside.empty())
      return make_error(errc::invalid_grants,
                        "The grant '" + outside + "' lies outside the storage prefixes tenant '" +
                            s.tenant + "' may grant (tenant_storage_prefixes).",
                        "grants");
  }
  return runtime_queue(s.runtime);
}

boost::asio::awaitable<result<lease_reply>> engine::lease(admitted<worker_request> in,
                                                          std::shared_ptr<caller_presence> caller) {
  const worker_request& req = *in;
  const std::string& runtime = req.runtime;
  const int max_tasks = req.max_tasks;
  const int64_t wait_ms = req.wait_ms;
  if (ctx_->stopping) co_return make_error(errc::shutting_down, "the server is shutting down");
  auto q = runtimes_.find(runtime);
  if (q == runtimes_.end())
    co_return make_error(errc::runtime_not_found,
                         "no runtime '" + runtime + "' is configured (docs/workers.md)", "runtime");
  if (caller && caller->gone()) co_return lease_reply{};
  const uint64_t call = ++lease_calls_;
  if (caller)  // the worker left while waiting: the queue gives what it fetches to others
    caller->on_left(
        [queue = q->second, call] { caf::anon_send(queue, withdraw_atom::value, call); });
  auto r =
      co_await ask<lease_reply>(*sys_, q->second, std::chrono::milliseconds(wait_ms) + lease_slack,
                                lease_atom::value, static_cast<int32_t>(max_tasks), wait_ms, call);
  if (caller) caller->on_left({});
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
  co_return lost_attempt(c, deps_.clock.now_ms());
}

boost::asio::awaitable<result<heartbeat_answer>> engine::heartbeat(admitted<worker_request> call) {
  auto c = co_await verified(std::move(call).take().token);
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
  op.live_lease_only = true;
  return op;
}

boost::asio::awaitable<status> engine::complete(admitted<worker_request> call) {
  worker_request req = std::move(call).take();
  auto c = co_await verified(std::move(req.token));
  if (!c) co_return c.error();
  auto op = worker_outcome(*c);
  op.end = storage::attempt_end::succeeded;
  op.response = storage::gateway_result{200, std::move(req.output)};
  co_return co_await commit_attempt_op(std::move(op), *c);
}

boost::asio::awaitable<status> engine::fail(admitted<worker_request> call) {
  worker_request req = std::move(call).take();
  auto c = co_await verified(std::move(req.token));
  if (!c) co_return c.error();
  auto op = worker_outcome(*c);
  op.end = req.retryable ? storage::attempt_end::retry : storage::attempt_end::rejected;
  op.error_code = std::move(req.error_code);
  op.error_message = std::move(req.error_message);
  op.backoff_ms = retry_backoff_ms(deps_.cfg, c->attempt);
  co_return co_await commit_attempt_op(std::move(op), *c);
}

status engine::holds_lease(const runtime::capability_claims& c) const {
  const int64_t now = deps_.clock.now_ms();
  auto txn = deps_.env.begin_read();
  auto lease = storage::get_lease(txn, c.task_id);
  if (lease && lease->attempt == c.attempt && lease->token == c.lease && now < lease->expires_at_ms)
    return ok;
  // Still its lease, run out before the reaper took the task back: expired whatever the token
  // says (a heartbeat's fresh token may outlive a lease the reaper has not seen yet).
  if (lease && lease->attempt == c.attempt && lease->token == c.lease)
    return lost_attempt(c, std::max(now, c.exp_s * 1000));
  return lost_attempt(c, now);
}

boost::asio::awaitable<result<storage_credentials>> engine::credentials(
    admitted<worker_request> call) {
  auto c = co_await verified(std::move(call).take().token);
  if (!c) co_return c.error();
  if (c->grants.empty())
    co_return make_error(errc::invalid_grants,
                         "Task " + c->task_id +
                             " was submitted without storage grants: there is nothing to mint "
                             "credentials for.",
                         "grants");
  if (auto st = holds_lease(*c); !st) co_return st.error();
  // A session name STS accepts ([\w+=,.@-], at most 64): the task and the attempt.
  std::string session = "sy-" + std::to_string(c->attempt) + "-" + c->task_id;
  session.resize(std::min<size_t>(session.size(), 64));
  auto signed_call = co_await ask<sts_reply>(*sys_, minter_, answer_within, sts_atom::value,
                                             c->grants, std::move(session));
  if (!signed_call) co_return signed_call.error();
  if (!signed_call->err.code.empty()) co_return signed_call->err;
  const auto& cfg = deps_.cfg;
  runtime::outbound_request req{"POST", cfg.sts_endpoint + "/", {}, signed_call->call.body};
  for (auto& [name, value] : signed_call->call.headers)
    if (name != "Host") req.headers.emplace_back(name, value);
  runtime::outbound_options o;
  o.read_success_body = true;
  o.peer_noun = "STS";
  o.reached_as = "may be reached";
  auto answer = co_await sts_->send(std::move(req), o);
  if (!answer.answered) {
    log::warn("workers", "STS did not answer", {{"task_id", c->task_id}, {"error", answer.error}});
    co_return make_error(errc::credentials_unavailable, "STS did not answer: " + answer.error);
  }
  auto minted = runtime::parse_assume_role_response(answer.status_code, answer.body);
  if (!minted) {
    log::warn("workers", "STS refused to mint credentials",
              {{"task_id", c->task_id}, {"error", minted.error().message}});
    co_return minted.error();
  }
  log::info("workers", "minted storage credentials",
            {{"task_id", c->task_id}, {"attempt", c->attempt}, {"expiration", minted->expiration}});
  auto& k = minted->credentials;
  co_return storage_credentials{
      std::move(k.access_key_id),
      std::move(k.secret_access_key),
      std::move(k.session_token),
      std::move(minted->expiration),
      cfg.storage_endpoint.empty() ? cfg.sts_endpoint : cfg.storage_endpoint,
      cfg.sts_region};
}

boost::asio::awaitable<result<std::string>> engine::jwks() {
  co_return co_await ask<std::string>(*sys_, minter_, answer_within, jwks_atom::value);
}

boost::asio::awaitable<result<std::string>> engine::rotate_keys() {
  if (!deps_.cfg.signing_key_file.empty())
    co_return make_error(errc::invalid_request,
                         "The signing key is the operator's (signing_key_file): rotate it by "
                         "replacing the file and restarting the engine.");
  auto rotated = co_await ask<mint_reply>(*sys_, minter_, answer_within, rotate_atom::value);
  if (!rotated) co_return rotated.error();
  if (!rotated->err.code.empty()) co_return rotated->err;
  co_return std::move(rotated->token);
}

}  // namespace sy::actors
