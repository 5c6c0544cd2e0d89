#pragma once
/// Throttled logging of repeated failures (runtime/log.hpp writes the lines).

#include <cstdint>
#include <utility>

namespace sy::log {

/// For a failure that can repeat many times a second (a retry loop, a hostile client): at most
/// one line per `interval_ms`, saying how many times it happened since the last line. The caller
/// passes the time (from its injected clock). One owner: not thread-safe.
class throttle {
 public:
  explicit throttle(int64_t interval_ms) : interval_ms_(interval_ms) {}
  /// Counts one occurrence at `now_ms`. Returns how many occurrences the line written now
  /// reports (this one included), or 0 when no line is due yet.
  uint64_t occur(int64_t now_ms) {
    ++count_;
    if (logged_ && now_ms - last_ms_ < interval_ms_) return 0;
    logged_ = true;
    last_ms_ = now_ms;
    return std::exchange(count_, 0);
  }

 private:
  int64_t interval_ms_;
  int64_t last_ms_ = 0;
  bool logged_ = false;
  uint64_t count_ = 0;
};

}  // namespace sy::log
