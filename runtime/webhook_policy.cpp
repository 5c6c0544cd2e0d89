#include "runtime/webhook_policy.hpp"

namespace sy::runtime {

namespace ip = boost::asio::ip;
using error_code = boost::system::error_code;

namespace {

/// The policy of the settings named `<setting>_allow_networks`, `<setting>_deny_networks`.
result<webhook_policy> make_policy(const std::string& setting, const std::string& allow_text,
                                   const std::string& deny_text, bool allow_loopback,
                                   int64_t timeout_ms) {
  webhook_policy p;
  p.setting = setting;
  auto allow = config::parse_network_list(allow_text);
  if (!allow) {
    return make_error(errc::invalid_config, setting + "_allow_networks: " + allow.error().message,
                      setting + "_allow_networks");
  }
  auto deny = config::parse_network_list(deny_text);
  if (!deny) {
    return make_error(errc::invalid_config, setting + "_deny_networks: " + deny.error().message,
                      setting + "_deny_networks");
  }
  p.allow = std::move(*allow);
  p.deny = std::move(*deny);
  p.allow_loopback = allow_loopback;
  p.timeout_ms = timeout_ms;
  return p;
}

}  // namespace

result<webhook_policy> make_webhook_policy(const config::settings& s) {
  return make_policy("webhook", s.webhook_allow_networks, s.webhook_deny_networks,
                     s.webhook_allow_loopback, s.webhook_timeout_ms);
}

result<webhook_policy> make_http_task_policy(const config::settings& s) {
  return make_policy("http_task", s.http_task_allow_networks, s.http_task_deny_networks,
                     s.http_task_allow_loopback, s.http_task_timeout_ms);
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
    return name + " is in the denied network " + n->to_string() + " (" + policy.setting +
           "_deny_networks)";
  }
  if (a.is_loopback() && !policy.allow_loopback) {
    return name + " is a loopback address and " + policy.setting + "_allow_loopback is false";
  }
  if (!policy.allow.empty() && !policy.allow.contains(a)) {
    return name + " is outside " + policy.setting + "_allow_networks (" + policy.allow.to_string() +
           ")";
  }
  return {};
}

bool address_allowed(const ip::address& addr, const webhook_policy& policy) {
  return address_denial(addr, policy).empty();
}

status check_webhook_url(std::string_view url, const webhook_policy& policy) {
  auto u = parse_webhook_url(url);
  if (!u) return u.error();
  return check_target(*u, url, policy,
                      config::url_label{"webhook_url", errc::invalid_webhook_url, "webhook_url"});
}

status check_target(const webhook_url& u, std::string_view url, const webhook_policy& policy,
                    const config::url_label& label) {
  error_code ec;
  const ip::address addr = ip::make_address(u.host, ec);
  if (!ec) {
    if (auto why = address_denial(addr, policy); !why.empty()) {
      return config::url_error(label, url, "is not allowed: " + why);
    }
  } else if ((u.host == "localhost" || u.host.ends_with(".localhost")) && !policy.allow_loopback) {
    return config::url_error(label, url,
                             "is not allowed: " + u.host + " is a loopback name and " +
                                 policy.setting + "_allow_loopback is false");
  }
  return ok;
}
}  // namespace sy::runtime
