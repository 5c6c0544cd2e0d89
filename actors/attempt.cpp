#include "actors/attempt.hpp"

#include <utility>

#include <chrono>
#include <random>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>

#include "actors/write.hpp"
#include "runtime/backoff.hpp"
#include "runtime/failpoint.hpp"
#include "runtime/log.hpp"

namespace sy::actors {
namespace asio = boost::asio;
namespace {

std::string random_token() {
  thread_local std::mt19937_64 rng{std::random_device{}()};
  char buf[33];
  std::snprintf(buf, sizeof buf, "%016llx%016llx", static_cast<unsigned long long>(rng()),
                static_cast<unsigned long long>(rng()));
  return buf;
}

double random_unit() {
  thread_local std::mt19937_64 rng{std::random_device{}()};
  return std::uniform_real_distribution<double>(0.0, 1.0)(rng);
}

std::string excerpt(const std::string& body) {
  return body.size() <= 300 ? body : body.substr(0, 300) + "...";
}

/// Keeps the lease and the JetStream message alive while the gateway works: every third of the
/// lease TTL, commit a later expiry and send an in-progress ack.
asio::awaitable<void> heartbeat(engine_context& ctx, storage::extend_lease_op op,
                                std::shared_ptr<const runtime::delivery> msg,
                                std::shared_ptr<runtime::timer> timer) {
  const int64_t period_ms = std::max<int64_t>(ctx.cfg.lease_ttl_ms / 3, 50);
  for (;;) {
    if (!co_await runtime::async_wait(*timer, period_ms, asio::use_awaitable))
      co_return;  // cancelled: the attempt is over
    op.expires_at_ms = ctx.clock.now_ms() + ctx.cfg.lease_ttl_ms;
    write_request req{op};
    auto r = co_await write(ctx.writer, std::move(req));
    if (r && r->reply && r->reply->what != storage::op_reply::kind::done) {
      log::warn("attempt", "lease lost while running",
                {{"task_id", op.task_id}, {"attempt", op.attempt}});
      co_return;
    }
    (void)ctx.js.in_progress(*msg);
  }
}

}  // namespace

attempt_verdict judge(const runtime::gateway_outcome& o, bool releasing) {
  if (!o.got_response && releasing)
    return {storage::attempt_end::released, errc::shutdown, "the engine shut down mid-request"};
  if (o.got_response && o.status_code >= 200 && o.status_code < 300)
    return {storage::attempt_end::succeeded, {}, {}};
  if (o.got_response && !o.retryable)
    return {storage::attempt_end::rejected, errc::gateway_rejected,
            "the gateway answered " + std::to_string(o.status_code) + ": " + excerpt(o.body)};
  if (o.got_response)
    return {storage::attempt_end::retry, errc::gateway_error,
            "the gateway answered " + std::to_string(o.status_code) + " after " +
                std::to_string(o.tries) + " tries: " + excerpt(o.body)};
  return {
      storage::attempt_end::retry, errc::gateway_unreachable,
      "the gateway could not be reached after " + std::to_string(o.tries) + " tries: " + o.error};
}

asio::awaitable<void> run_attempt(engine_context& ctx, std::string model,
                                  runtime::delivery delivery, std::function<void()> on_answered) {
  // Shared with the heartbeat, which may outlive this frame by one wake-up.
  auto msg = std::make_shared<const runtime::delivery>(std::move(delivery));
  auto& js = ctx.js;
  ++ctx.running;
  struct running_guard {
    engine_context& ctx;
    ~running_guard() { --ctx.running; }
  } guard{ctx};
  auto parsed = storage::parse_task_message(msg->data);
  if (!parsed) {
    log::error("attempt", "not a task message; terminated", {{"subject", msg->subject}});
    (void)js.term(*msg);
    co_return;
  }
  auto [task_id, attempt] = *parsed;
  if (ctx.stopping) {
    (void)js.nak(*msg, 0);  // shutdown began after the fetch: leave it to the next run
    co_return;
  }
  storage::start_attempt_op start{
      task_id, attempt, random_token(), ctx.holder, ctx.clock.now_ms(), ctx.cfg.lease_ttl_ms};
  write_request start_req{start};
  auto started = co_await write(ctx.writer, std::move(start_req));
  if (!started || !started->reply) {
    log::warn("attempt", "could not start; redelivering later",
              {{"task_id", task_id},
               {"error", started ? started->err.message : started.error().message}});
    (void)js.nak(*msg, 1'000);
    co_return;
  }
  const auto& rep = *started->reply;
  using kind = storage::op_reply::kind;
  if (rep.what == kind::not_yet) {
    (void)js.nak(*msg, rep.delay_ms);
    co_return;
  }
  if (rep.what != kind::done) {
    log::debug("attempt", "stale delivery dropped", [&] {
      return nlohmann::json{{"task_id", task_id}, {"attempt", attempt}};
    });
    (void)js.ack(*msg);
    co_return;
  }
  const auto& job = *rep.job;
  auto* gw = ctx.gateway_for(model);
  runtime::gateway_outcome outcome;
  if (gw == nullptr) {
    outcome.got_response = true;
    outcome.status_code = 404;
    outcome.body =
        R"({"error":{"message":"no gateway serves this model","code":"model_not_found"}})";
  } else {
    auto abort = std::make_shared<runtime::abort_handle>();
    auto reg = ctx.inflight.add(task_id, abort);
    {
      // A cancel committed between our start and this registration found nothing to abort.
      auto txn = ctx.env->begin_read();
      auto now = storage::get_job(txn, job.id);
      if (now && now->status == storage::job_status::cancelling) abort->abort();
    }
    const auto ex = co_await asio::this_coro::executor;
    std::shared_ptr<runtime::timer> timer = ctx.clock.make_timer(ex);
    storage::extend_lease_op extend{task_id, attempt, start.token, 0};
    asio::co_spawn(ctx.exec, heartbeat(ctx, std::move(extend), msg, timer), asio::detached);
    std::unique_ptr<runtime::timer> deadline;
    if (job.deadline_ms > 0) {  // the job's timeout: abort the request when it passes
      deadline = ctx.clock.make_timer(ex);
      deadline->wait(job.deadline_ms - ctx.clock.now_ms(), [abort](bool fired) {
        if (fired) abort->abort();
      });
    }
    log::debug("attempt", "sending", [&] {
      return nlohmann::json{{"job_id", job.id}, {"attempt", attempt}};
    });
    runtime::gateway_request request{job.endpoint, job.body};
    outcome = co_await gw->send(std::move(request), abort);
    timer->cancel();
    if (deadline) deadline->cancel();
    ctx.inflight.remove(reg);
  }
  if (on_answered) on_answered();
  runtime::failpoint("attempt_response_received");
  auto verdict = judge(outcome, ctx.releasing.load());
  storage::finish_attempt_op finish;
  finish.task_id = task_id;
  finish.attempt = attempt;
  finish.token = start.token;
  finish.end = verdict.end;
  if (outcome.got_response)
    finish.response = storage::gateway_result{outcome.status_code, outcome.body};
  finish.error_code = verdict.error_code;
  finish.error_message = verdict.error_message;
  finish.backoff_ms = runtime::backoff_delay_ms(attempt - 1, ctx.cfg.requeue_initial_backoff_ms,
                                                ctx.cfg.requeue_max_backoff_ms, random_unit());
  finish.now_ms = ctx.clock.now_ms();
  finish.subject = ctx.js.task_subject(model);
  write_request finish_req{finish};
  auto done = co_await write(ctx.writer, std::move(finish_req));
  if (!done || !done->reply) {
    // The outcome is not recorded; the lease will expire and the reaper re-queues the task.
    log::error("attempt", "could not record the outcome",
               {{"job_id", job.id}, {"error", done ? done->err.message : done.error().message}});
    (void)js.nak(*msg, ctx.cfg.lease_ttl_ms);
    co_return;
  }
  log::debug("attempt", "finished", [&] {
    return nlohmann::json{
        {"job_id", job.id},
        {"attempt", attempt},
        {"end", verdict.error_code.empty() ? "succeeded" : verdict.error_code},
        {"status", done->reply->job ? storage::to_string(done->reply->job->status) : ""},
        {"fenced", done->reply->what == kind::stale}};
  });
  runtime::failpoint("attempt_result_committed");
  if (verdict.end == storage::attempt_end::released) {
    (void)js.nak(*msg, 0);
  } else {
    (void)js.ack(*msg);
  }
}

}  // namespace sy::actors
