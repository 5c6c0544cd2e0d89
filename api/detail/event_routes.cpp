// GET /v1/jobs/{id}/events: the job's state changes as server-sent events. The stream reads
// events from storage (job_service::next_events) one batch at a time and writes each batch
// before asking for more, so a slow client holds at most one batch, never a growing queue.

#include <algorithm>

#include "actors/event_json.hpp"
#include "api/detail/request_handler.hpp"
#include "api/detail/responses.hpp"
#include "api/detail/sse.hpp"

namespace sy::api::detail {
namespace {

namespace http = boost::beast::http;
using std::chrono::milliseconds;

}  // namespace

boost::asio::awaitable<reply> request_handler::job_events(const request& req, std::string id) {
  reply out;
  auto tenant = auth_.tenant_for(req[http::field::authorization]);
  if (!tenant) {
    out.res = error_for(tenant.error(), req);
    co_return out;
  }
  core::request get = core::get_job{*tenant, id};
  auto job = co_await core::ask<storage::job_record>(core_, std::move(get));
  if (!job) {
    out.res = error_for(job.error(), req);
    co_return out;
  }
  auto after = parse_last_event_id(req["Last-Event-ID"]);
  if (!after) {
    out.res = error_for(make_error(errc::invalid_value,
                                   "The Last-Event-ID header must be an event id (a decimal "
                                   "sequence number).",
                                   "Last-Event-ID"),
                        req);
    co_return out;
  }
  out.res = response{http::status::ok, req.version()};
  out.res.set(http::field::content_type, "text/event-stream");
  out.res.set(http::field::cache_control, "no-cache");
  out.res.set("X-Accel-Buffering", "no");  // tell reverse proxies not to buffer the stream
  out.res.keep_alive(req.keep_alive());
  out.stream = [this, tenant = std::move(*tenant), id, seq = *after](stream_writer& w) {
    return stream_events(w, tenant, id, seq);
  };
  co_return out;
}

boost::asio::awaitable<void> request_handler::stream_events(stream_writer& out, std::string tenant,
                                                            std::string id, uint64_t after_seq) {
  const runtime::clock& clock = core_.clock();
  int64_t last_write = clock.now_ms();
  while (!out.stopping()) {
    const milliseconds silent{clock.now_ms() - last_write};
    milliseconds wait = std::clamp(milliseconds(events_keepalive_ms_) - silent, milliseconds(0),
                                   stop_check_interval);
    core::request next = core::job_events{tenant, id, after_seq, wait.count()};
    auto batch = co_await core::ask<actors::event_batch>(core_, std::move(next));
    if (!batch) co_return;  // the job is gone (retention) or storage failed: end the stream
    std::string chunk;
    bool terminal = false;
    for (const auto& ev : batch->events) {
      if (ev.seq <= after_seq) continue;
      chunk += sse_event(
          ev.seq, storage::to_string(ev.state),
          actors::event_json(storage::job_event_of(batch->job, ev, inline_result_bytes_)));
      after_seq = ev.seq;
      // A task list that was rerun has a terminal event per run: only the last one ends it.
      if (storage::is_terminal(ev.state) && ev.seq >= batch->job.event_seq) {
        terminal = true;
        break;
      }
    }
    // Resumed after the terminal event: there is nothing more to wait for.
    if (chunk.empty() && storage::is_terminal(batch->job.status) &&
        after_seq >= batch->job.event_seq)
      co_return;
    if (chunk.empty() && clock.now_ms() - last_write >= events_keepalive_ms_) chunk = sse_keepalive;
    if (!chunk.empty()) {
      if (!co_await out.write(std::move(chunk))) co_return;
      last_write = clock.now_ms();
    }
    if (terminal) co_return;
  }
}

}  // namespace sy::api::detail
