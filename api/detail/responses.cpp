#include "api/detail/responses.hpp"
#include "config/limits.hpp"

#include <random>

#include <boost/beast/core/string.hpp>

#include "api/errors.hpp"

namespace sy::api::detail {
namespace {

namespace http = boost::beast::http;

}  // namespace

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

response json_response(http::status status, const nlohmann::json& body, const request& req) {
  return json_response(status, body.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace),
                       req);
}

response json_response(http::status status, std::string body, const request& req) {
  response res{status, req.version()};
  res.set(http::field::content_type, "application/json");
  res.keep_alive(req.keep_alive());
  res.body() = std::move(body);
  res.prepare_payload();
  return res;
}

response error_for(const sy::error& e, const request& req) {
  return error_response(e, req.version(), req.keep_alive());
}

response unmatched(const route_match& m, const request& req, std::string_view unknown) {
  if (m.outcome == route_match::kind::not_found)
    return error_for(
        make_error(errc::not_found, std::string(unknown) + " " + std::string(req.method_string()) +
                                        " " + std::string(req.target()) + "."),
        req);
  auto res = error_for(
      make_error(errc::method_not_allowed, "Method " + std::string(req.method_string()) +
                                               " is not allowed here; allowed: " + m.allow + "."),
      req);
  res.set(http::field::allow, m.allow);
  return res;
}

bool is_json_media_type(std::string_view content_type) {
  std::string_view media = content_type.substr(0, content_type.find(';'));
  while (!media.empty() && (media.back() == ' ' || media.back() == '\t')) media.remove_suffix(1);
  while (!media.empty() && (media.front() == ' ' || media.front() == '\t')) media.remove_prefix(1);
  return boost::beast::iequals(media, "application/json");
}

client_request client_of(const request& req) {
  auto header = [&](auto name) -> std::optional<std::string_view> {
    auto it = req.find(name);
    if (it == req.end()) return std::nullopt;
    return std::string_view(it->value().data(), it->value().size());
  };
  client_request r;
  r.body = req.body();
  r.authorization = header(http::field::authorization);
  r.idempotency_key = header("Idempotency-Key");
  r.traceparent = header("traceparent");
  r.tracestate = header("tracestate");
  return r;
}

}  // namespace sy::api::detail
