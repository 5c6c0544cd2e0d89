#pragma once
/// One accepted client connection. Owned by its `serve` coroutine (shared with the server's
/// registry as a weak_ptr so a graceful stop can close it when idle). Every member is touched
/// only on the connection's strand.

#include <utility>  // before any Asio/Beast header

#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core/tcp_stream.hpp>

namespace sy::api::detail {

struct connection {
  template <class Socket>
  explicit connection(Socket&& socket) : stream(std::forward<Socket>(socket)) {}

  boost::beast::tcp_stream stream;
  bool busy = false;  ///< a request has been read and its response is not yet written
};

}  // namespace sy::api::detail
