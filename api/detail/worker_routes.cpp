// The internal listener's routes: the worker protocol (docs/workers.md; the calls themselves in
// worker_calls.cpp, shared with the NATS service) and health.

#include "api/detail/request_handler.hpp"
#include "api/detail/responses.hpp"
#include "api/detail/routes.hpp"
#include "api/detail/worker_calls.hpp"

namespace sy::api::detail {
namespace {

namespace http = boost::beast::http;

worker_call::kind kind_of(int route) {
  switch (route) {
    case route_task_heartbeat:
      return worker_call::kind::heartbeat;
    case route_task_complete:
      return worker_call::kind::complete;
    case route_task_fail:
      return worker_call::kind::fail;
    case route_task_credentials:
      return worker_call::kind::credentials;
    default:
      return worker_call::kind::lease;
  }
}

}  // namespace

bool request_handler::watches_caller(http::verb method, std::string_view target) const {
  if (!internal_) return false;
  auto m = internal_routes().match(method, target);
  return m.outcome == route_match::kind::found && m.route == route_task_lease;
}

boost::asio::awaitable<reply> request_handler::handle_internal(
    request req, std::shared_ptr<actors::caller_presence> caller) {
  const int64_t t0 = core_.clock().monotonic_us();
  auto m = internal_routes().match(req.method(), req.target());
  reply out;
  response& res = out.res;
  if (m.outcome != route_match::kind::found) {
    res = unmatched(m, req, "Unknown route on the internal listener:");
  } else if (m.route == route_task_jwks) {
    res = co_await task_jwks(req);
  } else if (m.route == route_keys_rotate) {
    res = co_await rotate_keys(req);
  } else if (m.route == route_internal_healthz) {
    res = json_response(http::status::ok, {{"status", "ok"}}, req);
  } else if (m.route == route_internal_readyz) {
    res = readyz(req);
  } else if (m.route == route_internal_metrics) {
    res = metrics_text(req);
  } else {
    res = co_await task_call(req, m.route, std::move(caller));
  }
  out.res.set("x-request-id", new_request_id());
  count_request(m, static_cast<int>(out.res.result_int()), t0, false);
  co_return out;
}

boost::asio::awaitable<response> request_handler::task_call(
    const request& req, int route, std::shared_ptr<actors::caller_presence> caller) {
  if (!req.body().empty() && !is_json_media_type(req[http::field::content_type]))
    co_return error_for(make_error(errc::unsupported_media_type,
                                   "The request body must be sent with 'Content-Type: "
                                   "application/json'."),
                        req);
  worker_call call{kind_of(route), req.body(), std::string(req[http::field::authorization]),
                   std::string(req[capability_header]), std::move(caller)};
  auto answer = co_await run(core_, admission_, std::move(call));
  if (!answer) co_return error_for(answer.error(), req);
  co_return json_response(http::status::ok, *answer, req);
}

boost::asio::awaitable<response> request_handler::task_jwks(const request& req) {
  core::request get = core::get_jwks{};
  auto doc = co_await core::ask<std::string>(core_, std::move(get));
  if (!doc) co_return error_for(doc.error(), req);
  co_return json_response(http::status::ok, std::move(*doc), req);
}

boost::asio::awaitable<response> request_handler::rotate_keys(const request& req) {
  if (auto st = auth_.admin(req[http::field::authorization]); !st)
    co_return error_for(st.error(), req);
  core::request rotate = core::rotate_keys{};
  auto doc = co_await core::ask<std::string>(core_, std::move(rotate));
  if (!doc) co_return error_for(doc.error(), req);
  auto jwks = nlohmann::json::parse(*doc, nullptr, false);
  co_return json_response(http::status::ok, {{"rotated", true}, {"jwks", std::move(jwks)}}, req);
}

}  // namespace sy::api::detail
