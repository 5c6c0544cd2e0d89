#include "runtime/webhook_policy.hpp"

#include <gtest/gtest.h>

#include <string>

namespace sy::runtime {
namespace SY_UNITY_ID {

namespace ip = boost::asio::ip;

webhook_policy policy(const std::string& allow = "", bool allow_loopback = false) {
  config::settings s;
  s.webhook_allow_networks = allow;
  s.webhook_allow_loopback = allow_loopback;
  auto p = make_webhook_policy(s);
  EXPECT_TRUE(p.ok()) << p.error().message;
  return p.ok() ? *p : webhook_policy{};
}

std::string denial(const char* address, const webhook_policy& p) {
  return address_denial(ip::make_address(address), p);
}

/// check_webhook_url refuses `url`, saying `why`.
void expect_refused(const std::string& url, const std::string& why,
                    const webhook_policy& p = policy()) {
  auto st = check_webhook_url(url, p);
  ASSERT_FALSE(st.ok()) << "accepted " << url;
  EXPECT_EQ(st.error().code, "invalid_webhook_url");
  EXPECT_EQ(st.error().param, "webhook_url");
  EXPECT_NE(st.error().message.find(why), std::string::npos) << st.error().message;
}

TEST(WebhookPolicy, FromSettingsUsesTheDefaults) {
  config::settings s;
  s.webhook_timeout_ms = 1234;
  auto p = make_webhook_policy(s);
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(p->timeout_ms, 1234);
  EXPECT_FALSE(p->allow_loopback);
  EXPECT_TRUE(p->allow.empty());
  EXPECT_EQ(p->deny.networks().size(), 5u);
  s.webhook_deny_networks = "nope";
  auto bad = make_webhook_policy(s);
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error().param, "webhook_deny_networks");
}

TEST(WebhookPolicy, DefaultPolicyDeniesMetadataAndLoopback) {
  const auto p = policy();
  EXPECT_TRUE(address_allowed(ip::make_address("93.184.216.34"), p));
  EXPECT_TRUE(address_allowed(ip::make_address("2606:2800:220:1::1"), p));
  EXPECT_TRUE(address_allowed(ip::make_address("10.1.2.3"), p));  // private nets are not denied
  EXPECT_EQ(denial("169.254.169.254", p),
            "169.254.169.254 is in the denied network 169.254.0.0/16 (webhook_deny_networks)");
  EXPECT_NE(denial("100.100.100.200", p).find("100.100.100.200/32"), std::string::npos);
  EXPECT_NE(denial("fd00:ec2::254", p).find("fd00:ec2::254/128"), std::string::npos);
  EXPECT_NE(denial("fe80::1", p).find("fe80::/10"), std::string::npos);
  EXPECT_NE(denial("127.0.0.1", p).find("loopback"), std::string::npos);
  EXPECT_NE(denial("127.9.9.9", p).find("loopback"), std::string::npos);
  EXPECT_NE(denial("::1", p).find("loopback"), std::string::npos);
}

TEST(WebhookPolicy, Ipv4MappedAddressesAreJudgedAsIpv4) {
  const auto p = policy();
  EXPECT_NE(denial("::ffff:169.254.169.254", p).find("169.254.0.0/16"), std::string::npos);
  EXPECT_NE(denial("::ffff:127.0.0.1", p).find("loopback"), std::string::npos);
  EXPECT_TRUE(address_allowed(ip::make_address("::ffff:93.184.216.34"), p));
}

TEST(WebhookPolicy, UnspecifiedMulticastAndBroadcastAreAlwaysDenied) {
  webhook_policy open;  // no lists at all, loopback allowed
  open.allow_loopback = true;
  EXPECT_NE(denial("0.0.0.0", open).find("unspecified"), std::string::npos);
  EXPECT_NE(denial("::", open).find("unspecified"), std::string::npos);
  EXPECT_NE(denial("224.0.0.1", open).find("multicast"), std::string::npos);
  EXPECT_NE(denial("ff02::1", open).find("multicast"), std::string::npos);
  EXPECT_NE(denial("255.255.255.255", open).find("broadcast"), std::string::npos);
  EXPECT_TRUE(address_allowed(ip::make_address("127.0.0.1"), open));
}

TEST(WebhookPolicy, AllowListMustContainTheAddress) {
  const auto p = policy("10.0.0.0/8, 2001:db8::/32");
  EXPECT_TRUE(address_allowed(ip::make_address("10.20.30.40"), p));
  EXPECT_TRUE(address_allowed(ip::make_address("2001:db8::7"), p));
  EXPECT_EQ(denial("93.184.216.34", p),
            "93.184.216.34 is outside webhook_allow_networks (10.0.0.0/8,2001:db8::/32)");
  // Every rule must pass: allow_loopback does not exempt loopback from the allow list, and the
  // allow list does not exempt an address from the deny list.
  EXPECT_NE(denial("127.0.0.1", policy("10.0.0.0/8", true)).find("outside"), std::string::npos);
  EXPECT_TRUE(address_allowed(ip::make_address("127.0.0.1"), policy("127.0.0.0/8", true)));
  EXPECT_NE(denial("127.0.0.1", policy("127.0.0.0/8", false)).find("loopback"), std::string::npos);
  EXPECT_NE(denial("169.254.1.1", policy("169.254.0.0/16")).find("denied"), std::string::npos);
}

TEST(WebhookUrl, ParsesTheParts) {
  auto u = parse_webhook_url("https://Hooks.Example.com:8443/a/b?x=1&y=2");
  ASSERT_TRUE(u.ok()) << u.error().message;
  EXPECT_TRUE(u->tls);
  EXPECT_EQ(u->host, "hooks.example.com");
  EXPECT_EQ(u->port, 8443);
  EXPECT_EQ(u->target, "/a/b?x=1&y=2");
  EXPECT_EQ(u->host_header, "hooks.example.com:8443");

  u = parse_webhook_url("HTTP://example.com");
  ASSERT_TRUE(u.ok());
  EXPECT_FALSE(u->tls);
  EXPECT_EQ(u->port, 80);
  EXPECT_EQ(u->target, "/");
  EXPECT_EQ(u->host_header, "example.com");

  u = parse_webhook_url("https://example.com?q=1");
  ASSERT_TRUE(u.ok());
  EXPECT_EQ(u->port, 443);
  EXPECT_EQ(u->target, "/?q=1");

  u = parse_webhook_url("http://[2001:DB8::1]:9000/hook");
  ASSERT_TRUE(u.ok()) << u.error().message;
  EXPECT_EQ(u->host, "2001:db8::1");
  EXPECT_EQ(u->port, 9000);
  EXPECT_EQ(u->host_header, "[2001:db8::1]:9000");
}

TEST(WebhookUrl, RefusesMalformedUrlsSayingWhy) {
  expect_refused("ftp://example.com/", "must start with http:// or https://");
  expect_refused("example.com/hook", "must start with http:// or https://");
  expect_refused("http://user:pw@example.com/", "must not contain user info");
  expect_refused("http://example.com@169.254.169.254/", "must not contain user info");
  expect_refused("http:///hook", "has no host");
  expect_refused("http://:8080/hook", "has no host");
  expect_refused("http://example.com:0/", "invalid port");
  expect_refused("http://example.com:65536/", "invalid port");
  expect_refused("http://example.com:/", "invalid port");
  expect_refused("http://example.com:80x/", "invalid port");
  expect_refused("http://example.com/#frag", "fragment");
  expect_refused("http://exa mple.com/", "space");
  expect_refused("http://example.com/a\r\nX-Evil: 1", "control");
  expect_refused("http://ex%61mple.com/", "invalid host name");
  expect_refused("http://a..b/", "invalid host name");
  expect_refused("http://[::1/", "unterminated IPv6");
  expect_refused("http://[nope]/", "invalid IPv6 literal");
  expect_refused("http://[fe80::1%25eth0]/", "invalid IPv6 literal");
  expect_refused("http://[::1]x/", "after the IPv6 literal");
  expect_refused("http://::1/", "without brackets");
  expect_refused("http://127.1/", "not a dotted-quad");
  expect_refused("http://0x7f.0.0.1/", "not a dotted-quad");
  expect_refused("http://2130706433/", "not a dotted-quad");
  expect_refused("http://example.com/" + std::string(2100, 'a'), "longer than 2048 bytes");
}

TEST(WebhookUrl, LiteralAddressesMustPassThePolicy) {
  EXPECT_TRUE(check_webhook_url("https://example.com/hook", policy()).ok());
  EXPECT_TRUE(check_webhook_url("http://93.184.216.34:8080/hook", policy()).ok());
  expect_refused("http://169.254.169.254/latest/meta-data/", "169.254.0.0/16");
  expect_refused("http://[::ffff:169.254.169.254]/", "169.254.0.0/16");
  expect_refused("http://[fd00:ec2::254]/", "fd00:ec2::254/128");
  expect_refused("http://127.0.0.1:8080/", "loopback");
  expect_refused("http://[::1]:8080/", "loopback");
  expect_refused("http://localhost:8080/", "loopback");
  expect_refused("http://api.localhost/", "loopback");
  expect_refused("http://0.0.0.0/", "unspecified");
  expect_refused("http://93.184.216.34/", "outside webhook_allow_networks", policy("10.0.0.0/8"));
  EXPECT_TRUE(check_webhook_url("http://127.0.0.1:8080/", policy("", true)).ok());
  EXPECT_TRUE(check_webhook_url("http://localhost:8080/", policy("", true)).ok());
  // A host name cannot be judged before it is resolved; delivery judges what it resolves to.
  EXPECT_TRUE(check_webhook_url("http://metadata.example/", policy("10.0.0.0/8")).ok());
}

}  // namespace SY_UNITY_ID
}  // namespace sy::runtime
