#pragma once
/// Admission: the one door from a client's bytes to the core (../shared/DESIGN.md, "Components").
/// Every surface that takes client input — the HTTP routes, the NATS micro service
/// (`sy.api.jobs.create`, `sy.task.*`), the JetStream intake (`sy.submit.job`), the worker calls
/// on either transport, batch creation — hands the client's bytes and headers to this class as a
/// `client_request` and gets back either an admitted request (actors/admitted.hpp: the only form
/// the core takes, constructed here alone) or an error of the catalogue (api/errors.cpp), which the
/// surface renders its own way. The same bytes get the same answer on every surface.
///
/// The order, each step bounded before the next one walks the input: the API key (a hash of at
/// most the header), the size (`max_body_bytes`), the nesting (`json_max_depth`, one linear scan),
/// the strict parse (runtime/strict_json.hpp: no recursion, duplicate keys refused), the
/// Idempotency-Key (or `Nats-Msg-Id`), then the document's own rules (actors/submission.hpp).
/// Nothing is stored before a request is admitted. Immutable after construction: any thread.

#include <array>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "actors/admitted.hpp"
#include "actors/batch_service.hpp"
#include "actors/job_service.hpp"
#include "actors/worker_service.hpp"
#include "api/auth.hpp"
#include "config/result.hpp"
#include "config/settings.hpp"

namespace sy::api {

namespace detail {
class upload;
}  // namespace detail

/// A surface that takes client bytes, and the limits of docs/limits.md admission applies to it
/// (their names, space-separated). docs/limits.md, "Surfaces", has a row per surface naming
/// each of its limits; a unit test keeps the two in step.
struct surface_info {
  std::string_view name;
  std::string_view limits;
};

inline constexpr std::array<surface_info, 11> admission_surfaces() {
  constexpr std::string_view json_body =
      "max_body_bytes json_max_depth model_max_bytes idempotency_key_max_chars metadata_max_keys";
  return {{
      {"POST /v1/jobs", json_body},
      {"POST /v1/jobs/{id}/tasks", json_body},
      {"POST /v1/chat/completions", json_body},
      {"POST /v1/batches", "max_body_bytes json_max_depth metadata_max_keys issued_id_max_bytes"},
      {"POST /v1/files", "files_max_bytes upload_field_max_bytes multipart_part_header_max_bytes"},
      {"sy.api.jobs.create", json_body},
      {"sy.submit.job", json_body},
      {"sy.task.*", "max_body_bytes json_max_depth"},
      {"/v1/task/*", "max_body_bytes json_max_depth http_header_max_bytes"},
      {"batch input lines", "json_max_depth model_max_bytes custom_id_max_bytes"},
      {"task-file lines", "json_max_depth model_max_bytes custom_id_max_bytes"},
  }};
}

/// What a client sent, as its surface received it: the body (an HTTP body or a NATS payload,
/// headers not counted) and the header values that admission reads (absent: nullopt).
struct client_request {
  std::string_view body;
  std::optional<std::string_view> authorization;
  std::optional<std::string_view> idempotency_key;
  /// How the surface names the idempotency key in an error: `Idempotency-Key` (HTTP, the micro
  /// service) or `Nats-Msg-Id` (the intake).
  std::string_view idempotency_param = "Idempotency-Key";
  std::optional<std::string_view> traceparent;
  std::optional<std::string_view> tracestate;
};

/// The client's trace context (`traceparent`, `tracestate`), when it sent one that parses.
trace::context trace_of(const client_request& r);

/// A worker call, read and checked (actors/worker_service.hpp).
using worker_request = actors::worker_request;

class admission {
 public:
  explicit admission(const config::settings& settings);

  /// The tenant of an `Authorization` value (absent: none sent). Errors: missing_api_key,
  /// invalid_api_key.
  result<std::string> tenant(std::optional<std::string_view> authorization) const;
  /// The `worker` role (the worker protocol's lease and long poll). Errors as `tenant`'s.
  status worker(std::optional<std::string_view> authorization) const;

  /// A JSON body or payload, judged the same on every surface: over `max_body_bytes` is
  /// `body_too_large` (413; exactly the limit is judged on its content), then the rules of
  /// runtime::parse_strict_json (json_too_deep, invalid_json, invalid_request for a key twice).
  result<nlohmann::json> json(std::string_view body) const;

  /// The idempotency key of a request: empty when none was sent; else 1..255 printable ASCII
  /// characters, or `invalid_idempotency_key` naming the header.
  result<std::string> idempotency_key(const client_request& r) const;

  /// A job: `POST /v1/jobs`, `sy.api.jobs.create`, `sy.submit.job` (actors::parse_submission's
  /// rules and codes).
  result<actors::admitted<actors::submission>> job(const client_request& r) const;
  /// A synchronous OpenAI call (`POST /v1/chat/completions` & co.): `r.body` is the request
  /// body itself, sent to `endpoint` through the queue.
  result<actors::admitted<actors::submission>> sync_call(std::string endpoint,
                                                         const client_request& r) const;
  /// A worker call (`/v1/task/*` on the internal listener, `sy.task.*` over NATS): a lease's
  /// worker key (`authorization`), the others' capability `token` (present, at most 8 KiB:
  /// longer is refused unread), and the body (`json`'s rules; empty reads as `{}`), whose
  /// fields are checked (invalid_request, unknown_parameter, missing_required_parameter,
  /// invalid_value for a control character in `runtime`).
  result<actors::admitted<worker_request>> worker_call(worker_request::kind what,
                                                       std::string_view body,
                                                       std::string_view authorization,
                                                       std::string_view token) const;
  /// An append to an open task list (`POST /v1/jobs/{id}/tasks`); `close`: the empty last
  /// batch of `POST /v1/jobs/{id}/close`, which has no body.
  result<actors::admitted<actors::task_append>> append(const client_request& r, bool close) const;

  /// A batch (`POST /v1/batches`): its fields typed and checked (docs/api.md); an
  /// `input_file_id` over 64 bytes is `string_above_max_length` without a lookup.
  result<actors::admitted<actors::batch_request>> batch(const client_request& r) const;
  /// An upload (`POST /v1/files`) as it begins: the API key, the multipart `Content-Type`
  /// (invalid_file), then a staging file in `dir` that takes at most `files_max_bytes`
  /// (`max_task_file_bytes` for purpose `tasks`). The surface feeds it the multipart body
  /// (detail::upload::feed), then hands it to `uploaded`.
  result<std::unique_ptr<detail::upload>> begin_upload(
      std::optional<std::string_view> authorization, std::string_view content_type,
      const std::string& dir) const;
  /// The upload's body ended: its form checked (detail::upload::finish: invalid_file for the
  /// structure and the filename, invalid_value naming a field), the staged file described.
  result<actors::admitted<actors::staged_file>> uploaded(detail::upload& u) const;

 private:
  /// A job's steps (API key, JSON, idempotency key), then `parse` (document, tenant, key).
  template <class Parse>
  result<actors::admitted<actors::submission>> submission(const client_request& r,
                                                          Parse parse) const;

  authenticator auth_;
  int64_t max_body_bytes_;
  int64_t files_max_bytes_;
  int64_t max_task_file_bytes_;
  std::string completion_windows_;
};

}  // namespace sy::api
