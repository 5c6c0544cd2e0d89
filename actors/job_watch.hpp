#pragma once
/// Wakes coroutines that wait for a job to change (Prefer: wait, synchronous OpenAI calls, SSE).
/// The storage writer calls `notify` after each commit with the jobs that got new events; a waiter
/// subscribes BEFORE it reads the job, so a change between its read and its wait is never missed.
/// Within one node only: that is where the HTTP request waits and where the writer commits.
///
/// Threads: `notify`, `subscribe` and `unsubscribe` from any thread. `wait_for_change` runs on the
/// waiter's executor, which must be a strand or a single-threaded context (HTTP connections are).

#include <utility>  // before any Asio header

#include <atomic>
#include <chrono>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>

#include "runtime/clock.hpp"

namespace sy::actors {

/// One waiting coroutine's wake-up: a timer (of the engine's clock) that `notify` cancels.
struct job_waiter {
  job_waiter(const runtime::clock& c, boost::asio::any_io_executor ex)
      : timer(c.make_timer(std::move(ex))) {}
  std::unique_ptr<runtime::timer> timer;
  std::atomic<bool> changed{false};  ///< set by notify; the waiter clears it before reading
};

class job_watch {
 public:
  explicit job_watch(const runtime::clock& c) : clock_(c) {}
  /// The clock every waiter's timer follows.
  const runtime::clock& clock() const { return clock_; }
  std::shared_ptr<job_waiter> subscribe(const std::string& job_id, boost::asio::any_io_executor ex);
  void unsubscribe(const std::string& job_id, const std::shared_ptr<job_waiter>& w);
  /// Marks every waiter of these jobs changed and wakes it.
  void notify(const std::vector<std::string>& job_ids);

  /// Returns when `w` is marked changed (at once if it already is) or after `wait_ms` of the
  /// clock's time.
  static boost::asio::awaitable<void> wait_for_change(job_waiter& w, int64_t wait_ms);

 private:
  const runtime::clock& clock_;
  std::mutex mu_;
  std::unordered_multimap<std::string, std::weak_ptr<job_waiter>> waiters_;
};

/// Subscribes for the lifetime of the object.
class job_subscription {
 public:
  job_subscription(job_watch& watch, std::string job_id, boost::asio::any_io_executor ex)
      : watch_(watch), id_(std::move(job_id)), waiter_(watch.subscribe(id_, std::move(ex))) {}
  ~job_subscription() { watch_.unsubscribe(id_, waiter_); }
  job_subscription(const job_subscription&) = delete;
  job_subscription& operator=(const job_subscription&) = delete;
  job_waiter& waiter() { return *waiter_; }

 private:
  job_watch& watch_;
  std::string id_;
  std::shared_ptr<job_waiter> waiter_;
};

}  // namespace sy::actors
