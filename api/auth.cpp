#include "api/auth.hpp"

#include <cctype>
#include <utility>

#include "api/detail/http_text.hpp"
#include "config/api_keys.hpp"

namespace sy::api {
namespace {

bool iequals(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i)
    if (std::tolower(static_cast<unsigned char>(a[i])) !=
        std::tolower(static_cast<unsigned char>(b[i])))
      return false;
  return true;
}

/// The key of a `Bearer <key>` header value (scheme case-insensitive), empty when malformed.
std::string_view bearer_key(std::string_view header) {
  header = detail::trim_ows(header);
  constexpr std::string_view scheme = "bearer";
  if (header.size() <= scheme.size() || !iequals(header.substr(0, scheme.size()), scheme))
    return {};
  if (header[scheme.size()] != ' ' && header[scheme.size()] != '\t') return {};
  return detail::trim_ows(header.substr(scheme.size()));
}

}  // namespace

authenticator::authenticator(std::vector<config::api_key_entry> keys) : keys_(std::move(keys)) {}

result<std::string> authenticator::tenant_for(std::string_view authorization_header) const {
  if (keys_.empty()) return std::string(default_tenant);
  if (detail::trim_ows(authorization_header).empty())
    return make_error(errc::missing_api_key,
                      "You didn't provide an API key. Send it as 'Authorization: Bearer <key>'.");
  std::string_view key = bearer_key(authorization_header);
  auto invalid = make_error(errc::invalid_api_key, "Incorrect API key provided.");
  if (key.empty()) return invalid;
  auto tenant = config::tenant_for_key(keys_, key);
  if (!tenant) return invalid;
  return std::move(*tenant);
}

status authenticator::role(std::string_view authorization_header, std::string_view role,
                           std::string_view what) const {
  if (keys_.empty()) return ok;
  if (detail::trim_ows(authorization_header).empty())
    return make_error(errc::missing_api_key, "You didn't provide " + std::string(what) +
                                                 ". Send it as 'Authorization: Bearer <key>'.");
  std::string_view key = bearer_key(authorization_header);
  if (key.empty() || !config::key_has_role(keys_, key, role))
    return make_error(errc::invalid_api_key,
                      "Incorrect API key provided: this call takes a key "
                      "with the " +
                          std::string(role) + " role.");
  return ok;
}

status authenticator::worker(std::string_view authorization_header) const {
  return role(authorization_header, "worker", "a worker key");
}

status authenticator::admin(std::string_view authorization_header) const {
  return role(authorization_header, "admin", "an admin key");
}

status authenticator::metrics(std::string_view authorization_header) const {
  if (admin(authorization_header)) return ok;
  return role(authorization_header, "metrics", "a metrics key");
}

}  // namespace sy::api
