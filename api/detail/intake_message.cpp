#include "api/detail/intake_message.hpp"
#include "config/limits.hpp"

#include <nlohmann/json.hpp>

#include "actors/submission.hpp"
#include "api/errors.hpp"
#include "api/job_json.hpp"
#include "config/client_text.hpp"

namespace sy::api::detail {
result<actors::admitted<actors::submission>> to_submission(const intake_input& in,
                                                           std::string_view job_subject,
                                                           const admission& admit) {
  if (in.subject != job_subject)
    return make_error(errc::not_found, "Unknown intake subject " + quote_client(in.subject) +
                                           "; submissions are published on " +
                                           std::string(job_subject) + ".");
  auto opt = [](const std::optional<std::string>& h) {
    return h ? std::optional<std::string_view>(*h) : std::nullopt;
  };
  client_request r{in.data,       opt(in.authorization), opt(in.msg_id),
                   "Nats-Msg-Id", opt(in.traceparent),   opt(in.tracestate)};
  return admit.job(r);
}

bool is_transient(const sy::error& e) {
  return e.code == errc::storage_unavailable || e.code == errc::shutting_down ||
         e.code == errc::not_ready || e.code == errc::internal_error;
}

intake_reply reply_for(const actors::submit_outcome& outcome) {
  bool accepted = outcome.created || !storage::is_terminal(outcome.job.status);
  return {job_json(outcome.job), accepted ? 202u : 200u};
}

intake_reply reply_for(const sy::error& e) { return {error_body(e), lookup_error(e.code).status}; }

bool is_valid_reply_subject(std::string_view subject) {
  if (subject.empty() || subject.size() > limits::reply_subject_max_bytes) return false;
  size_t start = 0;
  while (start <= subject.size()) {
    size_t end = subject.find('.', start);
    if (end == std::string_view::npos) end = subject.size();
    std::string_view token = subject.substr(start, end - start);
    if (token.empty() || token == "*" || token == ">") return false;
    for (char c : token)
      if (c <= 0x20 || c > 0x7e) return false;
    start = end + 1;
  }
  return true;
}

}  // namespace sy::api::detail
