#pragma once
/// Small helpers shared by the batch manager's and the batches' actors (actors/batch_manager.cpp,
/// actors/batch_actor.hpp): file-system calls that report errno. Not for
/// other modules.

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>

namespace sy::actors::detail {

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
