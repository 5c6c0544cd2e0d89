#pragma once
/// ULIDs (https://github.com/ulid/spec): 26 Crockford base32 characters, 48 bits of milliseconds
/// then 80 random bits. They sort by creation time as plain strings, which is why job ids use them
/// (`job_<ULID>`): listing in id order is listing in submission order.

#include <array>
#include <cstdint>
#include <mutex>
#include <optional>
#include <random>
#include <string>
#include <string_view>

namespace sy::runtime {

/// The 80 random bits of a ULID, most significant byte first.
using ulid_random = std::array<uint8_t, 10>;

/// Encodes `ms` (clamped to 48 bits, negative as 0) and `random` as a 26-character ULID.
std::string make_ulid(int64_t ms, const ulid_random& random);

/// The millisecond timestamp of a ULID, or nullopt when `ulid` is not a valid ULID.
std::optional<int64_t> ulid_timestamp_ms(std::string_view ulid);

/// Generates strictly increasing ULIDs, safe to call from any thread. Within one millisecond (or
/// when the clock goes backwards) the previous random part is incremented instead of redrawn, as
/// the spec's monotonic mode says, so ids made by one process never go backwards.
class ulid_generator {
 public:
  /// Seeds from std::random_device.
  ulid_generator();
  /// Deterministic seed, for tests.
  explicit ulid_generator(uint64_t seed);

  /// The next ULID for the time `now_ms` (take it from a `sy::runtime::clock`).
  std::string next(int64_t now_ms);

 private:
  std::mutex mu_;
  std::mt19937_64 rng_;
  int64_t last_ms_ = -1;
  ulid_random last_random_{};
};

}  // namespace sy::runtime
