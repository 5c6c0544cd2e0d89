// `jobs watch` (the job's server-sent events, or for a task list on a terminal a progress bar
// from its task counts) and `jobs export`. What each prints and its exit codes: docs/cli.md.

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <string>
#include <thread>
#include <vector>

#include "runtime/client_cli.hpp"
#include "runtime/client_session.hpp"

namespace sy::runtime::client {
namespace {

using json = nlohmann::json;

/// How long a watch waits for the next bytes; the server sends a keep-alive every 15 s by
/// default (at most 30 s: `events_keepalive_ms`).
constexpr std::chrono::seconds event_read_timeout{60};
/// How often a watched task list is read for its counts.
constexpr std::chrono::milliseconds counts_poll_interval{500};

/// One server-sent event.
struct sse_event {
  std::string id;
  std::string event;
  std::string data;
};

/// Splits a text/event-stream into events (blank-line separated; comments skipped).
class sse_reader {
 public:
  void feed(std::string_view text) { pending_.append(text); }
  /// The next complete event, if one has arrived.
  bool next(sse_event& out) {
    for (;;) {
      const auto end = pending_.find("\n\n");
      if (end == std::string::npos) return false;
      const std::string block = pending_.substr(0, end);
      pending_.erase(0, end + 2);
      out = {};
      size_t start = 0;
      while (start <= block.size()) {
        auto stop = block.find('\n', start);
        if (stop == std::string::npos) stop = block.size();
        take_line(std::string_view(block).substr(start, stop - start), out);
        start = stop + 1;
      }
      if (!out.event.empty() || !out.data.empty()) return true;
    }
  }

 private:
  static void take_line(std::string_view line, sse_event& out) {
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (line.empty() || line.front() == ':') return;
    const auto colon = line.find(':');
    const std::string_view name = line.substr(0, colon);
    std::string_view value = colon == std::string_view::npos ? "" : line.substr(colon + 1);
    if (!value.empty() && value.front() == ' ') value.remove_prefix(1);
    if (name == "id") out.id = std::string(value);
    if (name == "event") out.event = std::string(value);
    if (name == "data") out.data.append(out.data.empty() ? "" : "\n").append(value);
  }
  std::string pending_;
};

/// "2026-11-27 13:45:00  in_progress  attempt 1" and the error, for people.
std::string event_text(const json& data, const std::string& event) {
  if (!data.is_object()) return event + "\n";
  std::string out = format_time(data.value("timestamp", json()));
  out.append("  ").append(data.value("state", event));
  if (data.contains("attempt") && data["attempt"].is_number_integer())
    out.append("  attempt ").append(std::to_string(data["attempt"].get<int64_t>()));
  if (data.contains("error") && data["error"].is_object())
    out.append("  ")
        .append(data["error"].value("code", std::string()))
        .append(": ")
        .append(data["error"].value("message", std::string()));
  return out.append("\n");
}

/// Follows the event stream, reconnecting with Last-Event-ID until a terminal event.
int follow_events(const session& s, const std::string& id) {
  std::string last_id;
  std::string final_state;
  const std::string target = "/v1/jobs/" + url_encode(id) + "/events";
  for (bool first = true; final_state.empty(); first = false) {
    // A stream that ended before the job did (the server stopped): ask again after a pause.
    if (!first) std::this_thread::sleep_for(std::chrono::seconds(1));
    sse_reader reader;
    http_call c = make_call("GET", target);
    c.headers = {{"Accept", "text/event-stream"}};
    if (!last_id.empty()) c.headers.emplace_back("Last-Event-ID", last_id);
    c.timeout = event_read_timeout;
    auto r = s.stream(c, [&](std::string_view text) {
      reader.feed(text);
      sse_event e;
      while (reader.next(e)) {
        if (!e.id.empty()) last_id = e.id;
        std::string line =
            s.args().json ? e.data : event_text(json::parse(e.data, nullptr, false), e.event);
        if (s.args().json) line.push_back('\n');
        std::fputs(line.c_str(), stdout);
        std::fflush(stdout);
        if (is_terminal(e.event)) final_state = e.event;
      }
      return final_state.empty();
    });
    if (r.exit != exit_ok) return r.exit;
  }
  return exit_for_status(final_state);
}

/// A task list on a terminal: reads the job until it ends, with a bar from its task counts and
/// a line at each change of the job's status.
int follow_counts(const session& s, const std::string& id) {
  const auto start = std::chrono::steady_clock::now();
  std::string shown;
  const std::string target = "/v1/jobs/" + url_encode(id);
  for (;;) {
    auto r = s.call(make_call("GET", target));
    if (r.exit != exit_ok) return r.exit;
    const std::string status = r.doc.is_object() ? r.doc.value("status", std::string()) : "";
    const auto counts = r.doc.is_object() ? r.doc.value("task_counts", json()) : json();
    if (status != shown) std::printf("\r\033[K%s\n", status.c_str());
    shown = status;
    std::printf("\r%s\033[K", progress_line(progress_of(counts, seconds_since(start))).c_str());
    std::fflush(stdout);
    if (is_terminal(status)) {
      std::printf("\n");
      return exit_for_status(status);
    }
    std::this_thread::sleep_for(counts_poll_interval);
  }
}

}  // namespace

int jobs_watch(const session& s) {
  const std::string& id = s.args().id;
  if (s.draws_progress()) {
    auto r = s.call(make_call("GET", "/v1/jobs/" + url_encode(id)));
    if (r.exit != exit_ok) return r.exit;
    if (r.doc.is_object() && r.doc.contains("task_counts") && r.doc["task_counts"].is_object())
      return follow_counts(s, id);
  }
  return follow_events(s, id);
}

int jobs_export(const session& s) {
  const auto& a = s.args();
  http_call c = make_call("GET", "/v1/jobs/" + url_encode(a.id) + "/export");
  if (a.gzip) c.headers = {{"Accept-Encoding", "gzip"}};
  c.timeout = std::chrono::minutes(10);
  auto r = s.download(c, a.output);
  if (r.exit != exit_ok) return r.exit;
  std::error_code ec;
  const auto bytes = std::filesystem::file_size(a.output, ec);
  if (!a.json)
    std::printf("wrote %s (%llu bytes)\n", a.output.c_str(),
                static_cast<unsigned long long>(ec ? 0 : bytes));
  else
    std::printf(
        "%s\n",
        json{{"output", a.output}, {"bytes", ec ? std::uintmax_t{0} : bytes}}.dump().c_str());
  return exit_ok;
}

}  // namespace sy::runtime::client
