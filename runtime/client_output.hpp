#pragma once
/// What the client commands print for people (runtime/client_cli.hpp): tables, a job's or a
/// batch's details, the progress bar, and the exit codes. Pure functions of the server's JSON,
/// unit-tested without a server.

#include <cstdint>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

namespace sy::runtime::client {

/// The exit codes scripts can trust (docs/cli.md).
enum exit_code : int {
  exit_ok = 0,           ///< done: the command worked; a job or batch it waited for completed
  exit_failed = 1,       ///< the server said no (4xx/5xx), or the job/batch ended otherwise
  exit_usage = 2,        ///< a bad command line, or a file it names cannot be read
  exit_unreachable = 3,  ///< no answer from the server (refused, unresolvable, timed out)
  exit_pending = 4,      ///< --wait=SECONDS ran out while the job or batch was still running
};

/// Whether a job or batch `status` is final.
bool is_terminal(std::string_view status);

/// exit_ok unless `status` is a final status other than completed (then exit_failed).
int exit_for_status(std::string_view status);

/// A Unix-seconds JSON value as "2026-11-27 13:45:00" (UTC); "-" for null or a non-number.
std::string format_time(const nlohmann::json& unix_seconds);

/// A list page of jobs (GET /v1/jobs) as a table, with a hint for the next page.
std::string jobs_table(const nlohmann::json& page);

/// A job (GET /v1/jobs/{id}) as "name  value" lines, result and error included.
std::string job_details(const nlohmann::json& job);

/// A list page of batches (GET /v1/batches) as a table, with a hint for the next page.
std::string batches_table(const nlohmann::json& page);

/// A batch (GET /v1/batches/{id}) as "name  value" lines.
std::string batch_details(const nlohmann::json& batch);

/// Where work stands, for the progress bar.
struct progress {
  int64_t completed = 0;
  int64_t failed = 0;
  int64_t total = 0;
  double elapsed_s = 0;  ///< since the wait began
};

/// One line: "[#####-----]  3/10  completed 2  failed 1  1.5/s  ETA 5s" (`width` marks).
/// The rate and ETA appear once something has finished.
std::string progress_line(const progress& p, int width = 30);

/// Where work stands from a counts object (a batch's `request_counts`, a job's `task_counts`:
/// `completed`, `failed`, `total`; a missing or odd field counts 0).
progress progress_of(const nlohmann::json& counts, double elapsed_s);

/// The text of an OpenAI error envelope answer: "<message> (code <code>)"; the raw body when it
/// is not one.
std::string error_text(std::string_view body);

}  // namespace sy::runtime::client
