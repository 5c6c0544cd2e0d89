#include "runtime/webhook_policy.hpp"

namespace sy::runtime {

namespace ip = boost::asio::ip;
using error_code = boost::system::error_code;

result<webhook_policy> make_webhook_policy(const config::settings& s) {
  webhook_policy p;
  auto allow = config::parse_network_list(s.webhook_allow_networks);
  if (!allow) {
    return make_error(errc::invalid_config, "webhook_allow_networks: " + allow.error().message,
                      "webhook_allow_networks");
  }
  auto deny = config::parse_network_list(s.webhook_deny_networks);
  if (!deny) {
    return make_error(errc::invalid_config, "webhook_deny_networks: " + deny.error().message,
                      "webhook_deny_networks");
  }
  p.allow = std::move(*allow);
  p.deny = std::move(*deny);
  p.allow_loopback = s.webhook_allow_loopback;
  p.timeout_ms = s.webhook_timeout_ms;
  return p;
}

std::string address_denial(const ip::address& addr, const webhook_policy& policy) {
  const ip::address a = config::unmap_v4(addr);
  const std::string name = addr.to_string();
  if (a.is_unspecified()) return name + " is the unspecified address";
  if (a.is_multicast()) return name + " is a multicast address";
  if (a.is_v4() && a.to_v4() == ip::address_v4::broadcast()) {
    return name + " is the broadcast address";
  }
  if (const config::network* n = policy.deny.find(a)) {
    return name + " is in the denied network " + n->to_string() + " (webhook_deny_networks)";
  }
  if (a.is_loopback() && !policy.allow_loopback) {
    return name + " is a loopback address and webhook_allow_loopback is false";
  }
  if (!policy.allow.empty() && !policy.allow.contains(a)) {
    return name + " is outside webhook_allow_networks (" + policy.allow.to_string() + ")";
  }
  return {};
}

bool address_allowed(const ip::address& addr, const webhook_policy& policy) {
  return address_denial(addr, policy).empty();
}

status check_webhook_url(std::string_view url, const webhook_policy& policy) {
  auto u = parse_webhook_url(url);
  if (!u) return u.error();
  error_code ec;
  const ip::address addr = ip::make_address(u->host, ec);
  if (!ec) {
    if (auto why = address_denial(addr, policy); !why.empty()) {
      return config::webhook_url_error(url, "is not allowed: " + why);
    }
  } else if ((u->host == "localhost" || u->host.ends_with(".localhost")) &&
             !policy.allow_loopback) {
    return config::webhook_url_error(
        url,
        "is not allowed: " + u->host + " is a loopback name and webhook_allow_loopback is false");
  }
  return ok;
}
}  // namespace sy::runtime
