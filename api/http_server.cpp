#include "api/http_server.hpp"

#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdint>
#include <future>
#include <limits>
#include <optional>
#include <vector>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http/buffer_body.hpp>
#include <boost/beast/http/chunk_encode.hpp>
#include <boost/beast/http/empty_body.hpp>
#include <boost/beast/http/error.hpp>
#include <boost/beast/http/parser.hpp>
#include <boost/beast/http/read.hpp>
#include <boost/beast/http/serializer.hpp>
#include <boost/beast/http/write.hpp>

#include "api/detail/connection.hpp"
#include "config/limits.hpp"
#include "runtime/await_token.hpp"
#include "runtime/thread_name.hpp"

namespace sy::api {
namespace {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using asio::ip::tcp;
using detail::connection;
using parser_t = http::request_parser<http::string_body>;

using runtime::use_ec;

using header_parser_t = http::request_parser<http::empty_body>;
using upload_parser_t = http::request_parser<http::buffer_body>;

/// Reads a request's header, and answers `100 Continue` when the client asked for it.
asio::awaitable<void> read_header(connection& c, beast::flat_buffer& buffer,
                                  header_parser_t& parser, beast::error_code& ec) {
  const size_t header_bytes =
      co_await http::async_read_header(c.stream, buffer, parser, use_ec(ec));
  if (ec) co_return;
  // Beast's header_limit is approximate (the start line and the first field are measured apart
  // from the rest); the limit a client is told of is exact: the bytes of the start line, the
  // fields and the blank line together.
  if (header_bytes > limits::http_header_max_bytes) {
    ec = http::error::header_limit;
    co_return;
  }
  if (beast::iequals(parser.get()[http::field::expect], "100-continue")) {
    http::response<http::empty_body> cont{http::status::continue_, parser.get().version()};
    co_await http::async_write(c.stream, cont, use_ec(ec));
  }
}

/// The client-visible error for a failed read, or nothing when the connection just ends
/// (end of stream, timeout, reset, cancelled by a graceful stop).
std::optional<sy::error> read_failure(const beast::error_code& ec) {
  if (ec == http::error::body_limit)
    return make_error(errc::body_too_large, "The request body is larger than the server's limit.");
  if (ec == http::error::header_limit)
    return make_error(errc::header_too_large, "The request headers are too large.");
  if (ec == http::error::end_of_stream || ec == http::error::partial_message) return std::nullopt;
  if (ec.category() == http::make_error_code(http::error::bad_target).category())
    return make_error(errc::bad_request,
                      "The request is not valid HTTP/1.1: " + ec.message() + ".");
  return std::nullopt;
}

/// The `stream_writer` of one connection: each chunk is written with the write timeout.
class connection_writer final : public detail::stream_writer {
 public:
  connection_writer(connection& c, bool chunked, int64_t timeout_ms,
                    const std::atomic<bool>& stopping)
      : c_(c), chunked_(chunked), timeout_ms_(timeout_ms), stopping_(stopping) {}

  asio::awaitable<bool> write(std::string data) override {
    if (ec_) co_return false;
    if (data.empty()) co_return true;
    c_.stream.expires_after(std::chrono::milliseconds(timeout_ms_));
    if (chunked_)
      co_await asio::async_write(c_.stream, http::make_chunk(asio::buffer(data)), use_ec(ec_));
    else
      co_await asio::async_write(c_.stream, asio::buffer(data), use_ec(ec_));
    co_return !ec_;
  }
  bool stopping() const override { return stopping_.load(); }
  const beast::error_code& error() const { return ec_; }

 private:
  connection& c_;
  bool chunked_;
  int64_t timeout_ms_;
  const std::atomic<bool>& stopping_;
  beast::error_code ec_;
};

/// Writes a streamed reply: the header (chunked for HTTP/1.1, `Connection: close` and a raw body
/// for HTTP/1.0), the streamer's chunks, then the last chunk. Sets `keep_alive` to whether the
/// connection may carry another request.
asio::awaitable<void> write_streamed(connection& c, detail::reply& rep, int64_t timeout_ms,
                                     const std::atomic<bool>& stopping, beast::error_code& ec,
                                     bool& keep_alive) {
  http::response<http::empty_body> head{std::move(rep.res.base())};
  head.erase(http::field::content_length);
  bool chunked = head.version() >= 11;
  if (chunked) {
    head.chunked(true);
  } else {
    head.keep_alive(false);
  }
  keep_alive = head.keep_alive();
  http::response_serializer<http::empty_body> sr{head};
  c.stream.expires_after(std::chrono::milliseconds(timeout_ms));
  co_await http::async_write_header(c.stream, sr, use_ec(ec));
  if (ec) co_return;
  connection_writer out(c, chunked, timeout_ms, stopping);
  try {
    co_await rep.stream(out);
  } catch (const std::exception&) {
    // Our own bug: end this stream, keep serving others.
    ec = asio::error::operation_aborted;
    co_return;
  }
  ec = out.error();
  if (ec) co_return;
  c.stream.expires_after(std::chrono::milliseconds(timeout_ms));
  if (chunked) co_await asio::async_write(c.stream, http::make_chunk_last(), use_ec(ec));
}

/// Answers an unreadable request and closes "lingeringly": half-close, then discard what the
/// client still sends for a short while, so the error is not lost to a TCP reset.
asio::awaitable<void> reject(connection& c, const sy::error& e, unsigned version,
                             int64_t drain_ms) {
  auto res = detail::request_handler::early_error(e, version, /*keep_alive=*/false);
  beast::error_code ec;
  c.stream.expires_after(std::chrono::milliseconds(drain_ms));
  co_await http::async_write(c.stream, res, use_ec(ec));
  if (ec) co_return;
  c.stream.socket().shutdown(tcp::socket::shutdown_send, ec);
  char sink[16 * 1024];
  while (!ec) co_await c.stream.async_read_some(asio::buffer(sink), use_ec(ec));
}

/// Marks `caller` gone when the client closes its connection while its request waits (a worker's
/// long poll): the socket turns readable, and a peek reads its end (0 bytes) or an error. Bytes
/// instead (a pipelined request) say the client is there; the watch then ends. The serve loop
/// cancels the wait once the answer is ready.
asio::awaitable<void> watch_caller(std::shared_ptr<connection> conn,
                                   std::shared_ptr<actors::caller_presence> caller) {
  beast::error_code ec;
  co_await conn->stream.socket().async_wait(tcp::socket::wait_read, use_ec(ec));
  if (ec) co_return;  // cancelled: answered
  char byte = 0;
  const auto n = ::recv(conn->stream.socket().native_handle(), &byte, 1, MSG_PEEK | MSG_DONTWAIT);
  if (n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK)) caller->left();
}

}  // namespace

http_server::http_server(const config::settings& settings, actors::core::client& core,
                         std::function<bool()> ready, actors::batch_service* batches, bool internal)
    : lanes_([n = settings.http_threads < 1 ? 1 : settings.http_threads] {
        std::vector<std::unique_ptr<io_lane>> v;
        v.reserve(static_cast<size_t>(n));
        for (int i = 0; i < n; ++i) v.push_back(std::make_unique<io_lane>());
        return v;
      }()),
      acceptor_(lanes_.front()->ioc),
      handler_(settings, core, std::move(ready), stopping_, batches, internal),
      max_body_bytes_(static_cast<uint64_t>(settings.max_body_bytes)),
      read_timeout_ms_(settings.http_read_timeout_ms),
      shutdown_timeout_ms_(settings.shutdown_timeout_ms) {}

result<std::unique_ptr<http_server>> http_server::start(listener bound,
                                                        const config::settings& settings,
                                                        actors::core::client& core,
                                                        std::function<bool()> ready,
                                                        actors::batch_service* batches) {
  std::unique_ptr<http_server> server(
      new http_server(settings, core, std::move(ready), batches, false));
  if (auto s = server->run(std::move(bound)); !s) return s.error();
  return server;
}

result<std::unique_ptr<http_server>> http_server::start_internal(listener bound,
                                                                 const config::settings& settings,
                                                                 actors::core::client& core,
                                                                 std::function<bool()> ready) {
  std::unique_ptr<http_server> server(
      new http_server(settings, core, std::move(ready), nullptr, true));
  if (auto s = server->run(std::move(bound)); !s) return s.error();
  return server;
}

status http_server::run(listener bound) {
  beast::error_code ec;
  const int fd = bound.release();
  acceptor_.assign(bound.protocol(), fd, ec);
  if (ec) {
    ::close(fd);
    return make_error(errc::listen_failed,
                      "cannot serve on " + bound.address() + ": " + ec.message(), "listen");
  }
  port_ = bound.port();
  asio::co_spawn(acceptor_.get_executor(), accept_loop(), asio::detached);
  for (auto& lane : lanes_)
    threads_.emplace_back([l = lane.get()] {
      runtime::name_this_thread("sy-http");
      l->ioc.run();
    });
  return ok;
}

asio::awaitable<void> http_server::accept_loop() {
  for (;;) {
    beast::error_code ec;
    auto& lane = *lanes_[next_lane_++ % lanes_.size()];
    auto socket = co_await acceptor_.async_accept(lane.ioc, use_ec(ec));
    if (ec) {
      if (stopping_.load() || !acceptor_.is_open()) co_return;
      // Out of file descriptors and the like: back off briefly instead of spinning.
      asio::steady_timer pause(acceptor_.get_executor(), std::chrono::milliseconds(50));
      co_await pause.async_wait(use_ec(ec));
      continue;
    }
    socket.set_option(tcp::no_delay(true), ec);
    auto conn = std::make_shared<connection>(std::move(socket));
    track(conn);
    asio::co_spawn(conn->stream.get_executor(), serve(conn), asio::detached);
  }
}

asio::awaitable<void> http_server::serve(std::shared_ptr<connection> conn) {
  beast::flat_buffer buffer;
  beast::error_code ec;
  while (!stopping_.load()) {
    header_parser_t head;
    // The body's limit depends on the route and is set below. (Not boost::none: Beast 1.74
    // compares a Content-Length with an empty limit as "over the limit".)
    head.body_limit(std::numeric_limits<std::uint64_t>::max());
    head.header_limit(static_cast<std::uint32_t>(limits::http_header_max_bytes));
    conn->stream.expires_after(std::chrono::milliseconds(read_timeout_ms_));
    co_await read_header(*conn, buffer, head, ec);
    if (ec) {
      if (auto e = read_failure(ec))
        co_await reject(*conn, *e, head.is_header_done() ? head.get().version() : 11,
                        read_timeout_ms_ < 1000 ? read_timeout_ms_ : 1000);
      break;
    }
    if (handler_.is_upload(head.get().method(), head.get().target())) {
      bool keep = co_await serve_upload(*conn, buffer, head);
      if (!keep || stopping_.load()) break;
      continue;
    }
    if (head.content_length() && *head.content_length() > max_body_bytes_) {
      co_await reject(*conn, *read_failure(http::error::body_limit), head.get().version(),
                      read_timeout_ms_ < 1000 ? read_timeout_ms_ : 1000);
      break;
    }
    parser_t parser{std::move(head)};
    parser.body_limit(max_body_bytes_);
    if (!parser.is_done()) co_await http::async_read(conn->stream, buffer, parser, use_ec(ec));
    if (ec) {
      if (auto e = read_failure(ec))
        co_await reject(*conn, *e, parser.get().version(),
                        read_timeout_ms_ < 1000 ? read_timeout_ms_ : 1000);
      break;
    }
    conn->busy = true;
    request_started();
    conn->stream.expires_never();  // the job service bounds its own time
    std::optional<detail::reply> rep;
    std::shared_ptr<actors::caller_presence> caller;
    if (handler_.watches_caller(parser.get().method(), parser.get().target())) {
      caller = std::make_shared<actors::caller_presence>();
      asio::co_spawn(conn->stream.get_executor(), watch_caller(conn, caller), asio::detached);
    }
    try {
      rep = co_await handler_.handle(parser.release(), caller);
    } catch (const std::exception&) {
      // Our own bug or a throwing library call that escaped its adapter: answer, do not crash.
    }
    if (caller) {  // ends the watch; nothing else is pending on the socket now
      beast::error_code ignored;
      conn->stream.socket().cancel(ignored);
    }
    if (!rep)
      rep = detail::reply{
          detail::request_handler::early_error(make_error(errc::internal_error, ""), 11,
                                               /*keep_alive=*/false),
          {}};
    if (stopping_.load()) rep->res.keep_alive(false);
    bool keep_alive = rep->res.keep_alive();
    if (rep->stream) {
      co_await write_streamed(*conn, *rep, read_timeout_ms_, stopping_, ec, keep_alive);
    } else {
      conn->stream.expires_after(std::chrono::milliseconds(read_timeout_ms_));
      co_await http::async_write(conn->stream, rep->res, use_ec(ec));
    }
    conn->busy = false;
    request_finished();
    if (ec || !keep_alive || stopping_.load()) break;
  }
  conn->stream.socket().shutdown(tcp::socket::shutdown_send, ec);
  conn->stream.close();
  untrack(conn.get());
}

asio::awaitable<bool> http_server::serve_upload(connection& conn, beast::flat_buffer& buffer,
                                                http::request_parser<http::empty_body>& head) {
  const unsigned version = head.get().version();
  const int64_t drain_ms = read_timeout_ms_ < 1000 ? read_timeout_ms_ : 1000;
  detail::request header;
  header.base() = head.get().base();
  upload_parser_t body{std::move(head)};
  // The upload enforces files_max_bytes on the file itself.
  body.body_limit(std::numeric_limits<std::uint64_t>::max());
  conn.busy = true;
  request_started();
  struct finished_guard {
    http_server* s;
    connection& c;
    ~finished_guard() {
      c.busy = false;
      s->request_finished();
    }
  } guard{this, conn};
  auto up = handler_.begin_upload(header);
  if (!up) {
    // Answered without reading the body; the connection cannot carry another request.
    co_await reject(conn, up.error(), version, drain_ms);
    co_return false;
  }
  std::optional<sy::error> failure;
  std::vector<char> chunk(size_t{256} * 1024);
  // Beast reads at most the buffer's free capacity (at least 512 bytes) per call: give it room,
  // or a large body arrives in thousands of small reads.
  buffer.reserve(size_t{256} * 1024);
  beast::error_code ec;
  while (!body.is_done()) {
    body.get().body().data = chunk.data();
    body.get().body().size = chunk.size();
    conn.stream.expires_after(std::chrono::milliseconds(read_timeout_ms_));
    co_await http::async_read(conn.stream, buffer, body, use_ec(ec));
    if (ec == http::error::need_buffer) ec = {};
    if (ec) co_return false;  // the client went away or stalled: the staging file is removed
    size_t n = chunk.size() - body.get().body().size;
    if (n == 0) continue;
    if (auto st = (*up)->feed(std::string_view(chunk.data(), n)); !st) {
      failure = st.error();
      break;
    }
  }
  if (failure) {
    co_await reject(conn, *failure, version, drain_ms);
    co_return false;
  }
  conn.stream.expires_never();
  auto res = co_await handler_.finish_upload(std::move(*up), header);
  if (stopping_.load()) res.keep_alive(false);
  bool keep_alive = res.keep_alive();
  conn.stream.expires_after(std::chrono::milliseconds(read_timeout_ms_));
  co_await http::async_write(conn.stream, res, use_ec(ec));
  co_return !ec && keep_alive;
}

void http_server::track(const std::shared_ptr<connection>& conn) {
  std::lock_guard lock(mutex_);
  conns_.emplace(conn.get(), conn);
}

void http_server::untrack(const connection* conn) {
  std::lock_guard lock(mutex_);
  conns_.erase(conn);
}

void http_server::request_started() {
  std::lock_guard lock(mutex_);
  ++in_flight_;
}

void http_server::request_finished() {
  std::lock_guard lock(mutex_);
  if (--in_flight_ == 0) drained_.notify_all();
}

void http_server::stop_accepting() {
  if (stopping_.exchange(true)) return;
  if (threads_.empty()) {
    // Never served (`run` failed): no io thread will close the listener, and waiting for one
    // would hold the caller for `shutdown_timeout_ms`.
    beast::error_code ec;
    acceptor_.close(ec);
    return;
  }
  // Close the listener on its thread and wait for it, so no connection is accepted after we
  // return (a caller may then tell a load balancer or start a new process on the port).
  auto closed = std::make_shared<std::promise<void>>();
  asio::post(acceptor_.get_executor(), [this, closed] {
    beast::error_code ec;
    acceptor_.close(ec);
    closed->set_value();
  });
  closed->get_future().wait_for(std::chrono::milliseconds(shutdown_timeout_ms_));
  std::vector<std::shared_ptr<connection>> live;
  {
    std::lock_guard lock(mutex_);
    for (auto& [key, weak] : conns_)
      if (auto c = weak.lock()) live.push_back(std::move(c));
  }
  // Idle connections wait for a request that must not come any more: cancel their read.
  // Busy ones finish their request and close after the response.
  for (auto& c : live)
    asio::post(c->stream.get_executor(), [c] {
      if (!c->busy) c->stream.cancel();
    });
  std::unique_lock lock(mutex_);
  drained_.wait_for(lock, std::chrono::milliseconds(shutdown_timeout_ms_),
                    [this] { return in_flight_ == 0; });
}

void http_server::stop() {
  if (stopped_) return;
  stopped_ = true;
  stop_accepting();
  for (auto& lane : lanes_) {
    lane->work.reset();
    lane->ioc.stop();
  }
  for (auto& t : threads_)
    if (t.joinable()) t.join();
}

http_server::~http_server() { stop(); }

}  // namespace sy::api
