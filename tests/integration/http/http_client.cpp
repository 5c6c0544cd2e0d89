#include "tests/integration/http/http_client.hpp"

#include <boost/asio/buffer.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/http/read.hpp>
#include <boost/beast/http/write.hpp>

namespace sy::testing {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;

http_request make_request(http::verb method, std::string target, std::string body,
                          std::string content_type, std::string api_key) {
  http_request req{method, target, 11};
  req.set(http::field::host, "127.0.0.1");
  if (!api_key.empty()) req.set(http::field::authorization, "Bearer " + api_key);
  if (!body.empty() || method == http::verb::post) {
    if (!content_type.empty()) req.set(http::field::content_type, content_type);
    req.body() = std::move(body);
  }
  req.prepare_payload();
  return req;
}

http_client::http_client(uint16_t port, std::chrono::milliseconds deadline)
    : port_(port), deadline_(deadline), stream_(ioc_) {}

template <class Start>
beast::error_code http_client::run(Start start, std::chrono::milliseconds deadline) {
  beast::error_code result = asio::error::would_block;
  stream_.expires_after(deadline);
  start([&result](beast::error_code ec, auto&&...) { result = ec; });
  ioc_.restart();
  ioc_.run();
  return result;
}

beast::error_code http_client::connect() {
  asio::ip::tcp::endpoint ep(asio::ip::make_address("127.0.0.1"), port_);
  return run([&](auto handler) { stream_.async_connect(ep, handler); }, deadline_);
}

beast::error_code http_client::write(http_request& req) {
  return run([&](auto handler) { http::async_write(stream_, req, handler); }, deadline_);
}

beast::error_code http_client::write_raw(std::string_view bytes) {
  return run([&](auto handler) { asio::async_write(stream_, asio::buffer(bytes), handler); },
             deadline_);
}

beast::error_code http_client::read(http_response& res) {
  return run([&](auto handler) { http::async_read(stream_, buffer_, res, handler); }, deadline_);
}

http_response http_client::roundtrip(http_request req, beast::error_code& ec) {
  http_response res;
  ec = write(req);
  if (!ec) ec = read(res);
  return res;
}

beast::error_code http_client::wait_closed(std::chrono::milliseconds deadline) {
  char sink[4096];
  for (;;) {
    auto ec =
        run([&](auto handler) { stream_.async_read_some(asio::buffer(sink), handler); }, deadline);
    if (ec) return ec;
  }
}

}  // namespace sy::testing
