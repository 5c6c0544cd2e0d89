#pragma once
/// One client command's link to the server (runtime/client_cli.hpp): the endpoint, the API key,
/// and one place that turns a failed exchange or an error answer into a message on stderr and an
/// exit code. Used from the CLI process's main thread only.

#include <chrono>
#include <functional>
#include <string>
#include <string_view>
#include <utility>

#include <nlohmann/json.hpp>

#include "config/client_args.hpp"
#include "runtime/client_http.hpp"
#include "runtime/client_output.hpp"

namespace sy::runtime::client {

/// What an exchange gave: `exit` is exit_ok with a 2xx `answer` (and its JSON in `doc`, null
/// when the body is not JSON), or the exit code after the failure was reported on stderr.
// clang-tidy 14 sees a throw in nlohmann::json's move constructor (its invariant check), which
// the implicitly noexcept moves of this struct call; that check is an assert, not a throw.
// NOLINTNEXTLINE(bugprone-exception-escape)
struct reply {
  int exit = exit_ok;
  http_answer answer;
  nlohmann::json doc;
};

class session {
 public:
  session(http_endpoint to, const config::client_args& args) : to_(std::move(to)), args_(args) {}

  const config::client_args& args() const { return args_; }
  /// Whether stdout is a terminal and text for people is asked for (a progress bar may be drawn).
  bool draws_progress() const;

  /// One exchange with the API key added.
  reply call(http_call c) const;
  /// One exchange whose 2xx body goes to the file `path`.
  reply download(http_call c, const std::string& path) const;
  /// One exchange whose 2xx body is handed to `on_data` as it arrives.
  reply stream(http_call c, const std::function<bool(std::string_view)>& on_data) const;

  /// Prints the answer for people (`text`) or the server's JSON (--json) on stdout.
  void print(const reply& r, const std::string& text) const;

 private:
  void authorize(http_call& c) const;
  reply settle(const result<http_answer>& got) const;

  http_endpoint to_;
  const config::client_args& args_;
};

/// A request with no header or body yet, and the default timeout.
http_call make_call(std::string method, std::string target);

/// The whole of the file `path` ("-" or empty: stdin) into `out`; false, with `why`, when it
/// cannot be read.
bool read_input(const std::string& path, std::string& out, std::string& why);

/// Seconds since `start`.
double seconds_since(std::chrono::steady_clock::time_point start);

/// Reports on stderr that the job or batch `what` is still `status` after `wait_s` seconds;
/// returns exit_pending.
int still_running(const std::string& what, const std::string& status, int64_t wait_s);

/// "switchyard: <what>" on stderr; returns `code`.
int complain(const std::string& what, int code);

/// `text` percent-encoded for a path segment or a query value (unreserved characters kept).
std::string url_encode(std::string_view text);

/// A new random idempotency key or multipart boundary: `prefix` + 32 hex digits.
std::string random_token(std::string_view prefix);

}  // namespace sy::runtime::client
