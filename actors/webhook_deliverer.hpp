#pragma once
/// The webhook deliverer (DESIGN.md): delivers the deliveries that state changes committed to
/// `db::webhooks`, at least once — a restart finds them still there — with exponential backoff
/// and jitter between attempts, up to `webhook_max_attempts`; then the delivery is dropped and
/// counted (`counter/webhooks_dropped` in meta). It never changes a job. Runs as a coroutine on
/// the engine's executor (a strand of it); deliveries run concurrently, a bounded number at once.

#include <utility>  // before any Asio header

#include <atomic>
#include <cstdint>
#include <future>
#include <memory>
#include <set>

#include <boost/asio/awaitable.hpp>
#include <boost/asio/strand.hpp>

#include "actors/engine_context.hpp"
#include "runtime/webhook_client.hpp"
#include "storage/lmdb_env.hpp"

namespace sy::actors {

class webhook_deliverer {
 public:
  /// `max_in_flight`: deliveries running at once.
  webhook_deliverer(engine_context& ctx, storage::environment& env, runtime::webhook_policy policy,
                    std::string secret, size_t max_in_flight = 16);
  /// Starts the loop. Call once.
  void start();
  /// Something new was committed: look now instead of at the next due time. Any thread.
  void wake();
  /// Stops taking deliveries and waits (up to `timeout`) for those in flight. Pending deliveries
  /// stay in storage for the next start.
  void stop(std::chrono::milliseconds timeout);

 private:
  boost::asio::awaitable<void> loop();
  boost::asio::awaitable<void> deliver(storage::webhook_record w);

  engine_context& ctx_;
  storage::environment& env_;
  boost::asio::strand<boost::asio::io_context::executor_type> strand_;
  runtime::webhook_client client_;
  size_t max_in_flight_;
  std::unique_ptr<runtime::timer> timer_;  ///< the loop's wait (ctx.clock's); on the strand
  std::set<uint64_t> in_flight_;           ///< on the strand
  std::atomic<bool> stopping_{false};
  std::promise<void> done_;
};

}  // namespace sy::actors
