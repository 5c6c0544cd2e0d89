#include "runtime/admin_client.hpp"

#include <utility>  // before any Asio header

#include <chrono>
#include <cstdio>

#include <boost/asio/connect.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <boost/beast/http.hpp>
#include <nlohmann/json.hpp>

#include "config/webhook_url.hpp"

namespace sy::runtime {
namespace {

namespace beast = boost::beast;
namespace http = beast::http;

constexpr std::chrono::seconds exchange_timeout{15};

int failed(const std::string& what) {
  std::fprintf(stderr, "switchyard: %s\n", what.c_str());
  return 1;
}

}  // namespace

int keys_rotate(const std::string& url, const std::string& admin_key) {
  auto u = config::parse_webhook_url(url);
  if (!u || u->tls) return failed("the internal listener's URL must be http://host:port: " + url);
  boost::asio::io_context io;
  beast::tcp_stream stream(io);
  boost::system::error_code ec;
  boost::asio::ip::tcp::resolver resolver(io);
  auto where = resolver.resolve(u->host, std::to_string(u->port), ec);
  if (ec) return failed("cannot resolve " + u->host + ": " + ec.message());
  stream.expires_after(exchange_timeout);
  stream.connect(where, ec);
  if (ec) return failed("cannot reach the engine at " + url + ": " + ec.message());
  http::request<http::string_body> req{http::verb::post, "/internal/keys/rotate", 11};
  req.set(http::field::host, u->host_header);
  if (!admin_key.empty()) req.set(http::field::authorization, "Bearer " + admin_key);
  req.prepare_payload();
  http::write(stream, req, ec);
  beast::flat_buffer buf;
  http::response<http::string_body> res;
  if (!ec) http::read(stream, buf, res, ec);
  if (ec) return failed("no answer from the engine at " + url + ": " + ec.message());
  if (res.result() != http::status::ok) {
    auto doc = nlohmann::json::parse(res.body(), nullptr, false);
    const std::string why = doc.is_object() && doc.contains("error") && doc["error"].is_object()
                                ? doc["error"].value("message", res.body())
                                : res.body();
    return failed("the engine refused the rotation (HTTP " + std::to_string(res.result_int()) +
                  "): " + why);
  }
  std::printf("%s\n", res.body().c_str());
  return 0;
}

}  // namespace sy::runtime
