// Dispatch of the client commands, and the jobs commands except watch and export
// (client_watch.cpp). What each prints and its exit codes: docs/cli.md.

#include "runtime/client_cli.hpp"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <thread>

#include "runtime/client_session.hpp"

namespace sy::runtime {
namespace client {
namespace {

using std::chrono::steady_clock;

/// The most a single `Prefer: wait` asks for; the server caps it at its max_wait_ms anyway, and
/// the CLI asks again (the same Idempotency-Key finds the same job) until its own limit.
constexpr int64_t max_wait_per_request_s = 60;

std::string job_line(const nlohmann::json& job) {
  if (!job.is_object()) return job.dump() + "\n";
  return job.value("id", std::string("-")) + "  " + job.value("status", std::string("-")) + "\n";
}

/// One POST /v1/jobs; with --wait, asking the server to wait up to what is left of the limit.
reply submit_once(const session& s, const std::string& body, const std::string& key,
                  steady_clock::time_point start) {
  const auto& a = s.args();
  http_call c = make_call("POST", "/v1/jobs");
  c.headers = {{"Content-Type", "application/json"}, {"Idempotency-Key", key}};
  c.body = body;
  if (a.wait) {
    int64_t wait_s = max_wait_per_request_s;
    if (a.wait_s >= 0)
      wait_s = std::min(
          wait_s, std::max<int64_t>(0, a.wait_s - static_cast<int64_t>(seconds_since(start))));
    if (wait_s > 0) {
      c.headers.emplace_back("Prefer", "wait=" + std::to_string(wait_s));
      c.timeout = std::chrono::seconds(wait_s + 30);
    }
  }
  return s.call(c);
}

}  // namespace

int jobs_submit(const session& s) {
  const auto& a = s.args();
  std::string body;
  std::string why;
  if (!read_input(a.file, body, why)) return complain(why, exit_usage);
  const std::string key = a.idempotency_key.empty() ? random_token("sy-cli-") : a.idempotency_key;
  const auto start = steady_clock::now();
  for (;;) {
    const auto sent = steady_clock::now();
    auto r = submit_once(s, body, key, start);
    if (r.exit != exit_ok) return r.exit;
    if (!a.wait) {
      s.print(r, job_line(r.doc));
      return exit_ok;
    }
    const std::string status = r.doc.is_object() ? r.doc.value("status", std::string()) : "";
    if (is_terminal(status)) {
      s.print(r, job_details(r.doc));
      return exit_for_status(status);
    }
    if (a.wait_s >= 0 && seconds_since(start) >= static_cast<double>(a.wait_s)) {
      s.print(r, job_details(r.doc));
      return still_running("the job", status, a.wait_s);
    }
    // The server answered before its wait was over (it is stopping, or it waits less than
    // asked): do not ask again at once.
    if (steady_clock::now() - sent < std::chrono::seconds(1))
      std::this_thread::sleep_for(std::chrono::seconds(1));
  }
}

int jobs_get(const session& s) {
  auto r = s.call(make_call("GET", "/v1/jobs/" + url_encode(s.args().id)));
  if (r.exit != exit_ok) return r.exit;
  s.print(r, job_details(r.doc));
  return exit_for_status(r.doc.is_object() ? r.doc.value("status", std::string()) : "");
}

int jobs_list(const session& s) {
  const auto& a = s.args();
  std::string query;
  auto add = [&query](const char* name, const std::string& value) {
    if (value.empty()) return;
    query.append(query.empty() ? "?" : "&").append(name).append("=").append(url_encode(value));
  };
  add("status", a.status);
  add("limit", a.limit > 0 ? std::to_string(a.limit) : "");
  add("after", a.after);
  auto r = s.call(make_call("GET", "/v1/jobs" + query));
  if (r.exit != exit_ok) return r.exit;
  s.print(r, jobs_table(r.doc));
  return exit_ok;
}

int jobs_cancel(const session& s) {
  auto r = s.call(make_call("POST", "/v1/jobs/" + url_encode(s.args().id) + "/cancel"));
  if (r.exit != exit_ok) return r.exit;
  s.print(r, job_line(r.doc));
  return exit_ok;
}

}  // namespace client

int run_client(const config::client_args& args) {
  auto to = parse_http_endpoint(args.server);
  if (!to) return client::complain(to.error().message, client::exit_usage);
  const client::session s(std::move(*to), args);
  using command = int (*)(const client::session&);
  static const std::pair<const char*, command> jobs[] = {
      {"submit", client::jobs_submit}, {"get", client::jobs_get},
      {"list", client::jobs_list},     {"cancel", client::jobs_cancel},
      {"watch", client::jobs_watch},   {"export", client::jobs_export}};
  static const std::pair<const char*, command> batches[] = {{"create", client::batches_create},
                                                            {"get", client::batches_get},
                                                            {"list", client::batches_list},
                                                            {"cancel", client::batches_cancel}};
  if (args.noun == "jobs")
    for (const auto& [verb, run] : jobs)
      if (args.verb == verb) return run(s);
  if (args.noun == "batches")
    for (const auto& [verb, run] : batches)
      if (args.verb == verb) return run(s);
  return client::complain("unknown command " + args.noun + " " + args.verb, client::exit_usage);
}

}  // namespace sy::runtime
