#include "runtime/outbound_http.hpp"

#include "runtime/await_token.hpp"
#include "runtime/tls.hpp"

#include <openssl/ssl.h>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http.hpp>

#include <algorithm>
#include <vector>

namespace sy::runtime {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
namespace ip = asio::ip;
namespace ssl = asio::ssl;
using tcp = ip::tcp;
using error_code = boost::system::error_code;

namespace {

std::string endpoint_text(const tcp::endpoint& ep) {
  const std::string a = ep.address().to_string();
  return (ep.address().is_v6() ? "[" + a + "]" : a) + ":" + std::to_string(ep.port());
}

bool has_control_chars(std::string_view text) {
  return std::any_of(text.begin(), text.end(), [](char c) {
    const auto u = static_cast<unsigned char>(c);
    return u < 0x20 || u == 0x7F;
  });
}

}  // namespace

// ---------------------------------------------------------------------------------------------
// outbound_client

struct outbound_client::impl {
  asio::any_io_executor ex;
  std::shared_ptr<const clock> clk;  ///< the exchanges' deadlines follow it
  webhook_policy policy;
  std::shared_ptr<ssl::context> tls;  ///< shared by every https exchange; not modified after setup
  std::string tls_error;              ///< why https cannot be used; empty when it can
};

namespace {

using impl_ptr = std::shared_ptr<const outbound_client::impl>;
using abort_ptr = std::shared_ptr<abort_handle>;

/// The objects of one exchange that the deadline timer and an abort must reach. Owned by the
/// exchange's coroutine; the timer's and the resolver's handlers hold weak references and run on
/// the same strand.
struct attempt {
  attempt(const asio::any_io_executor& ex, const clock& clk)
      : resolver(ex), socket(ex), deadline(clk.make_timer(ex)), resolve_wait(ex) {}
  tcp::resolver resolver;
  tcp::socket socket;
  /// The exchange's deadline (the policy's timeout_ms: a webhook's, an http task's), a timer of
  /// the client's clock.
  std::unique_ptr<timer> deadline;
  bool timed_out = false;
  bool aborted = false;
  std::string phase = "while resolving the host";
  // The lookup's result, delivered by its handler (see resolve()). An Asio timer that never
  // expires, used as an event: it reads no time (the deadline above bounds the wait).
  asio::steady_timer resolve_wait;
  error_code resolve_ec = asio::error::operation_aborted;
  tcp::resolver::results_type resolved;
};
using attempt_ptr = std::shared_ptr<attempt>;

/// Stops every pending operation of the exchange (the deadline passed, or an abort came).
void stop(attempt& a) {
  error_code ec;
  a.resolver.cancel();
  a.resolve_wait.cancel();
  a.socket.close(ec);  // every pending operation on it (TLS included) ends with an error
}

http::request<http::string_body> build_request(const webhook_url& u, outbound_request& r,
                                               http::verb verb) {
  http::request<http::string_body> req{verb, u.target, 11};
  req.set(http::field::host, u.host_header);
  for (auto& [name, value] : r.headers) req.set(name, value);
  req.keep_alive(false);
  req.body() = std::move(r.body);
  if (!req.body().empty() || verb == http::verb::post || verb == http::verb::put ||
      verb == http::verb::patch)
    req.prepare_payload();
  return req;
}

/// Writes the request and reads the answer on `stream` (plain or TLS).
template <class Stream>
asio::awaitable<void> exchange(Stream& stream, attempt& a,
                               const http::request<http::string_body>& req, const std::string& peer,
                               const outbound_options& o, outbound_response& out) {
  error_code ec;
  a.phase = "while sending the request to " + peer;
  co_await http::async_write(stream, req, use_ec(ec));
  if (ec) {
    out.error = "send to " + peer + " failed: " + ec.message();
    co_return;
  }
  a.phase = "waiting for the answer from " + peer;
  beast::flat_buffer buffer;
  http::response_parser<http::string_body> parser;
  parser.body_limit(o.max_body_bytes);
  if (req.method() == http::verb::head) parser.skip(true);
  co_await http::async_read_header(stream, buffer, parser, use_ec(ec));
  if (ec) {
    out.error = "reading the answer from " + peer + " failed: " + ec.message();
    co_return;
  }
  const int status = static_cast<int>(parser.get().result_int());
  const bool success = status >= 200 && status <= 299;
  if (success && !o.read_success_body) {
    out.answered = true;
    out.status_code = status;
    co_return;  // the body of a success is of no interest
  }
  a.phase = "while reading the answer's body from " + peer;
  co_await http::async_read(stream, buffer, parser, use_ec(ec));
  if (ec && success) {  // a success whose body cannot be read whole is no answer
    out.error = ec == http::error::body_limit
                    ? "the answer from " + peer + " is longer than " +
                          std::to_string(o.max_body_bytes) + " bytes"
                    : "reading the answer's body from " + peer + " failed: " + ec.message();
    out.permanent = ec == http::error::body_limit;
    co_return;
  }
  out.answered = true;
  out.status_code = status;
  if (!ec) out.body = std::move(parser.get().body());
  if (!success) {
    // The body of a failure is read for the error message; failing to read it changes nothing.
    out.error = o.peer_noun + " answered " + std::to_string(status);
    if (!out.body.empty()) out.error += ": " + body_excerpt(out.body);
  }
}

/// Connects to the first of `endpoints` that accepts; returns the peer's text or "" with the
/// failures in `out.error`.
asio::awaitable<std::string> connect_any(attempt& a, const std::vector<tcp::endpoint>& endpoints,
                                         outbound_response& out) {
  std::string failures;
  for (const auto& ep : endpoints) {
    if (a.timed_out || a.aborted) break;
    const std::string peer = endpoint_text(ep);
    a.phase = "while connecting to " + peer;
    error_code ec;
    a.socket.close(ec);
    co_await a.socket.async_connect(ep, use_ec(ec));
    if (!ec) co_return peer;
    if (a.timed_out || a.aborted) break;
    if (!failures.empty()) failures += "; ";
    failures += "connect to " + peer + " failed: " + ec.message();
  }
  out.error = failures;
  co_return std::string{};
}

/// Resolves `u.host` into `a->resolved` / `a->resolve_ec`, or returns when the deadline passes.
/// getaddrinfo runs on Asio's resolver thread and cannot be interrupted, so rather than waiting
/// for a lookup that hangs, the exchange waits on `resolve_wait`, which either the lookup's
/// handler or the deadline cancels; a late result is dropped with the attempt.
asio::awaitable<void> resolve(const attempt_ptr& a, const webhook_url& u) {
  a->resolve_wait.expires_at(asio::steady_timer::time_point::max());
  a->resolver.async_resolve(
      u.host, std::to_string(u.port),
      [w = std::weak_ptr<attempt>(a)](error_code ec, tcp::resolver::results_type results) {
        auto a = w.lock();
        if (!a) return;
        a->resolve_ec = ec;
        a->resolved = std::move(results);
        a->resolve_wait.cancel();
      });
  error_code ignored;
  co_await a->resolve_wait.async_wait(use_ec(ignored));
}

asio::awaitable<void> run_attempt(impl_ptr self, attempt_ptr a, const webhook_url& u,
                                  http::request<http::string_body> req, const outbound_options& o,
                                  outbound_response& out) {
  if (u.tls && !self->tls) {
    out.error = "https is unavailable: " + self->tls_error;
    co_return;
  }
  co_await resolve(a, u);
  if (a->resolve_ec || a->timed_out || a->aborted) {
    out.error = "resolve " + u.host + " failed: " + a->resolve_ec.message();
    co_return;
  }
  std::vector<tcp::endpoint> allowed;
  std::vector<std::string> denials;
  for (const auto& entry : a->resolved) {
    const tcp::endpoint ep = entry.endpoint();
    if (std::find(allowed.begin(), allowed.end(), ep) != allowed.end()) continue;
    if (auto why = address_denial(ep.address(), self->policy); why.empty()) {
      allowed.push_back(ep);
    } else if (std::find(denials.begin(), denials.end(), why) == denials.end()) {
      denials.push_back(std::move(why));
    }
  }
  if (allowed.empty()) {
    out.permanent = true;
    out.denied = true;
    out.error = "no address of " + u.host + " " + o.reached_as + ": ";
    for (size_t i = 0; i < denials.size(); ++i) out.error += (i ? "; " : "") + denials[i];
    co_return;
  }
  const std::string peer = co_await connect_any(*a, allowed, out);
  if (peer.empty()) co_return;
  if (!u.tls) {
    co_await exchange(a->socket, *a, req, peer, o, out);
    co_return;
  }
  ssl::stream<tcp::socket&> stream(a->socket, *self->tls);
  error_code ec;
  set_tls_peer(stream.native_handle(), u.host, true);
  a->phase = "during the TLS handshake with " + peer;
  co_await stream.async_handshake(ssl::stream_base::client, use_ec(ec));
  if (ec) {
    if (!a->timed_out && !a->aborted)
      out.error =
          "TLS handshake with " + peer + " failed: " + tls_failure(stream.native_handle(), ec);
    co_return;
  }
  co_await exchange(stream, *a, req, peer, o, out);
}

/// The verb of `method` (an extension method is sent as it is spelled).
http::verb verb_of(const std::string& method) { return http::string_to_verb(method); }

asio::awaitable<outbound_response> run_exchange(impl_ptr self, outbound_request r,
                                                outbound_options o, abort_ptr abort) {
  outbound_response out;
  auto u = parse_webhook_url(r.url);
  if (!u) {
    out.permanent = true;
    out.error = u.error().message;
    co_return out;
  }
  for (const auto& [name, value] : r.headers) {
    if (has_control_chars(name) || has_control_chars(value)) {
      out.permanent = true;
      out.error = "the header " + name + " contains control characters";
      co_return out;
    }
  }
  const http::verb verb = verb_of(r.method);
  if (verb == http::verb::unknown) {
    out.permanent = true;
    out.error = "the method " + r.method + " is not an HTTP method";
    co_return out;
  }
  try {
    auto a = std::make_shared<attempt>(co_await asio::this_coro::executor, *self->clk);
    a->deadline->wait(self->policy.timeout_ms, [w = std::weak_ptr<attempt>(a)](bool fired) {
      if (!fired) return;
      auto a = w.lock();
      if (!a) return;
      a->timed_out = true;
      stop(*a);
    });
    if (abort) {
      auto strand = co_await asio::this_coro::executor;
      const bool armed = abort->set_canceller([w = std::weak_ptr<attempt>(a), strand] {
        asio::post(strand, [w] {
          if (auto a = w.lock()) {
            a->aborted = true;
            stop(*a);
          }
        });
      });
      if (!armed) a->aborted = true;
    }
    if (!a->aborted) co_await run_attempt(self, a, *u, build_request(*u, r, verb), o, out);
    if (abort) abort->clear_canceller();
    a->deadline->cancel();
    if (a->aborted && !out.answered) {
      out.aborted = true;
      out.error = "aborted";
    } else if (a->timed_out && !out.answered) {
      out.error = "timed out after " + std::to_string(self->policy.timeout_ms) + " ms " + a->phase;
    }
  } catch (const std::exception& e) {
    out = {};
    out.error = std::string("the exchange failed: ") + e.what();
  }
  co_return out;
}

/// Runs the exchange on a strand of its own, so that its deadline and abort handlers and its
/// I/O never run at the same time, whatever thread pool the caller's executor has.
asio::awaitable<outbound_response> send_on_strand(impl_ptr self, outbound_request r,
                                                  outbound_options o, abort_ptr abort) {
  auto strand = asio::make_strand(self->ex);
  co_return co_await asio::co_spawn(
      strand, run_exchange(self, std::move(r), std::move(o), std::move(abort)),
      asio::use_awaitable);
}

}  // namespace

outbound_client::outbound_client(asio::any_io_executor ex, webhook_policy policy,
                                 std::shared_ptr<const clock> clk) {
  auto i = std::make_shared<impl>();
  i->ex = std::move(ex);
  i->clk = clk ? std::move(clk) : std::make_shared<system_clock_source>();
  i->policy = std::move(policy);
  tls_client_options tls;
  tls.ca_file = i->policy.ca_file;
  if (auto ctx = make_tls_client_context(tls))
    i->tls = std::move(*ctx);
  else
    i->tls_error = ctx.error().message;
  impl_ = std::move(i);
}

outbound_client::~outbound_client() = default;

const webhook_policy& outbound_client::policy() const { return impl_->policy; }

asio::awaitable<outbound_response> outbound_client::send(
    outbound_request req, outbound_options options, std::shared_ptr<abort_handle> abort) const {
  // Not a coroutine itself: the awaitable it returns starts later and must not refer to `this`,
  // only to the shared impl, so that the client may go away while exchanges are pending.
  return send_on_strand(impl_, std::move(req), std::move(options), std::move(abort));
}

}  // namespace sy::runtime
