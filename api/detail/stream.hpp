#pragma once
/// Streamed responses (server-sent events): a handler that cannot answer with one complete
/// response returns the response *header* plus a `streamer`; the server writes the header
/// (chunked transfer encoding; `Connection: close` and a raw body for HTTP/1.0 clients) and then
/// runs the streamer on the connection's strand, which produces the body through a
/// `stream_writer`. The streamer must not buffer without bound: it writes what it has, and every
/// write is bounded by the server's write timeout, so a stuck client costs one connection and
/// at most one pending chunk.

#include <utility>  // before any Asio/Beast header

#include <functional>
#include <string>

#include <boost/asio/awaitable.hpp>
#include <boost/beast/http/message.hpp>
#include <boost/beast/http/string_body.hpp>

namespace sy::api::detail {

using request = boost::beast::http::request<boost::beast::http::string_body>;
using response = boost::beast::http::response<boost::beast::http::string_body>;

/// The connection side of a streamed body. Touched only on the connection's strand.
class stream_writer {
 public:
  virtual ~stream_writer() = default;
  /// Sends `data` as one chunk (nothing when empty). False: the client is gone, too slow (the
  /// write timed out) or the connection failed; the streamer should return.
  virtual boost::asio::awaitable<bool> write(std::string data) = 0;
  /// True once the server is stopping: the streamer should finish within a second or so.
  virtual bool stopping() const = 0;
};

/// Produces a streamed body; returning ends it (the server then finishes the chunked body).
/// It must not capture anything that dies with the handler call: the server keeps the
/// `streamer` alive until the coroutine it returns has finished.
using streamer = std::function<boost::asio::awaitable<void>(stream_writer&)>;

/// What a handler answers: a complete response, or (when `stream` is set) the header of a
/// streamed one, whose body is ignored.
struct reply {
  response res;
  streamer stream;
};

}  // namespace sy::api::detail
