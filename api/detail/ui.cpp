#include "api/detail/ui.hpp"

#include <algorithm>
#include <string>

#include "api/detail/responses.hpp"
#include "api/errors.hpp"

namespace sy::api::detail {

namespace http = boost::beast::http;

namespace {

/// Scripts, styles and images only from the engine; the API calls go to the same origin.
constexpr std::string_view content_security_policy =
    "default-src 'self'; img-src 'self' data:; style-src 'self'; frame-ancestors 'none'; "
    "base-uri 'none'; form-action 'self'";

}  // namespace

response ui_file(std::string_view name, const request& req) {
  if (name.empty()) name = "index.html";
  const auto assets = ui_assets();
  const auto it =
      std::find_if(assets.begin(), assets.end(), [&](const ui_asset& a) { return a.name == name; });
  if (it == assets.end())
    return error_for(
        make_error(errc::not_found, "The dashboard has no file '" + std::string(name) + "'."), req);
  response res{http::status::ok, req.version()};
  res.set(http::field::content_type, it->content_type);
  res.set(http::field::cache_control, "no-cache");
  res.set("Content-Security-Policy", content_security_policy);
  res.set("X-Content-Type-Options", "nosniff");
  res.set("Referrer-Policy", "no-referrer");
  res.body().assign(it->body.data(), it->body.size());
  res.keep_alive(req.keep_alive());
  res.prepare_payload();
  return res;
}

response ui_redirect(const request& req) {
  response res{http::status::permanent_redirect, req.version()};
  res.set(http::field::location, "/ui/");
  res.keep_alive(req.keep_alive());
  res.prepare_payload();
  return res;
}

}  // namespace sy::api::detail
