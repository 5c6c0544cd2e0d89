#pragma once
/// Time as a dependency, timers included. Only `system_clock_source` reads the system time and
/// arms real timers; everything else takes a `const clock&` and waits through the timers it makes,
/// so tests drive time with `manual_clock` (advance it, and the timers that came due fire) instead
/// of sleeping.

#include <utility>  // before any Asio header (Boost 1.74)

#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/associated_executor.hpp>
#include <boost/asio/async_result.hpp>
#include <boost/asio/dispatch.hpp>

namespace sy::runtime {

/// A one-shot, re-armable timer of a clock, bound to an executor. Its methods are called on that
/// executor (like an Asio timer); the completion runs there too.
class timer {
 public:
  virtual ~timer() = default;
  /// Arms the timer: `done(true)` runs on the executor once `delay_ms` of the clock's time has
  /// passed (at once, posted, when `delay_ms` <= 0). A wait still pending — re-armed, cancelled
  /// or the timer destroyed first — completes with `done(false)`.
  virtual void wait(int64_t delay_ms, std::function<void(bool fired)> done) = 0;
  /// Ends the pending wait, if any, with `done(false)`.
  virtual void cancel() = 0;
  virtual boost::asio::any_io_executor executor() const = 0;
};

/// A source of time in milliseconds since the Unix epoch, and of timers that follow it.
class clock {
 public:
  virtual ~clock() = default;
  /// The current time in ms since the epoch.
  virtual int64_t now_ms() const = 0;
  /// A monotonic reading in microseconds from an arbitrary origin, for durations (a line's
  /// pace, a scan's cost): it never goes back, even when `now_ms()` does.
  virtual int64_t monotonic_us() const = 0;
  /// A timer on `ex` that follows this clock.
  virtual std::unique_ptr<timer> make_timer(boost::asio::any_io_executor ex) const = 0;
};

/// The one place in the engine that reads the system (realtime) clock; its timers are Asio
/// steady timers (immune to wall-clock jumps).
class system_clock_source final : public clock {
 public:
  int64_t now_ms() const override;
  /// std::chrono::steady_clock's reading.
  int64_t monotonic_us() const override;
  std::unique_ptr<timer> make_timer(boost::asio::any_io_executor ex) const override;
};

/// A clock that only moves when told to; safe to read and advance from any thread. Advancing it
/// fires, in due order, every timer that came due (each completion is posted to its timer's
/// executor). A wait whose executor's context shuts down is dropped with it, uncalled, as Asio
/// drops its own timers' waits, so an engine can stop while its coroutines wait on the clock.
class manual_clock final : public clock {
 public:
  explicit manual_clock(int64_t start_ms = 0) : now_(start_ms) {}
  int64_t now_ms() const override { return now_.load(std::memory_order_acquire); }
  /// Moves with the clock's time forward only: a step back (a skew test) leaves it where it was.
  int64_t monotonic_us() const override { return mono_us_.load(std::memory_order_acquire); }
  std::unique_ptr<timer> make_timer(boost::asio::any_io_executor ex) const override;
  /// Moves time forward (or backward, for clock-skew tests) by `delta_ms`.
  void advance(int64_t delta_ms);
  /// Jumps to an absolute time.
  void set(int64_t ms);
  /// Timers armed and not yet fired or cancelled (tests wait for a component to arm its timer
  /// before they advance past it).
  size_t armed() const;
  /// Timers armed to fire at exactly `due_ms` (a test waits for one component's timer when
  /// others arm theirs at the same time).
  size_t armed_due_at(int64_t due_ms) const;

  struct armed_wait;  ///< one armed wait (clock.cpp)

 private:
  void fire_due();
  friend class manual_timer;
  mutable std::mutex mu_;
  std::atomic<int64_t> now_;
  std::atomic<int64_t> mono_us_{0};
  mutable uint64_t next_seq_ = 0;
  /// (due ms, arming order) -> the armed wait. Guarded by mu_.
  mutable std::map<std::pair<int64_t, uint64_t>, std::shared_ptr<armed_wait>> waits_;
};

/// `co_await async_wait(t, ms, use_awaitable)` → true when the time came, false when cancelled.
template <class Token>
auto async_wait(timer& t, int64_t delay_ms, Token&& token) {
  return boost::asio::async_initiate<Token, void(bool)>(
      [&t, delay_ms](auto handler) {
        using handler_t = decltype(handler);
        auto h = std::make_shared<handler_t>(std::move(handler));
        auto ex = boost::asio::get_associated_executor(*h, t.executor());
        t.wait(delay_ms, [h, ex](bool fired) {
          boost::asio::dispatch(ex, [h, fired]() mutable { (*h)(fired); });
        });
      },
      token);
}

}  // namespace sy::runtime
