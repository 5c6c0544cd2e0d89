#pragma once
/// The names of runtimes' jobs and queues (docs/workers.md), for pure code (submission checks)
/// and actors alike.

#include <string>
#include <string_view>

namespace sy::actors {

/// The queue key of a runtime: the `model` of its tasks and jobs, whose JetStream subject and
/// consumer are the runtime's. Model names may not begin with the prefix.
inline constexpr std::string_view runtime_queue_prefix = "runtime:";
inline std::string runtime_queue(std::string_view runtime) {
  return std::string(runtime_queue_prefix) + std::string(runtime);
}
inline bool is_runtime_queue(std::string_view model) {
  return model.starts_with(runtime_queue_prefix);
}

/// The `endpoint` of a job run by a runtime's workers.
inline constexpr std::string_view runtime_endpoint = "runtime";

}  // namespace sy::actors
