#include "tests/fakes/fake_gateway.hpp"

#include <utility>  // before any Asio header

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http.hpp>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstring>
#include <future>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <thread>

#include "tests/fakes/fake_responses.hpp"

namespace sy::fakes {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = asio::ip::tcp;
using json = nlohmann::json;
using error_code = boost::system::error_code;
using socket_ptr = std::shared_ptr<tcp::socket>;
using http_request = http::request<http::string_body>;
using http_response = http::response<http::string_body>;

namespace {

auto use_ec(error_code& ec) { return asio::redirect_error(asio::use_awaitable, ec); }

/// What to do with one request, decided under the lock when it arrives.
struct plan {
  bool control = false;
  bool drop = false;
  int status = 0;  ///< 0: answer normally
  int64_t latency_ms = 0;
  uint64_t seq = 0;
};

/// The optional "fake" object of a request body.
struct body_directives {
  int status = 0;
  int64_t latency_ms = 0;
  int64_t fail_times = 0;
  std::string key;
  bool drop = false;
};

int64_t int_field(const json& j, const char* key) {
  auto it = j.find(key);
  return it != j.end() && it->is_number_integer() ? it->get<int64_t>() : 0;
}

bool bool_field(const json& j, const char* key) {
  auto it = j.find(key);
  return it != j.end() && it->is_boolean() && it->get<bool>();
}

body_directives parse_directives(const std::string& body) {
  body_directives d;
  const json req = json::parse(body, nullptr, false);
  if (req.is_discarded() || !req.is_object()) return d;
  auto f = req.find("fake");
  if (f == req.end() || !f->is_object()) return d;
  d.status = static_cast<int>(int_field(*f, "status"));
  d.latency_ms = int_field(*f, "latency_ms");
  d.fail_times = int_field(*f, "fail_times");
  auto key = f->find("key");
  if (key != f->end() && key->is_string()) d.key = key->get<std::string>();
  d.drop = bool_field(*f, "drop");
  return d;
}

/// What OpenSSL reports for a file it cannot open is a bare "asio.ssl error": say it first.
std::string unreadable(const char* what, const std::string& path) {
  if (std::FILE* f = std::fopen(path.c_str(), "r")) {
    std::fclose(f);
    return {};
  }
  return "fake gateway cannot read " + std::string(what) + " " + path + ": " + std::strerror(errno);
}

/// The server's TLS context from the options, or what failed (empty when TLS is off).
std::string make_tls_context(const fake_gateway_options& o,
                             std::optional<asio::ssl::context>& tls) {
  const bool any = !o.tls_cert_file.empty() || !o.tls_key_file.empty();
  if (!any && o.tls_client_ca_file.empty()) return {};
  if (o.tls_cert_file.empty() || o.tls_key_file.empty()) {
    return "fake gateway: tls_cert_file and tls_key_file must both be set (tls_client_ca_file "
           "needs them too)";
  }
  for (const auto& [what, path] :
       {std::pair{"tls_cert_file", &o.tls_cert_file}, std::pair{"tls_key_file", &o.tls_key_file},
        std::pair{"tls_client_ca_file", &o.tls_client_ca_file}}) {
    if (path->empty()) continue;
    if (std::string err = unreadable(what, *path); !err.empty()) return err;
  }
  asio::ssl::context ctx(asio::ssl::context::tls_server);
  SSL_CTX_set_min_proto_version(ctx.native_handle(), TLS1_2_VERSION);
  error_code ec;
  ctx.use_certificate_chain_file(o.tls_cert_file, ec);
  if (ec) return "fake gateway cannot load tls_cert_file " + o.tls_cert_file + ": " + ec.message();
  // OpenSSL checks here that the key is the certificate's.
  ctx.use_private_key_file(o.tls_key_file, asio::ssl::context::pem, ec);
  if (ec) return "fake gateway cannot load tls_key_file " + o.tls_key_file + ": " + ec.message();
  if (!o.tls_client_ca_file.empty()) {
    ctx.load_verify_file(o.tls_client_ca_file, ec);
    if (ec) {
      return "fake gateway cannot load tls_client_ca_file " + o.tls_client_ca_file + ": " +
             ec.message();
    }
    ctx.set_verify_mode(asio::ssl::verify_peer | asio::ssl::verify_fail_if_no_peer_cert, ec);
    if (ec) return "fake gateway cannot require client certificates: " + ec.message();
  }
  tls.emplace(std::move(ctx));
  return {};
}

received_request to_received(const http_request& req) {
  received_request r;
  r.method = std::string(req.method_string());
  r.target = std::string(req.target());
  for (const auto& field : req) {
    std::string name(field.name_string());
    std::transform(name.begin(), name.end(), name.begin(),
                   [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
    r.headers[name] = std::string(field.value());
  }
  r.body = req.body();
  return r;
}

}  // namespace

// ---------------------------------------------------------------------------------------------

struct fake_gateway::state {
  explicit state(fake_gateway_options o) : options(o), latency_ms(o.latency_ms) {}

  // Set by start() when serving TLS, then read-only. Declared before the io_context so that it
  // outlives the coroutine frames the io_context destroys, whose TLS streams were made from it.
  std::optional<asio::ssl::context> tls;
  // The io_context comes next, so that only the TLS context outlives it: pending coroutine frames
  // that it destroys hold sockets bound to it.
  asio::io_context ioc;
  // Keeps the io threads running while the listener is closed and no connection is open.
  asio::executor_work_guard<asio::io_context::executor_type> work{ioc.get_executor()};
  asio::strand<asio::io_context::executor_type> accept_strand{asio::make_strand(ioc)};
  tcp::acceptor acceptor{accept_strand};
  std::vector<std::thread> threads;
  const fake_gateway_options options;
  uint16_t port = 0;
  uint64_t listen_generation = 0;  // accept_strand only
  bool started = false;

  mutable std::mutex mu;
  mutable std::condition_variable changed;
  int64_t latency_ms = 0;
  int fail_next_n = 0;
  int fail_status = 500;
  int drop_next_n = 0;
  int64_t requests = 0;
  int64_t connections = 0;
  int64_t tls_handshake_failures = 0;
  int in_flight = 0;
  int peak_in_flight = 0;
  uint64_t seq = 0;
  uint64_t next_session = 0;
  std::map<uint64_t, socket_ptr> sessions;
  std::vector<received_request> received;
  std::map<std::string, int64_t> by_key;
  /// The `traceparent` header of the last request of each fake.key that had one.
  std::map<std::string, std::string> traceparent_by_key;
  std::function<void(const received_request&)> callback;

  std::string open_listener(uint16_t at_port);
  void close_listener();
  void set_refusing_async(bool refusing, int64_t for_ms = 0);
  void close_sessions();
  plan decide(const http_request& req);
  void finish_request();
  fake_answer control(const http_request& req);
  void reset();
  asio::awaitable<void> accept_loop(uint64_t generation);
  asio::awaitable<void> session(socket_ptr sock, uint64_t id);
  /// Answers requests on `stream` until the connection ends: the socket, or a TLS stream over it.
  template <class Stream>
  asio::awaitable<void> serve(Stream& stream);
  void unregister(uint64_t id);
};

std::string fake_gateway::state::open_listener(uint16_t at_port) {
  error_code ec;
  const tcp::endpoint ep(asio::ip::make_address_v4("127.0.0.1"), at_port);
  acceptor.open(ep.protocol(), ec);
  if (!ec) acceptor.set_option(asio::socket_base::reuse_address(true), ec);
  if (!ec) acceptor.bind(ep, ec);
  if (!ec) acceptor.listen(asio::socket_base::max_listen_connections, ec);
  if (ec) {
    error_code ignored;
    acceptor.close(ignored);
    return "fake gateway cannot listen on 127.0.0.1:" + std::to_string(at_port) + ": " +
           ec.message();
  }
  port = acceptor.local_endpoint(ec).port();
  asio::co_spawn(accept_strand, accept_loop(++listen_generation), asio::detached);
  return {};
}

void fake_gateway::state::close_listener() {
  ++listen_generation;
  error_code ignored;
  acceptor.close(ignored);
}

asio::awaitable<void> fake_gateway::state::accept_loop(uint64_t generation) {
  for (;;) {
    error_code ec;
    tcp::socket sock = co_await acceptor.async_accept(asio::make_strand(ioc), use_ec(ec));
    if (generation != listen_generation || ec == asio::error::operation_aborted) co_return;
    if (ec) continue;
    auto shared = std::make_shared<tcp::socket>(std::move(sock));
    uint64_t id = 0;
    {
      std::lock_guard lock(mu);
      id = ++next_session;
      ++connections;
      sessions[id] = shared;
    }
    changed.notify_all();
    asio::co_spawn(shared->get_executor(), session(shared, id), asio::detached);
  }
}

void fake_gateway::state::set_refusing_async(bool refusing, int64_t for_ms) {
  asio::post(accept_strand, [this, refusing, for_ms] {
    if (refusing) {
      close_listener();
      close_sessions();
      if (for_ms <= 0) return;
      auto t =
          std::make_shared<asio::steady_timer>(accept_strand, std::chrono::milliseconds(for_ms));
      t->async_wait([this, t](error_code) {
        if (!acceptor.is_open()) (void)open_listener(port);
      });
    } else if (!acceptor.is_open()) {
      (void)open_listener(port);
    }
  });
}

void fake_gateway::state::close_sessions() {
  std::vector<socket_ptr> open;
  {
    std::lock_guard lock(mu);
    for (auto& [id, sock] : sessions) open.push_back(sock);
  }
  for (auto& sock : open) {
    asio::post(sock->get_executor(), [sock] {
      error_code ignored;
      sock->shutdown(tcp::socket::shutdown_both, ignored);
      sock->close(ignored);
    });
  }
}

void fake_gateway::state::unregister(uint64_t id) {
  {
    std::lock_guard lock(mu);
    sessions.erase(id);
  }
  changed.notify_all();
}

plan fake_gateway::state::decide(const http_request& req) {
  plan p;
  if (req.target().starts_with("/_fake/")) {
    p.control = true;
    return p;
  }
  const body_directives d = parse_directives(req.body());
  received_request seen;
  std::function<void(const received_request&)> cb;
  {
    std::lock_guard lock(mu);
    p.seq = ++seq;
    ++requests;
    peak_in_flight = std::max(peak_in_flight, ++in_flight);
    cb = callback;
    if (options.record_requests || cb) seen = to_received(req);  // only for someone who reads it
    if (options.record_requests) received.push_back(seen);
    p.latency_ms = latency_ms + d.latency_ms;
    const int64_t key_count = d.key.empty() ? 0 : ++by_key[d.key];
    if (!d.key.empty() && req.count("traceparent") != 0)
      traceparent_by_key[d.key] = std::string(req["traceparent"]);
    if (drop_next_n > 0) {
      --drop_next_n;
      p.drop = true;
    } else if (fail_next_n > 0) {
      --fail_next_n;
      p.status = fail_status;
    } else if (d.drop) {
      p.drop = true;
    } else if (d.fail_times > 0) {
      if (key_count <= d.fail_times) p.status = d.status > 0 ? d.status : 500;
    } else if (d.status > 0) {
      p.status = d.status;
    }
  }
  changed.notify_all();
  if (cb) cb(seen);
  return p;
}

void fake_gateway::state::finish_request() {
  {
    std::lock_guard lock(mu);
    --in_flight;
  }
  changed.notify_all();
}

void fake_gateway::state::reset() {
  std::lock_guard lock(mu);
  latency_ms = 0;
  fail_next_n = 0;
  fail_status = 500;
  drop_next_n = 0;
  requests = 0;
  connections = 0;
  tls_handshake_failures = 0;
  peak_in_flight = in_flight;
  received.clear();
  by_key.clear();
  traceparent_by_key.clear();
}

fake_answer fake_gateway::state::control(const http_request& req) {
  if (req.target() == "/_fake/stats") {
    std::lock_guard lock(mu);
    json out = {{"requests", requests},
                {"connections", connections},
                {"tls_handshake_failures", tls_handshake_failures},
                {"by_key", by_key},
                {"traceparent_by_key", traceparent_by_key}};
    return {200, out.dump(), {}};
  }
  if (req.target() != "/_fake/control") return error_answer(404, "Unknown fake control path");
  const json c = json::parse(req.body(), nullptr, false);
  if (c.is_discarded() || !c.is_object()) return error_answer(400, "control body is not JSON");
  if (bool_field(c, "reset")) reset();
  {
    std::lock_guard lock(mu);
    if (c.contains("latency_ms")) latency_ms = int_field(c, "latency_ms");
    if (c.contains("fail_next")) fail_next_n = static_cast<int>(int_field(c, "fail_next"));
    if (c.contains("status")) fail_status = static_cast<int>(int_field(c, "status"));
    if (c.contains("drop_next")) drop_next_n = static_cast<int>(int_field(c, "drop_next"));
  }
  if (bool_field(c, "close_connections")) close_sessions();
  if (c.contains("refuse_for_ms")) set_refusing_async(true, int_field(c, "refuse_for_ms"));
  auto refusing = c.find("refusing");
  if (refusing != c.end() && refusing->is_boolean()) set_refusing_async(refusing->get<bool>());
  return {200, R"({"ok":true})", {}};
}

asio::awaitable<void> fake_gateway::state::session(socket_ptr sock, uint64_t id) {
  if (tls) {
    // The TLS stream wraps the registered socket, so close_sessions() closing that socket ends
    // a handshake or a read here as it does on the plain path.
    asio::ssl::stream<tcp::socket&> stream(*sock, *tls);
    error_code ec;
    co_await stream.async_handshake(asio::ssl::stream_base::server, use_ec(ec));
    if (!ec) {
      co_await serve(stream);
    } else if (ec != asio::error::operation_aborted && sock->is_open()) {
      {
        std::lock_guard lock(mu);
        ++tls_handshake_failures;
      }
      changed.notify_all();
    }
  } else {
    co_await serve(*sock);
  }
  error_code ignored;
  sock->shutdown(tcp::socket::shutdown_both, ignored);
  sock->close(ignored);
  unregister(id);
}

template <class Stream>
asio::awaitable<void> fake_gateway::state::serve(Stream& stream) {
  beast::flat_buffer buffer;
  for (;;) {
    http::request_parser<http::string_body> parser;
    parser.body_limit(uint64_t{64} << 20);
    error_code ec;
    co_await http::async_read(stream, buffer, parser, use_ec(ec));
    if (ec) break;
    http_request req = parser.release();
    const plan p = decide(req);
    if (p.drop) {
      finish_request();
      break;
    }
    if (p.latency_ms > 0) {
      asio::steady_timer t(stream.get_executor(), std::chrono::milliseconds(p.latency_ms));
      co_await t.async_wait(use_ec(ec));
    }
    fake_answer a = p.control  ? control(req)
                    : p.status ? error_answer(p.status, "fake failure " + std::to_string(p.status))
                               : openai_answer(std::string(req.method_string()),
                                               std::string(req.target()), req.body(), p.seq);
    http_response res{static_cast<http::status>(a.status), req.version()};
    res.set(http::field::server, "fake-gateway");
    res.set(http::field::content_type, "application/json");
    res.set("x-request-id", "req_fake" + std::to_string(p.control ? 0 : p.seq));
    for (auto& [name, value] : a.headers) res.set(name, value);
    res.keep_alive(req.keep_alive());
    res.body() = std::move(a.body);
    res.prepare_payload();
    co_await http::async_write(stream, res, use_ec(ec));
    if (!p.control) finish_request();
    if (ec || !res.keep_alive()) break;
  }
}

// ---------------------------------------------------------------------------------------------

fake_gateway::fake_gateway(fake_gateway_options options) : s_(std::make_unique<state>(options)) {}

fake_gateway::~fake_gateway() { stop(); }

std::string fake_gateway::start() {
  if (s_->started) return "fake gateway already started";
  if (!s_->tls) {
    if (std::string err = make_tls_context(s_->options, s_->tls); !err.empty()) return err;
  }
  std::string err = s_->open_listener(s_->options.port);
  if (!err.empty()) return err;
  s_->started = true;
  const int n = std::max(1, s_->options.threads);
  for (int i = 0; i < n; ++i) s_->threads.emplace_back([s = s_.get()] { s->ioc.run(); });
  return {};
}

void fake_gateway::stop() {
  if (!s_->started) return;
  s_->started = false;
  s_->ioc.stop();
  for (auto& t : s_->threads) t.join();
  s_->threads.clear();
  error_code ignored;
  s_->acceptor.close(ignored);
  std::lock_guard lock(s_->mu);
  s_->sessions.clear();
}

uint16_t fake_gateway::port() const { return s_->port; }

std::string fake_gateway::url() const { return url_for_host("127.0.0.1"); }

std::string fake_gateway::url_for_host(const std::string& host) const {
  return (s_->tls ? "https://" : "http://") + host + ":" + std::to_string(port());
}

void fake_gateway::set_latency_ms(int64_t ms) {
  std::lock_guard lock(s_->mu);
  s_->latency_ms = ms;
}

void fake_gateway::fail_next(int n, int status) {
  std::lock_guard lock(s_->mu);
  s_->fail_next_n = n;
  s_->fail_status = status;
}

void fake_gateway::drop_next(int n) {
  std::lock_guard lock(s_->mu);
  s_->drop_next_n = n;
}

void fake_gateway::set_refusing(bool refusing) {
  s_->set_refusing_async(refusing);
  // Wait until the accept strand has run the change (it runs after everything posted before).
  std::promise<void> done;
  asio::post(s_->accept_strand, [&done] { done.set_value(); });
  done.get_future().wait();
}

void fake_gateway::close_connections() { s_->close_sessions(); }

void fake_gateway::reset() { s_->reset(); }

void fake_gateway::on_request(std::function<void(const received_request&)> callback) {
  std::lock_guard lock(s_->mu);
  s_->callback = std::move(callback);
}

int64_t fake_gateway::requests() const {
  std::lock_guard lock(s_->mu);
  return s_->requests;
}

int64_t fake_gateway::connections() const {
  std::lock_guard lock(s_->mu);
  return s_->connections;
}

int64_t fake_gateway::tls_handshake_failures() const {
  std::lock_guard lock(s_->mu);
  return s_->tls_handshake_failures;
}

int fake_gateway::open_connections() const {
  std::lock_guard lock(s_->mu);
  return static_cast<int>(s_->sessions.size());
}

int fake_gateway::in_flight() const {
  std::lock_guard lock(s_->mu);
  return s_->in_flight;
}

int fake_gateway::peak_in_flight() const {
  std::lock_guard lock(s_->mu);
  return s_->peak_in_flight;
}

std::vector<std::string> fake_gateway::bodies() const {
  std::lock_guard lock(s_->mu);
  std::vector<std::string> out;
  for (const auto& r : s_->received) out.push_back(r.body);
  return out;
}

std::vector<received_request> fake_gateway::received() const {
  std::lock_guard lock(s_->mu);
  return s_->received;
}

std::map<std::string, int64_t> fake_gateway::requests_by_key() const {
  std::lock_guard lock(s_->mu);
  return s_->by_key;
}

bool fake_gateway::wait_open_connections(int n, int64_t timeout_ms) const {
  std::unique_lock lock(s_->mu);
  return s_->changed.wait_for(lock, std::chrono::milliseconds(timeout_ms),
                              [&] { return static_cast<int>(s_->sessions.size()) == n; });
}

}  // namespace sy::fakes
