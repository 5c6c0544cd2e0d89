#include "actors/webhook_deliverer.hpp"

#include <random>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/use_awaitable.hpp>

#include "actors/write.hpp"
#include "runtime/backoff.hpp"
#include "runtime/log.hpp"

namespace sy::actors {
namespace asio = boost::asio;
namespace {

/// Even with nothing due, look again this often (a cheap scan; catches clock jumps).
constexpr int64_t max_idle_ms = 5'000;

double random_unit() {
  thread_local std::mt19937_64 rng{std::random_device{}()};
  return std::uniform_real_distribution<double>(0.0, 1.0)(rng);
}

}  // namespace

webhook_deliverer::webhook_deliverer(engine_context& ctx, storage::environment& env,
                                     runtime::webhook_policy policy, std::string secret,
                                     size_t max_in_flight)
    : ctx_(ctx),
      env_(env),
      strand_(asio::make_strand(ctx.exec)),
      client_(strand_, std::move(policy), std::move(secret)),
      max_in_flight_(max_in_flight == 0 ? 1 : max_in_flight),
      timer_(ctx.clock.make_timer(strand_)) {}

void webhook_deliverer::start() {
  asio::co_spawn(strand_, loop(), [this](std::exception_ptr e) {
    if (e) log::error("webhooks", "the delivery loop ended unexpectedly", {});
    done_.set_value();
  });
}

void webhook_deliverer::wake() {
  asio::post(strand_, [this] { timer_->cancel(); });
}

void webhook_deliverer::stop(std::chrono::milliseconds timeout) {
  stopping_ = true;
  wake();
  if (done_.get_future().wait_for(timeout) != std::future_status::ready)
    log::warn("webhooks", "deliveries still running at shutdown; they are retried on next start",
              {});
}

asio::awaitable<void> webhook_deliverer::loop() {
  while (!stopping_) {
    const int64_t now = ctx_.clock.now_ms();
    std::vector<storage::webhook_record> due;
    std::optional<int64_t> next_due;
    {
      auto txn = env_.begin_read();
      due = storage::read_due_webhooks(txn, now, max_in_flight_ + in_flight_.size(), &next_due);
    }
    for (auto& w : due) {
      if (in_flight_.size() >= max_in_flight_) break;
      if (!in_flight_.insert(w.seq).second) continue;  // already being delivered
      asio::co_spawn(strand_, deliver(std::move(w)), asio::detached);
    }
    int64_t wait_ms = max_idle_ms;
    if (next_due) wait_ms = std::clamp<int64_t>(*next_due - now, 0, max_idle_ms);
    if (in_flight_.size() >= max_in_flight_ || (next_due && *next_due <= now)) {
      // Full, or everything due is already in flight: a finishing delivery wakes us.
      wait_ms = max_idle_ms;
    }
    co_await runtime::async_wait(*timer_, wait_ms, asio::use_awaitable);
  }
  // Let the deliveries in flight finish (each is bounded by webhook_timeout_ms); each one that
  // ends cancels the wait.
  while (!in_flight_.empty())
    co_await runtime::async_wait(*timer_, max_idle_ms, asio::use_awaitable);
}

asio::awaitable<void> webhook_deliverer::deliver(storage::webhook_record w) {
  const auto& cfg = ctx_.cfg;
  auto outcome = co_await client_.deliver(w.url, w.body, "whd_" + std::to_string(w.seq));
  storage::webhook_result_op op;
  op.seq = w.seq;
  op.attempts = w.attempts + 1;
  using kind = storage::webhook_result_op::outcome;
  if (outcome.delivered) {
    op.what = kind::delivered;
    log::debug("webhooks", "delivered", {{"job_id", w.job_id}, {"attempt", op.attempts}});
  } else if (outcome.permanent || op.attempts >= cfg.webhook_max_attempts) {
    op.what = kind::dropped;
    op.error = outcome.error;
    log::error("webhooks", "webhook dropped",
               {{"job_id", w.job_id},
                {"url", w.url},
                {"attempts", op.attempts},
                {"permanent", outcome.permanent},
                {"error", outcome.error}});
  } else {
    op.what = kind::retry;
    op.error = outcome.error;
    op.next_at_ms = ctx_.clock.now_ms() +
                    runtime::backoff_delay_ms(op.attempts - 1, cfg.webhook_initial_backoff_ms,
                                              cfg.webhook_max_backoff_ms, random_unit());
    log::warn("webhooks", "delivery failed; will retry",
              {{"job_id", w.job_id},
               {"url", w.url},
               {"attempt", op.attempts},
               {"retry_in_ms", op.next_at_ms - ctx_.clock.now_ms()},
               {"error", outcome.error}});
  }
  write_request req{std::move(op)};
  auto r = co_await write(ctx_.writer, std::move(req));
  if (!r || !r->reply)
    log::error("webhooks", "could not record a delivery's outcome; it will be sent again",
               {{"job_id", w.job_id}, {"error", r ? r->err.message : r.error().message}});
  in_flight_.erase(w.seq);
  timer_->cancel();  // a slot is free: look again
}

}  // namespace sy::actors
