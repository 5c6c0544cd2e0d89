#include "api/listener.hpp"

#include <unistd.h>

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>

#include "api/detail/listen_address.hpp"

namespace sy::api {

namespace asio = boost::asio;
using asio::ip::tcp;

result<listener> listener::bind(const std::string& address) {
  auto endpoint = detail::parse_listen_address(address);
  if (!endpoint) return endpoint.error();
  // Asio's acceptor does the socket calls with error codes; its io_context only lends it a
  // reactor, and `release` takes the socket back out of it, so this one can end here.
  asio::io_context ioc{1};
  tcp::acceptor acceptor(ioc);
  boost::system::error_code ec;
  auto fail = [&](const char* what) {
    return make_error(errc::listen_failed,
                      "cannot listen on " + address + ": " + ec.message() + " (" + what + ")",
                      "listen");
  };
  acceptor.open(endpoint->protocol(), ec);
  if (ec) return fail("socket");
  acceptor.set_option(asio::socket_base::reuse_address(true), ec);
  if (ec) return fail("setsockopt");
  acceptor.bind(*endpoint, ec);
  if (ec) return fail("bind");
  acceptor.listen(asio::socket_base::max_listen_connections, ec);
  if (ec) return fail("listen");
  const uint16_t port = acceptor.local_endpoint(ec).port();
  if (ec) return fail("getsockname");
  const int fd = acceptor.release(ec);
  if (ec) return fail("release");
  return listener(fd, address, port, endpoint->protocol());
}

listener::~listener() {
  if (fd_ >= 0) ::close(fd_);
}

listener::listener(listener&& other) noexcept
    : fd_(std::exchange(other.fd_, -1)),
      address_(std::move(other.address_)),
      port_(other.port_),
      protocol_(other.protocol_) {}

listener& listener::operator=(listener&& other) noexcept {
  if (this != &other) {
    if (fd_ >= 0) ::close(fd_);
    fd_ = std::exchange(other.fd_, -1);
    address_ = std::move(other.address_);
    port_ = other.port_;
    protocol_ = other.protocol_;
  }
  return *this;
}

int listener::release() { return std::exchange(fd_, -1); }

}  // namespace sy::api
