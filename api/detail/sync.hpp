#pragma once
/// The synchronous OpenAI-compatible endpoints (`POST /v1/chat/completions`, `/v1/embeddings`,
/// `/v1/completions`): the request body is the OpenAI request itself; it becomes an ordinary
/// job, and the answer is the gateway's own answer once the job is terminal. Pure functions:
/// any thread may call them.

#include <string>

#include <nlohmann/json.hpp>

#include "actors/job_service.hpp"
#include "api/detail/stream.hpp"
#include "config/result.hpp"
#include "storage/records.hpp"

namespace sy::api::detail {

/// The job for an OpenAI request `body` sent to `endpoint` (admission's step for a sync call;
/// defined in api/admission.cpp). Errors: invalid_request (not an object), missing_model and
/// invalid_value (param `model`), streaming_unsupported (param `stream`).
result<actors::submission> sync_submission(std::string endpoint, nlohmann::json body,
                                           std::string tenant, std::string idempotency_key);

/// Why a synchronous call stopped waiting before its job was terminal.
enum class sync_cut { none, timeout, shutdown };

/// The answer for `job` as it is after the wait:
/// - a gateway answer recorded (completed, or failed on e.g. a 4xx) → its status and body bytes;
/// - failed without one → 502 gateway_unreachable (the job's error message);
/// - expired → 504 job_expired; cancelled → 409 job_cancelled;
/// - not terminal → 504 sync_timeout naming the job to poll, with `Location`.
/// Every answer carries `X-Switchyard-Job-Id`.
response sync_response(const storage::job_record& job, sync_cut cut, const request& req);

}  // namespace sy::api::detail
