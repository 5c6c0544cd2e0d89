#include "runtime/trace.hpp"

#include <utility>  // before any Asio/Beast header

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <memory>
#include <mutex>
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
