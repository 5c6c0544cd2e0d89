#include "api/batch_json.hpp"

namespace sy::api {
namespace {

using nlohmann::json;

json time_or_null(int64_t s) { return s > 0 ? json(s) : json(nullptr); }
json text_or_null(const std::string& s) { return s.empty() ? json(nullptr) : json(s); }

}  // namespace

json file_to_json(const storage::file_record& f) {
  return {{"id", f.id},
          {"object", "file"},
          {"bytes", f.bytes},
          {"created_at", f.created_at},
          {"expires_at", time_or_null(f.expires_at)},
          {"filename", f.filename},
          {"purpose", f.purpose},
          {"status", "processed"},
          {"status_details", nullptr}};
}

json batch_to_json(const storage::batch_record& b) {
  json errors = nullptr;
  if (!b.errors.empty()) {
    json data = json::array();
    for (const auto& e : b.errors)
      data.push_back({{"code", e.code},
                      {"message", e.message},
                      {"param", text_or_null(e.param)},
                      {"line", e.line > 0 ? json(e.line) : json(nullptr)}});
    errors = {{"object", "list"}, {"data", std::move(data)}};
  }
  const auto& u = b.usage;
  json usage = {{"input_tokens", u.input},
                {"input_tokens_details", {{"cached_tokens", u.cached}}},
                {"output_tokens", u.output},
                {"output_tokens_details", {{"reasoning_tokens", u.reasoning}}},
                {"total_tokens", u.total}};
  return {
      {"id", b.id},
      {"object", "batch"},
      {"endpoint", b.endpoint},
      {"errors", std::move(errors)},
      {"input_file_id", b.input_file_id},
      {"completion_window", b.completion_window},
      {"status", storage::to_string(b.status)},
      {"output_file_id", text_or_null(b.output_file_id)},
      {"error_file_id", text_or_null(b.error_file_id)},
      {"created_at", b.created_at},
      {"in_progress_at", time_or_null(b.in_progress_at)},
      {"expires_at", time_or_null(b.expires_at)},
      {"finalizing_at", time_or_null(b.finalizing_at)},
      {"completed_at", time_or_null(b.completed_at)},
      {"failed_at", time_or_null(b.failed_at)},
      {"expired_at", time_or_null(b.expired_at)},
      {"cancelling_at", time_or_null(b.cancelling_at)},
      {"cancelled_at", time_or_null(b.cancelled_at)},
      {"request_counts", {{"total", b.total}, {"completed", b.completed}, {"failed", b.failed}}},
      {"usage", std::move(usage)},
      {"metadata", b.metadata.is_object() ? b.metadata : json(nullptr)},
      {"max_inflight", b.max_inflight > 0 ? json(b.max_inflight) : json(nullptr)},
      {"webhook_url", text_or_null(b.webhook_url)},
      {"max_attempts", b.max_attempts}};
}

}  // namespace sy::api
