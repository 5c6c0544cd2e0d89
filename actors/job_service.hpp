#pragma once
/// The boundary between the HTTP API (and later NATS intake) and the engine. The API parses and
/// authenticates a request, turns it into a `submission`, and calls this service; the service
/// commits through the storage writer actor and answers when the commit is durable.
/// Thread-safety: every method may be called from any Asio thread concurrently.

#include <optional>
#include <string>
#include <utility>

#include <boost/asio/awaitable.hpp>
#include <nlohmann/json.hpp>

#include "config/result.hpp"
#include "storage/records.hpp"

namespace sy::actors {

/// A validated submission (see actors/submission.hpp for how JSON becomes one).
struct submission {
  std::string tenant;
  std::string endpoint;  ///< /v1/chat/completions | /v1/embeddings | /v1/completions
  nlohmann::json body;   ///< the OpenAI request; body["model"] is a non-empty string
  nlohmann::json metadata = nlohmann::json::object();
  int max_attempts = 0;  ///< 0: the configured default
  std::string idempotency_key;  ///< empty when none
};

/// What a submit produced: the job, and whether this call created it (false: an earlier
/// submission with the same idempotency key and the same request made it).
struct submit_outcome {
  storage::job_record job;
  bool created = false;
};

class job_service {
 public:
  virtual ~job_service() = default;
  /// Durably creates the job (or returns the one its idempotency key already names).
  /// Errors: idempotency_conflict, model_not_found, storage_unavailable, shutting_down.
  virtual boost::asio::awaitable<result<submit_outcome>> submit(submission s) = 0;
  /// Reads a job of `tenant`; another tenant's job is `job_not_found`.
  virtual result<storage::job_record> get(const std::string& tenant, const std::string& id) = 0;
};

}  // namespace sy::actors
