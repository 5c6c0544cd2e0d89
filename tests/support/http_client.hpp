#pragma once
/// A blocking HTTP/1.1 client for tests: one keep-alive connection to 127.0.0.1:port.

#include <map>
#include <string>

#include <nlohmann/json.hpp>

namespace sy::test {

struct http_reply {
  int status = 0;                              ///< 0: the exchange failed (see `error`)
  std::map<std::string, std::string> headers;  ///< lower-case names
  std::string body;
  std::string error;
  nlohmann::json json() const { return nlohmann::json::parse(body, nullptr, false); }
};

class http_client {
 public:
  explicit http_client(uint16_t port);
  ~http_client();
  http_client(const http_client&) = delete;
  http_client& operator=(const http_client&) = delete;

  /// Sends one request; reconnects when the previous connection was closed.
  http_reply request(const std::string& method, const std::string& target,
                     const std::string& body = {},
                     const std::map<std::string, std::string>& headers = {});
  http_reply post_json(const std::string& target, const nlohmann::json& body,
                       const std::map<std::string, std::string>& headers = {});
  http_reply get(const std::string& target, const std::map<std::string, std::string>& h = {}) {
    return request("GET", target, {}, h);
  }

 private:
  struct impl;
  impl* impl_;
};

}  // namespace sy::test
