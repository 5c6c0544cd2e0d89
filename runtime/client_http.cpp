// Beast reports every failure through error_code overloads here; nothing it throws is caught
// because the overloads used do not throw (bugprone-exception-escape is checked by clang-tidy).

#include "runtime/client_http.hpp"

#include <utility>  // before any Asio header

#include <cstdio>
#include <filesystem>
#include <limits>

#include <boost/asio/connect.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <boost/beast/http.hpp>

#include "config/webhook_url.hpp"

namespace sy::runtime {
namespace {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;

constexpr auto unlimited_body = std::numeric_limits<std::uint64_t>::max();

template <class Message>
std::string header_text(const Message& m, http::field name) {
  const auto value = m[name];
  return std::string(value.data(), value.size());
}

/// A connection to the endpoint, or why there is none.
struct client_connection {
  asio::io_context io;
  beast::tcp_stream stream{io};
  beast::flat_buffer buffer;
  std::string why;  ///< empty: connected
};

void connect_to(const http_endpoint& to, std::chrono::milliseconds timeout, client_connection& c) {
  boost::system::error_code ec;
  asio::ip::tcp::resolver resolver(c.io);
  auto where = resolver.resolve(to.host, std::to_string(to.port), ec);
  if (ec) {
    c.why = "cannot resolve " + to.host + ": " + ec.message();
    return;
  }
  c.stream.expires_after(timeout);
  c.stream.connect(where, ec);
  if (ec) c.why = "cannot connect to " + to.url + ": " + ec.message();
}

http::request<http::string_body> make_client_request(const http_endpoint& to,
                                                     const http_call& call) {
  http::request<http::string_body> req{http::string_to_verb(call.method),
                                       to.base_path + call.target, 11};
  req.set(http::field::host, to.host_header);
  req.set(http::field::user_agent, "switchyard-cli");
  for (const auto& [name, value] : call.headers) req.set(name, value);
  req.body() = call.body;
  req.prepare_payload();
  return req;
}

sy::error exchange_broke(const http_endpoint& to, const boost::system::error_code& ec) {
  return make_error(errc::http_unreachable,
                    "the exchange with " + to.url + " failed: " + ec.message());
}

/// Connects, sends the request and reads the answer's header into `head`.
result<ok_t> send_and_read_head(const http_endpoint& to, const http_call& call,
                                client_connection& c,
                                http::response_parser<http::empty_body>& head) {
  connect_to(to, call.timeout, c);
  if (!c.why.empty()) return make_error(errc::http_unreachable, c.why);
  boost::system::error_code ec;
  auto req = make_client_request(to, call);
  c.stream.expires_after(call.timeout);
  http::write(c.stream, req, ec);
  if (!ec) http::read_header(c.stream, c.buffer, head, ec);
  if (ec) return exchange_broke(to, ec);
  return ok;
}

/// Reads the rest of an answer whose header is in `head` into memory.
result<http_answer> finish_in_memory(const http_endpoint& to, client_connection& c,
                                     http::response_parser<http::empty_body>&& head) {
  http::response_parser<http::string_body> p{std::move(head)};
  p.body_limit(unlimited_body);
  boost::system::error_code ec;
  http::read(c.stream, c.buffer, p, ec);
  if (ec) return exchange_broke(to, ec);
  const auto& res = p.get();
  return http_answer{.status = static_cast<int>(res.result_int()),
                     .body = res.body(),
                     .content_type = header_text(res, http::field::content_type)};
}

bool is_2xx(const http::response_parser<http::empty_body>& head) {
  return head.get().result_int() / 100 == 2;
}

}  // namespace

result<http_endpoint> parse_http_endpoint(std::string_view url) {
  auto u = config::parse_webhook_url(url);
  if (!u)
    return make_error(errc::invalid_arguments, "the server URL '" + std::string(url) +
                                                   "' is not valid: " + u.error().message);
  if (u->tls)
    return make_error(errc::invalid_arguments,
                      "the server URL '" + std::string(url) +
                          "' is https: the CLI speaks plain HTTP (reach a TLS server through a "
                          "local proxy)");
  http_endpoint out{.url = std::string(url),
                    .host = u->host,
                    .port = u->port,
                    .host_header = u->host_header,
                    .base_path = u->target};
  const auto query = out.base_path.find('?');
  if (query != std::string::npos) out.base_path.erase(query);
  while (!out.base_path.empty() && out.base_path.back() == '/') out.base_path.pop_back();
  return out;
}

result<http_answer> http_exchange(const http_endpoint& to, const http_call& call) {
  client_connection c;
  http::response_parser<http::empty_body> head;
  if (auto st = send_and_read_head(to, call, c, head); !st) return st.error();
  return finish_in_memory(to, c, std::move(head));
}

result<http_answer> http_download(const http_endpoint& to, const http_call& call,
                                  const std::string& path) {
  client_connection c;
  http::response_parser<http::empty_body> head;
  if (auto st = send_and_read_head(to, call, c, head); !st) return st.error();
  if (!is_2xx(head)) return finish_in_memory(to, c, std::move(head));
  const std::string part = path + ".part";
  http::response_parser<http::file_body> p{std::move(head)};
  p.body_limit(unlimited_body);
  boost::system::error_code ec;
  p.get().body().open(part.c_str(), beast::file_mode::write, ec);
  if (ec) return make_error(errc::storage_error, "cannot write " + part + ": " + ec.message());
  http::read(c.stream, c.buffer, p, ec);
  p.get().body().close();
  std::error_code fs_ec;
  if (ec) {
    std::filesystem::remove(part, fs_ec);
    return exchange_broke(to, ec);
  }
  std::filesystem::rename(part, path, fs_ec);
  if (fs_ec)
    return make_error(errc::storage_error,
                      "cannot rename " + part + " to " + path + ": " + fs_ec.message());
  return http_answer{.status = static_cast<int>(p.get().result_int()),
                     .body = {},
                     .content_type = header_text(p.get(), http::field::content_type)};
}

result<http_answer> http_stream(const http_endpoint& to, const http_call& call,
                                const std::function<bool(std::string_view)>& on_data) {
  client_connection c;
  http::response_parser<http::empty_body> head;
  if (auto st = send_and_read_head(to, call, c, head); !st) return st.error();
  if (!is_2xx(head)) return finish_in_memory(to, c, std::move(head));
  http::response_parser<http::string_body> p{std::move(head)};
  p.body_limit(unlimited_body);
  // The string body's reader appends at the string's current end on every read, so the text
  // handed on can be cleared between reads: only what has not been handed on stays in memory.
  while (!p.is_done()) {
    boost::system::error_code ec;
    c.stream.expires_after(call.timeout);
    http::read_some(c.stream, c.buffer, p, ec);
    if (ec == http::error::end_of_stream) break;
    if (ec) return exchange_broke(to, ec);
    auto& body = p.get().body();
    if (body.empty()) continue;
    const bool more = on_data(body);
    body.clear();
    if (!more) break;
  }
  return http_answer{.status = static_cast<int>(p.get().result_int()),
                     .body = {},
                     .content_type = header_text(p.get(), http::field::content_type)};
}

}  // namespace sy::runtime
