#include "actors/webhook_deliverer.hpp"

#include <algorithm>
#include <memory>
#include <optional>
#include <random>
#include <set>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/strand.hpp>
#include <caf/send.hpp>
#include <caf/stateful_actor.hpp>
#include <caf/typed_event_based_actor.hpp>

#include "actors/event_json.hpp"
#include "actors/write.hpp"
#include "runtime/backoff.hpp"
#include "runtime/log.hpp"
#include "runtime/metrics.hpp"
#include "runtime/trace.hpp"
#include "runtime/webhook_client.hpp"
#include "storage/batch_ops.hpp"

namespace sy::actors {
namespace asio = boost::asio;
namespace {

/// Even with nothing due, look again this often (a cheap scan; catches clock jumps).
constexpr int64_t max_idle_ms = 5'000;

double random_unit() {
  thread_local std::mt19937_64 rng{std::random_device{}()};
  return std::uniform_real_distribution<double>(0.0, 1.0)(rng);
}

/// What the deliveries share with the actor: shared, so that a delivery still running when the
/// actor is gone (shutdown past its drain timeout) keeps its client alive.
struct delivery_context {
  delivery_context(const ambient& a, storage::environment& e, storage_writer_actor w,
                   runtime::webhook_policy policy, std::string key)
      : at(a),
        env(e),
        writer(std::move(w)),
        strand(asio::make_strand(a.exec)),
        // The engine's clock, not owned (an aliasing pointer without an owner): like `at`,
        // which the deliveries already use, it outlives every delivery.
        client(strand, std::move(policy), std::move(key),
               std::shared_ptr<const runtime::clock>(std::shared_ptr<void>{}, &a.clock),
               a.cfg.webhook_legacy_signature),
        timer(a.clock.make_timer(strand)) {}
  const ambient& at;
  storage::environment& env;    ///< the jobs' traces
  storage_writer_actor writer;  ///< each delivery's outcome
  asio::strand<asio::io_context::executor_type> strand;
  runtime::webhook_client client;         ///< on the strand
  std::unique_ptr<runtime::timer> timer;  ///< the wait between scans; on the strand
};

struct deliverer_state {
  std::shared_ptr<delivery_context> dc;
  storage::environment* env = nullptr;
  size_t max_in_flight = 16;
  std::set<uint64_t> in_flight;
  bool draining = false;
  caf::typed_response_promise<bool> drained;  ///< pending `drain`, answered when in_flight empties
  bool drain_pending = false;
  static inline const char* name = "webhook_deliverer";
};

using deliverer_ptr = webhook_deliverer_actor::stateful_pointer<deliverer_state>;

/// The outcome of one delivery attempt, as the writer records it.
storage::webhook_result_op judge_delivery(const config::settings& cfg, const runtime::clock& clock,
                                          const storage::webhook_record& w,
                                          const runtime::webhook_outcome& outcome) {
  storage::webhook_result_op op;
  op.seq = w.seq;
  op.attempts = w.attempts + 1;
  using kind = storage::webhook_result_op::outcome;
  if (outcome.delivered) {
    op.what = kind::delivered;
    metrics::webhook_delivery("delivered");
    log::debug("webhooks", "delivered", {{"job_id", w.job_id}, {"attempt", op.attempts}});
  } else if (outcome.permanent || op.attempts >= cfg.webhook_max_attempts) {
    op.what = kind::dropped;
    op.error = outcome.error;
    metrics::webhook_delivery("dropped");
    log::error("webhooks", "webhook dropped",
               {{"job_id", w.job_id},
                {"url", w.url},
                {"attempts", op.attempts},
                {"permanent", outcome.permanent},
                {"error", outcome.error}});
  } else {
    op.what = kind::retry;
    op.error = outcome.error;
    metrics::webhook_delivery("retried");
    const int64_t delay = runtime::backoff_delay_ms(op.attempts - 1, cfg.webhook_initial_backoff_ms,
                                                    cfg.webhook_max_backoff_ms, random_unit());
    op.next_at_ms = clock.now_ms() + delay;
    log::warn("webhooks", "delivery failed; will retry",
              {{"job_id", w.job_id},
               {"url", w.url},
               {"attempt", op.attempts},
               {"retry_in_ms", delay},
               {"error", outcome.error}});
  }
  return op;
}

/// The job's (or batch's) trace (runtime/trace.hpp), whose child the delivery is; nullopt: none.
std::optional<trace::stored> job_trace(storage::environment& env, const std::string& job_id) {
  auto txn = env.begin_read();
  if (storage::is_batch_id(job_id)) {
    auto b = storage::get_batch(txn, job_id);
    if (!b) return std::nullopt;
    return trace::of(b->id, b->trace, b->trace_state);
  }
  auto job = storage::get_job(txn, job_id);
  if (!job) return std::nullopt;
  return trace::of(job->id, job->trace, job->trace_state);
}

asio::awaitable<void> deliver(std::shared_ptr<delivery_context> dc, storage::webhook_record w) {
  const auto at = job_trace(dc->env, w.job_id);
  const auto span = at ? at->self.child() : trace::context{};
  std::vector<std::pair<std::string, std::string>> headers;
  if (at) headers.emplace_back("traceparent", span.traceparent());
  if (at && !span.state.empty()) headers.emplace_back("tracestate", span.state);
  const int64_t t0 = dc->at.clock.now_ms();
  auto outcome =
      co_await dc->client.deliver(w.url, webhook_body(w), webhook_id(w), std::move(headers));
  if (at && trace::enabled()) {
    auto s = trace::make_span(span, at->self.span_id, "webhook.deliver", trace::span_kind::client,
                              t0, dc->at.clock.now_ms());
    s.attributes = {{"job.id", w.job_id}};
    s.int_attributes = {{"http.status_code", outcome.status_code}, {"attempt", w.attempts + 1}};
    s.error = !outcome.delivered;
    s.status_message = outcome.error.substr(0, 200);
    trace::record(std::move(s));
  }
  write_request req{judge_delivery(dc->at.cfg, dc->at.clock, w, outcome)};
  auto r = co_await write(dc->writer, std::move(req));
  if (!r || !r->reply)
    log::error("webhooks", "could not record a delivery's outcome; it will be sent again",
               {{"job_id", w.job_id}, {"error", r ? r->err.message : r.error().message}});
}

/// Arms the wait for the next scan (on the strand: the timer lives there); a wait still armed
/// ends unfired.
void arm(deliverer_ptr self, int64_t wait_ms) {
  webhook_deliverer_actor me = self;
  auto dc = self->state.dc;
  asio::post(dc->strand, [dc, me, wait_ms] {
    dc->timer->wait(wait_ms, [me](bool fired) {
      if (fired) caf::anon_send(me, wake_atom::value);
    });
  });
}

/// Starts the deliveries that are due, up to the in-flight limit, and arms the next wait.
void scan(deliverer_ptr self) {
  auto& st = self->state;
  if (st.draining) return;
  const int64_t now = st.dc->at.clock.now_ms();
  std::vector<storage::webhook_record> due;
  std::optional<int64_t> next_due;
  {
    auto txn = st.env->begin_read();
    due = storage::read_due_webhooks(txn, now, st.max_in_flight + st.in_flight.size(), &next_due);
  }
  webhook_deliverer_actor me = self;
  for (auto& w : due) {
    if (st.in_flight.size() >= st.max_in_flight) break;
    const uint64_t seq = w.seq;
    if (!st.in_flight.insert(seq).second) continue;  // already being delivered
    asio::co_spawn(st.dc->strand, deliver(st.dc, std::move(w)),
                   [me, seq](const std::exception_ptr& e) {
                     if (e) log::error("webhooks", "a delivery ended unexpectedly", {{"seq", seq}});
                     caf::anon_send(me, done_atom::value, seq);
                   });
  }
  int64_t wait_ms = max_idle_ms;
  if (next_due) wait_ms = std::clamp<int64_t>(*next_due - now, 0, max_idle_ms);
  // Full, or everything due is already in flight: a finishing delivery wakes us.
  if (st.in_flight.size() >= st.max_in_flight || (next_due && *next_due <= now))
    wait_ms = max_idle_ms;
  arm(self, wait_ms);
}

webhook_deliverer_actor::behavior_type deliverer(deliverer_ptr self,
                                                 std::shared_ptr<delivery_context> dc,
                                                 storage::environment* env, size_t max_in_flight) {
  self->state.dc = std::move(dc);
  self->state.env = env;
  self->state.max_in_flight = max_in_flight == 0 ? 1 : max_in_flight;
  self->send(self, wake_atom::value);
  return {
      [=](wake_atom) { scan(self); },
      [=](done_atom, uint64_t seq) {
        auto& st = self->state;
        st.in_flight.erase(seq);
        if (!st.draining) return scan(self);  // a slot is free: look again
        if (st.in_flight.empty() && st.drain_pending) {
          st.drain_pending = false;
          st.drained.deliver(true);
        }
      },
      [=](drain_atom) -> caf::typed_response_promise<bool> {
        auto& st = self->state;
        st.draining = true;
        auto dc = st.dc;
        asio::post(dc->strand, [dc] { dc->timer->cancel(); });
        st.drained = self->make_response_promise<bool>();
        if (st.in_flight.empty()) {
          st.drained.deliver(true);
        } else {
          st.drain_pending = true;
        }
        return st.drained;
      },
  };
}

}  // namespace

webhook_deliverer_actor spawn_webhook_deliverer(const ambient& at, storage::environment& env,
                                                storage_writer_actor writer,
                                                runtime::webhook_policy policy, std::string key,
                                                size_t max_in_flight) {
  auto dc = std::make_shared<delivery_context>(at, env, std::move(writer), std::move(policy),
                                               std::move(key));
  return at.sys.spawn(deliverer, std::move(dc), &env, max_in_flight);
}

}  // namespace sy::actors
