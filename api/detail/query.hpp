#pragma once
/// The query string of a request target (`/v1/jobs?status=queued&limit=5`), and the parameters
/// of `GET /v1/jobs`. The router matches the path only; handlers that take parameters read them
/// here. Pure functions: any thread may call them.

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "config/result.hpp"
#include "storage/records.hpp"

namespace sy::api::detail {

/// One `name=value` pair, percent-decoded.
struct query_param {
  std::string name;
  std::string value;
};

/// The pairs after the first `?` of `target`, in order. `+` means a space (HTML forms) and
/// `%XX` a byte; a pair without `=` has an empty value; empty pairs (`a=1&&b=2`) are skipped.
/// Error: invalid_value (param: the pair's name, or "query") for a malformed `%` escape.
result<std::vector<query_param>> parse_query(std::string_view target);

/// The last value of `name`, if present.
std::optional<std::string> query_value(const std::vector<query_param>& params,
                                       std::string_view name);

/// `GET /v1/jobs` parameters.
struct list_params {
  std::optional<storage::job_status> status;  ///< only jobs in this status
  std::optional<storage::job_kind> kind;      ///< only jobs of this kind
  int limit = 20;                             ///< 1..100
  std::string after;                          ///< cursor: a job id; empty: from the newest
};

inline constexpr int list_default_limit = 20;
inline constexpr int list_max_limit = 100;

/// Reads `status`, `kind`, `limit` and `after` from `target`'s query; other parameters are ignored.
/// Errors: invalid_value with param `status` (not a job status), `kind` (not single, list or
/// batch), `limit` (not an integer in 1..100) or the malformed parameter's name.
result<list_params> parse_list_params(std::string_view target);

}  // namespace sy::api::detail
