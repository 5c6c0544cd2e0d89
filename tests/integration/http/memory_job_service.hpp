#pragma once
/// An in-memory `actors::job_service` for testing the HTTP layer alone (the end-to-end tests use
/// the real engine). Thread-safe; counts the calls that reach it.

#include <utility>  // before any Asio/Beast header

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include <boost/asio/steady_timer.hpp>

#include "actors/job_service.hpp"

namespace sy::testing {

class memory_job_service final : public actors::job_service {
 public:
  const runtime::clock& clock() const override { return clock_; }
  boost::asio::awaitable<result<actors::submit_outcome>> submit(
      actors::admitted<actors::submission> in) override;
  result<storage::job_record> get(const std::string& tenant, const std::string& id) override;
  boost::asio::awaitable<result<storage::job_record>> wait_terminal(
      std::string tenant, std::string id, std::chrono::milliseconds timeout) override;
  boost::asio::awaitable<result<actors::event_batch>> next_events(
      std::string tenant, std::string id, uint64_t after_seq,
      std::chrono::milliseconds timeout) override;
  boost::asio::awaitable<result<storage::job_record>> cancel(std::string tenant,
                                                             std::string id) override;
  result<actors::job_page> list(const std::string& tenant,
                                std::optional<storage::job_status> status,
                                std::optional<storage::job_kind> kind, int limit,
                                const std::string& after) override;

  /// Moves a job to `status` (as the engine would), for the 200-on-terminal path.
  void set_status(const std::string& id, storage::job_status status);

  std::atomic<int> submits{0};  ///< submit() calls that reached the service

  /// While held, submit() suspends (without blocking its thread) until `release()`.
  void hold() { held_ = true; }
  void release();
  /// Waits until `n` submits are suspended by `hold()`, or the deadline; true when they are.
  bool wait_suspended(int n, std::chrono::milliseconds deadline);

 private:
  runtime::system_clock_source clock_;
  result<actors::submit_outcome> submit_locked(actors::submission s);

  std::atomic<bool> held_{false};
  std::vector<std::shared_ptr<boost::asio::steady_timer>> suspended_;  ///< guarded by mutex_
  std::condition_variable suspended_changed_;
  std::mutex mutex_;
  std::map<std::string, storage::job_record> jobs_;  ///< by id
  std::map<std::string, std::string> idempotency_;   ///< tenant '\n' key → job id
  int next_id_ = 1;
};

}  // namespace sy::testing
