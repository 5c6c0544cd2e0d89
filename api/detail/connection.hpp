#pragma once
/// One accepted client connection. Owned by its `serve` coroutine (shared with the server's
/// registry as a weak_ptr so a graceful stop can close it when idle). Every member is touched
/// only on the connection's strand.

#include <utility>  // before any Asio/Beast header

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core/tcp_stream.hpp>

namespace sy::api::detail {

/// A socket as the server's accept loop receives it: accepted on one of its io_context lanes.
using lane_socket =
    boost::asio::ip::tcp::socket::rebind_executor<boost::asio::io_context::executor_type>::other;

struct connection {
  explicit connection(lane_socket socket) : stream(std::move(socket)) {}

  boost::beast::tcp_stream stream;
  bool busy = false;  ///< a request has been read and its response is not yet written
};

}  // namespace sy::api::detail
