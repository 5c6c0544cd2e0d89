#include "api/detail/listen_address.hpp"

#include <string>

#include "config/address.hpp"

namespace sy::api::detail {

result<boost::asio::ip::tcp::endpoint> parse_listen_address(std::string_view listen) {
  // The same parser validation used, so we bind exactly what was accepted.
  auto hp = config::parse_host_port(listen);
  if (!hp) return make_error(errc::invalid_listen, hp.error().message, "listen");
  std::string host = hp->host;
  if (host == "localhost") host = "127.0.0.1";
  if (host.empty()) host = "0.0.0.0";
  boost::system::error_code ec;
  auto address = boost::asio::ip::make_address(host, ec);
  if (ec)
    return make_error(errc::invalid_listen,
                      "listen host '" + hp->host + "' is not an IP address or 'localhost'.",
                      "listen");
  return boost::asio::ip::tcp::endpoint(address, hp->port);
}

}  // namespace sy::api::detail
