#include "runtime/private_file.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>

namespace sy::runtime {
namespace {

/// Writes all of `text` to `fd`, through short writes and EINTR.
bool write_all(int fd, std::string_view text) {
  while (!text.empty()) {
    const ssize_t n = ::write(fd, text.data(), text.size());
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    text.remove_prefix(static_cast<size_t>(n));
  }
  return true;
}

}  // namespace

std::string write_private_file(const std::string& path, std::string_view text) {
  const std::string tmp = path + ".tmp";
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd < 0) return "cannot create " + tmp + ": " + std::strerror(errno);
  const bool written = write_all(fd, text) && ::fsync(fd) == 0;
  const int saved = errno;
  ::close(fd);
  if (!written) return "cannot write " + tmp + ": " + std::strerror(saved);
  if (std::rename(tmp.c_str(), path.c_str()) != 0)
    return "cannot rename " + tmp + " to " + path + ": " + std::strerror(errno);
  auto dir = std::filesystem::path(path).parent_path();
  if (dir.empty()) dir = ".";
  if (const int d = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC); d >= 0) {
    ::fsync(d);
    ::close(d);
  }
  return {};
}

}  // namespace sy::runtime
