#pragma once
/// Time as a dependency. Only `system_clock_source` reads the system time; everything else takes a
/// `const clock&` so that tests drive time with `manual_clock` instead of sleeping.

#include <atomic>
#include <cstdint>

namespace sy::runtime {

/// A source of wall-clock time in milliseconds since the Unix epoch.
class clock {
 public:
  virtual ~clock() = default;
  /// The current time in ms since the epoch.
  virtual int64_t now_ms() const = 0;
};

/// The one place in the engine that reads the system (realtime) clock.
class system_clock_source final : public clock {
 public:
  int64_t now_ms() const override;
};

/// A clock that only moves when told to; safe to read and advance from any thread.
class manual_clock final : public clock {
 public:
  explicit manual_clock(int64_t start_ms = 0) : now_(start_ms) {}
  int64_t now_ms() const override { return now_.load(std::memory_order_acquire); }
  /// Moves time forward (or backward, for clock-skew tests) by `delta_ms`.
  void advance(int64_t delta_ms) { now_.fetch_add(delta_ms, std::memory_order_acq_rel); }
  /// Jumps to an absolute time.
  void set(int64_t ms) { now_.store(ms, std::memory_order_release); }

 private:
  std::atomic<int64_t> now_;
};

}  // namespace sy::runtime
