#pragma once
/// Small helpers shared by the batch manager and the batches' actors (actors/batch_manager.cpp,
/// actors/batch_actor.hpp): file-system calls that report errno, and Asio's error_code
/// completion token. Not for other modules.

#include <utility>  // before any Asio header (Boost 1.74 coroutine support needs it)

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>

#include <boost/asio/redirect_error.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/system/error_code.hpp>

namespace sy::actors::detail {

/// Completion token: resume the coroutine with the error in `ec` instead of throwing it.
inline auto use_ec(boost::system::error_code& ec) {
  return boost::asio::redirect_error(boost::asio::use_awaitable, ec);
}

/// "<what> <path>: <strerror(errno)>".
inline std::string sys_error(const std::string& what, const std::string& path) {
  return what + " " + path + ": " + std::strerror(errno);
}

/// Makes the directory's entries durable (a rename or create in it); failures are ignored.
inline void fsync_dir(const std::string& dir) {
  int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY);
  if (fd >= 0) {
    ::fsync(fd);
    ::close(fd);
  }
}

}  // namespace sy::actors::detail
