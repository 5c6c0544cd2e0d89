#pragma once
/// The routes the HTTP API serves, as one table: the request handler dispatches on these ids,
/// and the fuzz harness of the request path matches against the same router. Pure: no engine.

#include "api/router.hpp"
#include "config/endpoints.hpp"

namespace sy::api::detail {

enum route_id : int {
  route_submit_job,
  route_list_jobs,
  route_get_job,
  route_cancel_job,
  route_job_events,
  route_list_tasks,
  route_export_tasks,
  route_append_tasks,
  route_close_job,
  route_rerun_job,
  route_delete_job,
  route_get_task,
  /// One id per inference endpoint, in the order of config/endpoints.hpp's list: the route
  /// `route_inference + i` is the synchronous call of `endpoints::all[i]`.
  route_inference,
  route_inference_last = route_inference + static_cast<int>(endpoints::all.size()) - 1,
  route_healthz,
  route_readyz,
  route_metrics,
  route_ui_redirect,  ///< GET /ui → /ui/
  route_ui_index,     ///< the dashboard (api/detail/ui.hpp)
  route_ui_asset,
  route_upload_file,
  route_list_files,
  route_get_file,
  route_file_content,
  route_delete_file,
  route_create_batch,
  route_list_batches,
  route_get_batch,
  route_cancel_batch,
  route_count,
};

/// The router holding every route (built once; safe to use from any thread).
const router& routes();

/// The routes of the internal listener: the worker protocol (docs/workers.md) and health.
enum internal_route_id : int {
  route_task_lease,
  route_task_heartbeat,
  route_task_complete,
  route_task_fail,
  route_task_credentials,
  route_keys_rotate,
  route_task_jwks,
  route_internal_healthz,
  route_internal_readyz,
  route_internal_metrics,
};

/// The router of the internal listener (built once; safe to use from any thread).
const router& internal_routes();

}  // namespace sy::api::detail
