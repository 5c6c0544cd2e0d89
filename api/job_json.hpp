#pragma once
/// The client-visible JSON of a job (`"object": "job"`), shared by every route that returns one.

#include <string>

#include "storage/records.hpp"

namespace sy::api {

/// {"id","object":"job","status","endpoint","model","created_at","started_at","completed_at",
/// "finished_at","attempts","max_attempts","metadata","result","error","webhook_url",
/// "expires_at"} as compact JSON text, written without a DOM (every submission answers with
/// it). Times are unix seconds or null; `completed_at` and `finished_at` are both the time the
/// job reached any terminal state; `expires_at` is the deadline (null: none). `result.body` is
/// the gateway's body parsed as JSON when it is JSON, else the string. `status` is one of
/// queued, in_progress, cancelling, completed, failed, cancelled, expired.
std::string job_json(const storage::job_record& job);

}  // namespace sy::api
