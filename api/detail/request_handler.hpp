#pragma once
/// Turns one complete HTTP request into one reply: routing, authentication, validation, and the
/// requests to the core (actors/core_messages.hpp: every call is a message value sent through
/// `core::client`, the seam the cluster forwards across). It holds no per-connection state, so
/// every connection of the server shares one handler; it never blocks an io thread except on
/// short LMDB reads (a job's read and the listing, served in place by the local core). Waiting
/// (Prefer: wait, the synchronous OpenAI endpoints, the event stream) awaits the core without
/// holding a thread.
///
/// The routes live in three files: request_handler.cpp (native jobs, health), sync_routes.cpp
/// (POST /v1/chat/completions & co.), event_routes.cpp (GET /v1/jobs/{id}/events).

#include <utility>  // before any Asio/Beast header

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>

#include <boost/asio/awaitable.hpp>
#include <nlohmann/json.hpp>

#include "actors/batch_service.hpp"
#include "actors/core_messages.hpp"
#include "api/admission.hpp"
#include "api/auth.hpp"
#include "api/detail/stream.hpp"
#include "api/detail/upload.hpp"
#include "api/router.hpp"
#include "config/settings.hpp"
#include "runtime/trace.hpp"

namespace sy::api::detail {

namespace core = actors::core;

/// While a request waits on a job, the handler wakes at least this often to notice a graceful
/// stop (the job service's waits cannot be cancelled from outside), so a stop ends waits and
/// event streams within about this long instead of after `shutdown_timeout_ms`.
inline constexpr std::chrono::milliseconds stop_check_interval{500};

class request_handler {
 public:
  /// `stopping` turns /readyz to 503 once the server drains and ends waits and event streams
  /// early; it must outlive the handler.
  /// `internal`: the handler of the internal listener: it serves the worker protocol and
  /// health only (api/detail/worker_routes.cpp); the public routes are not found there, and the
  /// worker routes are not found on the public listener.
  request_handler(const config::settings& settings, actors::core::client& core,
                  std::function<bool()> ready, const std::atomic<bool>& stopping,
                  actors::batch_service* batches = nullptr, bool internal = false);

  /// The reply to `req`, with Content-Type, x-request-id and keep-alive set. `caller` is set
  /// for a request the server watches (watches_caller): gone when the client leaves meanwhile.
  boost::asio::awaitable<reply> handle(request req,
                                       std::shared_ptr<actors::caller_presence> caller = nullptr);
  /// Whether the server should watch the client's connection while `req` waits: a worker's
  /// lease, a long poll that must not lease tasks to a worker that left.
  bool watches_caller(boost::beast::http::verb method, std::string_view target) const;

  /// A response for an error found before a request could be routed (413, 400, 408, 500).
  static response early_error(const sy::error& e, unsigned version, bool keep_alive);

  /// Whether a request is a file upload (POST /v1/files), whose body the server streams
  /// through `begin_upload`/`finish_upload` instead of reading it whole.
  bool is_upload(boost::beast::http::verb method, std::string_view target) const;
  /// Checks an upload's header (API key, multipart Content-Type) and opens its staging file.
  /// On error, the reply to send (the server then closes without reading the body).
  result<std::unique_ptr<upload>> begin_upload(const request& header);
  /// The response once the whole body went through `upload::feed` without error (an error
  /// while streaming is answered by the server itself): the stored file, or why not.
  boost::asio::awaitable<response> finish_upload(std::unique_ptr<upload> u, request header);

 private:
  /// A submitting route's first check, before admission: `Content-Type: application/json`.
  static status json_content_type(const request& req);

  boost::asio::awaitable<response> submit_job(const request& req);
  boost::asio::awaitable<response> get_job(const request& req, std::string id);
  boost::asio::awaitable<response> cancel_job(const request& req, std::string id);
  boost::asio::awaitable<response> list_jobs(const request& req);
  /// GET /v1/jobs/{id}/tasks and GET /v1/jobs/{id}/tasks/{task_id} (task-list jobs).
  boost::asio::awaitable<response> list_tasks(const request& req, std::string id);
  boost::asio::awaitable<response> get_task(const request& req, std::string id, std::string task);
  /// POST /v1/jobs/{id}/tasks and POST /v1/jobs/{id}/close (`close`: an empty last batch).
  boost::asio::awaitable<response> append_tasks(const request& req, std::string id, bool close);
  /// DELETE /v1/jobs/{id} and POST /v1/jobs/{id}/rerun.
  boost::asio::awaitable<response> delete_job(const request& req, std::string id);
  boost::asio::awaitable<response> rerun_job(const request& req, std::string id);
  response readyz(const request& req) const;
  /// GET /metrics (a metrics or admin key when API keys are configured).
  response metrics_text(const request& req) const;
  /// Counts a request in the metrics: by route and status, and as a submission where it is one.
  /// `t0_us`: when it began, by the service clock's monotonic reading.
  void count_request(const route_match& m, int status, int64_t t0_us, bool public_api) const;
  // The worker protocol (api/detail/worker_routes.cpp).
  boost::asio::awaitable<reply> handle_internal(request req,
                                                std::shared_ptr<actors::caller_presence> caller);
  /// Lease, heartbeat, complete or fail (api/detail/worker_calls.hpp).
  boost::asio::awaitable<response> task_call(const request& req, int route,
                                             std::shared_ptr<actors::caller_presence> caller);
  boost::asio::awaitable<response> task_jwks(const request& req);
  /// POST /internal/keys/rotate (an admin key when API keys are configured).
  boost::asio::awaitable<response> rotate_keys(const request& req);
  boost::asio::awaitable<response> sync_call(const request& req, std::string endpoint);
  boost::asio::awaitable<reply> job_events(const request& req, std::string id);
  /// GET /v1/jobs/{id}/export: every task's outcome as JSONL, gzip'd on request (export_route.cpp).
  boost::asio::awaitable<reply> export_tasks(const request& req, std::string id);
  boost::asio::awaitable<void> stream_export(stream_writer& out, std::string tenant, std::string id,
                                             bool gzip);
  boost::asio::awaitable<void> stream_events(stream_writer& out, std::string tenant, std::string id,
                                             uint64_t after_seq);

  /// `job_service::wait_terminal` in slices of `stop_check_interval`, ending early when the
  /// server stops. Errors: those of the service.
  boost::asio::awaitable<result<storage::job_record>> wait_terminal(
      std::string tenant, std::string id, std::chrono::milliseconds timeout);

  // Files and Batch API (api/detail/file_routes.cpp).
  boost::asio::awaitable<response> list_files(const request& req);
  boost::asio::awaitable<response> get_file(const request& req, std::string id);
  boost::asio::awaitable<reply> file_content(const request& req, std::string id);
  boost::asio::awaitable<response> delete_file(const request& req, std::string id);
  boost::asio::awaitable<response> create_batch(const request& req);
  boost::asio::awaitable<response> get_batch(const request& req, std::string id);
  boost::asio::awaitable<response> list_batches(const request& req);
  boost::asio::awaitable<response> cancel_batch(const request& req, std::string id);

  authenticator auth_;
  admission admission_;  ///< every body a route reads goes through it (api/admission.hpp)
  /// The Files and Batch API's node-local paths (where uploads are staged, where a file's bytes
  /// are read); its calls go through `core_`. nullptr: that API is not served here.
  actors::batch_service* batches_;
  bool internal_;               ///< this handler serves the internal listener
  actors::core::client& core_;  ///< every call into the core (actors/core_messages.hpp)
  std::function<bool()> ready_;
  const std::atomic<bool>& stopping_;
  int64_t max_wait_ms_;
  int64_t sync_timeout_ms_;
  int64_t events_keepalive_ms_;
  int64_t inline_result_bytes_;
};

}  // namespace sy::api::detail
