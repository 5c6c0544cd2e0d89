#include "tests/fakes/webhook_receiver.hpp"

#include <utility>  // before any Asio header

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http.hpp>

#include <algorithm>
#include <charconv>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <optional>
#include <thread>

namespace sy::fakes {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = asio::ip::tcp;
using json = nlohmann::json;
using error_code = boost::system::error_code;
using http_request = http::request<http::string_body>;

namespace {

auto use_ec(error_code& ec) { return asio::redirect_error(asio::use_awaitable, ec); }

/// The raw HMAC-SHA256 of `data` with `key`.
std::string hmac(const std::string& key, const std::string& data) {
  unsigned char mac[EVP_MAX_MD_SIZE];
  unsigned int size = 0;
  static const unsigned char empty = 0;
  HMAC(EVP_sha256(), key.empty() ? static_cast<const void*>(&empty) : key.data(),
       static_cast<int>(key.size()),
       data.empty() ? &empty : reinterpret_cast<const unsigned char*>(data.data()), data.size(),
       mac, &size);
  return std::string(reinterpret_cast<const char*>(mac), size);
}

std::string hex(const std::string& bytes) {
  static constexpr char digits[] = "0123456789abcdef";
  std::string out;
  for (unsigned char c : bytes) {
    out += digits[c >> 4];
    out += digits[c & 0xF];
  }
  return out;
}

/// Standard base64 with padding, through OpenSSL's EVP_EncodeBlock.
std::string base64(const std::string& bytes) {
  std::string out(4 * ((bytes.size() + 2) / 3) + 1, '\0');
  const int n = EVP_EncodeBlock(reinterpret_cast<unsigned char*>(out.data()),
                                reinterpret_cast<const unsigned char*>(bytes.data()),
                                static_cast<int>(bytes.size()));
  out.resize(static_cast<size_t>(n));
  return out;
}

/// The key a secret stands for, the Standard Webhooks way: whsec_<base64> → the decoded bytes
/// (OpenSSL's EVP_DecodeBlock, padding added when left out); any other text → its bytes.
std::string key_of(const std::string& secret) {
  if (secret.rfind("whsec_", 0) != 0) return secret;
  std::string text = secret.substr(6);
  while (text.size() % 4 != 0) text += '=';
  std::string out(text.size() / 4 * 3, '\0');
  const int n = EVP_DecodeBlock(reinterpret_cast<unsigned char*>(out.data()),
                                reinterpret_cast<const unsigned char*>(text.data()),
                                static_cast<int>(text.size()));
  if (n < 0) return {};  // a malformed secret: nothing verifies
  out.resize(static_cast<size_t>(n) -
             static_cast<size_t>(
                 std::count(text.end() - std::min<size_t>(2, text.size()), text.end(), '=')));
  return out;
}

bool equal(const std::string& a, const std::string& b) {
  return a.size() == b.size() && CRYPTO_memcmp(a.data(), b.data(), a.size()) == 0;
}

bool fresh(const webhook_receiver_options& o, int64_t t) {
  if (o.tolerance_s < 0) return true;
  const int64_t now = std::chrono::duration_cast<std::chrono::seconds>(
                          std::chrono::system_clock::now().time_since_epoch())
                          .count();
  return t >= now - o.tolerance_s && t <= now + o.tolerance_s;
}

std::optional<std::string> header(const std::map<std::string, std::string>& h,
                                  const std::string& name) {
  auto it = h.find(name);
  if (it == h.end()) return std::nullopt;
  return it->second;
}

/// Checks webhook-id, webhook-timestamp and webhook-signature (Standard Webhooks: "v1,<base64>"
/// entries separated by spaces, one match suffices), independently of the engine's code.
bool standard_signature_valid(const webhook_receiver_options& o,
                              const std::map<std::string, std::string>& h,
                              const std::string& body) {
  const auto id = header(h, "webhook-id"), ts = header(h, "webhook-timestamp"),
             sig = header(h, "webhook-signature");
  if (!id || !ts || !sig || id->empty()) return false;
  int64_t t = -1;
  auto [end, ec] = std::from_chars(ts->data(), ts->data() + ts->size(), t);
  if (ts->empty() || ec != std::errc{} || end != ts->data() + ts->size() || !fresh(o, t))
    return false;
  const std::string expected = base64(hmac(key_of(o.secret), *id + "." + *ts + "." + body));
  bool match = false;
  for (size_t start = 0; start < sig->size();) {
    const size_t space = std::min(sig->find(' ', start), sig->size());
    const std::string entry = sig->substr(start, space - start);
    start = space + 1;
    if (entry.rfind("v1,", 0) == 0) match = equal(entry.substr(3), expected) || match;
  }
  return match;
}

/// Checks the deprecated "t=<unix>,v1=<hex>" against the body, independently of the engine's
/// code.
bool legacy_signature_valid(const webhook_receiver_options& o, const std::string& header,
                            const std::string& body) {
  int64_t t = -1;
  std::vector<std::string> v1;
  size_t start = 0;
  while (start <= header.size()) {
    size_t comma = std::min(header.find(',', start), header.size());
    std::string item = header.substr(start, comma - start);
    start = comma + 1;
    item.erase(0, item.find_first_not_of(' '));
    if (item.rfind("t=", 0) == 0) {
      auto [end, ec] = std::from_chars(item.data() + 2, item.data() + item.size(), t);
      if (ec != std::errc{} || end != item.data() + item.size()) return false;
    } else if (item.rfind("v1=", 0) == 0) {
      v1.push_back(item.substr(3));
    }
  }
  if (t < 0 || v1.empty() || !fresh(o, t)) return false;
  const std::string expected = hex(hmac(key_of(o.secret), std::to_string(t) + "." + body));
  return std::any_of(v1.begin(), v1.end(),
                     [&](const std::string& s) { return equal(s, expected); });
}

/// A delivery is signed when its Standard Webhooks headers verify and, when it also carries the
/// deprecated ones, X-Switchyard-Signature verifies and X-Switchyard-Delivery is the webhook-id.
bool signature_valid(const webhook_receiver_options& o, const received_webhook& r) {
  if (o.secret.empty()) return true;
  if (!standard_signature_valid(o, r.headers, r.raw_body)) return false;
  if (auto legacy = header(r.headers, "x-switchyard-signature");
      legacy && !legacy_signature_valid(o, *legacy, r.raw_body))
    return false;
  if (auto delivery = header(r.headers, "x-switchyard-delivery");
      delivery && *delivery != r.headers.at("webhook-id"))
    return false;
  return true;
}

received_webhook to_received(const http_request& req) {
  received_webhook r;
  r.path = std::string(req.target());
  for (const auto& field : req) {
    std::string name(field.name_string());
    std::transform(name.begin(), name.end(), name.begin(),
                   [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
    r.headers[name] = std::string(field.value());
  }
  r.raw_body = req.body();
  r.body = json::parse(r.raw_body, nullptr, false);
  if (r.body.is_discarded()) r.body = nullptr;
  return r;
}

int64_t int_field(const json& j, const char* key, int64_t fallback) {
  auto it = j.find(key);
  return it != j.end() && it->is_number_integer() ? it->get<int64_t>() : fallback;
}

}  // namespace

// ---------------------------------------------------------------------------------------------

struct webhook_receiver::state {
  explicit state(webhook_receiver_options o) : options(std::move(o)) {}

  // The io_context is declared first so that it is destroyed last: the coroutine frames it
  // destroys hold sockets bound to it.
  asio::io_context ioc{1};
  tcp::acceptor acceptor{ioc};
  std::thread thread;
  const webhook_receiver_options options;
  std::optional<asio::ssl::context> tls;  ///< set by start() when a certificate is configured
  uint16_t port = 0;
  bool started = false;

  mutable std::mutex mu;
  mutable std::condition_variable changed;
  int fail_next_n = 0;
  int fail_status = 500;
  int64_t delay_ms = 0;
  int64_t delivered = 0;
  int64_t bad_signatures = 0;
  int64_t connections = 0;
  std::vector<received_webhook> received;
  std::map<std::pair<std::string, int64_t>, int64_t> counts;

  /// Records a delivery; returns the status to answer and the delay before answering.
  std::pair<int, int64_t> record(const http_request& req);
  std::pair<int, std::string> control(const http_request& req);
  void reset();
  json to_json() const;
  asio::awaitable<void> accept_loop();
  asio::awaitable<void> session(tcp::socket sock);
  template <class Stream>
  asio::awaitable<void> serve(Stream& stream);
};

std::pair<int, int64_t> webhook_receiver::state::record(const http_request& req) {
  received_webhook r = to_received(req);
  const bool ok = signature_valid(options, r);
  std::pair<int, int64_t> answer{200, 0};
  {
    std::lock_guard lock(mu);
    r.signature_ok = ok;
    if (!ok) {
      ++bad_signatures;
      answer.first = 401;
    } else {
      ++delivered;
      if (fail_next_n > 0) {
        --fail_next_n;
        answer.first = fail_status;
      }
      if (r.body.is_object() && r.body.contains("job_id") && r.body["job_id"].is_string()) {
        ++counts[{r.body["job_id"].get<std::string>(), int_field(r.body, "sequence", -1)}];
      }
    }
    answer.second = delay_ms;
    r.answered = answer.first;
    received.push_back(std::move(r));
  }
  changed.notify_all();
  return answer;
}

void webhook_receiver::state::reset() {
  std::lock_guard lock(mu);
  fail_next_n = 0;
  fail_status = 500;
  delay_ms = 0;
  delivered = 0;
  bad_signatures = 0;
  connections = 0;
  received.clear();
  counts.clear();
}

json webhook_receiver::state::to_json() const {
  std::lock_guard lock(mu);
  json out = {{"delivered", delivered},
              {"bad_signatures", bad_signatures},
              {"connections", connections},
              {"deliveries", json::array()},
              {"counts", json::array()}};
  for (const auto& r : received) {
    out["deliveries"].push_back({{"path", r.path},
                                 {"headers", r.headers},
                                 {"body", r.body.is_null() ? json(r.raw_body) : r.body},
                                 {"signature_ok", r.signature_ok},
                                 {"status", r.answered}});
  }
  for (const auto& [key, n] : counts) {
    out["counts"].push_back({{"job_id", key.first}, {"sequence", key.second}, {"count", n}});
  }
  return out;
}

std::pair<int, std::string> webhook_receiver::state::control(const http_request& req) {
  if (req.target() == "/_receiver/deliveries" && req.method() == http::verb::get) {
    return {200, to_json().dump()};
  }
  if (req.target() != "/_receiver/control" || req.method() != http::verb::post) {
    return {404, R"({"error":"unknown receiver control request"})"};
  }
  const json c = json::parse(req.body(), nullptr, false);
  if (c.is_discarded() || !c.is_object()) return {400, R"({"error":"control body is not JSON"})"};
  auto reset_it = c.find("reset");
  if (reset_it != c.end() && reset_it->is_boolean() && reset_it->get<bool>()) reset();
  std::lock_guard lock(mu);
  fail_next_n = static_cast<int>(int_field(c, "fail_next", fail_next_n));
  fail_status = static_cast<int>(int_field(c, "status", fail_status));
  delay_ms = int_field(c, "delay_ms", delay_ms);
  return {200, R"({"ok":true})"};
}

asio::awaitable<void> webhook_receiver::state::accept_loop() {
  for (;;) {
    error_code ec;
    tcp::socket sock = co_await acceptor.async_accept(use_ec(ec));
    if (ec == asio::error::operation_aborted || !acceptor.is_open()) co_return;
    if (ec) continue;
    {
      std::lock_guard lock(mu);
      ++connections;
    }
    changed.notify_all();
    asio::co_spawn(ioc, session(std::move(sock)), asio::detached);
  }
}

asio::awaitable<void> webhook_receiver::state::session(tcp::socket sock) {
  error_code ignored;
  if (tls) {
    asio::ssl::stream<tcp::socket&> stream(sock, *tls);
    error_code ec;
    co_await stream.async_handshake(asio::ssl::stream_base::server, use_ec(ec));
    if (!ec) co_await serve(stream);
  } else {
    co_await serve(sock);
  }
  sock.shutdown(tcp::socket::shutdown_both, ignored);
  sock.close(ignored);
}

template <class Stream>
asio::awaitable<void> webhook_receiver::state::serve(Stream& stream) {
  beast::flat_buffer buffer;
  for (;;) {
    http::request_parser<http::string_body> parser;
    parser.body_limit(uint64_t{16} << 20);
    error_code ec;
    co_await http::async_read(stream, buffer, parser, use_ec(ec));
    if (ec) break;
    http_request req = parser.release();
    std::pair<int, std::string> answer;
    if (req.target().starts_with("/_receiver/")) {
      answer = control(req);
    } else if (req.method() != http::verb::post) {
      answer = {405, R"({"error":"webhooks are POSTs"})"};
    } else {
      auto [status, delay] = record(req);
      if (delay > 0) {
        asio::steady_timer t(ioc, std::chrono::milliseconds(delay));
        co_await t.async_wait(use_ec(ec));
      }
      answer = {status, status < 300 ? R"({"ok":true})" : R"({"error":"fake failure"})"};
    }
    http::response<http::string_body> res{static_cast<http::status>(answer.first), req.version()};
    res.set(http::field::server, "fake-webhook-receiver");
    res.set(http::field::content_type, "application/json");
    res.keep_alive(req.keep_alive());
    res.body() = std::move(answer.second);
    res.prepare_payload();
    co_await http::async_write(stream, res, use_ec(ec));
    if (ec || !res.keep_alive()) break;
  }
}

// ---------------------------------------------------------------------------------------------

webhook_receiver::webhook_receiver(webhook_receiver_options options)
    : s_(std::make_unique<state>(std::move(options))) {}

webhook_receiver::~webhook_receiver() { stop(); }

std::string webhook_receiver::start() {
  if (s_->started) return "webhook receiver already started";
  error_code ec;
  const auto& o = s_->options;
  if (!s_->tls && (!o.tls_cert_file.empty() || !o.tls_key_file.empty())) {
    s_->tls.emplace(asio::ssl::context::tls_server);
    s_->tls->use_certificate_chain_file(o.tls_cert_file, ec);
    if (!ec) s_->tls->use_private_key_file(o.tls_key_file, asio::ssl::context::pem, ec);
    if (ec) {
      s_->tls.reset();
      return "webhook receiver cannot load " + o.tls_cert_file + " / " + o.tls_key_file + ": " +
             ec.message();
    }
  }
  const tcp::endpoint ep(asio::ip::make_address_v4("127.0.0.1"), s_->options.port);
  s_->acceptor.open(ep.protocol(), ec);
  if (!ec) s_->acceptor.set_option(asio::socket_base::reuse_address(true), ec);
  if (!ec) s_->acceptor.bind(ep, ec);
  if (!ec) s_->acceptor.listen(asio::socket_base::max_listen_connections, ec);
  if (!ec) s_->port = s_->acceptor.local_endpoint(ec).port();
  if (ec) {
    error_code ignored;
    s_->acceptor.close(ignored);
    return "webhook receiver cannot listen on 127.0.0.1:" + std::to_string(s_->options.port) +
           ": " + ec.message();
  }
  s_->ioc.restart();  // after a stop()
  asio::co_spawn(s_->ioc, s_->accept_loop(), asio::detached);
  s_->started = true;
  s_->thread = std::thread([s = s_.get()] { s->ioc.run(); });
  return {};
}

void webhook_receiver::stop() {
  if (!s_->started) return;
  s_->started = false;
  s_->ioc.stop();
  s_->thread.join();
  error_code ignored;
  s_->acceptor.close(ignored);
}

uint16_t webhook_receiver::port() const { return s_->port; }

std::string webhook_receiver::url() const {
  return (s_->tls ? "https://127.0.0.1:" : "http://127.0.0.1:") + std::to_string(port());
}

void webhook_receiver::fail_next(int n, int status) {
  std::lock_guard lock(s_->mu);
  s_->fail_next_n = n;
  s_->fail_status = status;
}

void webhook_receiver::set_delay_ms(int64_t ms) {
  std::lock_guard lock(s_->mu);
  s_->delay_ms = ms;
}

void webhook_receiver::reset() { s_->reset(); }

std::vector<received_webhook> webhook_receiver::deliveries() const {
  std::lock_guard lock(s_->mu);
  return s_->received;
}

int64_t webhook_receiver::delivered() const {
  std::lock_guard lock(s_->mu);
  return s_->delivered;
}

int64_t webhook_receiver::bad_signatures() const {
  std::lock_guard lock(s_->mu);
  return s_->bad_signatures;
}

int64_t webhook_receiver::connections() const {
  std::lock_guard lock(s_->mu);
  return s_->connections;
}

int64_t webhook_receiver::count(const std::string& job_id, int64_t sequence) const {
  std::lock_guard lock(s_->mu);
  auto it = s_->counts.find({job_id, sequence});
  return it == s_->counts.end() ? 0 : it->second;
}

std::map<std::pair<std::string, int64_t>, int64_t> webhook_receiver::counts() const {
  std::lock_guard lock(s_->mu);
  return s_->counts;
}

bool webhook_receiver::wait_delivered(int64_t n, int64_t timeout_ms) const {
  std::unique_lock lock(s_->mu);
  return s_->changed.wait_for(lock, std::chrono::milliseconds(timeout_ms),
                              [&] { return s_->delivered >= n; });
}

nlohmann::json webhook_receiver::to_json() const { return s_->to_json(); }

}  // namespace sy::fakes
