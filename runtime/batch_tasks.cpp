#include "runtime/batch_tasks.hpp"

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>

#include "config/error_codes.hpp"
#include "runtime/batch_render.hpp"

namespace sy::runtime::batch {
namespace {

constexpr std::string_view request_prefix = "batch_req_";
constexpr size_t request_id_size = 10 + 32;

/// 16 hex digits (lower case, as request_id_for writes them), or nothing.
std::optional<uint64_t> parse_hex64(std::string_view s) {
  if (s.size() != 16) return std::nullopt;
  uint64_t v = 0;
  for (char c : s) {
    int d = 0;
    if (c >= '0' && c <= '9') {
      d = c - '0';
    } else if (c >= 'a' && c <= 'f') {
      d = c - 'a' + 10;
    } else {
      return std::nullopt;
    }
    v = (v << 4) | static_cast<uint64_t>(d);
  }
  return v;
}

struct file_closer {
  void operator()(std::FILE* f) const { std::fclose(f); }
};

}  // namespace

uint64_t unmix64(uint64_t x) {
  // Each step of mix64 undone in reverse order: the xor-shifts by their fixed points, the
  // multiplications by the constants' inverses modulo 2^64.
  x = x ^ (x >> 31) ^ (x >> 62);
  x *= 0x319642b2d24d8ec3ULL;
  x = x ^ (x >> 27) ^ (x >> 54);
  x *= 0x96de1b173f119089ULL;
  x = x ^ (x >> 30) ^ (x >> 60);
  return x;
}

std::optional<uint64_t> request_offset(const std::array<uint64_t, 2>& seed, std::string_view id) {
  if (id.size() != request_id_size || !id.starts_with(request_prefix)) return std::nullopt;
  auto first = parse_hex64(id.substr(request_prefix.size(), 16));
  if (!first) return std::nullopt;
  const uint64_t offset = unmix64(*first) ^ seed[0];
  if (request_id_for(seed, offset) != id) return std::nullopt;  // the second half disagrees
  return offset;
}

std::optional<uint64_t> result_line_offset(const std::array<uint64_t, 2>& seed,
                                           std::string_view line) {
  constexpr std::string_view key = R"("id":")";
  auto at = line.find(key);
  if (at == std::string_view::npos) return std::nullopt;
  auto id = line.substr(at + key.size());
  if (id.size() <= request_id_size || id[request_id_size] != '"') return std::nullopt;
  return request_offset(seed, id.substr(0, request_id_size));
}

bool is_blank_line(std::string_view line) {
  return line.find_first_not_of(" \t\r") == std::string_view::npos;
}

sy::status for_each_line(const std::string& path, uint64_t from,
                         const std::function<bool(uint64_t, std::string_view)>& fn) {
  std::unique_ptr<std::FILE, file_closer> f(std::fopen(path.c_str(), "rbe"));
  if (!f)
    return make_error(errc::batch_io_error, "cannot open " + path + ": " + std::strerror(errno));
  std::setvbuf(f.get(), nullptr, _IOFBF, size_t{1} << 20);
  if (from > 0 && ::fseeko(f.get(), static_cast<off_t>(from), SEEK_SET) != 0)
    return make_error(errc::batch_io_error, "cannot seek in " + path + ": " + std::strerror(errno));
  struct line_buffer {
    char* data = nullptr;
    size_t cap = 0;
    ~line_buffer() { std::free(data); }  // getline's own allocation
  } buf;
  uint64_t offset = from;
  for (;;) {
    errno = 0;
    const ssize_t n = ::getline(&buf.data, &buf.cap, f.get());
    if (n < 0) break;
    std::string_view text(buf.data, static_cast<size_t>(n));
    if (text.ends_with('\n')) text.remove_suffix(1);
    if (text.ends_with('\r')) text.remove_suffix(1);
    if (!fn(offset, text)) return ok;
    offset += static_cast<uint64_t>(n);
  }
  if (std::ferror(f.get()))
    return make_error(errc::batch_io_error, "cannot read " + path + ": " + std::strerror(errno));
  return ok;
}

}  // namespace sy::runtime::batch
