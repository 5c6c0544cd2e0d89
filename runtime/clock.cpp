#include "runtime/clock.hpp"

#include <chrono>
#include <iterator>
#include <vector>

#include <boost/asio/execution/context.hpp>
#include <boost/asio/execution_context.hpp>
#include <boost/asio/query.hpp>

#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>

namespace sy::runtime {
namespace asio = boost::asio;

int64_t system_clock_source::now_ms() const {
  using namespace std::chrono;
  return duration_cast<milliseconds>(system_clock::now().time_since_epoch()).count();
}

int64_t system_clock_source::monotonic_us() const {
  using namespace std::chrono;
  return duration_cast<microseconds>(steady_clock::now().time_since_epoch()).count();
}

namespace {

class steady_timer_adapter final : public timer {
 public:
  explicit steady_timer_adapter(const asio::any_io_executor& ex) : timer_(ex) {}
  void wait(int64_t delay_ms, std::function<void(bool)> done) override {
    timer_.expires_after(std::chrono::milliseconds(std::max<int64_t>(delay_ms, 0)));
    timer_.async_wait([done = std::move(done)](const boost::system::error_code& ec) { done(!ec); });
  }
  void cancel() override { timer_.cancel(); }
  asio::any_io_executor executor() const override { return timer_.get_executor(); }

 private:
  mutable asio::steady_timer timer_;  // get_executor() is not const in Boost 1.74
};

}  // namespace

std::unique_ptr<timer> system_clock_source::make_timer(asio::any_io_executor ex) const {
  return std::make_unique<steady_timer_adapter>(std::move(ex));
}

/// One armed wait: its completion and executor. Completed at most once, by whoever takes it out
/// of the clock's table first under the clock's lock (the clock firing it, its timer cancelling
/// it, or its executor's context shutting down).
struct manual_clock::armed_wait {
  asio::any_io_executor ex;
  std::function<void(bool)> done;
  const manual_clock* clock = nullptr;
  std::pair<int64_t, uint64_t> key{};

  /// The executor's context shuts down (it is about to be destroyed): the wait is dropped and its
  /// completion destroyed uncalled, as Asio destroys its own timers' pending waits then, so that
  /// nothing bound to the context outlives it (a coroutine's handler destroyed after its
  /// io_context would post into freed memory).
  static void abandon(const std::shared_ptr<armed_wait>& w) {
    std::function<void(bool)> gone;
    {
      std::lock_guard lock{w->clock->mu_};
      auto it = w->clock->waits_.find(w->key);
      if (it == w->clock->waits_.end() || it->second != w) return;  // fired or cancelled
      w->clock->waits_.erase(it);
      gone = std::move(w->done);
    }
  }  // `gone` is destroyed here, outside the lock
};

namespace {

/// Per execution context: the manual-clock waits bound to it, abandoned when it shuts down.
class manual_wait_service final : public asio::execution_context::service {
 public:
  static asio::execution_context::id id;
  explicit manual_wait_service(asio::execution_context& c) : asio::execution_context::service(c) {}

  void track(const std::shared_ptr<manual_clock::armed_wait>& w) {
    std::lock_guard lock{mu_};
    if (waits_.size() >= 2 * kept_ + 64) {  // forget the ended ones now and then
      std::erase_if(waits_, [](const auto& p) { return p.expired(); });
      kept_ = waits_.size();
    }
    waits_.push_back(w);
  }

 private:
  void shutdown() override {
    std::vector<std::weak_ptr<manual_clock::armed_wait>> all;
    {
      std::lock_guard lock{mu_};
      all.swap(waits_);
    }
    for (auto& p : all)
      if (auto w = p.lock()) manual_clock::armed_wait::abandon(w);
  }

  std::mutex mu_;
  std::vector<std::weak_ptr<manual_clock::armed_wait>> waits_;
  size_t kept_ = 0;
};

asio::execution_context::id manual_wait_service::id;

}  // namespace

/// A timer of a manual_clock: its armed wait lives in the clock's table until it fires or is
/// cancelled.
class manual_timer final : public timer {
 public:
  manual_timer(const manual_clock& c, asio::any_io_executor ex) : clock_(c), ex_(std::move(ex)) {}
  ~manual_timer() override { cancel(); }
  void wait(int64_t delay_ms, std::function<void(bool)> done) override {
    cancel();
    auto w = std::make_shared<manual_clock::armed_wait>(
        manual_clock::armed_wait{ex_, std::move(done), &clock_, {}});
    if (delay_ms > 0) {
      auto& ctx = asio::query(ex_, asio::execution::context);
      asio::use_service<manual_wait_service>(ctx).track(w);
      std::lock_guard lock{clock_.mu_};
      key_ = {clock_.now_ms() + delay_ms, clock_.next_seq_++};
      w->key = key_;
      clock_.waits_.emplace(key_, w);
      armed_ = true;
      return;
    }
    asio::post(ex_, [w] { w->done(true); });
  }
  void cancel() override {
    std::shared_ptr<manual_clock::armed_wait> w;
    {
      std::lock_guard lock{clock_.mu_};
      if (!armed_) return;
      armed_ = false;
      auto it = clock_.waits_.find(key_);
      if (it == clock_.waits_.end()) return;  // it fired already
      w = std::move(it->second);
      clock_.waits_.erase(it);
    }
    asio::post(w->ex, [w] { w->done(false); });
  }
  asio::any_io_executor executor() const override { return ex_; }

 private:
  const manual_clock& clock_;
  asio::any_io_executor ex_;
  std::pair<int64_t, uint64_t> key_{};
  bool armed_ = false;  ///< guarded by the clock's lock
};

std::unique_ptr<timer> manual_clock::make_timer(asio::any_io_executor ex) const {
  return std::make_unique<manual_timer>(*this, std::move(ex));
}

void manual_clock::advance(int64_t delta_ms) {
  now_.fetch_add(delta_ms, std::memory_order_acq_rel);
  if (delta_ms > 0) mono_us_.fetch_add(delta_ms * 1'000, std::memory_order_acq_rel);
  fire_due();
}

void manual_clock::set(int64_t ms) {
  const int64_t before = now_.exchange(ms, std::memory_order_acq_rel);
  if (ms > before) mono_us_.fetch_add((ms - before) * 1'000, std::memory_order_acq_rel);
  fire_due();
}

size_t manual_clock::armed() const {
  std::lock_guard lock{mu_};
  return waits_.size();
}

size_t manual_clock::armed_due_at(int64_t due_ms) const {
  std::lock_guard lock{mu_};
  auto from = waits_.lower_bound({due_ms, 0});
  auto to = waits_.lower_bound({due_ms + 1, 0});
  return static_cast<size_t>(std::distance(from, to));
}

void manual_clock::fire_due() {
  std::vector<std::shared_ptr<armed_wait>> due;
  {
    std::lock_guard lock{mu_};
    const int64_t now = now_ms();
    while (!waits_.empty() && waits_.begin()->first.first <= now) {
      due.push_back(std::move(waits_.begin()->second));
      waits_.erase(waits_.begin());
    }
  }
  for (auto& w : due) asio::post(w->ex, [w] { w->done(true); });
}

}  // namespace sy::runtime
