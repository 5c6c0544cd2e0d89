#include "tests/support/http_client.hpp"

#include <utility>

#include <optional>

#include <boost/asio/connect.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>

namespace sy::test {
namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;

struct http_client::impl {
  uint16_t port = 0;
  asio::io_context io;
  std::optional<beast::tcp_stream> stream;
  bool connected = false;
  beast::flat_buffer buffer;
};

http_client::http_client(uint16_t port) : impl_(new impl) { impl_->port = port; }
http_client::~http_client() {
  beast::error_code ec;
  if (impl_->stream) impl_->stream->socket().close(ec);
  delete impl_;
}

http_reply http_client::request(const std::string& method, const std::string& target,
                                const std::string& body,
                                const std::map<std::string, std::string>& headers) {
  http_reply out;
  for (int round = 0; round < 2; ++round) {
    beast::error_code ec;
    if (!impl_->connected) {
      impl_->stream.emplace(impl_->io);
      impl_->buffer.clear();
      impl_->stream->connect(
          asio::ip::tcp::endpoint(asio::ip::make_address("127.0.0.1"), impl_->port), ec);
      if (ec) {
        out.error = "connect: " + ec.message();
        return out;
      }
      impl_->connected = true;
    }
    http::request<http::string_body> req{http::string_to_verb(method), target, 11};
    req.set(http::field::host, "127.0.0.1");
    bool has_type = false;
    for (const auto& [k, v] : headers) {
      req.set(k, v);
      has_type = has_type || beast::iequals(k, "content-type");
    }
    if (!body.empty() && !has_type) req.set(http::field::content_type, "application/json");
    req.body() = body;
    req.prepare_payload();
    impl_->stream->expires_after(std::chrono::seconds(60));
    http::write(*impl_->stream, req, ec);
    http::response<http::string_body> res;
    if (!ec) http::read(*impl_->stream, impl_->buffer, res, ec);
    if (ec) {
      impl_->connected = false;
      out.error = "exchange: " + ec.message();
      if (round == 0 && (ec == http::error::end_of_stream || ec == asio::error::connection_reset))
        continue;  // the server closed an idle keep-alive connection: retry once
      return out;
    }
    out.status = static_cast<int>(res.result_int());
    for (const auto& f : res) {
      std::string name(f.name_string());
      for (auto& c : name) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
      out.headers[name] = std::string(f.value());
    }
    out.body = std::move(res.body());
    out.error.clear();
    if (!res.keep_alive()) impl_->connected = false;
    return out;
  }
  return out;
}

http_reply http_client::post_json(const std::string& target, const nlohmann::json& body,
                                  const std::map<std::string, std::string>& headers) {
  return request("POST", target, body.dump(), headers);
}

}  // namespace sy::test
