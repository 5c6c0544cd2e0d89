#pragma once
/// The blocking HTTP/1.1 client of the `switchyard` client commands (runtime/client_cli.hpp):
/// one connection per exchange, bounded in time, plain HTTP only. Not for the engine's own
/// traffic (gateway_client, outbound_http). Called from the main thread of the CLI process only.

#include <chrono>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "config/result.hpp"

namespace sy::runtime {

/// Where the server is: parsed once from --server / SWITCHYARD_URL.
struct http_endpoint {
  std::string url;          ///< as given, for messages
  std::string host;         ///< name or address to resolve
  uint16_t port = 80;       ///< 80 unless given
  std::string host_header;  ///< host[:port] as the Host header carries it
  std::string base_path;    ///< a path prefix before /v1/... ("" when the URL has none)
};

/// Parses "http://host[:port][/prefix]". Errors (code invalid_arguments): https (the CLI speaks
/// plain HTTP; put it behind a local TLS-terminating proxy), or a URL parse_webhook_url refuses.
result<http_endpoint> parse_http_endpoint(std::string_view url);

/// One request: `target` is the path and query under the endpoint's base path.
struct http_call {
  std::string method = "GET";
  std::string target;
  std::vector<std::pair<std::string, std::string>> headers;
  std::string body;
  std::chrono::milliseconds timeout{30'000};  ///< whole exchange; per read for a stream
};

/// An answer. `body` is empty for a successful download or stream (it went elsewhere).
struct http_answer {
  int status = 0;
  std::string body;
  std::string content_type;
};

/// One exchange, the whole body in memory. Error code http_unreachable when the server could not
/// be resolved or connected to, or the exchange broke or timed out (the message says which).
result<http_answer> http_exchange(const http_endpoint& to, const http_call& call);

/// One exchange whose 2xx body is written to `path` (as `path`.part, renamed once complete). A
/// non-2xx answer's body is returned in `body` and nothing is left at `path`. Errors: as
/// http_exchange, and storage_error when the file cannot be written.
result<http_answer> http_download(const http_endpoint& to, const http_call& call,
                                  const std::string& path);

/// One exchange whose 2xx body is handed to `on_data` piece by piece as it arrives (a
/// server-sent event stream); `on_data` returns false to stop reading. `call.timeout` bounds the
/// connect and each wait for more data. A non-2xx answer's body is returned in `body`.
result<http_answer> http_stream(const http_endpoint& to, const http_call& call,
                                const std::function<bool(std::string_view)>& on_data);

}  // namespace sy::runtime
