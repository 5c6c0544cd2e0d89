#pragma once
/// Every stable error code of Switchyard, as typed constants: `sy::make_error` takes an
/// `error_code`, so a misspelled code does not compile. Each constant is listed in the catalogue
/// (api/errors.cpp: the HTTP answers, the codes written into jobs and batches, and the codes that
/// never reach a client) and in docs/api.md; tests/unit/api/errors_test.cpp checks both.
///
/// A new code is added here, in api/errors.cpp and in docs/api.md, in that order.

#include <string>
#include <string_view>

namespace sy {

/// A stable snake_case error code. Only the constants of `sy::errc` below make one (the
/// constructor is explicit and consteval). It converts to the `std::string` that `sy::error`,
/// job and batch records carry, and compares with such a string.
class error_code {
 public:
  consteval explicit error_code(std::string_view text) : text_(text) {}

  constexpr std::string_view view() const { return text_; }
  operator std::string() const { return std::string(text_); }

  friend constexpr bool operator==(error_code, error_code) = default;
  friend bool operator==(const std::string& s, error_code c) { return s == c.text_; }

 private:
  std::string_view text_;
};

namespace errc {

// HTTP answers (api/errors.cpp, all_errors()).
inline constexpr error_code invalid_json{"invalid_json"};
inline constexpr error_code invalid_request{"invalid_request"};
inline constexpr error_code invalid_endpoint{"invalid_endpoint"};
inline constexpr error_code invalid_body{"invalid_body"};
inline constexpr error_code missing_model{"missing_model"};
inline constexpr error_code streaming_unsupported{"streaming_unsupported"};
inline constexpr error_code invalid_metadata{"invalid_metadata"};
inline constexpr error_code invalid_max_attempts{"invalid_max_attempts"};
inline constexpr error_code unknown_parameter{"unknown_parameter"};
inline constexpr error_code invalid_idempotency_key{"invalid_idempotency_key"};
inline constexpr error_code missing_api_key{"missing_api_key"};
inline constexpr error_code invalid_api_key{"invalid_api_key"};
inline constexpr error_code invalid_capability_token{"invalid_capability_token"};
inline constexpr error_code runtime_not_found{"runtime_not_found"};
inline constexpr error_code stale_attempt{"stale_attempt"};
inline constexpr error_code not_found{"not_found"};
inline constexpr error_code job_not_found{"job_not_found"};
inline constexpr error_code model_not_found{"model_not_found"};
inline constexpr error_code method_not_allowed{"method_not_allowed"};
inline constexpr error_code body_too_large{"body_too_large"};
inline constexpr error_code unsupported_media_type{"unsupported_media_type"};
inline constexpr error_code idempotency_conflict{"idempotency_conflict"};
inline constexpr error_code internal_error{"internal_error"};
inline constexpr error_code storage_unavailable{"storage_unavailable"};
inline constexpr error_code shutting_down{"shutting_down"};
inline constexpr error_code not_ready{"not_ready"};
inline constexpr error_code header_too_large{"header_too_large"};
inline constexpr error_code bad_request{"bad_request"};
inline constexpr error_code invalid_value{"invalid_value"};
inline constexpr error_code invalid_webhook_url{"invalid_webhook_url"};
inline constexpr error_code invalid_timeout{"invalid_timeout"};
inline constexpr error_code job_not_cancellable{"job_not_cancellable"};
inline constexpr error_code job_cancelled{"job_cancelled"};
inline constexpr error_code gateway_unreachable{"gateway_unreachable"};
inline constexpr error_code job_expired{"job_expired"};
inline constexpr error_code missing_required_parameter{"missing_required_parameter"};
inline constexpr error_code invalid_file{"invalid_file"};
inline constexpr error_code file_too_large{"file_too_large"};
inline constexpr error_code file_not_found{"file_not_found"};
inline constexpr error_code batch_not_found{"batch_not_found"};
inline constexpr error_code invalid_tasks{"invalid_tasks"};
inline constexpr error_code invalid_http_request{"invalid_http_request"};
inline constexpr error_code http_task_denied{"http_task_denied"};
inline constexpr error_code invalid_grants{"invalid_grants"};
inline constexpr error_code credentials_unavailable{"credentials_unavailable"};
inline constexpr error_code too_many_tasks{"too_many_tasks"};
inline constexpr error_code invalid_max_inflight{"invalid_max_inflight"};
inline constexpr error_code task_not_found{"task_not_found"};
inline constexpr error_code job_not_open{"job_not_open"};
inline constexpr error_code job_not_rerunnable{"job_not_rerunnable"};
inline constexpr error_code job_not_deletable{"job_not_deletable"};
inline constexpr error_code invalid_task_file{"invalid_task_file"};
inline constexpr error_code batch_not_cancellable{"batch_not_cancellable"};
inline constexpr error_code sync_timeout{"sync_timeout"};
inline constexpr error_code json_too_deep{"json_too_deep"};
inline constexpr error_code string_above_max_length{"string_above_max_length"};
inline constexpr error_code too_many_models{"too_many_models"};
inline constexpr error_code value_not_storable{"value_not_storable"};

// Written into a job's `error`, a batch's `errors` or a batch's error file
// (api/errors.cpp, all_result_errors()); some are HTTP answers as well (above).
inline constexpr error_code gateway_rejected{"gateway_rejected"};
inline constexpr error_code gateway_error{"gateway_error"};
inline constexpr error_code http_rejected{"http_rejected"};
inline constexpr error_code http_error{"http_error"};
inline constexpr error_code http_unreachable{"http_unreachable"};
inline constexpr error_code lease_expired{"lease_expired"};
inline constexpr error_code shutdown{"shutdown"};
inline constexpr error_code deadline_exceeded{"deadline_exceeded"};
inline constexpr error_code cancelled{"cancelled"};
inline constexpr error_code invalid_json_line{"invalid_json_line"};
inline constexpr error_code invalid_url{"invalid_url"};
inline constexpr error_code duplicate_custom_id{"duplicate_custom_id"};
inline constexpr error_code too_many_requests{"too_many_requests"};
inline constexpr error_code empty_file{"empty_file"};
inline constexpr error_code batch_cancelled{"batch_cancelled"};
inline constexpr error_code batch_expired{"batch_expired"};
inline constexpr error_code batch_failed{"batch_failed"};

// Never shown to a client as such (api/errors.cpp, all_internal_errors()): startup failures,
// and failures inside the engine that a client sees as another code.
inline constexpr error_code invalid_arguments{"invalid_arguments"};
inline constexpr error_code invalid_config{"invalid_config"};
inline constexpr error_code invalid_listen{"invalid_listen"};
inline constexpr error_code listen_failed{"listen_failed"};
inline constexpr error_code webhook_secret{"webhook_secret"};
inline constexpr error_code invalid_nats_host{"invalid_nats_host"};
inline constexpr error_code invalid_nats_options{"invalid_nats_options"};
inline constexpr error_code nats_server_start_failed{"nats_server_start_failed"};
inline constexpr error_code nats_server_stop_timeout{"nats_server_stop_timeout"};
inline constexpr error_code nats_unavailable{"nats_unavailable"};
inline constexpr error_code nats_error{"nats_error"};
inline constexpr error_code invalid_model{"invalid_model"};
inline constexpr error_code storage_error{"storage_error"};  ///< any other LMDB or file failure
inline constexpr error_code storage_corrupt{"storage_corrupt"};
inline constexpr error_code map_full{"map_full"};              ///< LMDB: grow() and redo the batch
inline constexpr error_code schema_too_new{"schema_too_new"};  ///< LMDB: data from a newer build
inline constexpr error_code schema_invalid{"schema_invalid"};  ///< LMDB: unreadable version
/// LMDB: this write's own value cannot be stored (a key over LMDB's size, a key that must not
/// exist): permanent for this write, says nothing about the store or the other writes.
inline constexpr error_code value_rejected{"value_rejected"};
inline constexpr error_code batch_io_error{"batch_io_error"};
inline constexpr error_code batch_plan_corrupt{"batch_plan_corrupt"};
inline constexpr error_code invalid_webhook_signature{"invalid_webhook_signature"};
inline constexpr error_code streams_in_use{"streams_in_use"};    ///< another store's engine
inline constexpr error_code data_dir_in_use{"data_dir_in_use"};  ///< another process's lock

}  // namespace errc
}  // namespace sy
