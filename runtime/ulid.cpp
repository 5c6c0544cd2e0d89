#include "runtime/ulid.hpp"

#include <algorithm>

namespace sy::runtime {
namespace {

constexpr char kAlphabet[] = "0123456789ABCDEFGHJKMNPQRSTVWXYZ";
constexpr int64_t kMaxMs = (int64_t{1} << 48) - 1;

/// The value of a Crockford base32 digit, or -1. Lower case is accepted; I, L, O, U are not.
int decode_digit(char c) {
  if (c >= 'a' && c <= 'z') c = static_cast<char>(c - 'a' + 'A');
  const char* end = kAlphabet + 32;
  const char* it = std::find(kAlphabet, end, c);
  return it == end ? -1 : static_cast<int>(it - kAlphabet);
}

/// Adds one to the 80-bit big-endian number; returns false when it wrapped to zero.
bool increment(ulid_random& r) {
  for (int i = static_cast<int>(r.size()) - 1; i >= 0; --i) {
    if (++r[static_cast<size_t>(i)] != 0) return true;
  }
  return false;
}

}  // namespace

std::string make_ulid(int64_t ms, const ulid_random& random) {
  const uint64_t t = static_cast<uint64_t>(std::clamp<int64_t>(ms, 0, kMaxMs));
  std::string out(26, '0');
  // 10 characters of time: 50 bits, the top 2 always zero.
  for (int i = 9; i >= 0; --i) out[static_cast<size_t>(i)] = kAlphabet[(t >> (5 * (9 - i))) & 31];
  // 16 characters of randomness: exactly 80 bits, read 5 at a time from the top.
  for (size_t i = 0; i < 16; ++i) {
    int value = 0;
    for (size_t b = 0; b < 5; ++b) {
      const size_t bit = i * 5 + b;
      const int byte = random[bit / 8];
      value = (value << 1) | ((byte >> (7 - bit % 8)) & 1);
    }
    out[10 + i] = kAlphabet[value];
  }
  return out;
}

std::optional<int64_t> ulid_timestamp_ms(std::string_view ulid) {
  if (ulid.size() != 26) return std::nullopt;
  for (char c : ulid) {
    if (decode_digit(c) < 0) return std::nullopt;
  }
  if (decode_digit(ulid[0]) > 7) return std::nullopt;  // would overflow 48 bits
  int64_t ms = 0;
  for (size_t i = 0; i < 10; ++i) ms = (ms << 5) | decode_digit(ulid[i]);
  return ms;
}

ulid_generator::ulid_generator() : rng_(std::random_device{}()) {}

ulid_generator::ulid_generator(uint64_t seed) : rng_(seed) {}

std::string ulid_generator::next(int64_t now_ms) {
  std::lock_guard lock(mu_);
  now_ms = std::clamp<int64_t>(now_ms, 0, kMaxMs);
  if (now_ms > last_ms_) {
    last_ms_ = now_ms;
    for (auto& b : last_random_) b = static_cast<uint8_t>(rng_());
  } else if (!increment(last_random_)) {
    // 2^80 ids in one millisecond cannot happen in practice; borrow the next millisecond anyway.
    last_ms_ = std::min(last_ms_ + 1, kMaxMs);
  }
  return make_ulid(last_ms_, last_random_);
}

}  // namespace sy::runtime
