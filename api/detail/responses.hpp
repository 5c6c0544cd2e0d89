#pragma once
/// Small helpers shared by the request handler's routes: JSON responses, error responses,
/// request-header checks. Pure functions: any thread may call them.

#include <utility>  // before any Asio/Beast header

#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "api/admission.hpp"
#include "api/detail/stream.hpp"
#include "api/router.hpp"
#include "config/result.hpp"

namespace sy::api::detail {

/// "req_" + 32 random hex digits.
std::string new_request_id();

/// `status` with `body` as compact JSON, `Content-Type: application/json`, keep-alive as `req`.
response json_response(boost::beast::http::status status, const nlohmann::json& body,
                       const request& req);
/// The same with `body` already JSON text.
response json_response(boost::beast::http::status status, std::string body, const request& req);

/// The error table's response for `e`, keep-alive as `req`.
response error_for(const sy::error& e, const request& req);
/// The answer to a request no route takes: `404 not_found` ("<unknown> METHOD TARGET.") or
/// `405 method_not_allowed` with `Allow`.
response unmatched(const route_match& m, const request& req, std::string_view unknown);

/// `application/json`, optionally with parameters such as `; charset=utf-8`.
bool is_json_media_type(std::string_view content_type);

/// What a request hands to admission (api/admission.hpp): its body and the headers admission
/// reads. Views into `req`, which must outlive the result.
client_request client_of(const request& req);

}  // namespace sy::api::detail
