/// fuzz_http_request: the bytes a client sends on a connection, read as api/http_server.cpp reads
/// them (the header with an empty_body parser, then the body with a string_body parser built from
/// it, both with the server's limits), and a parsed request run through the pure parts of
/// request handling: the route table, the query string, `Prefer`, `Idempotency-Key`, the media
/// type, the API key and, for a JSON body, admission (api/admission.hpp) → request_hash.
///
/// Input: byte 0 is the read size (0: everything in one read; n: reads of n bytes, as a slow
/// client's segments arrive), the rest is what the client sent.

#include <utility>  // before any Asio/Beast header

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <string>
#include <string_view>
#include <vector>

#include <boost/asio/buffer.hpp>
#include <boost/beast/http/empty_body.hpp>
#include <boost/beast/http/error.hpp>
#include <boost/beast/http/parser.hpp>
#include <boost/beast/http/string_body.hpp>

#include "actors/submission.hpp"
#include "api/admission.hpp"
#include "api/auth.hpp"
#include "api/detail/multipart.hpp"
#include "api/detail/prefer.hpp"
#include "api/detail/query.hpp"
#include "api/detail/responses.hpp"
#include "api/detail/routes.hpp"
#include "api/router.hpp"
#include "config/settings.hpp"
#include "config/sha256.hpp"
#include "tests/fuzz/fuzz_support.hpp"

namespace {

namespace beast = boost::beast;
namespace http = beast::http;
using sy::fuzz::check;
using sy::fuzz::check_client_error;

// The API's own route table (api/detail/routes.hpp), as the request handler matches it.
using sy::api::detail::route_count;
using sy::api::detail::route_list_jobs;
using sy::api::detail::route_upload_file;
using sy::api::detail::routes;

/// With one API key configured (the intake harness also covers none).
const sy::api::authenticator& auth() {
  static const sy::api::authenticator a({{sy::config::sha256_hex("sk-fuzz"), "fuzz"}});
  return a;
}

/// What a client sent, handed out in reads of at most `read_size` bytes (0: all at once).
class byte_source {
 public:
  byte_source(std::string_view bytes, size_t read_size) : rest_(bytes), read_size_(read_size) {}
  /// Appends the next read to `buffer`; false at the end of the stream.
  bool read(std::string& buffer) {
    if (rest_.empty()) return false;
    size_t n = read_size_ == 0 ? rest_.size() : std::min(read_size_, rest_.size());
    buffer.append(rest_.substr(0, n));
    rest_.remove_prefix(n);
    return true;
  }

 private:
  std::string_view rest_;
  size_t read_size_;
};

/// Feeds `parser` as Beast's read loop does until the header (or the whole message) is done:
/// unconsumed bytes stay in `buffer`; need_more means read again. False with `ec` set when the
/// read fails.
template <class Parser>
bool read_until(Parser& parser, bool header_only, byte_source& src, std::string& buffer,
                beast::error_code& ec) {
  auto finished = [&] { return header_only ? parser.is_header_done() : parser.is_done(); };
  while (!finished()) {
    if (!buffer.empty()) {
      size_t n = parser.put(boost::asio::buffer(buffer), ec);
      buffer.erase(0, n);
      if (ec == http::error::need_more) {
        ec = {};
      } else if (ec) {
        return false;
      } else if (n > 0) {
        continue;
      }
    }
    if (!src.read(buffer)) {
      // As Beast's read: end_of_stream before any byte of the message, else put_eof.
      if (!parser.got_some()) {
        ec = http::error::end_of_stream;
        return false;
      }
      parser.put_eof(ec);
      return !ec && finished();
    }
  }
  return true;
}

std::vector<std::string_view> header_values(const sy::api::detail::request& req,
                                            std::string_view name) {
  std::vector<std::string_view> out;
  auto [first, last] = req.equal_range(name);
  for (auto it = first; it != last; ++it) out.push_back(it->value());
  return out;
}

/// A client-visible error: in the table, and renderable as the response the server sends.
void check_error(const sy::error& e, const sy::api::detail::request& req) {
  check_client_error(e);
  auto res = sy::api::detail::error_for(e, req);
  check(res[http::field::content_length] == std::to_string(res.body().size()),
        "error response's Content-Length is not its body's length");
}

void check_route(const sy::api::route_match& m) {
  using kind = sy::api::route_match::kind;
  if (m.outcome == kind::found) {
    check(m.route >= 0 && m.route < route_count, "router returned an unknown route");
    for (const auto& p : m.params) check(!p.empty(), "router captured an empty segment");
  } else if (m.outcome == kind::method_not_allowed) {
    check(!m.allow.empty(), "405 without an Allow list");
  }
}

/// A JSON body through admission, as request_handler::submit_job and sync_call hand it over.
void handle_submission(const sy::api::detail::request& req) {
  static const sy::api::admission admit{[] {
    sy::config::settings s;
    s.api_keys = {{sy::config::sha256_hex("sk-fuzz"), "fuzz"}};
    return s;
  }()};
  auto job = admit.job(sy::api::detail::client_of(req));
  if (!job) {
    check_error(job.error(), req);
  } else {
    check((*job)->idempotency_key.size() <= 255, "Idempotency-Key longer than 255 accepted");
    check(sy::actors::request_hash(**job).size() == 64, "request_hash is not 64 hex digits");
  }
  auto sync = admit.sync_call("/v1/chat/completions", sy::api::detail::client_of(req));
  if (!sync) check_error(sync.error(), req);
}

void handle(const sy::api::detail::request& req) {
  namespace d = sy::api::detail;
  auto m = routes().match(req.method(), req.target());
  check_route(m);
  if (auto q = d::parse_query(req.target()); !q) check_error(q.error(), req);
  if (m.outcome == sy::api::route_match::kind::found && m.route == route_list_jobs) {
    auto p = d::parse_list_params(req.target());
    if (!p) check_error(p.error(), req);
    if (p) check(p->limit >= 1 && p->limit <= d::list_max_limit, "list limit out of 1..100");
  }
  if (auto wait = d::prefer_wait_seconds(header_values(req, "Prefer")))
    check(*wait >= 0, "Prefer: wait is negative");
  bool json = d::is_json_media_type(req[http::field::content_type]);
  auto tenant = auth().tenant_for(req[http::field::authorization]);
  if (!tenant) check_error(tenant.error(), req);
  if (m.outcome == sy::api::route_match::kind::found && req.method() == http::verb::post && json)
    handle_submission(req);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  static const uint64_t max_body_bytes =
      static_cast<uint64_t>(sy::config::settings{}.max_body_bytes);
  byte_source src(sy::fuzz::as_text(data + 1, size - 1), data[0]);
  std::string buffer;
  beast::error_code ec;

  // Step 1 (http_server::serve): the header; the body limit is set once the route is known.
  http::request_parser<http::empty_body> head;
  head.body_limit(std::numeric_limits<std::uint64_t>::max());
  if (!read_until(head, /*header_only=*/true, src, buffer, ec)) return 0;
  const auto& h = head.get();
  auto m = routes().match(h.method(), h.target());
  check_route(m);
  if (m.outcome == sy::api::route_match::kind::found && m.route == route_upload_file) {
    // Uploads stream through the multipart parser (fuzz_multipart); here only the boundary.
    sy::api::detail::multipart_boundary(h[http::field::content_type]);
    return 0;
  }
  if (head.content_length() && *head.content_length() > max_body_bytes) return 0;

  // Step 2: the body, bounded by max_body_bytes.
  http::request_parser<http::string_body> parser{std::move(head)};
  parser.body_limit(max_body_bytes);
  if (!read_until(parser, /*header_only=*/false, src, buffer, ec)) return 0;
  handle(parser.get());
  return 0;
}
