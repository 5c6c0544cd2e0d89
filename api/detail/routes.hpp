#pragma once
/// The routes the HTTP API serves, as one table: the request handler dispatches on these ids,
/// and the fuzz harness of the request path matches against the same router. Pure: no engine.

#include "api/router.hpp"

namespace sy::api::detail {

enum route_id : int {
  route_submit_job,
  route_list_jobs,
  route_get_job,
  route_cancel_job,
  route_job_events,
  route_chat_completions,
  route_embeddings,
  route_completions,
  route_healthz,
  route_readyz,
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

}  // namespace sy::api::detail
