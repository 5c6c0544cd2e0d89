#pragma once
/// A TCP socket bound and listening but not yet accepting: what the process holds between taking
/// its addresses and serving on them. `runtime/main.cpp` binds every listener before it starts
/// anything that could answer a request, so an address that is taken stops the process at once,
/// before NATS, the engine or any listener has done work. Connections that arrive meanwhile wait
/// in the kernel's backlog until an `http_server` serves on the socket. Threads: any one thread
/// at a time; the socket belongs to the listener until `release`.

#include <utility>  // before any Asio/Beast header

#include <cstdint>
#include <string>

#include <boost/asio/ip/tcp.hpp>

#include "config/result.hpp"

namespace sy::api {

class listener {
 public:
  /// Opens, binds and listens on `address` (HOST:PORT, IPv4 or [IPv6]; port 0 picks a free
  /// port). Errors: invalid_listen (unparsable address), listen_failed (the OS refused; the
  /// message names the address and the OS's reason, e.g. "Address already in use").
  static result<listener> bind(const std::string& address);

  /// Closes the socket unless it was released.
  ~listener();
  listener(listener&& other) noexcept;
  listener& operator=(listener&& other) noexcept;
  listener(const listener&) = delete;
  listener& operator=(const listener&) = delete;

  /// The address as configured.
  const std::string& address() const { return address_; }
  /// The port actually bound (useful with port 0).
  uint16_t port() const { return port_; }
  boost::asio::ip::tcp protocol() const { return protocol_; }

  /// Hands the socket over (to the server that accepts on it); the listener no longer owns it.
  int release();

 private:
  listener(int fd, std::string address, uint16_t port, boost::asio::ip::tcp protocol)
      : fd_(fd), address_(std::move(address)), port_(port), protocol_(protocol) {}

  int fd_ = -1;
  std::string address_;
  uint16_t port_ = 0;
  boost::asio::ip::tcp protocol_ = boost::asio::ip::tcp::v4();
};

}  // namespace sy::api
