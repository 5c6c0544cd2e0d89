#include "runtime/webhook_client.hpp"

#include "runtime/tls.hpp"

#include <openssl/ssl.h>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http.hpp>

#include <algorithm>
#include <chrono>
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

constexpr uint64_t kMaxResponseBytes = uint64_t{64} * 1024;
constexpr size_t kErrorBodyExcerpt = 200;

auto use_ec(error_code& ec) { return asio::redirect_error(asio::use_awaitable, ec); }

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

/// A printable excerpt of a response body for an error message.
std::string excerpt(std::string_view body) {
  std::string out(body.substr(0, kErrorBodyExcerpt));
  for (char& c : out) {
    if (static_cast<unsigned char>(c) < 0x20) c = ' ';
  }
  return out;
}

}  // namespace

// ---------------------------------------------------------------------------------------------
// webhook_client

struct webhook_client::impl {
  asio::any_io_executor ex;
  webhook_policy policy;
  std::string secret;
  std::shared_ptr<const clock> clk;
  std::shared_ptr<ssl::context> tls;  ///< shared by every https delivery; not modified after setup
  std::string tls_error;              ///< why https cannot be used; empty when it can
};

namespace {

using impl_ptr = std::shared_ptr<const webhook_client::impl>;

/// The objects of one delivery that the deadline timer must reach. Owned by the delivery's
/// coroutine; the timer's and the resolver's handlers hold weak references and run on the same
/// strand.
struct attempt {
  explicit attempt(const asio::any_io_executor& ex)
      : resolver(ex), socket(ex), timer(ex), resolve_wait(ex) {}
  tcp::resolver resolver;
  tcp::socket socket;
  asio::steady_timer timer;  ///< the delivery's deadline
  bool timed_out = false;
  std::string phase = "while resolving the host";
  // The lookup's result, delivered by its handler (see resolve()).
  asio::steady_timer resolve_wait;
  error_code resolve_ec = asio::error::operation_aborted;
  tcp::resolver::results_type resolved;
};
using attempt_ptr = std::shared_ptr<attempt>;

http::request<http::string_body> build_request(const webhook_client::impl& self,
                                               const webhook_url& u, std::string body,
                                               const std::string& delivery_id) {
  http::request<http::string_body> req{http::verb::post, u.target, 11};
  req.set(http::field::host, u.host_header);
  req.set(http::field::content_type, "application/json");
  req.set(http::field::user_agent, "switchyard-webhook");
  // Signed now, at send time, so that a delivery retried an hour later is not rejected by a
  // receiver's timestamp tolerance.
  req.set("X-Switchyard-Signature",
          webhook_signature(self.secret, self.clk->now_ms() / 1000, body));
  req.set("X-Switchyard-Delivery", delivery_id);
  req.keep_alive(false);
  req.body() = std::move(body);
  req.prepare_payload();
  return req;
}

/// Writes the request and reads the answer on `stream` (plain or TLS).
template <class Stream>
asio::awaitable<void> exchange(Stream& stream, attempt& a,
                               const http::request<http::string_body>& req, const std::string& peer,
                               webhook_outcome& out) {
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
  parser.body_limit(kMaxResponseBytes);
  co_await http::async_read_header(stream, buffer, parser, use_ec(ec));
  if (ec) {
    out.error = "reading the answer from " + peer + " failed: " + ec.message();
    co_return;
  }
  out.status_code = static_cast<int>(parser.get().result_int());
  if (out.status_code >= 200 && out.status_code <= 299) {
    out.delivered = true;
    co_return;  // the body of a success is of no interest
  }
  // Read (at most 64 KiB of) the body for the error message; a failure here changes nothing.
  co_await http::async_read(stream, buffer, parser, use_ec(ec));
  out.error = "the receiver answered " + std::to_string(out.status_code);
  if (!ec && !parser.get().body().empty()) out.error += ": " + excerpt(parser.get().body());
}

/// Connects to the first of `endpoints` that accepts; returns the peer's text or "" with the
/// failures in `out.error`.
asio::awaitable<std::string> connect_any(attempt& a, const std::vector<tcp::endpoint>& endpoints,
                                         webhook_outcome& out) {
  std::string failures;
  for (const auto& ep : endpoints) {
    if (a.timed_out) break;
    const std::string peer = endpoint_text(ep);
    a.phase = "while connecting to " + peer;
    error_code ec;
    a.socket.close(ec);
    co_await a.socket.async_connect(ep, use_ec(ec));
    if (!ec) co_return peer;
    if (a.timed_out) break;
    if (!failures.empty()) failures += "; ";
    failures += "connect to " + peer + " failed: " + ec.message();
  }
  out.error = failures;
  co_return std::string{};
}

/// Resolves `u.host` into `a->resolved` / `a->resolve_ec`, or returns when the deadline passes.
/// getaddrinfo runs on Asio's resolver thread and cannot be interrupted, so rather than waiting
/// for a lookup that hangs, the delivery waits on `resolve_wait`, which either the lookup's
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
                                  http::request<http::string_body> req, webhook_outcome& out) {
  if (u.tls && !self->tls) {
    out.error = "https is unavailable: " + self->tls_error;
    co_return;
  }
  co_await resolve(a, u);
  if (a->resolve_ec || a->timed_out) {
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
    out.error = "no address of " + u.host + " may receive webhooks: ";
    for (size_t i = 0; i < denials.size(); ++i) out.error += (i ? "; " : "") + denials[i];
    co_return;
  }
  const std::string peer = co_await connect_any(*a, allowed, out);
  if (peer.empty()) co_return;
  if (!u.tls) {
    co_await exchange(a->socket, *a, req, peer, out);
    co_return;
  }
  ssl::stream<tcp::socket&> stream(a->socket, *self->tls);
  error_code ec;
  set_tls_peer(stream.native_handle(), u.host, true);
  a->phase = "during the TLS handshake with " + peer;
  co_await stream.async_handshake(ssl::stream_base::client, use_ec(ec));
  if (ec) {
    if (!a->timed_out)
      out.error =
          "TLS handshake with " + peer + " failed: " + tls_failure(stream.native_handle(), ec);
    co_return;
  }
  co_await exchange(stream, *a, req, peer, out);
}

asio::awaitable<webhook_outcome> run_delivery(impl_ptr self, std::string url, std::string body,
                                              std::string delivery_id) {
  webhook_outcome out;
  auto u = parse_webhook_url(url);
  if (!u) {
    out.permanent = true;
    out.error = u.error().message;
    co_return out;
  }
  if (has_control_chars(delivery_id)) {
    out.permanent = true;
    out.error = "the delivery id contains control characters";
    co_return out;
  }
  try {
    auto a = std::make_shared<attempt>(co_await asio::this_coro::executor);
    a->timer.expires_after(std::chrono::milliseconds(self->policy.timeout_ms));
    a->timer.async_wait([w = std::weak_ptr<attempt>(a)](error_code ec) {
      auto a = w.lock();
      if (ec || !a) return;
      a->timed_out = true;
      a->resolver.cancel();
      a->resolve_wait.cancel();
      a->socket.close(ec);  // every pending operation on it (TLS included) ends with an error
    });
    auto req = build_request(*self, *u, std::move(body), delivery_id);
    co_await run_attempt(self, a, *u, std::move(req), out);
    a->timer.cancel();
    if (a->timed_out && !out.delivered) {
      out.status_code = 0;
      out.error = "timed out after " + std::to_string(self->policy.timeout_ms) + " ms " + a->phase;
    }
  } catch (const std::exception& e) {
    out.delivered = false;
    out.error = std::string("webhook delivery failed: ") + e.what();
  }
  co_return out;
}

/// Runs the delivery on a strand of its own, so that its deadline handler and its I/O never run
/// at the same time, whatever thread pool the caller's executor has.
asio::awaitable<webhook_outcome> deliver_on_strand(impl_ptr self, std::string url, std::string body,
                                                   std::string delivery_id) {
  auto strand = asio::make_strand(self->ex);
  co_return co_await asio::co_spawn(
      strand, run_delivery(self, std::move(url), std::move(body), std::move(delivery_id)),
      asio::use_awaitable);
}

}  // namespace

webhook_client::webhook_client(asio::any_io_executor ex, webhook_policy policy, std::string secret,
                               std::shared_ptr<const clock> clk) {
  auto i = std::make_shared<impl>();
  i->ex = std::move(ex);
  i->policy = std::move(policy);
  i->secret = std::move(secret);
  i->clk = clk ? std::move(clk) : std::make_shared<system_clock_source>();
  tls_client_options tls;
  tls.ca_file = i->policy.ca_file;
  if (auto ctx = make_tls_client_context(tls))
    i->tls = std::move(*ctx);
  else
    i->tls_error = ctx.error().message;
  impl_ = std::move(i);
}

webhook_client::~webhook_client() = default;

asio::awaitable<webhook_outcome> webhook_client::deliver(std::string url, std::string body,
                                                         std::string delivery_id) {
  // Not a coroutine itself: the awaitable it returns starts later and must not refer to `this`,
  // only to the shared impl, so that the client may go away while deliveries are pending.
  return deliver_on_strand(impl_, std::move(url), std::move(body), std::move(delivery_id));
}

}  // namespace sy::runtime
