#include "api/nats_intake.hpp"

#include <exception>
#include <future>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/use_future.hpp>

#include "api/detail/intake_message.hpp"
#include "runtime/log.hpp"
#include "runtime/metrics.hpp"
#include "runtime/thread_name.hpp"

namespace sy::api {
namespace {

constexpr std::string_view component = "nats_intake";
using outcome_t = result<actors::submit_outcome>;

/// co_spawn's use_future needs a default-constructible value (it makes one when the coroutine
/// throws), which `result` is not; an optional wraps it.
boost::asio::awaitable<std::optional<outcome_t>> submit_one(
    actors::core::client& core, actors::admitted<actors::submission> s) {
  actors::core::request submit = actors::core::submit_job{std::move(s)};
  co_return co_await actors::core::ask<actors::submit_outcome>(core, std::move(submit));
}

}  // namespace

/// One fetched message: what it asks for, and either the error found before submitting or the
/// submit in flight on the io thread.
struct nats_intake::pending {
  runtime::js_message msg;
  std::optional<std::string> reply_to;
  std::optional<sy::error> error;
  std::future<std::optional<outcome_t>> submitted;
};

result<std::unique_ptr<nats_intake>> nats_intake::start(const config::settings& settings,
                                                        actors::core::client& core,
                                                        runtime::js_client& js,
                                                        nats_intake_options options) {
  std::unique_ptr<nats_intake> intake(new nats_intake(settings, core, js, options));
  // Without NATS (down at start) or its streams (not made yet) there is nothing to consume: the
  // fetch loop binds once it can. So it does when the bind fails for want of NATS (a request
  // that timed out or found no responder: a server busy, restarting, or back with its
  // JetStream state reset). Any other failure to bind is a configuration error.
  if (js.layout_ready()) {
    if (auto st = intake->bind(); !st) {
      if (st.error().code != errc::nats_unavailable) return st.error();
      log::warn(component, "cannot bind the consumer yet; retrying",
                {{"error", st.error().message}});
    }
  }
  auto* self = intake.get();
  intake->io_thread_ = std::thread([self] {
    runtime::name_this_thread("sy-intake-io");
    self->io_.run();
  });
  intake->fetch_thread_ = std::thread([self] {
    runtime::name_this_thread("sy-intake-pull");
    self->fetch_loop();
  });
  log::info(component, "started",
            {{"subject", intake->job_subject_},
             {"bound", intake->sub_ != nullptr},
             {"stream", js.stream_name("INTAKE")},
             {"consumer", "intake"}});
  return intake;
}

nats_intake::nats_intake(const config::settings& settings, actors::core::client& core,
                         runtime::js_client& js, nats_intake_options options)
    : admission_(settings),
      core_(core),
      js_(js),
      options_(options),
      job_subject_(js.intake_subject("job")),
      work_(boost::asio::make_work_guard(io_)) {}

nats_intake::~nats_intake() { stop(); }

void nats_intake::stop() {
  {
    std::lock_guard lock(stop_mu_);
    stopping_ = true;
  }
  stop_cv_.notify_all();
  if (fetch_thread_.joinable()) fetch_thread_.join();
  // Every submit of the last batch was awaited by the fetch thread, so the io thread is idle.
  work_.reset();
  io_.stop();
  if (io_thread_.joinable()) {
    io_thread_.join();
    log::info(component, "stopped");
  }
}

nats_intake_counters nats_intake::counters() const {
  std::lock_guard lock(counters_mu_);
  return counters_;
}

void nats_intake::fetch_loop() {
  bool failing = false;
  while (!stopping_) {
    // The streams were made again since the consumer was bound (a server back without its
    // store has lost the consumer): bind it again.
    if (js_.layout_generation() != bound_generation_) resubscribe();
    auto got = sub_ ? sub_->fetch(options_.batch, options_.fetch_timeout_ms)
                    : result<std::vector<runtime::js_message>>(make_error(
                          errc::nats_unavailable, "the intake consumer is not bound yet"));
    if (!got) {
      if (!failing)
        log::warn(component, "fetch failed; retrying", {{"error", got.error().message}});
      failing = true;
      std::unique_lock lock(stop_mu_);
      stop_cv_.wait_for(lock, std::chrono::milliseconds(options_.error_backoff_ms),
                        [this] { return stopping_.load(); });
      lock.unlock();
      if (!stopping_) resubscribe();
      continue;
    }
    if (failing) log::info(component, "fetch recovered");
    failing = false;
    if (!got->empty()) process(*got);
  }
}

sy::status nats_intake::bind() {
  const uint64_t generation = js_.layout_generation();  // read before binding
  auto sub = js_.subscribe_intake();
  if (!sub) return sub.error();
  sub_ = std::move(sub.value());
  bound_generation_ = generation;
  return sy::ok;
}

void nats_intake::resubscribe() {
  // The consumer may have been deleted (e.g. the server lost its store): re-create and re-bind.
  // When NATS is simply unreachable this fails too, and the old subscription is kept.
  if (js_.connected()) (void)bind();
}

void nats_intake::process(std::vector<runtime::js_message>& batch) {
  std::vector<pending> work;
  work.reserve(batch.size());
  for (auto& m : batch) {
    pending p{std::move(m), std::nullopt, std::nullopt, {}};
    p.reply_to = p.msg.header("Sy-Reply-To");
    detail::intake_input in{p.msg.subject(),
                            p.msg.data(),
                            p.msg.header("Authorization"),
                            p.msg.header("Nats-Msg-Id"),
                            p.msg.header("traceparent"),
                            p.msg.header("tracestate")};
    auto sub = detail::to_submission(in, job_subject_, admission_);
    if (!sub) {
      p.error = sub.error();
    } else {
      // Spawned now, awaited below: the batch's submits run concurrently on the io thread.
      p.submitted = boost::asio::co_spawn(io_, submit_one(core_, std::move(sub.value())),
                                          boost::asio::use_future);
    }
    work.push_back(std::move(p));
  }
  {
    std::lock_guard lock(counters_mu_);
    counters_.received += work.size();
  }
  for (auto& p : work) finish(p);
}

void nats_intake::finish(pending& p) {
  std::optional<outcome_t> outcome;
  if (p.error) {
    outcome = *p.error;
  } else {
    try {
      outcome = p.submitted.get();
    } catch (const std::exception& e) {  // the coroutine threw: a bug, not the client's fault
      outcome = make_error(errc::internal_error, std::string("Submitting failed: ") + e.what());
    }
    if (!outcome) outcome = make_error(errc::internal_error, "Submitting produced no result.");
  }
  nlohmann::json fields = {{"seq", p.msg.stream_sequence()}, {"delivered", p.msg.delivered()}};
  status done = sy::ok;
  if (*outcome) {
    auto reply = detail::reply_for(outcome->value());
    answer(p, reply.status, reply.body);
    metrics::submission("nats", static_cast<int>(reply.status));
    done = p.msg.ack();  // after the reply: a lost ack means a redelivery and a second reply
    fields["job_id"] = outcome->value().job.id;
    fields["created"] = outcome->value().created;
    log::debug(component, "submission accepted", fields);
    std::lock_guard lock(counters_mu_);
    ++counters_.accepted;
  } else if (const sy::error& e = outcome->error();
             detail::is_transient(e) &&
             p.msg.delivered() < static_cast<uint64_t>(js_.layout().intake_max_deliver)) {
    done = p.msg.nak_with_delay(options_.retry_delay_ms);
    fields["code"] = e.code;
    fields["error"] = e.message;
    log::warn(component, "submission deferred", fields);
    std::lock_guard lock(counters_mu_);
    ++counters_.deferred;
  } else {
    auto reply = detail::reply_for(e);
    answer(p, reply.status, reply.body);
    metrics::submission("nats", static_cast<int>(reply.status));
    done = p.msg.term();
    fields["code"] = e.code;
    fields["error"] = e.message;
    log::info(component, "submission rejected", fields);
    std::lock_guard lock(counters_mu_);
    ++counters_.rejected;
  }
  if (!done)
    log::warn(component, "acknowledging a submission failed; it will be redelivered",
              {{"seq", p.msg.stream_sequence()}, {"error", done.error().message}});
}

void nats_intake::answer(const pending& p, unsigned status, const std::string& body) {
  if (!p.reply_to) return;
  if (!detail::is_valid_reply_subject(*p.reply_to)) {
    log::warn(component, "Sy-Reply-To is not a valid subject; no reply sent",
              {{"seq", p.msg.stream_sequence()},
               {"reply_to", p.reply_to->substr(0, 64)},
               {"reply_to_bytes", p.reply_to->size()}});
    return;
  }
  auto st = js_.publish_reply(*p.reply_to, body, {{"Sy-Status", std::to_string(status)}});
  if (!st)
    log::warn(component, "reply failed",
              {{"seq", p.msg.stream_sequence()}, {"error", st.error().message}});
}

}  // namespace sy::api
