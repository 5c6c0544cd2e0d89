// sy_bench_bare: the machine's limit for the submission path's HTTP part alone.
//
// A bare Beast HTTP/1.1 server that answers every request `202` with a tiny JSON body and does
// no other work: no parsing of the body, no storage, no queue. It is laid out like the engine's
// HTTP server (api/http_server.cpp): T lanes, each an io_context run by one thread, the accepted
// connections dealt to the lanes in turn, one coroutine per keep-alive connection. Driven by a
// load generator (bench/load_submit.cpp, bench/peers/switchyard.mjs), it gives that client's own
// ceiling on this machine; the engine's durable enqueue rate divided by it says how much of the
// machine's HTTP capacity the engine keeps (bench/peers/README.md).
//
//   sy_bench_bare [--port N] [--threads T]      (defaults: port 0, i.e. a free one; 2 threads)
//
// Prints `listening <port>` once ready and serves until SIGTERM or SIGINT. Depends only on
// third-party libraries (Beast/Asio), like the other load generators.

#include <utility>  // before any Asio header

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/signal_set.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http.hpp>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <thread>
#include <vector>

namespace {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = asio::ip::tcp;
using error_code = boost::system::error_code;

auto use_ec(error_code& ec) { return asio::redirect_error(asio::use_awaitable, ec); }

/// The one answer: what a submission's 202 looks like, without the work behind it.
constexpr const char* answer_body = R"({"id":"job_bare","status":"queued"})";

/// Largest request body read (the engine's default max_body_bytes).
constexpr uint64_t max_body_bytes = uint64_t{1} << 20;

struct options {
  uint16_t port = 0;
  int threads = 2;
};

bool parse_args(int argc, char** argv, options& o) {
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string arg = argv[i];
    char* end = nullptr;
    const long long n = std::strtoll(argv[i + 1], &end, 10);
    if (*end != '\0' || n < 0) return false;
    if (arg == "--port" && n < 65536) {
      o.port = static_cast<uint16_t>(n);
    } else if (arg == "--threads" && n > 0 && n <= 64) {
      o.threads = static_cast<int>(n);
    } else {
      return false;
    }
  }
  return argc % 2 == 1;
}

/// One keep-alive connection: read a request, answer 202, until the client closes.
asio::awaitable<void> serve(tcp::socket sock) {
  beast::flat_buffer buffer;
  error_code ec;
  for (;;) {
    http::request_parser<http::string_body> parser;
    parser.body_limit(max_body_bytes);
    co_await http::async_read(sock, buffer, parser, use_ec(ec));
    if (ec) break;
    const auto& req = parser.get();
    http::response<http::string_body> res{http::status::accepted, req.version()};
    res.set(http::field::content_type, "application/json");
    res.keep_alive(req.keep_alive());
    res.body() = answer_body;
    res.prepare_payload();
    co_await http::async_write(sock, res, use_ec(ec));
    if (ec || !res.keep_alive()) break;
  }
  sock.shutdown(tcp::socket::shutdown_send, ec);
  sock.close(ec);
}

/// Accepts on lane 0's context and hands each connection to the next lane's context.
asio::awaitable<void> accept_loop(tcp::acceptor& acceptor,
                                  std::vector<std::unique_ptr<asio::io_context>>& lanes) {
  size_t next = 0;
  for (;;) {
    error_code ec;
    auto& lane = *lanes[next++ % lanes.size()];
    tcp::socket sock = co_await acceptor.async_accept(lane, use_ec(ec));
    if (ec) {
      if (!acceptor.is_open()) co_return;
      continue;
    }
    sock.set_option(tcp::no_delay(true), ec);
    asio::co_spawn(lane, serve(std::move(sock)), asio::detached);
  }
}

}  // namespace

int main(int argc, char** argv) {
  options o;
  if (!parse_args(argc, argv, o)) {
    std::fprintf(stderr, "usage: sy_bench_bare [--port N] [--threads T]\n");
    return 2;
  }
  std::vector<std::unique_ptr<asio::io_context>> lanes;
  for (int i = 0; i < o.threads; ++i) lanes.push_back(std::make_unique<asio::io_context>(1));
  // Keeps every lane's run() going while it has no connection yet.
  std::vector<asio::executor_work_guard<asio::io_context::executor_type>> guards;
  for (auto& lane : lanes) guards.push_back(asio::make_work_guard(*lane));

  error_code ec;
  tcp::acceptor acceptor(*lanes.front());
  const tcp::endpoint endpoint(asio::ip::make_address("127.0.0.1"), o.port);
  acceptor.open(endpoint.protocol(), ec);
  if (!ec) acceptor.set_option(asio::socket_base::reuse_address(true), ec);
  if (!ec) acceptor.bind(endpoint, ec);
  if (!ec) acceptor.listen(asio::socket_base::max_listen_connections, ec);
  if (ec) {
    std::fprintf(stderr, "sy_bench_bare: cannot listen: %s\n", ec.message().c_str());
    return 1;
  }
  std::printf("listening %u\n", static_cast<unsigned>(acceptor.local_endpoint().port()));
  std::fflush(stdout);

  asio::co_spawn(*lanes.front(), accept_loop(acceptor, lanes), asio::detached);
  // SIGTERM or SIGINT stops every lane; connections still open are simply dropped.
  asio::signal_set signals(*lanes.front(), SIGTERM, SIGINT);
  signals.async_wait([&lanes](const error_code&, int) {
    for (auto& lane : lanes) lane->stop();
  });
  std::vector<std::thread> threads;
  for (size_t i = 1; i < lanes.size(); ++i) threads.emplace_back([&lanes, i] { lanes[i]->run(); });
  lanes.front()->run();
  for (auto& t : threads) t.join();
  return 0;
}
