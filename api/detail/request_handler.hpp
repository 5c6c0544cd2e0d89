#pragma once
/// Turns one complete HTTP request into one response: routing, authentication, validation,
/// and the call into `actors::job_service`. It holds no per-connection state, so every
/// connection of the server shares one handler; it never blocks an io thread except on the
/// short LMDB read inside `job_service::get`.

#include <utility>  // before any Asio/Beast header

#include <atomic>
#include <functional>
#include <string>

#include <boost/asio/awaitable.hpp>
#include <boost/beast/http/message.hpp>
#include <boost/beast/http/string_body.hpp>

#include "actors/job_service.hpp"
#include "api/auth.hpp"
#include "api/router.hpp"
#include "config/settings.hpp"

namespace sy::api::detail {

using request = boost::beast::http::request<boost::beast::http::string_body>;
using response = boost::beast::http::response<boost::beast::http::string_body>;

class request_handler {
 public:
  /// `stopping` turns /readyz to 503 once the server drains; it must outlive the handler.
  request_handler(const config::settings& settings, actors::job_service& service,
                  std::function<bool()> ready, const std::atomic<bool>& stopping);

  /// The response to `req`, with Content-Type, x-request-id and keep-alive set.
  boost::asio::awaitable<response> handle(request req);

  /// A response for an error found before a request could be routed (413, 400, 408, 500).
  static response early_error(const sy::error& e, unsigned version, bool keep_alive);

 private:
  boost::asio::awaitable<response> submit_job(const request& req);
  response get_job(const request& req, const std::string& id);
  response readyz(const request& req) const;

  router router_;
  authenticator auth_;
  actors::job_service& service_;
  std::function<bool()> ready_;
  const std::atomic<bool>& stopping_;
};

}  // namespace sy::api::detail
