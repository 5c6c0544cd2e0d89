#include "api/errors.hpp"

#include <array>

#include <nlohmann/json.hpp>

#include "config/client_text.hpp"

namespace sy::api {
namespace {

/// The longest message an error answer carries (its envelope adds a few hundred bytes at most).
constexpr size_t error_message_max_bytes = size_t{8} * 1024;

constexpr std::string_view invalid_request = "invalid_request_error";
constexpr std::string_view auth = "authentication_error";
constexpr std::string_view server = "server_error";

// Keep in step with docs/api.md ("Errors").
constexpr std::array<error_info, 59> table = {{
    {"invalid_json", 400, invalid_request, "The request body is not valid JSON."},
    {"json_too_deep", 400, invalid_request,
     "The JSON nests objects and arrays deeper than the server's limit."},
    {"string_above_max_length", 400, invalid_request, "A string is longer than its limit."},
    {"too_many_models", 400, invalid_request,
     "The engine already queues jobs for as many distinct models as it allows (max_models)."},
    {"value_not_storable", 400, invalid_request,
     "The request holds a value the job store cannot store."},
    {"invalid_request", 400, invalid_request, "The request body must be a JSON object."},
    // The message a route sends names the endpoints (config/endpoints.hpp's list).
    {"invalid_endpoint", 400, invalid_request,
     "'endpoint' is not an inference endpoint served here."},
    {"invalid_body", 400, invalid_request, "'body' is required and must be a JSON object."},
    {"missing_model", 400, invalid_request, "'body.model' is required."},
    {"streaming_unsupported", 400, invalid_request, "Streaming is not supported for jobs."},
    {"invalid_metadata", 400, invalid_request, "'metadata' is invalid."},
    {"invalid_max_attempts", 400, invalid_request, "'max_attempts' is out of range."},
    {"unknown_parameter", 400, invalid_request, "Unrecognized request argument supplied."},
    {"invalid_idempotency_key", 400, invalid_request,
     "The Idempotency-Key header must be 1 to 255 printable ASCII characters."},
    {"bad_request", 400, invalid_request, "The request is not valid HTTP/1.1."},
    {"invalid_webhook_url", 400, invalid_request,
     "'webhook_url' must be an http:// or https:// URL naming a host."},
    {"invalid_timeout", 400, invalid_request,
     "'timeout' must be a number of seconds greater than 0 and at most 604800."},
    {"invalid_value", 400, invalid_request, "A query parameter has an invalid value."},
    {"missing_required_parameter", 400, invalid_request, "A required parameter is missing."},
    {"invalid_tasks", 400, invalid_request,
     "'tasks' must be a non-empty array of task objects, given instead of 'body'."},
    {"invalid_http_request", 400, invalid_request,
     "An http task's request must be {method, url, headers?, body?}."},
    {"http_task_denied", 400, invalid_request,
     "An http task's URL points at a network the policy denies."},
    {"invalid_grants", 400, invalid_request,
     "A storage grant is not a canonical s3://bucket/prefix/ inside the tenant's allowed "
     "prefixes."},
    {"duplicate_custom_id", 400, invalid_request, "Two tasks of the list have the same custom_id."},
    {"too_many_tasks", 400, invalid_request, "The task list holds more tasks than allowed."},
    {"invalid_max_inflight", 400, invalid_request, "'max_inflight' is out of range."},
    {"invalid_file", 400, invalid_request,
     "The upload must be multipart/form-data with a 'file' part and a 'purpose' field."},
    {"missing_api_key", 401, auth,
     "You didn't provide an API key. Send it as 'Authorization: Bearer <key>'."},
    {"invalid_api_key", 401, auth, "Incorrect API key provided."},
    {"invalid_capability_token", 401, auth,
     "The task capability token is missing, malformed, expired, for another attempt, or not "
     "signed by a published key."},
    {"not_found", 404, invalid_request, "Unknown route."},
    {"job_not_found", 404, invalid_request, "No such job."},
    {"model_not_found", 404, invalid_request, "No gateway serves this model."},
    {"runtime_not_found", 404, invalid_request, "No runtime of this name is configured."},
    {"file_not_found", 404, invalid_request, "No such file."},
    {"batch_not_found", 404, invalid_request, "No such batch."},
    {"task_not_found", 404, invalid_request, "No such task in this job."},
    {"method_not_allowed", 405, invalid_request, "Method not allowed for this route."},
    {"body_too_large", 413, invalid_request, "The request body is too large."},
    {"file_too_large", 413, invalid_request, "The file is larger than the server's limit."},
    {"unsupported_media_type", 415, invalid_request,
     "The request body must be sent with 'Content-Type: application/json'."},
    {"job_not_cancellable", 409, invalid_request,
     "The job has already finished (completed, failed or expired) and cannot be cancelled."},
    {"job_not_rerunnable", 409, invalid_request,
     "Only a finished task-list job or batch with failed lines can be rerun."},
    {"job_not_deletable", 409, invalid_request,
     "The batch has not finished yet; cancel it or wait for its end, then delete it."},
    {"job_not_open", 409, invalid_request,
     "Tasks can be appended only to an open task-list job that is not closed."},
    {"batch_not_cancellable", 409, invalid_request,
     "The batch has already finished (completed, failed or expired) and cannot be cancelled."},
    {"job_cancelled", 409, invalid_request, "The job was cancelled before it finished."},
    {"stale_attempt", 409, invalid_request,
     "This attempt is no longer the task's current one (finished, cancelled or superseded)."},
    {"lease_expired", 409, invalid_request,
     "The attempt's lease expired; the task is queued again for another attempt."},
    {"idempotency_conflict", 422, invalid_request,
     "This Idempotency-Key was already used with a different request."},
    {"header_too_large", 431, invalid_request, "The request headers are too large."},
    {"internal_error", 500, server, "The server had an error while processing your request."},
    {"gateway_unreachable", 502, server, "The gateway could not be reached."},
    {"credentials_unavailable", 502, server,
     "The storage credentials could not be minted: STS refused or could not be reached."},
    {"storage_unavailable", 503, server, "Storage is unavailable; retry later."},
    {"shutting_down", 503, server, "The server is shutting down; retry on another node."},
    {"not_ready", 503, server, "The server is not ready yet."},
    {"job_expired", 504, server, "The job reached its deadline before it finished."},
    {"sync_timeout", 504, server,
     "The job did not finish in time; it keeps running, poll GET /v1/jobs/{id}."},
}};

// Keep in step with docs/api.md ("Codes in jobs and batches").
constexpr std::array<result_error_info, 26> result_table = {{
    {"gateway_rejected", "job", "the gateway answered a final error (4xx other than 408/429)"},
    {"gateway_error", "job", "the gateway kept answering a retryable error until max_attempts"},
    {"gateway_unreachable", "job, batch result",
     "no answer from the gateway (connect, timeout, reset) after its retries"},
    {"http_rejected", "task",
     "an http task's server answered a final error (4xx other than 408/429)"},
    {"http_error", "task",
     "an http task's server kept answering 408, 429 or 5xx until max_attempts"},
    {"http_unreachable", "task",
     "no answer from an http task's server (resolve, connect, TLS, timeout) until max_attempts"},
    {"http_task_denied", "task",
     "every address an http task's host resolved to is denied by the http_task_* policy"},
    {"lease_expired", "job",
     "the last attempt's lease expired (the engine died or stalled while it ran)"},
    {"shutdown", "job event",
     "the engine shut down while the attempt ran; the job is queued again and runs later"},
    {"deadline_exceeded", "job", "the job's timeout passed before it finished"},
    {"cancelled", "job", "the client cancelled the job"},
    {"invalid_task_file", "job",
     "a staged task list has bad lines; the job's errors list them (code, line, message)"},
    {"invalid_json_line", "batch line", "not JSON, not an object, or longer than 64 MiB"},
    {"json_too_deep", "batch line", "objects and arrays nested past json_max_depth (128)"},
    {"string_above_max_length", "batch line", "custom_id over 512 or body.model over 256 bytes"},
    {"missing_required_parameter", "batch line", "custom_id, method, url or body missing"},
    {"invalid_request", "batch line",
     "bad method, model, stream (not a boolean) or the endpoint's required field"},
    {"invalid_url", "batch line", "url is not the batch's endpoint"},
    {"streaming_unsupported", "batch line", "body.stream is true"},
    {"duplicate_custom_id", "batch line", "a custom_id seen on an earlier line"},
    {"model_not_found", "batch line, batch result",
     "no gateway serves the model (at dispatch: the configuration changed since ingestion)"},
    {"too_many_requests", "batch file", "more request lines than batch_max_lines"},
    {"empty_file", "batch file", "no request line"},
    {"batch_cancelled", "batch result", "not executed: the batch was cancelled"},
    {"batch_expired", "batch result", "not executed: the completion window ended"},
    {"batch_failed", "batch result", "not executed: the batch failed (its error says why)"},
}};

// Keep in step with docs/api.md ("Codes that never reach a client").
constexpr std::array<result_error_info, 23> internal_table = {{
    {"invalid_arguments", "startup", "the command line is invalid; switchyard exits"},
    {"invalid_config", "startup",
     "a setting (file, environment or flag) is invalid; switchyard exits"},
    {"invalid_listen", "startup", "a listen address does not parse; switchyard exits"},
    {"listen_failed", "startup",
     "a listener (`listen` or `internal_listen`) cannot bind; switchyard exits at once, before "
     "anything starts"},
    {"webhook_secret", "startup",
     "the webhook secret file cannot be made or read, or its whsec_ value is not base64; "
     "switchyard exits"},
    {"invalid_nats_host", "startup",
     "the embedded nats-server's host is not IPv4; switchyard exits"},
    {"invalid_nats_options", "startup", "the embedded nats-server has no store directory"},
    {"nats_server_start_failed", "startup",
     "the embedded nats-server did not start; switchyard exits"},
    {"nats_server_stop_timeout", "shutdown", "the embedded nats-server did not exit in time"},
    {"nats_unavailable", "engine",
     "NATS is disconnected: logged and retried (intake, outbox relay); /readyz answers not_ready"},
    {"nats_error", "engine", "a NATS or JetStream call failed otherwise: logged and retried"},
    {"invalid_model", "engine", "a task consumer was asked for an empty model name (a bug)"},
    {"storage_error", "startup, engine",
     "LMDB or a data directory failed; a client sees storage_unavailable"},
    {"storage_corrupt", "engine",
     "a record names one that is missing; a client sees storage_unavailable"},
    {"map_full", "engine", "LMDB's map is full: the storage writer grows it and commits again"},
    {"schema_too_new", "startup", "the store was written by a newer build; switchyard exits"},
    {"schema_invalid", "startup", "the store's schema version is unreadable; switchyard exits"},
    {"value_rejected", "engine",
     "LMDB refused one write's value; a client sees value_not_storable"},
    {"batch_io_error", "batch",
     "a batch's input or plan file cannot be read or written; the batch gets batch_failed"},
    {"batch_plan_corrupt", "batch",
     "a batch's plan file does not fit; the batch gets batch_failed"},
    {"invalid_webhook_signature", "webhook receiver",
     "runtime::verify_standard_webhook (and the deprecated verify_webhook_signature), for "
     "receivers: the signature does not verify"},
    {"streams_in_use", "startup, engine",
     "another store's engine holds the JetStream streams (docs/jetstream.md): switchyard does not "
     "start, or stops"},
    {"data_dir_in_use", "startup",
     "another switchyard process holds the data directory's lock; switchyard exits"},
}};

const error_info* find_row(std::string_view code) {
  for (const auto& row : table)
    if (row.code == code) return &row;
  return nullptr;
}

}  // namespace

std::span<const error_info> all_errors() { return table; }

std::span<const result_error_info> all_result_errors() { return result_table; }

std::span<const result_error_info> all_internal_errors() { return internal_table; }

const error_info& lookup_error(std::string_view code) {
  if (const error_info* row = find_row(code)) return *row;
  static const error_info& internal = *find_row("internal_error");
  return internal;
}

std::string error_body(const sy::error& e) {
  const error_info& row = lookup_error(e.code);
  bool known = row.code == e.code;
  std::string message = known && !e.message.empty() ? e.message : std::string(row.default_message);
  // The last guard of "no echo" (docs/limits.md): whatever a message quotes, no error answer
  // grows past a few KiB (a message quotes each client value at most 256 bytes; this caps the
  // sum), and a param names a client's key at most 256 bytes long.
  nlohmann::json env = {
      {"error",
       {{"message", quote_client(message, error_message_max_bytes)},
        {"type", row.type},
        {"param", e.param.empty() || !known ? nlohmann::json(nullptr)
                                            : nlohmann::json(quote_client(e.param))},
        {"code", row.code}}}};
  return env.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

boost::beast::http::response<boost::beast::http::string_body> error_response(const sy::error& e,
                                                                             unsigned version,
                                                                             bool keep_alive) {
  namespace http = boost::beast::http;
  http::response<http::string_body> res{static_cast<http::status>(lookup_error(e.code).status),
                                        version};
  res.set(http::field::content_type, "application/json");
  res.keep_alive(keep_alive);
  res.body() = error_body(e);
  res.prepare_payload();
  return res;
}

}  // namespace sy::api
