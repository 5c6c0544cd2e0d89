#include "actors/attempt.hpp"

namespace sy::actors {
namespace {

std::string excerpt(const std::string& body) {
  return body.size() <= 300 ? body : body.substr(0, 300) + "...";
}

}  // namespace

attempt_verdict judge(const runtime::gateway_outcome& o, bool released) {
  if (!o.got_response && released)
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

bool attempt_state::on_sending() {
  phase_ = phase::sending;
  return reason_ != abort_reason::none;
}

}  // namespace sy::actors
