#pragma once
/// THE catalogue of error codes: every constant of config/error_codes.hpp is listed here (and in
/// docs/api.md) — the HTTP answers with their status, OpenAI error `type` and default message, the
/// codes written into jobs and batches, and the codes that never reach a client. An error code
/// that is not an HTTP answer is answered as `internal_error` (500).

#include <utility>  // before any Asio/Beast header

#include <span>
#include <string_view>

#include <boost/beast/http/message.hpp>
#include <boost/beast/http/string_body.hpp>

#include "config/result.hpp"

namespace sy::api {

/// One row of the error table.
struct error_info {
  std::string_view code;             ///< stable snake_case code, e.g. "invalid_json"
  unsigned status;                   ///< HTTP status
  std::string_view type;             ///< OpenAI `type`: invalid_request_error, server_error, ...
  std::string_view default_message;  ///< used when the error carries no message
};

/// Every row, in the order docs/api.md lists them.
std::span<const error_info> all_errors();

/// A code that is not an HTTP answer but is written where a client reads it: a job's `error`
/// (GET /v1/jobs/{id}, its events and webhooks), a batch's validation `errors`, and the lines of
/// a batch's error file.
struct result_error_info {
  std::string_view code;
  std::string_view where;    ///< "job", "job event", "batch line", "batch file", "batch result"
  std::string_view meaning;  ///< one sentence, as docs/api.md lists it
};

/// Every code a job or a batch can carry, in the order docs/api.md lists them.
std::span<const result_error_info> all_result_errors();

/// Every code that never reaches a client as such (startup failures; failures inside the engine
/// that a client sees as another code, named in `meaning`), in the order docs/api.md lists them.
/// `where` is "startup", "shutdown", "engine", "batch" or "webhook receiver".
std::span<const result_error_info> all_internal_errors();

/// The row for `code`; the `internal_error` row when the code is unknown.
const error_info& lookup_error(std::string_view code);

/// The OpenAI error envelope `{"error":{"message","type","param","code"}}` for `e`
/// (param is null when empty; an unknown code is rendered as internal_error).
std::string error_body(const sy::error& e);

/// A complete response with the envelope, the table's status and `Content-Type:
/// application/json`. The caller adds route-specific headers (Allow, x-request-id).
boost::beast::http::response<boost::beast::http::string_body> error_response(const sy::error& e,
                                                                             unsigned version,
                                                                             bool keep_alive);

}  // namespace sy::api
