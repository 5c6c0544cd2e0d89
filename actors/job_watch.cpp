#include "actors/job_watch.hpp"

#include <boost/asio/post.hpp>
#include <boost/asio/use_awaitable.hpp>

namespace sy::actors {

namespace asio = boost::asio;

std::shared_ptr<job_waiter> job_watch::subscribe(const std::string& job_id,
                                                 asio::any_io_executor ex) {
  auto w = std::make_shared<job_waiter>(clock_, std::move(ex));
  std::lock_guard lock{mu_};
  waiters_.emplace(job_id, w);
  return w;
}

void job_watch::unsubscribe(const std::string& job_id, const std::shared_ptr<job_waiter>& w) {
  std::lock_guard lock{mu_};
  auto [first, last] = waiters_.equal_range(job_id);
  for (auto it = first; it != last; ++it) {
    if (it->second.lock() == w) {
      waiters_.erase(it);
      return;
    }
  }
}

void job_watch::notify(const std::vector<std::string>& job_ids) {
  std::lock_guard lock{mu_};
  for (const auto& id : job_ids) {
    auto [first, last] = waiters_.equal_range(id);
    for (auto it = first; it != last; ++it) {
      auto w = it->second.lock();
      if (!w) continue;
      w->changed = true;
      // On the waiter's own executor: timers are not thread-safe.
      asio::post(w->timer->executor(), [w] { w->timer->cancel(); });
    }
  }
}

asio::awaitable<void> job_watch::wait_for_change(job_waiter& w, int64_t wait_ms) {
  if (w.changed) co_return;
  co_await runtime::async_wait(*w.timer, wait_ms, asio::use_awaitable);
}

}  // namespace sy::actors
