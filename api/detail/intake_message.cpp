#include "api/detail/intake_message.hpp"
#include "config/limits.hpp"

#include <nlohmann/json.hpp>

#include "actors/submission.hpp"
#include "api/detail/json_parse.hpp"
#include "api/errors.hpp"
#include "api/job_json.hpp"

namespace sy::api::detail {
namespace {

/// The same rule as HTTP's Idempotency-Key: 1..255 printable ASCII characters.
result<std::string> idempotency_key(const std::optional<std::string>& header) {
  if (!header) return std::string();
  const std::string& key = *header;
  bool valid = !key.empty() && key.size() <= limits::idempotency_key_max_chars;
  for (char c : key) valid = valid && c >= 0x20 && c <= 0x7e;
  if (!valid)
    return make_error(errc::invalid_idempotency_key,
                      "The Nats-Msg-Id header must be 1 to 255 printable ASCII characters.",
                      "Nats-Msg-Id");
  return key;
}

}  // namespace

result<actors::submission> to_submission(const intake_input& in, std::string_view job_subject,
                                         const authenticator& auth, int64_t max_body_bytes) {
  if (in.subject != job_subject)
    return make_error(errc::not_found, "Unknown intake subject " + std::string(in.subject) +
                                           "; submissions are published on " +
                                           std::string(job_subject) + ".");
  auto tenant = auth.tenant_for(in.authorization.value_or(std::string()));
  if (!tenant) return tenant.error();
  if (static_cast<int64_t>(in.data.size()) > max_body_bytes)
    return make_error(errc::body_too_large, "The message payload is " +
                                                std::to_string(in.data.size()) +
                                                " bytes, more than max_body_bytes (" +
                                                std::to_string(max_body_bytes) + ").");
  auto doc = parse_json_body(in.data);
  if (!doc) return doc.error();
  auto key = idempotency_key(in.msg_id);
  if (!key) return key.error();
  auto sub = actors::parse_submission(std::move(*doc), std::move(*tenant), std::move(*key));
  if (sub && in.traceparent)
    sub->trace =
        trace::parse(*in.traceparent, in.tracestate.value_or("")).value_or(trace::context{});
  return sub;
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
