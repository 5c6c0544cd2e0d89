// sy_bench_submit: an HTTP/1.1 load generator for Switchyard's submission path.
//
// Opens C keep-alive connections to 127.0.0.1:PORT and sends N requests in total, each connection
// one request at a time (closed loop), as fast as the server answers. Prints submissions/s, latency
// percentiles and the count of unexpected answers. Modes:
//   default      POST /v1/jobs with a job envelope; 202 is the expected answer.
//   --raw        POST the plain OpenAI chat body to --target (e.g. a gateway's
//                /v1/chat/completions); 200 is the expected answer.
//   --bodies F   with --raw: send the `body` of each line of the batch input file F (JSONL), in
//                turn, as it is written there — the very requests a batch of F sends.
//   --e2e-fake P after submitting, wait until the fake gateway on port P has received every job
//                and the engine reports the last submitted jobs terminal; report end-to-end jobs/s.
//   --ids-out F  write the submitted job ids to F, one a line.
//   --verify F   GET /v1/jobs/{id} for every id in F (untimed check) and count the statuses.
// The last line of output is `RESULT key=value ...` for scripts.

#include <utility>  // before any Asio header

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http.hpp>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = asio::ip::tcp;
using error_code = boost::system::error_code;
using clock_type = std::chrono::steady_clock;

auto use_ec(error_code& ec) { return asio::redirect_error(asio::use_awaitable, ec); }

struct options {
  std::string host = "127.0.0.1";
  uint16_t port = 0;
  int connections = 64;
  int64_t requests = 50'000;
  int threads = 1;
  std::string target = "/v1/jobs";
  bool raw = false;
  std::string model = "bench";
  uint16_t e2e_fake_port = 0;       ///< 0: no end-to-end wait
  int tail_check = 256;             ///< how many of the last submitted jobs must be terminal
  std::string ids_out;              ///< where to write the submitted ids
  std::string verify;               ///< verify mode: the ids file to check
  std::string bodies_file;          ///< --bodies: a batch input file whose bodies --raw sends
  std::vector<std::string> bodies;  ///< loaded from bodies_file
};

void usage() {
  std::fprintf(stderr,
               "usage: sy_bench_submit --port N [--host H] [--connections C] [--requests N]\n"
               "         [--threads T] [--target PATH] [--raw] [--model M] [--e2e-fake PORT]\n"
               "         [--ids-out FILE] [--bodies BATCH.jsonl] | --port N --verify FILE "
               "[--connections C]\n");
}

bool parse_args(int argc, char** argv, options& o) {
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--raw") {
      o.raw = true;
      continue;
    }
    if (i + 1 >= argc) return false;
    const std::string value = argv[++i];
    if (arg == "--host") {
      o.host = value;
    } else if (arg == "--target") {
      o.target = value;
    } else if (arg == "--model") {
      o.model = value;
    } else if (arg == "--ids-out") {
      o.ids_out = value;
    } else if (arg == "--verify") {
      o.verify = value;
    } else if (arg == "--bodies") {
      o.bodies_file = value;
    } else {
      char* end = nullptr;
      const long long n = std::strtoll(value.c_str(), &end, 10);
      if (*end != '\0' || n < 0) return false;
      if (arg == "--port" && n > 0 && n < 65536) {
        o.port = static_cast<uint16_t>(n);
      } else if (arg == "--connections" && n > 0 && n <= 10'000) {
        o.connections = static_cast<int>(n);
      } else if (arg == "--requests" && n > 0) {
        o.requests = n;
      } else if (arg == "--threads" && n > 0 && n <= 64) {
        o.threads = static_cast<int>(n);
      } else if (arg == "--e2e-fake" && n > 0 && n < 65536) {
        o.e2e_fake_port = static_cast<uint16_t>(n);
      } else {
        return false;
      }
    }
  }
  return o.port != 0;
}

/// Shared by every connection of one phase. Counters are atomics because --threads may be > 1;
/// each connection keeps its own latency samples and merges them once at the end.
struct phase_state {
  phase_state(const options& o, tcp::endpoint ep) : opt(o), endpoint(std::move(ep)) {}

  const options& opt;
  tcp::endpoint endpoint;
  std::atomic<int64_t> next{0};
  std::atomic<int64_t> unexpected{0};
  std::atomic<int64_t> errors{0};
  std::mutex mu;
  std::vector<uint32_t> latencies_us;         ///< merged after each connection finishes
  std::map<int, int64_t> statuses;            ///< unexpected status → count (under mu)
  std::vector<std::string> ids;               ///< job id by request index (submit mode)
  std::map<std::string, int64_t> job_status;  ///< verify mode: job status → count (under mu)
};

std::string chat_body(const options& o, int64_t i) {
  if (!o.bodies.empty()) return o.bodies[static_cast<size_t>(i) % o.bodies.size()];
  return R"({"model":")" + o.model + R"(","messages":[{"role":"user","content":"hi )" +
         std::to_string(i) + R"("}]})";
}

std::string job_body(const options& o, int64_t i) {
  return R"({"endpoint":"/v1/chat/completions","body":)" + chat_body(o, i) + "}";
}

/// The raw text of the object after the first `"body":` in a JSONL line (strings skipped while
/// matching braces); empty when there is none.
std::string body_text(std::string_view line) {
  size_t at = line.find("\"body\"");
  if (at == std::string_view::npos) return {};
  at = line.find('{', at);
  if (at == std::string_view::npos) return {};
  int depth = 0;
  bool in_string = false;
  for (size_t i = at; i < line.size(); ++i) {
    const char c = line[i];
    if (in_string) {
      if (c == '\\') {
        ++i;
      } else if (c == '"') {
        in_string = false;
      }
    } else if (c == '"') {
      in_string = true;
    } else if (c == '{') {
      ++depth;
    } else if (c == '}' && --depth == 0) {
      return std::string(line.substr(at, i - at + 1));
    }
  }
  return {};
}

/// Loads the bodies of a batch input file; false (with a message) when it has none.
bool load_bodies(options& o) {
  std::ifstream in(o.bodies_file);
  std::string line;
  while (std::getline(in, line))
    if (auto b = body_text(line); !b.empty()) o.bodies.push_back(std::move(b));
  if (o.bodies.empty()) {
    std::fprintf(stderr, "no request bodies in %s\n", o.bodies_file.c_str());
    return false;
  }
  return true;
}

/// The value of the first `"key":"..."` in a compact JSON text (enough for our own answers).
std::string string_field(std::string_view body, std::string_view key) {
  const std::string needle = "\"" + std::string(key) + "\":\"";
  const size_t at = body.find(needle);
  if (at == std::string_view::npos) return {};
  const size_t start = at + needle.size();
  const size_t end = body.find('"', start);
  return end == std::string_view::npos ? std::string()
                                       : std::string(body.substr(start, end - start));
}

http::request<http::string_body> make_request(const options& o, http::verb verb,
                                              const std::string& target, std::string body) {
  http::request<http::string_body> req{verb, target, 11};
  req.set(http::field::host, o.host);
  req.keep_alive(true);
  if (verb == http::verb::post) {
    req.set(http::field::content_type, "application/json");
    req.body() = std::move(body);
  }
  req.prepare_payload();
  return req;
}

/// One exchange on an open connection; reconnects once on a transport error.
asio::awaitable<bool> exchange(tcp::socket& sock, beast::flat_buffer& buf, const tcp::endpoint& ep,
                               http::request<http::string_body>& req,
                               http::response<http::string_body>& res) {
  for (int attempt = 0; attempt < 2; ++attempt) {
    error_code ec;
    if (!sock.is_open()) {
      buf.clear();
      co_await sock.async_connect(ep, use_ec(ec));
      if (ec) {
        sock.close(ec);
        continue;
      }
      sock.set_option(tcp::no_delay(true), ec);
    }
    co_await http::async_write(sock, req, use_ec(ec));
    if (!ec) {
      res = {};
      co_await http::async_read(sock, buf, res, use_ec(ec));
    }
    if (!ec) {
      if (!res.keep_alive()) sock.close(ec);
      co_return true;
    }
    sock.close(ec);
  }
  co_return false;
}

/// A closed-loop submitter: takes the next request index until all N are taken.
asio::awaitable<void> submitter(phase_state& s) {
  tcp::socket sock(co_await asio::this_coro::executor);
  beast::flat_buffer buf;
  std::vector<uint32_t> local;
  local.reserve(static_cast<size_t>(s.opt.requests / s.opt.connections + 16));
  const unsigned expected = s.opt.raw ? 200 : 202;
  for (;;) {
    const int64_t i = s.next.fetch_add(1);
    if (i >= s.opt.requests) break;
    auto req = make_request(s.opt, http::verb::post, s.opt.target,
                            s.opt.raw ? chat_body(s.opt, i) : job_body(s.opt, i));
    http::response<http::string_body> res;
    const auto t0 = clock_type::now();
    const bool ok = co_await exchange(sock, buf, s.endpoint, req, res);
    const auto t1 = clock_type::now();
    if (!ok) {
      s.errors.fetch_add(1);
      continue;
    }
    local.push_back(static_cast<uint32_t>(
        std::chrono::duration_cast<std::chrono::microseconds>(t1 - t0).count()));
    if (res.result_int() != expected) {
      s.unexpected.fetch_add(1);
      std::lock_guard lock(s.mu);
      ++s.statuses[static_cast<int>(res.result_int())];
    } else if (!s.opt.raw) {
      s.ids[static_cast<size_t>(i)] = string_field(res.body(), "id");
    }
  }
  error_code ignored;
  sock.shutdown(tcp::socket::shutdown_both, ignored);
  std::lock_guard lock(s.mu);
  s.latencies_us.insert(s.latencies_us.end(), local.begin(), local.end());
}

/// GETs `/v1/jobs/{id}` for ids[next...] and counts each job's status.
asio::awaitable<void> verifier(phase_state& s) {
  tcp::socket sock(co_await asio::this_coro::executor);
  beast::flat_buffer buf;
  for (;;) {
    const int64_t i = s.next.fetch_add(1);
    if (i >= static_cast<int64_t>(s.ids.size())) break;
    const std::string& id = s.ids[static_cast<size_t>(i)];
    if (id.empty()) continue;
    auto req = make_request(s.opt, http::verb::get, "/v1/jobs/" + id, {});
    http::response<http::string_body> res;
    std::string status = "transport_error";
    if (co_await exchange(sock, buf, s.endpoint, req, res))
      status = res.result_int() == 200 ? string_field(res.body(), "status")
                                       : "http_" + std::to_string(res.result_int());
    std::lock_guard lock(s.mu);
    ++s.job_status[status];
  }
  error_code ignored;
  sock.shutdown(tcp::socket::shutdown_both, ignored);
}

/// Runs `make(s)` on `connections` coroutines over `threads` io threads until all finish.
template <typename Make>
void run_connections(phase_state& s, int connections, Make make) {
  asio::io_context ioc(s.opt.threads);
  for (int c = 0; c < connections; ++c) asio::co_spawn(ioc, make(s), asio::detached);
  std::vector<std::thread> extra;
  for (int t = 1; t < s.opt.threads; ++t) extra.emplace_back([&ioc] { ioc.run(); });
  ioc.run();
  for (auto& t : extra) t.join();
}

double percentile_ms(const std::vector<uint32_t>& sorted, double p) {
  if (sorted.empty()) return 0.0;
  auto rank = static_cast<size_t>(p / 100.0 * static_cast<double>(sorted.size() - 1) + 0.5);
  return sorted[std::min(rank, sorted.size() - 1)] / 1000.0;
}

/// One synchronous GET (used for the sparse end-to-end polling, not for load).
std::string blocking_get(const std::string& host, uint16_t port, const std::string& target,
                         unsigned& status) {
  asio::io_context ioc;
  tcp::socket sock(ioc);
  error_code ec;
  sock.connect(tcp::endpoint(asio::ip::make_address(host), port), ec);
  status = 0;
  if (ec) return {};
  http::request<http::string_body> req{http::verb::get, target, 11};
  req.set(http::field::host, host);
  req.keep_alive(false);
  http::write(sock, req, ec);
  if (ec) return {};
  beast::flat_buffer buf;
  http::response<http::string_body> res;
  http::read(sock, buf, res, ec);
  if (ec) return {};
  status = res.result_int();
  return res.body();
}

int64_t fake_requests(const options& o) {
  unsigned status = 0;
  const std::string body = blocking_get(o.host, o.e2e_fake_port, "/_fake/stats", status);
  const std::string_view needle = "\"requests\":";
  const size_t at = body.find(needle);
  if (status != 200 || at == std::string::npos) return -1;
  return std::strtoll(body.c_str() + at + needle.size(), nullptr, 10);
}

bool is_terminal(const std::string& status) {
  return status == "completed" || status == "failed" || status == "cancelled" ||
         status == "expired";
}

/// Waits until the fake has seen every job and the last `tail_check` submitted jobs are terminal.
/// Polls every 2 ms with one short connection, so the polling itself costs the engine little.
/// Returns the time the condition first held, and when the fake reached N requests.
std::pair<clock_type::time_point, clock_type::time_point> wait_end_to_end(const phase_state& s) {
  const auto& o = s.opt;
  const auto deadline = clock_type::now() + std::chrono::minutes(10);
  clock_type::time_point fake_done{};
  while (clock_type::now() < deadline) {
    if (fake_requests(o) >= o.requests) {
      fake_done = clock_type::now();
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  const size_t n = s.ids.size();
  size_t at = n > static_cast<size_t>(o.tail_check) ? n - static_cast<size_t>(o.tail_check) : 0;
  while (at < n && clock_type::now() < deadline) {
    if (s.ids[at].empty()) {
      ++at;
      continue;
    }
    unsigned status = 0;
    const std::string body = blocking_get(o.host, o.port, "/v1/jobs/" + s.ids[at], status);
    if (status == 200 && is_terminal(string_field(body, "status"))) {
      ++at;
    } else {
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
    }
  }
  return {clock_type::now(), fake_done};
}

double seconds_between(clock_type::time_point a, clock_type::time_point b) {
  return std::chrono::duration<double>(b - a).count();
}

}  // namespace

/// Verify mode: every job in the ids file, by status. Exit 0 when all are completed.
int verify_jobs(const options& o) {
  phase_state s(o, tcp::endpoint(asio::ip::make_address(o.host), o.port));
  std::ifstream in(o.verify);
  for (std::string line; std::getline(in, line);)
    if (!line.empty()) s.ids.push_back(line);
  run_connections(s, std::min(o.connections, 16), verifier);
  int64_t completed = 0;
  std::printf("verify: %zu jobs:", s.ids.size());
  for (const auto& [status, count] : s.job_status) {
    std::printf(" %s=%lld", status.c_str(), static_cast<long long>(count));
    if (status == "completed") completed = count;
  }
  std::printf("\nRESULT mode=verify jobs=%zu completed=%lld\n", s.ids.size(),
              static_cast<long long>(completed));
  return completed == static_cast<int64_t>(s.ids.size()) ? 0 : 1;
}

int main(int argc, char** argv) {
  options o;
  if (!parse_args(argc, argv, o)) {
    usage();
    return 2;
  }
  if (!o.verify.empty()) return verify_jobs(o);
  if (o.raw && o.target == "/v1/jobs") o.target = "/v1/chat/completions";
  if (!o.bodies_file.empty() && (!o.raw || !load_bodies(o))) {
    if (!o.raw) std::fprintf(stderr, "--bodies needs --raw\n");
    return 2;
  }
  phase_state s(o, tcp::endpoint(asio::ip::make_address(o.host), o.port));
  if (!o.raw) s.ids.resize(static_cast<size_t>(o.requests));

  const auto start = clock_type::now();
  run_connections(s, o.connections, submitter);
  const auto submitted = clock_type::now();

  std::sort(s.latencies_us.begin(), s.latencies_us.end());
  const double secs = seconds_between(start, submitted);
  const auto answered = static_cast<int64_t>(s.latencies_us.size());
  const double rate = static_cast<double>(answered) / secs;
  const int64_t bad = s.unexpected.load() + s.errors.load();
  std::printf("%s %s: %lld requests over %d connections (%d client thread%s) in %.3f s\n",
              o.raw ? "raw" : "submit", o.target.c_str(), static_cast<long long>(o.requests),
              o.connections, o.threads, o.threads == 1 ? "" : "s", secs);
  std::printf("  throughput %.0f req/s\n", rate);
  std::printf("  latency ms: p50 %.3f  p99 %.3f  p99.9 %.3f  max %.3f\n",
              percentile_ms(s.latencies_us, 50), percentile_ms(s.latencies_us, 99),
              percentile_ms(s.latencies_us, 99.9), percentile_ms(s.latencies_us, 100));
  std::printf("  non-%d answers %lld, transport errors %lld\n", o.raw ? 200 : 202,
              static_cast<long long>(s.unexpected.load()), static_cast<long long>(s.errors.load()));
  for (const auto& [code, count] : s.statuses)
    std::printf("    status %d: %lld\n", code, static_cast<long long>(count));

  if (!o.ids_out.empty()) {
    std::ofstream ids(o.ids_out);
    for (const auto& id : s.ids)
      if (!id.empty()) ids << id << '\n';
  }
  std::string e2e;
  if (o.e2e_fake_port != 0 && !o.raw) {
    const auto [done, fake_done] = wait_end_to_end(s);
    const double total = seconds_between(start, done);
    std::printf(
        "  end to end: last job terminal %.3f s after the first submit (%.0f jobs/s); "
        "fake saw all %lld requests at %.3f s\n",
        total, static_cast<double>(o.requests) / total, static_cast<long long>(o.requests),
        seconds_between(start, fake_done));
    char buf[256];
    std::snprintf(buf, sizeof buf, " e2e_s=%.3f e2e_jobs_per_s=%.0f fake_all_s=%.3f", total,
                  static_cast<double>(o.requests) / total, seconds_between(start, fake_done));
    e2e = buf;
  }
  std::printf(
      "RESULT mode=%s requests=%lld connections=%d secs=%.3f rate=%.0f p50=%.3f p99=%.3f "
      "p999=%.3f max=%.3f bad=%lld%s\n",
      o.raw ? "raw" : "submit", static_cast<long long>(o.requests), o.connections, secs, rate,
      percentile_ms(s.latencies_us, 50), percentile_ms(s.latencies_us, 99),
      percentile_ms(s.latencies_us, 99.9), percentile_ms(s.latencies_us, 100),
      static_cast<long long>(bad), e2e.c_str());
  return bad == 0 ? 0 : 1;
}
