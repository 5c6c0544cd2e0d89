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
/// queued, ingesting, in_progress, cancelling, completed, failed, cancelled, expired.
/// A task-list job adds "task_counts" ({total, queued, in_progress, completed, failed,
/// cancelled}; total null until latched), "max_inflight" and "errors" (null, or the bad lines of
/// a staged list that failed its check, as a batch's: {"object": "list", "data": [{code,
/// message, param, line}]}); its "model" is null when its tasks name several models.
std::string job_json(const storage::job_record& job);

/// One task of a task-list job (`"object": "job.task"`): {"id","object","job_id","index",
/// "custom_id","status","model","attempts","max_attempts","started_at","finished_at","result",
/// "error"}. `status` is storage::shown_status: a task its list never ran ends with the list.
std::string task_json(const storage::job_record& job, const storage::task_record& task);

}  // namespace sy::api
