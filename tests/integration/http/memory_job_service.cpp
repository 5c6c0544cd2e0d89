#include "tests/integration/http/memory_job_service.hpp"

#include <boost/asio/post.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>

#include "actors/submission.hpp"

namespace sy::testing {

boost::asio::awaitable<result<actors::submit_outcome>> memory_job_service::submit(
    actors::admitted<actors::submission> in) {
  actors::submission s = std::move(in).take();
  ++submits;
  if (held_) {
    auto timer = std::make_shared<boost::asio::steady_timer>(
        co_await boost::asio::this_coro::executor, boost::asio::steady_timer::time_point::max());
    {
      std::lock_guard lock(mutex_);
      suspended_.push_back(timer);
    }
    suspended_changed_.notify_all();
    boost::system::error_code ec;
    co_await timer->async_wait(boost::asio::redirect_error(boost::asio::use_awaitable, ec));
  }
  co_return submit_locked(std::move(s));
}

result<actors::submit_outcome> memory_job_service::submit_locked(actors::submission s) {
  std::lock_guard lock(mutex_);
  std::string hash = actors::request_hash(s);
  std::string scoped_key = s.tenant + "\n" + s.idempotency_key;
  if (!s.idempotency_key.empty()) {
    auto it = idempotency_.find(scoped_key);
    if (it != idempotency_.end()) {
      const auto& job = jobs_.at(it->second);
      if (job.request_hash != hash)
        return make_error(errc::idempotency_conflict,
                          "Idempotency-Key reused with another request.", "Idempotency-Key");
      return actors::submit_outcome{job, false};
    }
  }
  storage::job_record job;
  job.id = "job_" + std::to_string(next_id_++);
  job.tenant = s.tenant;
  job.endpoint = s.endpoint;
  job.model = s.model;
  job.body = s.body;
  job.metadata = s.metadata;
  job.idempotency_key = s.idempotency_key;
  job.request_hash = hash;
  job.max_attempts = s.max_attempts == 0 ? 3 : s.max_attempts;
  job.created_at_ms = 1'700'000'000'000;
  jobs_[job.id] = job;
  if (!s.idempotency_key.empty()) idempotency_[scoped_key] = job.id;
  return actors::submit_outcome{job, true};
}

result<storage::job_record> memory_job_service::get(const std::string& tenant,
                                                    const std::string& id) {
  std::lock_guard lock(mutex_);
  auto it = jobs_.find(id);
  if (it == jobs_.end() || it->second.tenant != tenant)
    return make_error(errc::job_not_found, "No job " + id + ".", "id");
  return it->second;
}

void memory_job_service::release() {
  std::lock_guard lock(mutex_);
  held_ = false;
  // A timer is touched only on its own executor (the connection's strand).
  for (auto& t : suspended_) boost::asio::post(t->get_executor(), [t] { t->cancel(); });
  suspended_.clear();
}

bool memory_job_service::wait_suspended(int n, std::chrono::milliseconds deadline) {
  std::unique_lock lock(mutex_);
  return suspended_changed_.wait_for(lock, deadline,
                                     [&] { return static_cast<int>(suspended_.size()) >= n; });
}

void memory_job_service::set_status(const std::string& id, storage::job_status status) {
  std::lock_guard lock(mutex_);
  auto& job = jobs_.at(id);
  job.status = status;
  if (storage::is_terminal(status)) {
    job.finished_at_ms = 1'700'000'009'000;
    job.result = storage::gateway_result{200, R"({"ok":true})"};
  }
}

// The HTTP tests of these routes run against the real engine (tests/integration/engine).
boost::asio::awaitable<result<storage::job_record>> memory_job_service::wait_terminal(
    std::string tenant, std::string id, std::chrono::milliseconds) {
  co_return get(tenant, id);
}

boost::asio::awaitable<result<actors::event_batch>> memory_job_service::next_events(
    std::string tenant, std::string id, uint64_t, std::chrono::milliseconds) {
  auto job = get(tenant, id);
  if (!job) co_return job.error();
  co_return actors::event_batch{std::move(*job), {}};
}

boost::asio::awaitable<result<storage::job_record>> memory_job_service::cancel(std::string tenant,
                                                                               std::string id) {
  co_return get(tenant, id);
}

result<actors::job_page> memory_job_service::list(const std::string& tenant,
                                                  std::optional<storage::job_status>,
                                                  std::optional<storage::job_kind>, int limit,
                                                  const std::string&) {
  std::lock_guard lock{mutex_};
  actors::job_page page;
  for (auto it = jobs_.rbegin(); it != jobs_.rend(); ++it) {
    if (it->second.tenant != tenant) continue;
    if (static_cast<int>(page.jobs.size()) == limit) {
      page.has_more = true;
      break;
    }
    page.jobs.push_back(it->second);
  }
  return page;
}

}  // namespace sy::testing
