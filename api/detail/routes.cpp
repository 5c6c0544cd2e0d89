#include "api/detail/routes.hpp"

#include <utility>

namespace sy::api::detail {
namespace {

namespace http = boost::beast::http;

struct route_def {
  http::verb method;
  const char* pattern;
  route_id id;
};

constexpr route_def table[] = {
    {http::verb::post, "/v1/jobs", route_submit_job},
    {http::verb::get, "/v1/jobs", route_list_jobs},
    {http::verb::get, "/v1/jobs/{id}", route_get_job},
    {http::verb::post, "/v1/jobs/{id}/cancel", route_cancel_job},
    {http::verb::get, "/v1/jobs/{id}/events", route_job_events},
    {http::verb::get, "/v1/jobs/{id}/tasks", route_list_tasks},
    {http::verb::get, "/v1/jobs/{id}/export", route_export_tasks},
    {http::verb::post, "/v1/jobs/{id}/tasks", route_append_tasks},
    {http::verb::post, "/v1/jobs/{id}/close", route_close_job},
    {http::verb::post, "/v1/jobs/{id}/rerun", route_rerun_job},
    {http::verb::delete_, "/v1/jobs/{id}", route_delete_job},
    {http::verb::get, "/v1/jobs/{id}/tasks/{task_id}", route_get_task},
    {http::verb::get, "/healthz", route_healthz},
    {http::verb::get, "/readyz", route_readyz},
    {http::verb::get, "/metrics", route_metrics},
    {http::verb::get, "/ui", route_ui_redirect},
    {http::verb::get, "/ui/", route_ui_index},
    {http::verb::get, "/ui/{name}", route_ui_asset},
    {http::verb::post, "/v1/files", route_upload_file},
    {http::verb::get, "/v1/files", route_list_files},
    {http::verb::get, "/v1/files/{id}", route_get_file},
    {http::verb::delete_, "/v1/files/{id}", route_delete_file},
    {http::verb::get, "/v1/files/{id}/content", route_file_content},
    {http::verb::post, "/v1/batches", route_create_batch},
    {http::verb::get, "/v1/batches", route_list_batches},
    {http::verb::get, "/v1/batches/{id}", route_get_batch},
    {http::verb::post, "/v1/batches/{id}/cancel", route_cancel_batch},
};

constexpr struct {
  http::verb method;
  const char* pattern;
  internal_route_id id;
} internal_table[] = {
    {http::verb::post, "/v1/task/lease", route_task_lease},
    {http::verb::post, "/v1/task/heartbeat", route_task_heartbeat},
    {http::verb::post, "/v1/task/complete", route_task_complete},
    {http::verb::post, "/v1/task/fail", route_task_fail},
    {http::verb::post, "/v1/task/credentials", route_task_credentials},
    {http::verb::post, "/internal/keys/rotate", route_keys_rotate},
    {http::verb::get, "/internal/jwks/task", route_task_jwks},
    {http::verb::get, "/healthz", route_internal_healthz},
    {http::verb::get, "/readyz", route_internal_readyz},
    {http::verb::get, "/metrics", route_internal_metrics},
};

}  // namespace

const router& internal_routes() {
  static const router built = [] {
    router r;
    for (const auto& def : internal_table) r.add(def.method, def.pattern, def.id);
    return r;
  }();
  return built;
}

const router& routes() {
  static const router built = [] {
    router r;
    for (const auto& def : table) r.add(def.method, def.pattern, def.id);
    for (size_t i = 0; i < endpoints::all.size(); ++i)
      r.add(http::verb::post, endpoints::all[i].path, route_inference + static_cast<int>(i));
    return r;
  }();
  return built;
}

}  // namespace sy::api::detail
