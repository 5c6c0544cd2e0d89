#include "api/detail/request_handler.hpp"
#include "api/detail/routes.hpp"

#include <algorithm>
#include <vector>

#include <boost/asio/use_awaitable.hpp>

#include "actors/submission.hpp"
#include "api/detail/prefer.hpp"
#include "api/detail/query.hpp"
#include "api/detail/responses.hpp"
#include "api/detail/ui.hpp"
#include "api/errors.hpp"
#include "api/job_json.hpp"
#include "runtime/json_text.hpp"
#include "runtime/metrics.hpp"

namespace sy::api::detail {
namespace {

namespace http = boost::beast::http;
using nlohmann::json;
using std::chrono::milliseconds;

/// Without `Prefer: wait`: 202 while the job runs (and always for a job this call created),
/// 200 when an idempotent re-submission finds it terminal. With it: 200 exactly when terminal.
/// A task list this call created is 201: its tasks are committed and queryable already.
response job_response(const storage::job_record& job, bool accepted, const request& req,
                      bool created = false) {
  const bool latched = job.status != storage::job_status::ingesting;
  const auto status = created && job.task_list && latched ? http::status::created
                      : accepted                          ? http::status::accepted
                                                          : http::status::ok;
  auto res = json_response(status, job_json(job), req);
  res.set(http::field::location, "/v1/jobs/" + job.id);
  if (accepted) res.set(http::field::retry_after, "1");
  return res;
}

/// The wait a `Prefer: wait=N` asks for, capped by `max_wait_ms`.
milliseconds applied_wait(int64_t requested_s, int64_t max_wait_ms) {
  if (requested_s > max_wait_ms / 1000) return milliseconds(max_wait_ms);
  return milliseconds(requested_s * 1000);
}

std::vector<std::string_view> header_values(const request& req, std::string_view name) {
  std::vector<std::string_view> out;
  auto [first, last] = req.equal_range(name);
  for (auto it = first; it != last; ++it) out.push_back(it->value());
  return out;
}

}  // namespace

request_handler::request_handler(const config::settings& settings, actors::core::client& core,
                                 std::function<bool()> ready, const std::atomic<bool>& stopping,
                                 actors::batch_service* batches, bool internal)
    : auth_(settings.api_keys),
      admission_(settings),
      batches_(batches),
      internal_(internal),
      core_(core),
      ready_(std::move(ready)),
      stopping_(stopping),
      max_wait_ms_(settings.max_wait_ms),
      sync_timeout_ms_(settings.sync_timeout_ms),
      events_keepalive_ms_(settings.events_keepalive_ms),
      inline_result_bytes_(settings.webhook_inline_result_bytes) {}

bool request_handler::is_upload(http::verb method, std::string_view target) const {
  if (internal_) return false;
  auto m = routes().match(method, target);
  return m.outcome == route_match::kind::found && m.route == route_upload_file;
}

response request_handler::early_error(const sy::error& e, unsigned version, bool keep_alive) {
  auto res = error_response(e, version, keep_alive);
  res.set("x-request-id", new_request_id());
  return res;
}

/// The metrics of one request: by route pattern and status; the submitting routes count as
/// submissions too. (A streamed reply is counted when its stream begins.)
void request_handler::count_request(const route_match& m, int status, int64_t t0_us,
                                    bool public_api) const {
  const bool found = m.outcome == route_match::kind::found;
  metrics::http_request(found ? m.pattern : std::string_view("unmatched"), status,
                        static_cast<double>(core_.clock().monotonic_us() - t0_us) / 1e6);
  if (!found || !public_api) return;
  if (m.route == route_submit_job ||
      (m.route >= route_inference && m.route <= route_inference_last))
    metrics::submission("http", status);
  else if (m.route == route_create_batch)
    metrics::submission("batch", status);
}

response request_handler::metrics_text(const request& req) const {
  if (auto st = auth_.metrics(req[http::field::authorization]); !st)
    return error_for(st.error(), req);
  response res{http::status::ok, req.version()};
  res.set(http::field::content_type, metrics::content_type);
  res.body() = metrics::scrape();
  res.keep_alive(req.keep_alive());
  res.prepare_payload();
  return res;
}

boost::asio::awaitable<reply> request_handler::handle(
    request req, std::shared_ptr<actors::caller_presence> caller) {
  if (internal_) co_return co_await handle_internal(std::move(req), std::move(caller));
  const int64_t t0 = core_.clock().monotonic_us();
  auto m = routes().match(req.method(), req.target());
  reply out;
  response& res = out.res;
  if (m.outcome != route_match::kind::found) {
    res = unmatched(m, req, "Unknown route:");
  } else if (m.route == route_submit_job) {
    res = co_await submit_job(req);
  } else if (m.route == route_list_jobs) {
    res = co_await list_jobs(req);
  } else if (m.route == route_get_job) {
    res = co_await get_job(req, m.params.at(0));
  } else if (m.route == route_cancel_job) {
    res = co_await cancel_job(req, m.params.at(0));
  } else if (m.route == route_append_tasks) {
    res = co_await append_tasks(req, m.params.at(0), false);
  } else if (m.route == route_close_job) {
    res = co_await append_tasks(req, m.params.at(0), true);
  } else if (m.route == route_rerun_job) {
    res = co_await rerun_job(req, m.params.at(0));
  } else if (m.route == route_delete_job) {
    res = co_await delete_job(req, m.params.at(0));
  } else if (m.route == route_export_tasks) {
    out = co_await export_tasks(req, m.params.at(0));
  } else if (m.route == route_list_tasks) {
    res = co_await list_tasks(req, m.params.at(0));
  } else if (m.route == route_get_task) {
    res = co_await get_task(req, m.params.at(0), m.params.at(1));
  } else if (m.route == route_job_events) {
    out = co_await job_events(req, m.params.at(0));
  } else if (m.route >= route_inference && m.route <= route_inference_last) {
    res = co_await sync_call(req, std::string(endpoints::all[m.route - route_inference].path));
  } else if (m.route == route_ui_redirect) {
    res = ui_redirect(req);
  } else if (m.route == route_ui_index || m.route == route_ui_asset) {
    res = ui_file(m.route == route_ui_index ? "" : m.params.at(0), req);
  } else if (m.route >= route_upload_file && !batches_) {
    res =
        error_for(make_error(errc::not_found, "The Files and Batch API is not enabled here."), req);
  } else if (m.route == route_upload_file) {
    // Reached only when a server reads uploads whole (the streaming path is the normal one).
    res = error_for(make_error(errc::invalid_file, "Uploads must be streamed."), req);
  } else if (m.route == route_list_files) {
    res = co_await list_files(req);
  } else if (m.route == route_get_file) {
    res = co_await get_file(req, m.params.at(0));
  } else if (m.route == route_file_content) {
    out = co_await file_content(req, m.params.at(0));
  } else if (m.route == route_delete_file) {
    res = co_await delete_file(req, m.params.at(0));
  } else if (m.route == route_create_batch) {
    res = co_await create_batch(req);
  } else if (m.route == route_list_batches) {
    res = co_await list_batches(req);
  } else if (m.route == route_get_batch) {
    res = co_await get_batch(req, m.params.at(0));
  } else if (m.route == route_cancel_batch) {
    res = co_await cancel_batch(req, m.params.at(0));
  } else if (m.route == route_healthz) {
    res = json_response(http::status::ok, {{"status", "ok"}}, req);
  } else if (m.route == route_metrics) {
    res = metrics_text(req);
  } else {
    res = readyz(req);
  }
  out.res.set("x-request-id", new_request_id());
  count_request(m, static_cast<int>(out.res.result_int()), t0, true);
  co_return out;
}

status request_handler::json_content_type(const request& req) {
  if (!is_json_media_type(req[http::field::content_type]))
    return make_error(errc::unsupported_media_type,
                      "The request body must be sent with 'Content-Type: application/json'.");
  return ok;
}

boost::asio::awaitable<response> request_handler::submit_job(const request& req) {
  if (auto st = json_content_type(req); !st) co_return error_for(st.error(), req);
  auto sub = admission_.job(client_of(req));
  if (!sub) co_return error_for(sub.error(), req);
  std::string tenant = (*sub)->tenant;
  core::request submit = core::submit_job{std::move(*sub)};
  auto outcome = core::take<actors::submit_outcome>(co_await core_.call(std::move(submit)));
  if (!outcome) co_return error_for(outcome.error(), req);
  storage::job_record job = std::move(outcome->job);
  auto wait_s = prefer_wait_seconds(header_values(req, "Prefer"));
  if (!wait_s)
    co_return job_response(job, outcome->created || !storage::is_terminal(job.status), req,
                           outcome->created);
  // The job is durable whatever happens now: a failed wait (or a client that went away) only
  // means this answer shows the job as it was at submission.
  milliseconds wait = applied_wait(*wait_s, max_wait_ms_);
  if (!storage::is_terminal(job.status) && wait.count() > 0) {
    std::string id = job.id;
    auto waited = co_await wait_terminal(tenant, id, wait);
    if (waited) job = std::move(*waited);
  }
  auto res = job_response(job, !storage::is_terminal(job.status), req);
  res.set("Preference-Applied", "wait=" + std::to_string((wait.count() + 999) / 1000));
  co_return res;
}

boost::asio::awaitable<response> request_handler::get_job(const request& req, std::string id) {
  auto tenant = auth_.tenant_for(req[http::field::authorization]);
  if (!tenant) co_return error_for(tenant.error(), req);
  core::request get = core::get_job{std::move(*tenant), std::move(id)};
  auto job = co_await core::ask<storage::job_record>(core_, std::move(get));
  if (!job) co_return error_for(job.error(), req);
  co_return json_response(http::status::ok, job_json(*job), req);
}

boost::asio::awaitable<response> request_handler::cancel_job(const request& req, std::string id) {
  auto tenant = auth_.tenant_for(req[http::field::authorization]);
  if (!tenant) co_return error_for(tenant.error(), req);
  core::request cancel = core::cancel_job{std::move(*tenant), std::move(id)};
  auto job = co_await core::ask<storage::job_record>(core_, std::move(cancel));
  if (!job) co_return error_for(job.error(), req);
  co_return json_response(http::status::ok, job_json(*job), req);
}

boost::asio::awaitable<response> request_handler::list_jobs(const request& req) {
  auto tenant = auth_.tenant_for(req[http::field::authorization]);
  if (!tenant) co_return error_for(tenant.error(), req);
  auto params = parse_list_params(req.target());
  if (!params) co_return error_for(params.error(), req);
  core::request list = core::list_jobs{std::move(*tenant), params->status, params->limit,
                                       std::move(params->after), params->kind};
  auto page = co_await core::ask<actors::job_page>(core_, std::move(list));
  if (!page) co_return error_for(page.error(), req);
  runtime::json_text out;
  out.begin_object().field("object", "list").key("data").begin_array();
  for (const auto& job : page->jobs) out.raw(job_json(job));
  out.end_array();
  if (page->jobs.empty()) {
    out.key("first_id").null().key("last_id").null();
  } else {
    out.field("first_id", page->jobs.front().id).field("last_id", page->jobs.back().id);
  }
  out.key("has_more").boolean(page->has_more).end_object();
  co_return json_response(http::status::ok, out.take(), req);
}

boost::asio::awaitable<response> request_handler::list_tasks(const request& req, std::string id) {
  auto tenant = auth_.tenant_for(req[http::field::authorization]);
  if (!tenant) co_return error_for(tenant.error(), req);
  auto params = parse_list_params(req.target());
  if (!params) co_return error_for(params.error(), req);
  core::request list = core::list_tasks{std::move(*tenant), std::move(id), params->status,
                                        params->limit, std::move(params->after)};
  auto page = co_await core::ask<actors::task_page>(core_, std::move(list));
  if (!page) co_return error_for(page.error(), req);
  runtime::json_text out;
  out.begin_object().field("object", "list").key("data").begin_array();
  for (const auto& task : page->tasks) out.raw(task_json(page->job, task));
  out.end_array();
  if (page->tasks.empty()) {
    out.key("first_id").null().key("last_id").null();
  } else {
    out.field("first_id", page->tasks.front().id).field("last_id", page->tasks.back().id);
  }
  out.key("has_more").boolean(page->has_more).end_object();
  co_return json_response(http::status::ok, out.take(), req);
}

boost::asio::awaitable<response> request_handler::append_tasks(const request& req, std::string id,
                                                               bool close) {
  if (!close) {
    if (auto st = json_content_type(req); !st) co_return error_for(st.error(), req);
  }
  auto append = admission_.append(client_of(req), close);
  if (!append) co_return error_for(append.error(), req);
  core::request add = core::append_tasks{std::move(id), std::move(*append)};
  auto job = co_await core::ask<storage::job_record>(core_, std::move(add));
  if (!job) co_return error_for(job.error(), req);
  co_return json_response(http::status::ok, job_json(*job), req);
}

boost::asio::awaitable<response> request_handler::delete_job(const request& req, std::string id) {
  auto tenant = auth_.tenant_for(req[http::field::authorization]);
  if (!tenant) co_return error_for(tenant.error(), req);
  core::request remove = core::delete_job{std::move(*tenant), std::move(id)};
  auto job = co_await core::ask<storage::job_record>(core_, std::move(remove));
  if (!job) co_return error_for(job.error(), req);
  runtime::json_text out;
  out.begin_object()
      .field("id", job->id)
      .field("object", "job.deleted")
      .key("deleted")
      .boolean(true)
      .end_object();
  co_return json_response(http::status::ok, out.take(), req);
}

boost::asio::awaitable<response> request_handler::rerun_job(const request& req, std::string id) {
  auto tenant = auth_.tenant_for(req[http::field::authorization]);
  if (!tenant) co_return error_for(tenant.error(), req);
  core::request rerun = core::rerun_job{std::move(*tenant), std::move(id)};
  auto job = co_await core::ask<storage::job_record>(core_, std::move(rerun));
  if (!job) co_return error_for(job.error(), req);
  co_return json_response(http::status::ok, job_json(*job), req);
}

boost::asio::awaitable<response> request_handler::get_task(const request& req, std::string id,
                                                           std::string task) {
  auto tenant = auth_.tenant_for(req[http::field::authorization]);
  if (!tenant) co_return error_for(tenant.error(), req);
  core::request get = core::get_task{std::move(*tenant), std::move(id), std::move(task)};
  auto page = co_await core::ask<actors::task_page>(core_, std::move(get));
  if (!page) co_return error_for(page.error(), req);
  co_return json_response(http::status::ok, task_json(page->job, page->tasks.front()), req);
}

response request_handler::readyz(const request& req) const {
  if (stopping_.load())
    return error_for(make_error(errc::shutting_down, "The server is shutting down."), req);
  if (ready_ && !ready_())
    return error_for(make_error(errc::not_ready, "The server is not ready yet."), req);
  return json_response(http::status::ok, {{"status", "ready"}}, req);
}

boost::asio::awaitable<result<storage::job_record>> request_handler::wait_terminal(
    std::string tenant, std::string id, milliseconds timeout) {
  const int64_t until = core_.clock().now_ms() + timeout.count();
  for (;;) {
    const milliseconds left{until - core_.clock().now_ms()};
    milliseconds slice = std::clamp(left, milliseconds(0), stop_check_interval);
    core::request wait = core::wait_job{tenant, id, slice.count()};
    auto job = co_await core::ask<storage::job_record>(core_, std::move(wait));
    if (!job || storage::is_terminal(job->status) || left <= slice || stopping_.load())
      co_return job;
  }
}

}  // namespace sy::api::detail
