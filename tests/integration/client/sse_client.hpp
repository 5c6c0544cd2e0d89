#pragma once
/// A blocking test client for server-sent events: sends one GET, reads the response header,
/// then hands out events as they arrive. Every read is bounded by a deadline, so a server that
/// stops sending fails the test instead of hanging it; a deadline passing leaves the connection
/// open, so a quiet stream can be read again.

#include <utility>  // before any Asio/Beast header

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>

#include <boost/asio/io_context.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <boost/beast/http/parser.hpp>
#include <boost/beast/http/string_body.hpp>

namespace sy::test {

/// One event as the client saw it.
struct sse_message {
  std::string id;
  std::string event;
  std::string data;
};

class sse_client {
 public:
  explicit sse_client(uint16_t port);

  /// Connects, sends `GET target` with `headers`, reads the response header; returns the status
  /// (0 when the exchange failed). For a non-200 answer the body is read too (see `body`).
  int open(const std::string& target, const std::map<std::string, std::string>& headers = {});
  /// A response header field ("" when absent).
  std::string header(const std::string& name) const;
  /// The body of a non-streamed (error) answer.
  const std::string& body() const { return body_; }

  /// The next event within `deadline`; nullopt when the stream ended or the deadline passed
  /// (`ended()` tells which).
  std::optional<sse_message> next(std::chrono::milliseconds deadline = std::chrono::seconds(20));
  /// True once the server finished the body (last chunk) or closed the connection.
  bool ended() const { return ended_; }
  /// Comment lines (keep-alives) seen so far.
  int comments() const { return comments_; }

 private:
  bool read_some(std::chrono::milliseconds deadline);
  std::optional<sse_message> take_event();

  boost::asio::io_context ioc_;
  boost::beast::tcp_stream stream_;
  boost::beast::flat_buffer buffer_;
  boost::beast::http::response_parser<boost::beast::http::string_body> parser_;
  std::function<size_t(uint64_t, std::string_view, boost::beast::error_code&)> on_chunk_;
  uint16_t port_;
  std::string text_;  ///< de-chunked event-stream text not yet handed out
  std::string body_;
  bool ended_ = false;
  int comments_ = 0;
};

}  // namespace sy::test
