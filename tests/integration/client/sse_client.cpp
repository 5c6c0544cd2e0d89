#include "tests/integration/client/sse_client.hpp"

#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/http/read.hpp>
#include <boost/beast/http/write.hpp>

namespace sy::test {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;

namespace {

template <class Start>
beast::error_code run(asio::io_context& ioc, beast::tcp_stream& stream, Start start,
                      std::chrono::milliseconds deadline) {
  beast::error_code result = asio::error::would_block;
  stream.expires_after(deadline);
  start([&result](beast::error_code ec, auto&&...) { result = ec; });
  ioc.restart();
  ioc.run();
  return result;
}

}  // namespace

sse_client::sse_client(uint16_t port) : stream_(ioc_), port_(port) {
  parser_.body_limit(std::uint64_t{64} << 20);
}

int sse_client::open(const std::string& target, const std::map<std::string, std::string>& headers) {
  const auto deadline = std::chrono::seconds(10);
  asio::ip::tcp::endpoint ep(asio::ip::make_address("127.0.0.1"), port_);
  if (run(
          ioc_, stream_, [&](auto h) { stream_.async_connect(ep, h); }, deadline))
    return 0;
  http::request<http::string_body> req{http::verb::get, target, 11};
  req.set(http::field::host, "127.0.0.1");
  req.set(http::field::accept, "text/event-stream");
  for (const auto& [k, v] : headers) req.set(k, v);
  if (run(
          ioc_, stream_, [&](auto h) { http::async_write(stream_, req, h); }, deadline))
    return 0;
  if (run(
          ioc_, stream_, [&](auto h) { http::async_read_header(stream_, buffer_, parser_, h); },
          deadline))
    return 0;
  int status = static_cast<int>(parser_.get().result_int());
  if (status != 200) {
    run(
        ioc_, stream_, [&](auto h) { http::async_read(stream_, buffer_, parser_, h); }, deadline);
    body_ = parser_.get().body();
    ended_ = true;
    return status;
  }
  // Take chunk data as it comes instead of collecting the whole body.
  on_chunk_ = [this](uint64_t, std::string_view data, beast::error_code&) {
    text_.append(data);
    return data.size();
  };
  parser_.on_chunk_body(on_chunk_);
  return status;
}

std::string sse_client::header(const std::string& name) const {
  auto it = parser_.get().find(name);
  return it == parser_.get().end() ? std::string() : std::string(it->value());
}

bool sse_client::read_some(std::chrono::milliseconds deadline) {
  if (ended_) return false;
  // Not the tcp_stream timeout: it closes the socket, and a quiet stream is not a dead one.
  beast::error_code ec = asio::error::would_block;
  stream_.expires_never();
  http::async_read_some(stream_, buffer_, parser_, [&ec](beast::error_code e, size_t) { ec = e; });
  ioc_.restart();
  ioc_.run_for(deadline);
  if (ec == asio::error::would_block) {
    stream_.cancel();
    ioc_.restart();
    ioc_.run();
  }
  if (parser_.is_done() || ec == http::error::end_of_stream || ec == asio::error::eof ||
      ec == http::error::partial_message || ec == asio::error::connection_reset) {
    ended_ = true;
    return false;
  }
  return !ec;
}

std::optional<sse_message> sse_client::take_event() {
  for (;;) {
    size_t end = text_.find("\n\n");
    if (end == std::string::npos) return std::nullopt;
    std::string block = text_.substr(0, end);
    text_.erase(0, end + 2);
    sse_message m;
    bool any = false;
    size_t pos = 0;
    while (pos <= block.size()) {
      size_t nl = block.find('\n', pos);
      if (nl == std::string::npos) nl = block.size();
      std::string line = block.substr(pos, nl - pos);
      pos = nl + 1;
      if (line.empty()) continue;
      if (line[0] == ':') {
        ++comments_;
        continue;
      }
      auto colon = line.find(':');
      std::string field = line.substr(0, colon);
      std::string value = colon == std::string::npos ? "" : line.substr(colon + 1);
      if (!value.empty() && value[0] == ' ') value.erase(0, 1);
      any = true;
      if (field == "id") m.id = value;
      if (field == "event") m.event = value;
      if (field == "data") m.data += (m.data.empty() ? "" : "\n") + value;
    }
    if (any) return m;
  }
}

std::optional<sse_message> sse_client::next(std::chrono::milliseconds deadline) {
  auto until = std::chrono::steady_clock::now() + deadline;
  for (;;) {
    if (auto m = take_event()) return m;
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        until - std::chrono::steady_clock::now());
    if (left.count() <= 0 || !read_some(left)) return take_event();
  }
}

}  // namespace sy::test
