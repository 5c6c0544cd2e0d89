#include "runtime/trace.hpp"

#include <utility>  // before any Asio/Beast header

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <memory>
#include <mutex>
#include <random>
#include <thread>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <boost/beast/http.hpp>
#include <nlohmann/json.hpp>

#include "config/webhook_url.hpp"
#include "runtime/log.hpp"
#include "runtime/metrics.hpp"
#include "runtime/thread_name.hpp"

namespace sy::trace {
namespace {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;

std::mt19937_64& rng() {
  thread_local std::mt19937_64 r{std::random_device{}()};
  return r;
}

std::string random_hex(size_t digits) {
  std::string out;
  while (out.size() < digits) {
    char buf[17];
    uint64_t v = 0;
    while (v == 0) v = rng()();  // an id is never all zero
    std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(v));
    out += buf;
  }
  out.resize(digits);
  return out;
}

bool lower_hex(std::string_view s) {
  for (char c : s)
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
  return true;
}

bool all_zero(std::string_view s) { return s.find_first_not_of('0') == std::string_view::npos; }

int hex_value(char c) { return c <= '9' ? c - '0' : c - 'a' + 10; }

/// The exporter: a bounded queue and the thread that empties it into the collector.
struct exporter {
  exporter_options opts;
  config::webhook_url url;
  std::string target;  ///< <base>/v1/traces
  std::deque<span> queue;
  bool stopping = false;
  std::condition_variable wake;
  std::thread thread;
};

std::mutex g_mu;  ///< guards g_exporter and its queue
std::unique_ptr<exporter> g_exporter;
std::atomic<bool> g_enabled{false};

asio::awaitable<void> exchange(const exporter& e, const std::string& body, bool& ok,
                               std::string& why) {
  try {
    auto ex = co_await asio::this_coro::executor;
    asio::ip::tcp::resolver resolver(ex);
    auto endpoints = co_await resolver.async_resolve(e.url.host, std::to_string(e.url.port),
                                                     asio::use_awaitable);
    beast::tcp_stream stream(ex);
    stream.expires_after(std::chrono::milliseconds(e.opts.timeout_ms));
    co_await stream.async_connect(endpoints, asio::use_awaitable);
    http::request<http::string_body> req{http::verb::post, e.target, 11};
    req.set(http::field::host, e.url.host_header);
    req.set(http::field::content_type, "application/json");
    req.set(http::field::user_agent, "switchyard");
    req.body() = body;
    req.prepare_payload();
    co_await http::async_write(stream, req, asio::use_awaitable);
    beast::flat_buffer buffer;
    http::response<http::string_body> res;
    co_await http::async_read(stream, buffer, res, asio::use_awaitable);
    ok = res.result_int() >= 200 && res.result_int() < 300;
    if (!ok) why = "the collector answered HTTP " + std::to_string(res.result_int());
    beast::error_code ignored;
    stream.socket().shutdown(asio::ip::tcp::socket::shutdown_both, ignored);
  } catch (const std::exception& ex) {
    why = ex.what();
  }
}

/// One POST of a batch; false (and why) when it failed: the batch is dropped, not retried, so a
/// collector that is down costs one timeout per batch and no memory.
bool post(const exporter& e, const std::vector<span>& batch, std::string& why) {
  asio::io_context ioc{1};
  bool ok = false;
  asio::co_spawn(ioc, exchange(e, otlp_json(batch, e.opts.service_name), ok, why), asio::detached);
  ioc.run_for(std::chrono::milliseconds(e.opts.timeout_ms + 500));  // resolving has no timeout
  if (!ioc.stopped() && why.empty()) why = "the export timed out";
  return ok;
}

void run(exporter* e) {
  runtime::name_this_thread("sy-trace");
  int64_t failures = 0;
  for (;;) {
    std::vector<span> batch;
    {
      std::unique_lock lock(g_mu);
      e->wake.wait_for(lock, std::chrono::milliseconds(e->opts.interval_ms),
                       [&] { return e->stopping || e->queue.size() >= e->opts.max_batch; });
      if (e->queue.empty()) {
        if (e->stopping) return;
        continue;
      }
      const size_t n = std::min(e->queue.size(), e->opts.max_batch);
      batch.assign(std::make_move_iterator(e->queue.begin()),
                   std::make_move_iterator(e->queue.begin() + static_cast<std::ptrdiff_t>(n)));
      e->queue.erase(e->queue.begin(), e->queue.begin() + static_cast<std::ptrdiff_t>(n));
      e->wake.notify_all();  // a stop waiting for the queue to empty
    }
    std::string why;
    if (post(*e, batch, why)) {
      metrics::spans_exported(batch.size());
      if (failures > 0) log::info("trace", "exporting spans again", {{"failed_batches", failures}});
      failures = 0;
      continue;
    }
    metrics::spans_dropped("export_failed", batch.size());
    if (failures++ == 0)  // once per outage, not once per batch
      log::warn("trace", "exporting spans failed; they are dropped until the collector answers",
                {{"endpoint", e->opts.endpoint}, {"spans", batch.size()}, {"error", why}});
  }
}

nlohmann::json attribute(const std::string& key, nlohmann::json value) {
  return {{"key", key}, {"value", std::move(value)}};
}

}  // namespace

std::string context::traceparent() const {
  if (!valid()) return {};
  char flag_hex[3];
  std::snprintf(flag_hex, sizeof flag_hex, "%02x", flags);
  return "00-" + trace_id + "-" + span_id + "-" + flag_hex;
}

context context::child() const { return context{trace_id, new_span_id(), flags, state}; }

std::optional<context> parse(std::string_view tp, std::string_view state) {
  // version "-" trace-id "-" parent-id "-" flags: 2 + 1 + 32 + 1 + 16 + 1 + 2 = 55 characters.
  if (tp.size() < 55 || tp[2] != '-' || tp[35] != '-' || tp[52] != '-') return std::nullopt;
  const auto version = tp.substr(0, 2);
  if (!lower_hex(version) || version == "ff") return std::nullopt;
  if (version == "00" && tp.size() != 55) return std::nullopt;
  if (version != "00" && tp.size() > 55 && tp[55] != '-') return std::nullopt;
  context c;
  c.trace_id = std::string(tp.substr(3, 32));
  c.span_id = std::string(tp.substr(36, 16));
  const auto flags = tp.substr(53, 2);
  if (!lower_hex(c.trace_id) || !lower_hex(c.span_id) || !lower_hex(flags) ||
      all_zero(c.trace_id) || all_zero(c.span_id))
    return std::nullopt;
  c.flags = static_cast<uint8_t>(hex_value(flags[0]) * 16 + hex_value(flags[1]));
  // Passed on in headers: printable ASCII only (no CR or LF), at most 512 bytes, else dropped.
  const bool printable =
      std::all_of(state.begin(), state.end(), [](char ch) { return ch >= 0x20 && ch <= 0x7e; });
  if (state.size() <= 512 && printable) c.state = std::string(state);
  return c;
}

context start() { return context{new_trace_id(), new_span_id(), 1, {}}; }

stored begin(const context& client) {
  if (!client.valid()) return stored{start(), {}};
  return stored{client.child(), client.span_id};
}

std::string store(const stored& s) {
  std::string out = s.self.traceparent();
  if (!out.empty() && !s.parent_span_id.empty()) out.append("-").append(s.parent_span_id);
  return out;
}

namespace {

/// FNV-1a, 64 bits, from an offset of our own per use: stable across builds and processes.
uint64_t fnv(std::string_view s, uint64_t seed) {
  uint64_t h = 14695981039346656037ULL ^ (seed * 0x9E3779B97F4A7C15ULL);
  for (unsigned char c : s) {
    h ^= c;
    h *= 1099511628211ULL;
  }
  return h == 0 ? 1 : h;  // an id is never all zero
}

std::string hex64(uint64_t v) {
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(v));
  return buf;
}

}  // namespace

std::string to_keep(const context& client) {
  return client.valid() ? store(begin(client)) : std::string();
}

stored of(std::string_view id, std::string_view kept, std::string_view state) {
  if (!kept.empty()) {
    if (auto s = load(kept, state)) return std::move(*s);
  }
  return stored{context{hex64(fnv(id, 1)) + hex64(fnv(id, 2)), hex64(fnv(id, 3)), 1, {}}, {}};
}

std::optional<stored> load(std::string_view text, std::string_view state) {
  if (text.size() < 55) return std::nullopt;
  auto self = parse(text.substr(0, 55), state);
  if (!self) return std::nullopt;
  stored out{std::move(*self), {}};
  if (text.size() == 55 + 1 + 16 && text[55] == '-' && lower_hex(text.substr(56)))
    out.parent_span_id = std::string(text.substr(56));
  return out;
}

std::string new_span_id() { return random_hex(16); }
std::string new_trace_id() { return random_hex(32); }

span make_span(const context& at, std::string_view parent_span_id, std::string name, span_kind kind,
               int64_t start_ms, int64_t end_ms) {
  span s;
  s.trace_id = at.trace_id;
  s.span_id = at.span_id;
  s.parent_span_id = std::string(parent_span_id);
  s.name = std::move(name);
  s.kind = kind;
  s.start_ms = start_ms;
  s.end_ms = std::max(end_ms, start_ms);
  return s;
}

bool enabled() { return g_enabled.load(std::memory_order_relaxed); }

void record_child(std::string_view id, std::string_view kept, std::string name, span_kind kind,
                  int64_t start_ms, int64_t end_ms) {
  if (!enabled()) return;
  const auto at = of(id, kept);
  record(make_span(at.self.child(), at.self.span_id, std::move(name), kind, start_ms, end_ms));
}

void record(span s) {
  if (!enabled() || s.trace_id.empty()) return;
  std::lock_guard lock(g_mu);
  if (!g_exporter) return;
  if (g_exporter->queue.size() >= g_exporter->opts.max_queue) {
    metrics::spans_dropped("queue_full", 1);
    return;
  }
  g_exporter->queue.push_back(std::move(s));
  if (g_exporter->queue.size() >= g_exporter->opts.max_batch) g_exporter->wake.notify_all();
}

bool start_exporter(const exporter_options& o, std::string* why) {
  auto url = config::parse_http_url(o.endpoint, {"otlp_endpoint", errc::invalid_config, ""});
  if (!url || url->tls) {
    if (why) *why = url ? "otlp_endpoint must be an http:// URL" : url.error().message;
    return false;
  }
  stop_exporter(0);
  auto e = std::make_unique<exporter>();
  e->opts = o;
  e->url = *url;
  std::string base = url->target == "/" ? "" : url->target;
  while (!base.empty() && base.back() == '/') base.pop_back();
  e->target = base + "/v1/traces";
  auto* raw = e.get();
  {
    std::lock_guard lock(g_mu);
    g_exporter = std::move(e);
  }
  raw->thread = std::thread(run, raw);
  g_enabled = true;
  log::info("trace", "exporting spans over OTLP/HTTP",
            {{"endpoint", o.endpoint}, {"target", raw->target}});
  return true;
}

void stop_exporter(int64_t flush_ms) {
  g_enabled = false;
  std::unique_ptr<exporter> e;
  {
    std::unique_lock lock(g_mu);
    if (!g_exporter) return;
    // What is queued goes out first, within `flush_ms`; the rest is dropped.
    auto& q = g_exporter->queue;
    g_exporter->wake.notify_all();
    g_exporter->wake.wait_for(lock, std::chrono::milliseconds(flush_ms), [&] { return q.empty(); });
    if (!q.empty()) metrics::spans_dropped("shutdown", q.size());
    q.clear();
    g_exporter->stopping = true;
    g_exporter->wake.notify_all();
    e = std::move(g_exporter);
  }
  e->thread.join();
}

std::string otlp_json(const std::vector<span>& spans, std::string_view service_name) {
  nlohmann::json out = nlohmann::json::array();
  for (const auto& s : spans) {
    nlohmann::json attrs = nlohmann::json::array();
    for (const auto& [k, v] : s.attributes) attrs.push_back(attribute(k, {{"stringValue", v}}));
    for (const auto& [k, v] : s.int_attributes)  // int64 travels as a string in OTLP/JSON
      attrs.push_back(attribute(k, {{"intValue", std::to_string(v)}}));
    nlohmann::json j = {
        {"traceId", s.trace_id},
        {"spanId", s.span_id},
        {"name", s.name},
        {"kind", static_cast<int>(s.kind)},
        {"startTimeUnixNano", std::to_string(s.start_ms * 1'000'000)},
        {"endTimeUnixNano", std::to_string(s.end_ms * 1'000'000)},
        {"attributes", std::move(attrs)},
        {"status", s.error ? nlohmann::json{{"code", 2}, {"message", s.status_message}}
                           : nlohmann::json{{"code", 0}}}};
    if (!s.parent_span_id.empty()) j["parentSpanId"] = s.parent_span_id;
    out.push_back(std::move(j));
  }
  nlohmann::json body = {
      {"resourceSpans",
       {{{"resource",
          {{"attributes", {attribute("service.name", {{"stringValue", service_name}})}}}},
         {"scopeSpans", {{{"scope", {{"name", "switchyard"}}}, {"spans", std::move(out)}}}}}}}};
  return body.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

}  // namespace sy::trace
