#pragma once
/// A small path router that knows which methods each path supports, so an unknown path is a
/// 404 and a known path with the wrong method is a 405 with an `Allow` header. Patterns are
/// literal segments and `{name}` captures of one non-empty segment. Build it once, then it is
/// read-only: any thread may call `match` concurrently.

#include <utility>  // before any Asio/Beast header

#include <string>
#include <string_view>
#include <vector>

#include <boost/beast/http/verb.hpp>

namespace sy::api {

/// The outcome of matching a request line against the routes.
struct route_match {
  enum class kind { found, not_found, method_not_allowed };
  kind outcome = kind::not_found;
  int route = -1;                   ///< the id given to `add`, when found
  std::string_view pattern;         ///< its pattern, when found (the router owns the text)
  std::vector<std::string> params;  ///< captured `{...}` segments, in order
  std::string allow;                ///< "GET, POST" when method_not_allowed
};

class router {
 public:
  /// Registers `method pattern` (e.g. GET "/v1/jobs/{id}") under the caller's `route` id.
  void add(boost::beast::http::verb method, std::string_view pattern, int route);

  /// Matches a request target (the query string, if any, is ignored).
  route_match match(boost::beast::http::verb method, std::string_view target) const;

  /// Every route as "METHOD pattern" (e.g. "GET /v1/jobs/{id}"), in the order they were added:
  /// what docs/openapi.yaml must describe (tests/unit/api/openapi_test.cpp).
  std::vector<std::string> listing() const;

 private:
  struct entry {
    boost::beast::http::verb method;
    std::vector<std::string> segments;
    int route;
    std::string pattern;
  };
  std::vector<entry> entries_;
};

}  // namespace sy::api
