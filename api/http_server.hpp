#pragma once
/// The HTTP/1.1 front door (Boost.Beast, C++20 coroutines). It runs on its own io_context with
/// `settings.http_threads` threads; each connection is a coroutine on its own strand. Requests
/// are read with `http_read_timeout_ms` (slow or half-open clients are cut off) and a body limit
/// of `max_body_bytes` (413). Responses, and each chunk of a streamed response (server-sent
/// events, see api/detail/stream.hpp), are written within `http_read_timeout_ms` too, so a
/// client that stops reading is disconnected instead of holding memory. Handlers never block an io
/// thread: a submission awaits the job service's durable commit. Threads: `start`, `stop_accepting`
/// and `stop` are called by the owner (runtime), never from an io thread.

#include <utility>  // before any Asio/Beast header

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>
#include <unordered_map>
#include <vector>

#include <boost/asio/awaitable.hpp>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http/empty_body.hpp>
#include <boost/beast/http/parser.hpp>

#include "actors/batch_service.hpp"
#include "actors/core_messages.hpp"
#include "api/detail/request_handler.hpp"
#include "api/listener.hpp"
#include "config/result.hpp"
#include "config/settings.hpp"

namespace sy::api {

namespace detail {
struct connection;
}

class http_server {
 public:
  /// Serves the public API on `bound` (api/listener.hpp): from now on requests are accepted.
  /// `ready` answers /readyz. `core` (actors/core_messages.hpp: every call of the API into the
  /// core goes through it) must outlive the server. `batches` serves the Files and
  /// Batch API (nullptr: those routes answer 404); uploads to POST /v1/files are streamed to it,
  /// never held in memory. Error: listen_failed (the socket cannot be taken over).
  static result<std::unique_ptr<http_server>> start(listener bound,
                                                    const config::settings& settings,
                                                    actors::core::client& core,
                                                    std::function<bool()> ready,
                                                    actors::batch_service* batches = nullptr);
  /// The internal listener, served on `bound` (bound to `settings.internal_listen`): the worker
  /// protocol (docs/workers.md), /healthz and /readyz — nothing of the public API. Errors as
  /// start's.
  static result<std::unique_ptr<http_server>> start_internal(listener bound,
                                                             const config::settings& settings,
                                                             actors::core::client& core,
                                                             std::function<bool()> ready);

  /// Stops `stop()`s the server if still running.
  ~http_server();
  http_server(const http_server&) = delete;
  http_server& operator=(const http_server&) = delete;

  /// The port actually bound (useful with port 0).
  uint16_t port() const { return port_; }

  /// Graceful: closes the listener and idle connections, lets in-flight requests finish (their
  /// responses say `Connection: close`), and returns when none is left or after
  /// `shutdown_timeout_ms`. Requests waiting on a job (Prefer: wait, synchronous endpoints)
  /// answer with the job as it is, and event streams end, within about
  /// `detail::stop_check_interval`. /readyz answers 503 from now on.
  void stop_accepting();

  /// True once `stop_accepting` has begun: new requests are no longer taken.
  bool draining() const { return stopping_.load(); }

  /// Stops the io threads (after `stop_accepting` when it has not run) and joins them.
  void stop();

 private:
  http_server(const config::settings& settings, actors::core::client& core,
              std::function<bool()> ready, actors::batch_service* batches, bool internal);
  /// Takes `bound` over and starts the accept loop and the io threads.
  status run(listener bound);
  boost::asio::awaitable<void> accept_loop();
  boost::asio::awaitable<void> serve(std::shared_ptr<detail::connection> conn);
  /// Streams one upload's body through the handler and answers it; false when the connection
  /// must close.
  boost::asio::awaitable<bool> serve_upload(
      detail::connection& conn, boost::beast::flat_buffer& buffer,
      boost::beast::http::request_parser<boost::beast::http::empty_body>& head);
  void track(const std::shared_ptr<detail::connection>& conn);
  void untrack(const detail::connection* conn);
  void request_started();
  void request_finished();

  /// One io_context per thread, each run by its thread alone: a connection lives on one of
  /// them from accept to close, so its handlers never hop threads and need no strand, and the
  /// contexts share no scheduler lock. The listener lives on the first.
  struct io_lane {
    boost::asio::io_context ioc{1};
    boost::asio::executor_work_guard<boost::asio::io_context::executor_type> work{
        boost::asio::make_work_guard(ioc)};
  };
  std::vector<std::unique_ptr<io_lane>> lanes_;
  size_t next_lane_ = 0;  ///< the lane of the next accepted connection (accept loop only)
  boost::asio::ip::tcp::acceptor acceptor_;
  std::atomic<bool> stopping_{false};
  detail::request_handler handler_;
  uint64_t max_body_bytes_;
  int64_t read_timeout_ms_;
  int64_t shutdown_timeout_ms_;
  uint16_t port_ = 0;

  std::mutex mutex_;  ///< guards conns_ and in_flight_
  std::condition_variable drained_;
  std::unordered_map<const detail::connection*, std::weak_ptr<detail::connection>> conns_;
  int in_flight_ = 0;
  bool stopped_ = false;
  std::vector<std::thread> threads_;
};

}  // namespace sy::api
