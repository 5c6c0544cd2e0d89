#pragma once
/// A small Beast HTTP/1.1 test client: one connection, every operation bounded by a deadline
/// (tcp_stream timeouts), so a misbehaving server fails a test instead of hanging it.

#include <utility>  // before any Asio/Beast header

#include <chrono>
#include <cstdint>
#include <string>
#include <string_view>

#include <boost/asio/io_context.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <boost/beast/http/message.hpp>
#include <boost/beast/http/string_body.hpp>

namespace sy::testing {

using http_request = boost::beast::http::request<boost::beast::http::string_body>;
using http_response = boost::beast::http::response<boost::beast::http::string_body>;

/// A keep-alive request with Host set and, when `body` is non-empty, Content-Type and length.
http_request make_request(boost::beast::http::verb method, std::string target,
                          std::string body = {}, std::string content_type = "application/json",
                          std::string api_key = {});

class http_client {
 public:
  explicit http_client(uint16_t port, std::chrono::milliseconds deadline = std::chrono::seconds(5));

  boost::beast::error_code connect();
  boost::beast::error_code write(http_request& req);
  boost::beast::error_code write_raw(std::string_view bytes);
  boost::beast::error_code read(http_response& res);
  /// Writes `req` and reads the answer; `ec` says why when it failed.
  http_response roundtrip(http_request req, boost::beast::error_code& ec);
  /// Reads until the server closes (returns asio::error::eof) or `deadline` passes (returns
  /// timeout).
  boost::beast::error_code wait_closed(std::chrono::milliseconds deadline);

 private:
  template <class Start>
  boost::beast::error_code run(Start start, std::chrono::milliseconds deadline);

  uint16_t port_;
  std::chrono::milliseconds deadline_;
  boost::asio::io_context ioc_;
  boost::beast::tcp_stream stream_;
  boost::beast::flat_buffer buffer_;
};

}  // namespace sy::testing
