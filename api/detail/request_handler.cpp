#include "api/detail/request_handler.hpp"

#include <random>

#include <boost/asio/use_awaitable.hpp>
#include <boost/beast/core/string.hpp>
#include <nlohmann/json.hpp>

#include "actors/submission.hpp"
#include "api/detail/json_parse.hpp"
#include "api/errors.hpp"
#include "api/job_json.hpp"

namespace sy::api::detail {
namespace {

namespace http = boost::beast::http;
using nlohmann::json;

enum route_id : int { route_submit_job, route_get_job, route_healthz, route_readyz };

constexpr size_t max_idempotency_key_chars = 255;

std::string new_request_id() {
  thread_local std::mt19937_64 rng{std::random_device{}()};
  static constexpr char hex[] = "0123456789abcdef";
  std::string id = "req_";
  for (int half = 0; half < 2; ++half) {
    uint64_t bits = rng();
    for (int i = 0; i < 16; ++i, bits >>= 4) id += hex[bits & 0xf];
  }
  return id;
}

response json_response(http::status status, const json& body, const request& req) {
  response res{status, req.version()};
  res.set(http::field::content_type, "application/json");
  res.keep_alive(req.keep_alive());
  res.body() = body.dump(-1, ' ', false, json::error_handler_t::replace);
  res.prepare_payload();
  return res;
}

response error_for(const sy::error& e, const request& req) {
  return error_response(e, req.version(), req.keep_alive());
}

/// `application/json`, optionally with parameters such as `; charset=utf-8`.
bool is_json_media_type(std::string_view content_type) {
  std::string_view media = content_type.substr(0, content_type.find(';'));
  while (!media.empty() && (media.back() == ' ' || media.back() == '\t')) media.remove_suffix(1);
  while (!media.empty() && (media.front() == ' ' || media.front() == '\t')) media.remove_prefix(1);
  return boost::beast::iequals(media, "application/json");
}

/// The Idempotency-Key header: absent → empty; present → 1..255 printable ASCII characters.
result<std::string> idempotency_key(const request& req) {
  auto it = req.find("Idempotency-Key");
  if (it == req.end()) return std::string();
  std::string_view key = it->value();
  bool valid = !key.empty() && key.size() <= max_idempotency_key_chars;
  for (char c : key) valid = valid && c >= 0x20 && c <= 0x7e;
  if (!valid)
    return make_error("invalid_idempotency_key",
                      "The Idempotency-Key header must be 1 to 255 printable ASCII characters.",
                      "Idempotency-Key");
  return std::string(key);
}

response job_response(const actors::submit_outcome& outcome, const request& req) {
  bool terminal = storage::is_terminal(outcome.job.status);
  bool accepted = outcome.created || !terminal;
  auto res = json_response(accepted ? http::status::accepted : http::status::ok,
                           job_to_json(outcome.job), req);
  res.set(http::field::location, "/v1/jobs/" + outcome.job.id);
  if (accepted) res.set(http::field::retry_after, "1");
  return res;
}

}  // namespace

request_handler::request_handler(const config::settings& settings, actors::job_service& service,
                                 std::function<bool()> ready, const std::atomic<bool>& stopping)
    : auth_(settings.api_keys), service_(service), ready_(std::move(ready)), stopping_(stopping) {
  router_.add(http::verb::post, "/v1/jobs", route_submit_job);
  router_.add(http::verb::get, "/v1/jobs/{id}", route_get_job);
  router_.add(http::verb::get, "/healthz", route_healthz);
  router_.add(http::verb::get, "/readyz", route_readyz);
}

response request_handler::early_error(const sy::error& e, unsigned version, bool keep_alive) {
  auto res = error_response(e, version, keep_alive);
  res.set("x-request-id", new_request_id());
  return res;
}

boost::asio::awaitable<response> request_handler::handle(request req) {
  auto m = router_.match(req.method(), req.target());
  response res;
  if (m.outcome == route_match::kind::not_found) {
    res = error_for(make_error("not_found", "Unknown route: " + std::string(req.method_string()) +
                                                " " + std::string(req.target()) + "."),
                    req);
  } else if (m.outcome == route_match::kind::method_not_allowed) {
    res = error_for(
        make_error("method_not_allowed", "Method " + std::string(req.method_string()) +
                                             " is not allowed here; allowed: " + m.allow + "."),
        req);
    res.set(http::field::allow, m.allow);
  } else if (m.route == route_submit_job) {
    res = co_await submit_job(req);
  } else if (m.route == route_get_job) {
    res = get_job(req, m.params.at(0));
  } else if (m.route == route_healthz) {
    res = json_response(http::status::ok, {{"status", "ok"}}, req);
  } else {
    res = readyz(req);
  }
  res.set("x-request-id", new_request_id());
  co_return res;
}

boost::asio::awaitable<response> request_handler::submit_job(const request& req) {
  if (!is_json_media_type(req[http::field::content_type]))
    co_return error_for(make_error("unsupported_media_type",
                                   "The request body must be sent with 'Content-Type: "
                                   "application/json'."),
                        req);
  auto tenant = auth_.tenant_for(req[http::field::authorization]);
  if (!tenant) co_return error_for(tenant.error(), req);
  auto doc = parse_json_body(req.body());
  if (!doc) co_return error_for(doc.error(), req);
  auto key = idempotency_key(req);
  if (!key) co_return error_for(key.error(), req);
  auto sub = actors::parse_submission(*doc, std::move(*tenant), std::move(*key));
  if (!sub) co_return error_for(sub.error(), req);
  auto outcome = co_await service_.submit(std::move(*sub));
  if (!outcome) co_return error_for(outcome.error(), req);
  co_return job_response(*outcome, req);
}

response request_handler::get_job(const request& req, const std::string& id) {
  auto tenant = auth_.tenant_for(req[http::field::authorization]);
  if (!tenant) return error_for(tenant.error(), req);
  auto job = service_.get(*tenant, id);
  if (!job) return error_for(job.error(), req);
  return json_response(http::status::ok, job_to_json(*job), req);
}

response request_handler::readyz(const request& req) const {
  if (stopping_.load())
    return error_for(make_error("shutting_down", "The server is shutting down."), req);
  if (ready_ && !ready_())
    return error_for(make_error("not_ready", "The server is not ready yet."), req);
  return json_response(http::status::ok, {{"status", "ready"}}, req);
}

}  // namespace sy::api::detail
