#pragma once
/// The NATS intake's pure rules (docs/nats.md): what one intake message means, which errors are
/// worth a redelivery, and what the reply says. No I/O and no clock, so any thread may call them
/// and they are tested without a server.

#include <optional>
#include <string>
#include <string_view>

#include "actors/job_service.hpp"
#include "api/admission.hpp"
#include "config/result.hpp"

namespace sy::api::detail {

/// The parts of one intake message the rules look at.
struct intake_input {
  std::string_view subject;                  ///< e.g. `sy.submit.job`
  std::string_view data;                     ///< the payload: a `POST /v1/jobs` document
  std::optional<std::string> authorization;  ///< header `Authorization`
  std::optional<std::string> msg_id;         ///< header `Nats-Msg-Id`: the idempotency key
  std::optional<std::string> traceparent;    ///< header `traceparent` (W3C trace context)
  std::optional<std::string> tracestate;     ///< header `tracestate`
};

/// One message through admission, exactly as `POST /v1/jobs` goes (api/admission.hpp: API key,
/// size, JSON, idempotency key from `Nats-Msg-Id`, document). `job_subject` is the only accepted
/// subject (`<sp>.submit.job`); another subject under `<sp>.submit.` is `not_found`.
result<actors::admitted<actors::submission>> to_submission(const intake_input& in,
                                                           std::string_view job_subject,
                                                           const admission& admit);

/// True when a later delivery may succeed (storage_unavailable, shutting_down, not_ready,
/// internal_error): the message is nak'ed with a delay instead of answered and terminated.
bool is_transient(const sy::error& e);

/// A reply: the payload and the HTTP status the same outcome has on `POST /v1/jobs`
/// (sent as header `Sy-Status`).
struct intake_reply {
  std::string body;
  unsigned status = 0;
};

/// The job exactly as HTTP renders it; 202 when created or not yet terminal, else 200.
intake_reply reply_for(const actors::submit_outcome& outcome);
/// The OpenAI error envelope with the error table's status.
intake_reply reply_for(const sy::error& e);

/// A subject a reply may be published on: non-empty tokens of printable ASCII without spaces,
/// no wildcard tokens, at most 255 bytes. A bad `Sy-Reply-To` is logged and not answered.
bool is_valid_reply_subject(std::string_view subject);

}  // namespace sy::api::detail
