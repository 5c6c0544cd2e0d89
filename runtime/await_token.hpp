#pragma once
/// What the engine's own HTTP code (the gateway client, the outbound client, the HTTP server)
/// shares about awaiting Asio operations and reporting a peer's answer.
#include <utility>  // before any Asio header (Boost 1.74 coroutine support needs it)

#include <boost/asio/redirect_error.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/system/error_code.hpp>
#include <cstddef>
#include <string>
#include <string_view>

namespace sy::runtime {

/// The completion token for `co_await op(..., use_ec(ec))`: the operation's error goes to `ec`
/// instead of being thrown.
inline auto use_ec(boost::system::error_code& ec) {
  return boost::asio::redirect_error(boost::asio::use_awaitable, ec);
}

/// How much of a peer's answer body an error message quotes.
inline constexpr size_t kErrorBodyExcerpt = 200;

/// The first kErrorBodyExcerpt bytes of an answer's body, control characters as spaces, for an
/// error message that stays on one log line.
inline std::string body_excerpt(std::string_view body) {
  std::string out(body.substr(0, kErrorBodyExcerpt));
  for (char& c : out) {
    if (static_cast<unsigned char>(c) < 0x20) c = ' ';
  }
  return out;
}

}  // namespace sy::runtime
