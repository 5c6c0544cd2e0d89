#include "runtime/batch_tasks.hpp"

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

}  // namespace sy::runtime::batch
