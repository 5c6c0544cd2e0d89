#include "runtime/gateway_client.hpp"

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/ssl/error.hpp>
#include <boost/asio/ssl/stream.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <boost/beast/http.hpp>

#include <algorithm>
#include <array>
#include <atomic>
#include <charconv>
#include <chrono>
#include <deque>
#include <optional>
#include <random>
#include <vector>

#include "config/address.hpp"
#include "runtime/await_token.hpp"
#include "runtime/backoff.hpp"
#include "runtime/log.hpp"
#include "runtime/metrics.hpp"
#include "runtime/tls.hpp"

namespace sy::runtime {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
namespace ssl = asio::ssl;
using tcp = asio::ip::tcp;
using strand_t = asio::strand<asio::any_io_executor>;
using error_code = boost::system::error_code;
using abort_ptr = std::shared_ptr<abort_handle>;

/// A request as it goes on the wire: its header block, rendered once per send, and its body.
struct wire_request {
  std::string head;
  std::string body;
};

// ---------------------------------------------------------------------------------------------
// abort_handle

void abort_handle::abort() {
  // The canceller is run and destroyed under the lock: it holds a copy of the client's strand,
  // and clear_canceller() (which the send calls on that strand before it answers) must wait until
  // this thread has dropped that copy. Dropped after the lock, the copy could be the strand's last
  // reference once the send has answered and its owner destroyed the client and io_context: a use
  // after free in ~strand_impl on this (foreign) thread. Running it here cannot deadlock: the
  // canceller only posts to the strand, and post never runs the handler inline.
  std::lock_guard lock(mu_);
  if (aborted_) return;
  aborted_ = true;
  if (canceller_) canceller_();
  canceller_ = nullptr;
}

bool abort_handle::aborted() const {
  std::lock_guard lock(mu_);
  return aborted_;
}

bool abort_handle::set_canceller(std::function<void()> fn) {
  std::lock_guard lock(mu_);
  if (aborted_) return false;
  canceller_ = std::move(fn);
  return true;
}

void abort_handle::clear_canceller() {
  std::lock_guard lock(mu_);
  canceller_ = nullptr;
}

// ---------------------------------------------------------------------------------------------
// helpers

namespace {

constexpr uint64_t kMaxResponseBytes = uint64_t{64} << 20;

bool is_aborted(const abort_ptr& abort) { return abort && abort->aborted(); }

/// The parts of a gateway URL that a request needs.
struct gateway_url {
  bool tls = false;       ///< https
  std::string authority;  ///< host[:port] for the Host header (the port when not the default)
  std::string host;
  std::string port;
  std::string prefix;  ///< path prefix without a trailing slash, possibly empty
  std::string error;   ///< why the URL is unusable; empty when it is fine
};

/// The request parts of `url`, read by the one gateway URL parser (config::parse_gateway_url,
/// which also validated the setting at startup).
gateway_url parse_url(const std::string& url) {
  gateway_url out;
  auto parsed = config::parse_gateway_url(url);
  if (!parsed) {
    out.error = "invalid gateway url '" + url + "': " + parsed.error().message;
    return out;
  }
  out.tls = parsed->tls;
  out.host = parsed->host;
  out.port = std::to_string(parsed->port);
  out.prefix = parsed->prefix;
  out.authority = out.host.find(':') != std::string::npos ? "[" + out.host + "]" : out.host;
  if (parsed->port != (out.tls ? 443 : 80)) out.authority += ":" + out.port;
  return out;
}

/// The TLS context of an https gateway (none for http), or why there cannot be one in `error`.
std::shared_ptr<ssl::context> tls_context_for(const gateway_url& url,
                                              const sy::config::gateway_settings& s,
                                              std::string& error) {
  if (!url.tls || !url.error.empty()) return nullptr;
  if (s.tls_insecure_skip_verify)
    log::warn("gateway", "TLS certificate verification is off for this gateway",
              {{"url", s.url}, {"setting", "tls_insecure_skip_verify"}});
  auto ctx = make_tls_client_context(tls_client_options{s.tls_ca_cert_file, s.tls_client_cert_file,
                                                        s.tls_client_key_file,
                                                        s.tls_insecure_skip_verify});
  if (ctx) return std::move(*ctx);
  error = "gateway " + s.url + ": " + ctx.error().message;
  return nullptr;
}

/// One keep-alive connection. Owned by the pool while idle, by one send while busy. Over https
/// its TLS layer runs on `stream`, whose deadline and close() govern both.
struct connection {
  connection(const strand_t& ex, ssl::context* tls) : stream(ex) {
    if (tls) secure.emplace(stream, *tls);
  }
  beast::tcp_stream stream;
  std::optional<ssl::stream<beast::tcp_stream&>> secure;
  beast::flat_buffer buffer;
  bool connected = false;
};
using conn_ptr = std::shared_ptr<connection>;

/// What one send is waiting on right now, so that an abort can cancel exactly that.
/// Touched only on the client's strand (the abort posts there).
struct wait_state {
  conn_ptr conn;
  /// A wait for a free connection: an Asio timer that never expires, used as an event (a
  /// release or an abort cancels it), so it reads no time and is not the clock's.
  std::shared_ptr<asio::steady_timer> waiter;
  timer* pause = nullptr;  ///< the retry pause, a timer of the client's clock

  void cancel() {
    if (conn) conn->stream.close();
    if (waiter) waiter->cancel();
    if (pause) pause->cancel();
  }
};

/// The result of one HTTP exchange on one connection.
struct exchange {
  bool attempted = false;  ///< a connection was taken and the exchange begun
  bool got_response = false;
  bool reusable = false;  ///< the connection may go back to the pool
  bool stale = false;     ///< failed before any response byte, not by timeout or abort
  int status = 0;
  std::string body;
  std::string request_id;
  std::string error;
  int64_t retry_after_s = -1;  ///< Retry-After in seconds, -1 when absent or not a number
};

/// Host, Content-Type, Accept, User-Agent (unless configured), the configured headers and (with
/// an API key) the Authorization line. Validation refused control characters in every value.
std::string render_fixed_headers(const gateway_url& url,
                                 const sy::config::gateway_settings& settings) {
  std::string h = "Host: " + url.authority + "\r\n";
  h += "Content-Type: application/json\r\nAccept: application/json\r\n";
  bool own_agent = false;
  for (const auto& extra : settings.headers) {
    own_agent = own_agent || boost::beast::iequals(extra.name, "user-agent");
    h.append(extra.name).append(": ").append(extra.value).append("\r\n");
  }
  if (!own_agent) h += "User-Agent: switchyard/0.1\r\n";
  if (!settings.api_key.empty()) h += "Authorization: Bearer " + settings.api_key + "\r\n";
  return h;
}

int64_t parse_retry_after(std::string_view value) {
  int64_t seconds = -1;
  auto [end, ec] = std::from_chars(value.data(), value.data() + value.size(), seconds);
  return ec == std::errc{} && end == value.data() + value.size() && seconds >= 0 ? seconds : -1;
}

}  // namespace

// ---------------------------------------------------------------------------------------------
// impl

struct gateway_client::impl {
  impl(const asio::any_io_executor& ex, sy::config::gateway_settings s, const clock& c)
      : strand(asio::make_strand(ex)),
        clk(c),
        settings(std::move(s)),
        url(parse_url(settings.url)),
        tls(tls_context_for(url, settings, tls_error)),
        fixed_headers(render_fixed_headers(url, settings)),
        rng(std::random_device{}()) {}

  asio::awaitable<gateway_outcome> run(gateway_request request, abort_ptr abort);

  strand_t strand;
  const clock& clk;  ///< the retry pauses follow it
  const sy::config::gateway_settings settings;
  const gateway_url url;
  std::string tls_error;  ///< why an https gateway has no TLS context (every send fails with it)
  const std::shared_ptr<ssl::context> tls;
  /// Every header but Content-Length, each ending in CRLF (see build).
  const std::string fixed_headers;
  std::atomic<int> open_count{0};

 private:
  wire_request build(gateway_request request) const;
  asio::awaitable<exchange> try_once(const wire_request& req, wait_state& ws,
                                     const abort_ptr& abort);
  asio::awaitable<conn_ptr> acquire(bool fresh, bool& reused, wait_state& ws,
                                    const abort_ptr& abort);
  asio::awaitable<exchange> exchange_on(connection& c, const wire_request& req,
                                        const abort_ptr& abort);
  asio::awaitable<bool> open(connection& c, exchange& ex, const abort_ptr& abort);
  template <class Stream>
  asio::awaitable<void> talk(Stream& s, connection& c, const wire_request& req, exchange& ex);
  asio::awaitable<bool> sleep(int64_t ms, wait_state& ws, const abort_ptr& abort);
  void release(conn_ptr c, bool reusable);
  void drop_idle();
  void notify_one();
  std::string describe(const error_code& ec) const;
  int64_t retry_delay_ms(int retry, const exchange& ex);
  void apply(gateway_outcome& out, exchange&& ex) const;

  // Pool state, strand only.
  std::vector<conn_ptr> idle_;
  int open_ = 0;
  /// Sends waiting for a free connection, woken in turn by release() (see wait_state::waiter).
  std::deque<std::shared_ptr<asio::steady_timer>> waiters_;
  std::mt19937_64 rng;
};

// The header block is written as text: the same for every request of a client but for the
// target and Content-Length, so one string per send instead of a Beast field list (a node per
// field) and its serializer. HTTP/1.1 keeps the connection alive without a Connection header.
wire_request gateway_client::impl::build(gateway_request request) const {
  wire_request w;
  const std::string length = std::to_string(request.body.size());
  w.head.reserve(fixed_headers.size() + url.prefix.size() + request.path.size() + length.size() +
                 40);
  w.head.append("POST ").append(url.prefix);
  if (request.path.empty() || request.path[0] != '/') w.head.push_back('/');
  w.head.append(request.path).append(" HTTP/1.1\r\n").append(fixed_headers);
  if (!request.traceparent.empty()) {  // W3C trace context (runtime/trace.hpp checked both)
    w.head.append("traceparent: ").append(request.traceparent).append("\r\n");
    if (!request.tracestate.empty())
      w.head.append("tracestate: ").append(request.tracestate).append("\r\n");
  }
  w.head.append("Content-Length: ").append(length).append("\r\n\r\n");
  w.body = std::move(request.body);
  return w;
}

asio::awaitable<gateway_outcome> gateway_client::impl::run(gateway_request request,
                                                           abort_ptr abort) {
  gateway_outcome out;
  metrics::request_meter meter(request.model, clk);  // in flight until this frame ends
  if (!url.error.empty() || !tls_error.empty()) {
    out.error = url.error.empty() ? tls_error : url.error;
    meter.finish(false, 0, 0, false);
    co_return out;
  }
  auto ws = std::make_shared<wait_state>();
  auto canceller = [w = std::weak_ptr<wait_state>(ws), s = strand] {
    asio::post(s, [w] {
      if (auto p = w.lock()) p->cancel();
    });
  };
  if (abort && !abort->set_canceller(canceller)) {
    out.error = "aborted";
    meter.finish(false, 0, 0, true);
    co_return out;
  }
  const int max_retries = request.max_tries > 0 ? request.max_tries - 1 : settings.max_retries;
  const wire_request req = build(std::move(request));
  bool aborted = false;
  for (int retry = 0;; ++retry) {
    exchange ex = co_await try_once(req, *ws, abort);
    out.tries += ex.attempted ? 1 : 0;
    // A response that arrived is kept even if an abort races with it; only an exchange that
    // failed (typically because the abort closed its connection) reports "aborted".
    if (!ex.got_response && is_aborted(abort)) {
      aborted = true;
      break;
    }
    const int64_t delay_ms = retry_delay_ms(retry, ex);
    apply(out, std::move(ex));
    if (!out.retryable || retry >= max_retries) break;
    if (!co_await sleep(delay_ms, *ws, abort)) {
      aborted = true;
      break;
    }
  }
  if (abort) abort->clear_canceller();
  if (aborted) {
    const int tries = out.tries;
    out = gateway_outcome{};
    out.error = "aborted";
    out.tries = tries;
  }
  meter.finish(out.got_response, out.status_code, out.tries, aborted);
  co_return out;
}

void gateway_client::impl::apply(gateway_outcome& out, exchange&& ex) const {
  out.got_response = ex.got_response;
  out.status_code = ex.status;
  out.request_id = std::move(ex.request_id);
  if (!ex.got_response) {
    out.body.clear();
    out.retryable = true;
    out.error = std::move(ex.error);
    return;
  }
  out.retryable = retryable_status(ex.status);
  out.error.clear();
  if (ex.status < 200 || ex.status > 299) {
    out.error = "gateway answered HTTP " + std::to_string(ex.status);
    if (!ex.body.empty()) out.error += ": " + body_excerpt(ex.body);
  }
  out.body = std::move(ex.body);
}

int64_t gateway_client::impl::retry_delay_ms(int retry, const exchange& ex) {
  const bool throttled = ex.got_response && (ex.status == 429 || ex.status == 503);
  if (throttled && ex.retry_after_s >= 0) {
    const int64_t cap = std::max<int64_t>(settings.max_backoff_ms, 0);
    return ex.retry_after_s > cap / 1000 ? cap : ex.retry_after_s * 1000;
  }
  std::uniform_real_distribution<double> jitter(0.0, 1.0);
  return backoff_delay_ms(retry, settings.initial_backoff_ms, settings.max_backoff_ms, jitter(rng));
}

asio::awaitable<exchange> gateway_client::impl::try_once(const wire_request& req, wait_state& ws,
                                                         const abort_ptr& abort) {
  bool fresh = false;
  for (;;) {
    bool reused = false;
    conn_ptr c = co_await acquire(fresh, reused, ws, abort);
    if (!c) co_return exchange{};
    ws.conn = c;
    exchange ex = co_await exchange_on(*c, req, abort);
    ws.conn.reset();
    release(c, ex.reusable && !is_aborted(abort));
    // A pooled connection that the gateway closed while it sat idle fails before any response
    // byte; that is not the gateway failing this request, so try once more on a new connection.
    if (ex.stale && reused && !fresh && !is_aborted(abort)) {
      fresh = true;
      continue;
    }
    co_return ex;
  }
}

asio::awaitable<conn_ptr> gateway_client::impl::acquire(bool fresh, bool& reused, wait_state& ws,
                                                        const abort_ptr& abort) {
  const int cap = std::max(1, settings.max_connections);
  for (;;) {
    if (is_aborted(abort)) co_return nullptr;
    if (fresh) drop_idle();
    if (!idle_.empty()) {
      conn_ptr c = std::move(idle_.back());
      idle_.pop_back();
      reused = true;
      co_return c;
    }
    if (open_ < cap) {
      open_count = ++open_;
      reused = false;
      co_return std::make_shared<connection>(strand, tls.get());
    }
    auto t = std::make_shared<asio::steady_timer>(strand, asio::steady_timer::time_point::max());
    waiters_.push_back(t);
    ws.waiter = t;
    error_code ec;
    co_await t->async_wait(use_ec(ec));
    ws.waiter.reset();
    auto it = std::find(waiters_.begin(), waiters_.end(), t);
    if (it != waiters_.end()) {
      waiters_.erase(it);  // cancelled by an abort, not woken by a release
    } else if (is_aborted(abort)) {
      notify_one();  // woken, but giving up: pass the wake-up on
    }
  }
}

void gateway_client::impl::release(conn_ptr c, bool reusable) {
  if (reusable && c->connected) {
    idle_.push_back(std::move(c));
  } else {
    c->stream.close();
    open_count = --open_;
  }
  notify_one();
}

void gateway_client::impl::drop_idle() {
  for (auto& c : idle_) c->stream.close();
  open_ -= static_cast<int>(idle_.size());
  open_count = open_;
  idle_.clear();
}

void gateway_client::impl::notify_one() {
  if (waiters_.empty()) return;
  auto t = std::move(waiters_.front());
  waiters_.pop_front();
  t->cancel();
}

std::string gateway_client::impl::describe(const error_code& ec) const {
  if (ec == beast::error::timeout) {
    return "timeout after " + std::to_string(settings.request_timeout_ms) + " ms";
  }
  if (ec == http::error::end_of_stream || ec == asio::error::eof ||
      ec == ssl::error::stream_truncated) {
    return "connection closed by the gateway";
  }
  return ec.message();
}

/// Connects `c` (and over https does the TLS handshake); false with `ex.error` when it failed.
asio::awaitable<bool> gateway_client::impl::open(connection& c, exchange& ex,
                                                 const abort_ptr& abort) {
  error_code ec;
  const std::string where = url.host + ":" + url.port;
  tcp::resolver resolver(strand);
  auto endpoints = co_await resolver.async_resolve(url.host, url.port, use_ec(ec));
  if (!ec && is_aborted(abort)) ec = asio::error::operation_aborted;
  if (ec) {
    ex.error = "resolve " + where + ": " + describe(ec);
    co_return false;
  }
  co_await c.stream.async_connect(endpoints, use_ec(ec));
  if (ec) {
    ex.error = "connect " + where + ": " + describe(ec);
    co_return false;
  }
  // Requests are small and answered one at a time: never hold a write back for Nagle.
  c.stream.socket().set_option(tcp::no_delay(true), ec);
  ec = {};
  if (c.secure) {
    set_tls_peer(c.secure->native_handle(), url.host, !settings.tls_insecure_skip_verify);
    co_await c.secure->async_handshake(ssl::stream_base::client, use_ec(ec));
    if (ec) {
      ex.error =
          "TLS handshake with " + where + " failed: " +
          (ec == beast::error::timeout ? describe(ec) : tls_failure(c.secure->native_handle(), ec));
      co_return false;
    }
  }
  c.connected = true;
  co_return true;
}

/// Writes the request and reads the answer on `s` (the connection's TCP or TLS stream).
template <class Stream>
asio::awaitable<void> gateway_client::impl::talk(Stream& s, connection& c, const wire_request& req,
                                                 exchange& ex) {
  error_code ec;
  const std::array<asio::const_buffer, 2> wire{asio::buffer(req.head), asio::buffer(req.body)};
  co_await asio::async_write(s, wire, use_ec(ec));
  const bool cut = ec && ec != beast::error::timeout && ec != asio::error::operation_aborted;
  if (ec) {
    ex.stale = cut;
    ex.error = "write request: " + describe(ec);
    co_return;
  }
  http::response_parser<http::string_body> parser;
  parser.body_limit(kMaxResponseBytes);
  co_await http::async_read(s, c.buffer, parser, use_ec(ec));
  if (ec) {
    ex.stale =
        !parser.got_some() && ec != beast::error::timeout && ec != asio::error::operation_aborted;
    ex.error = "read response: " + describe(ec);
    co_return;
  }
  c.stream.expires_never();
  auto& res = parser.get();
  ex.got_response = true;
  ex.status = static_cast<int>(res.result_int());
  ex.request_id = std::string(res["x-request-id"]);
  ex.retry_after_s = parse_retry_after(res[http::field::retry_after]);
  ex.reusable = res.keep_alive();
  ex.body = std::move(res.body());
}

asio::awaitable<exchange> gateway_client::impl::exchange_on(connection& c, const wire_request& req,
                                                            const abort_ptr& abort) {
  exchange ex;
  ex.attempted = true;
  c.stream.expires_after(std::chrono::milliseconds(settings.request_timeout_ms));
  if (!c.connected && !co_await open(c, ex, abort)) co_return ex;
  if (c.secure)
    co_await talk(*c.secure, c, req, ex);
  else
    co_await talk(c.stream, c, req, ex);
  co_return ex;
}

asio::awaitable<bool> gateway_client::impl::sleep(int64_t ms, wait_state& ws,
                                                  const abort_ptr& abort) {
  if (is_aborted(abort)) co_return false;
  // The pause follows the injected clock (a test's manual clock decides when it is over).
  const auto t = clk.make_timer(strand);
  ws.pause = t.get();
  co_await async_wait(*t, ms, asio::use_awaitable);
  ws.pause = nullptr;
  co_return !is_aborted(abort);
}

// ---------------------------------------------------------------------------------------------
// gateway_client

namespace {
const clock& system_time() {
  static const system_clock_source source;
  return source;
}
}  // namespace

gateway_client::gateway_client(const asio::any_io_executor& executor,
                               sy::config::gateway_settings settings, const clock& clk)
    : impl_(std::make_shared<impl>(executor, std::move(settings), clk)) {}

gateway_client::gateway_client(const asio::any_io_executor& executor,
                               sy::config::gateway_settings settings)
    : gateway_client(executor, std::move(settings), system_time()) {}

gateway_client::~gateway_client() = default;

asio::awaitable<gateway_outcome> gateway_client::send(gateway_request request,
                                                      std::shared_ptr<abort_handle> abort) {
  // The exchange runs on the client's strand, whatever executor the caller's coroutine uses; a
  // coroutine whose executor is that strand runs it inline. (Not running_in_this_thread(): a
  // caller on another executor can be resumed inline inside one of the strand's handlers.)
  auto self = impl_;
  const asio::any_io_executor mine = co_await asio::this_coro::executor;
  if (mine == asio::any_io_executor(self->strand))
    co_return co_await self->run(std::move(request), std::move(abort));
  co_return co_await asio::co_spawn(self->strand, self->run(std::move(request), std::move(abort)),
                                    asio::use_awaitable);
}

int gateway_client::open_connections() const { return impl_->open_count.load(); }

asio::any_io_executor gateway_client::executor() const { return impl_->strand; }

const sy::config::gateway_settings& gateway_client::settings() const { return impl_->settings; }

}  // namespace sy::runtime
