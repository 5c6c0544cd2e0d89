#include "api/job_json.hpp"

#include <string>

namespace sy::api {
namespace {

using nlohmann::json;

json unix_seconds(int64_t ms) { return ms > 0 ? json(ms / 1000) : json(nullptr); }

json result_json(const std::optional<storage::gateway_result>& r) {
  if (!r) return nullptr;
  json body = json::parse(r->body, nullptr, /*allow_exceptions=*/false);
  if (body.is_discarded()) body = r->body;
  return {{"status_code", r->status_code}, {"body", std::move(body)}};
}

json error_json(const std::optional<storage::job_error>& e) {
  if (!e) return nullptr;
  return {{"code", e->code}, {"message", e->message}};
}

}  // namespace

json job_to_json(const storage::job_record& job) {
  json finished =
      storage::is_terminal(job.status) ? unix_seconds(job.finished_at_ms) : json(nullptr);
  return {{"id", job.id},
          {"object", "job"},
          {"status", std::string(storage::to_string(job.status))},
          {"endpoint", job.endpoint},
          {"model", job.model},
          {"created_at", unix_seconds(job.created_at_ms)},
          {"started_at", unix_seconds(job.started_at_ms)},
          {"completed_at", finished},
          {"finished_at", finished},
          {"attempts", job.attempts},
          {"max_attempts", job.max_attempts},
          {"metadata", job.metadata.is_object() ? job.metadata : json::object()},
          {"result", result_json(job.result)},
          {"error", error_json(job.error)},
          {"webhook_url", job.webhook_url.empty() ? json(nullptr) : json(job.webhook_url)},
          {"expires_at", unix_seconds(job.deadline_ms)}};
}

}  // namespace sy::api
