#include "actors/attempt.hpp"

#include <cstdio>
#include <random>

#include "runtime/backoff.hpp"

namespace sy::actors {
namespace {

std::mt19937_64& thread_rng() {
  thread_local std::mt19937_64 rng{std::random_device{}()};
  return rng;
}

std::string excerpt(const std::string& body) {
  return body.size() <= 300 ? body : body.substr(0, 300) + "...";
}

}  // namespace

std::string new_lease_token() {
  auto& rng = thread_rng();
  char buf[33];
  std::snprintf(buf, sizeof buf, "%016llx%016llx", static_cast<unsigned long long>(rng()),
                static_cast<unsigned long long>(rng()));
  return buf;
}

int64_t retry_backoff_ms(const config::settings& cfg, int attempt) {
  const double jitter = std::uniform_real_distribution<double>(0.0, 1.0)(thread_rng());
  return runtime::backoff_delay_ms(attempt - 1, cfg.requeue_initial_backoff_ms,
                                   cfg.requeue_max_backoff_ms, jitter);
}

attempt_verdict judge(const runtime::gateway_outcome& o, bool released, bool http) {
  if (!o.got_response && released)
    return {storage::attempt_end::released, errc::shutdown, "the engine shut down mid-request"};
  if (o.got_response && o.status_code >= 200 && o.status_code < 300)
    return {storage::attempt_end::succeeded, {}, {}};
  const std::string peer = http ? "the server" : "the gateway";
  const std::string tries = http ? "" : " after " + std::to_string(o.tries) + " tries";
  if (o.got_response && !o.retryable)
    return {storage::attempt_end::rejected, http ? errc::http_rejected : errc::gateway_rejected,
            peer + " answered " + std::to_string(o.status_code) + ": " + excerpt(o.body)};
  if (o.got_response)
    return {storage::attempt_end::retry, http ? errc::http_error : errc::gateway_error,
            peer + " answered " + std::to_string(o.status_code) + tries + ": " + excerpt(o.body)};
  if (http && o.permanent)
    return {storage::attempt_end::rejected, o.denied ? errc::http_task_denied : errc::http_rejected,
            o.error};
  return {storage::attempt_end::retry, http ? errc::http_unreachable : errc::gateway_unreachable,
          peer + " could not be reached" + tries + ": " + o.error};
}

start_verdict judge_start(const storage::op_reply& r) {
  using kind = storage::op_reply::kind;
  if (r.what == kind::not_yet) return start_verdict::nak_later;
  if (r.what != kind::done || !r.job) return start_verdict::drop;
  return start_verdict::send;
}

const char* to_string(abort_reason r) {
  switch (r) {
    case abort_reason::none:
      return "none";
    case abort_reason::cancel:
      return "cancel";
    case abort_reason::deadline:
      return "deadline";
    case abort_reason::shutdown:
      return "shutdown";
  }
  return "none";
}

bool attempt_state::on_abort(abort_reason why) {
  if (phase_ == phase::committing) return false;  // the exchange is over: nothing to stop
  if (why == abort_reason::shutdown) released_ = true;
  if (reason_ == abort_reason::none) reason_ = why;
  return phase_ == phase::sending;
}

bool attempt_state::on_leased() {
  phase_ = phase::leased;
  return reason_ != abort_reason::none;
}

bool attempt_state::on_sending() {
  phase_ = phase::sending;
  return reason_ != abort_reason::none;
}

}  // namespace sy::actors
