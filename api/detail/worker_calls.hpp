#pragma once
/// The calls of the worker protocol (docs/workers.md) as HTTP and NATS carry them alike: the
/// internal listener's routes (worker_routes.cpp) and the NATS service (api/nats_service.hpp)
/// turn their request into a `worker_call` and send back what `run` answers.

#include <utility>  // before any Asio header

#include <memory>
#include <string>

#include <boost/asio/awaitable.hpp>
#include <nlohmann/json.hpp>

#include "actors/core_messages.hpp"
#include "api/admission.hpp"
#include "config/result.hpp"

namespace sy::api::detail {

/// A worker call as its transport received it; admission reads it (admission::worker_call).
struct worker_call {
  using kind = worker_request::kind;
  kind what = kind::lease;
  std::string body;           ///< the JSON text of the request; empty reads as `{}`
  std::string authorization;  ///< lease: the `Authorization` value (a worker key)
  std::string token;          ///< the others: the `X-Switchyard-Task-Capability` value
  /// lease over HTTP: the worker's connection, gone when it closes (null over NATS)
  std::shared_ptr<actors::caller_presence> caller;
};

/// The header that carries the capability token, over HTTP and NATS.
inline constexpr std::string_view capability_header = "X-Switchyard-Task-Capability";

/// The answer's JSON, or the error to answer with (the catalogue's: invalid_request,
/// unknown_parameter, missing_required_parameter, invalid_json, invalid_api_key,
/// missing_api_key, invalid_capability_token, stale_attempt, lease_expired, runtime_not_found,
/// invalid_grants, credentials_unavailable, storage_unavailable, shutting_down).
/// The call goes through admission (admission::worker_call: the worker key or the token, the
/// body), then to the core as a `core::worker_call`.
boost::asio::awaitable<result<nlohmann::json>> run(actors::core::client& core,
                                                   const admission& admit, worker_call call);

}  // namespace sy::api::detail
