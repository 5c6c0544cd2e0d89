#include "api/detail/request_handler.hpp"
#include "api/detail/responses.hpp"
#include "api/detail/sync.hpp"

namespace sy::api::detail {
namespace {

namespace http = boost::beast::http;

constexpr const char* job_id_header = "X-Switchyard-Job-Id";

}  // namespace

response sync_response(const storage::job_record& job, sync_cut cut, const request& req) {
  using storage::job_status;
  response res;
  const bool answered =
      job.result && job.result->status_code >= 100 && job.result->status_code <= 999;
  if (answered && (job.status == job_status::completed || job.status == job_status::failed)) {
    res = response{static_cast<http::status>(job.result->status_code), req.version()};
    res.set(http::field::content_type, "application/json");
    res.keep_alive(req.keep_alive());
    res.body() = job.result->body;
    res.prepare_payload();
  } else if (job.status == job_status::completed || job.status == job_status::failed) {
    std::string why = job.error ? job.error->message : "no answer was recorded";
    res = error_for(
        make_error(errc::gateway_unreachable, "Job " + job.id + " failed: " + why + "."), req);
  } else if (job.status == job_status::expired) {
    res = error_for(make_error(errc::job_expired,
                               "Job " + job.id + " reached its deadline before it finished."),
                    req);
  } else if (job.status == job_status::cancelled) {
    res = error_for(make_error(errc::job_cancelled, "Job " + job.id + " was cancelled."), req);
  } else {
    std::string why = cut == sync_cut::shutdown ? "The server is shutting down before job "
                                                : "No answer in time from job ";
    res = error_for(
        make_error(errc::sync_timeout, why + job.id + "; it keeps running: poll GET /v1/jobs/" +
                                           job.id + " for its result."),
        req);
    res.set(http::field::location, "/v1/jobs/" + job.id);
  }
  res.set(job_id_header, job.id);
  return res;
}

boost::asio::awaitable<response> request_handler::sync_call(const request& req,
                                                            std::string endpoint) {
  if (auto st = json_content_type(req); !st) co_return error_for(st.error(), req);
  auto sub = admission_.sync_call(std::move(endpoint), client_of(req));
  if (!sub) co_return error_for(sub.error(), req);
  std::string tenant = (*sub)->tenant;
  core::request submit = core::submit_job{std::move(*sub)};
  auto outcome = core::take<actors::submit_outcome>(co_await core_.call(std::move(submit)));
  if (!outcome) co_return error_for(outcome.error(), req);
  storage::job_record job = std::move(outcome->job);
  if (!storage::is_terminal(job.status)) {
    std::string id = job.id;
    auto waited = co_await wait_terminal(tenant, id, std::chrono::milliseconds(sync_timeout_ms_));
    if (!waited) {
      auto res = error_for(waited.error(), req);
      res.set(job_id_header, id);
      co_return res;
    }
    job = std::move(*waited);
  }
  sync_cut cut = storage::is_terminal(job.status) ? sync_cut::none
                 : stopping_.load()               ? sync_cut::shutdown
                                                  : sync_cut::timeout;
  co_return sync_response(job, cut, req);
}

}  // namespace sy::api::detail
