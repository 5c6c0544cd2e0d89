#include "config/networks.hpp"

#include <gtest/gtest.h>

#include "config/validate.hpp"

namespace sy::config {
namespace SY_UNITY_ID {

namespace ip = boost::asio::ip;

network_list list(std::string_view text) {
  auto l = parse_network_list(text);
  EXPECT_TRUE(l.ok()) << l.error().message;
  return l.ok() ? *l : network_list{};
}

bool in(std::string_view cidrs, const char* address) {
  return list(cidrs).contains(ip::make_address(address));
}

/// Parsing fails with invalid_config and a message that quotes `token` and contains `why`.
void expect_bad(std::string_view text, const std::string& token, const std::string& why) {
  auto l = parse_network_list(text);
  ASSERT_FALSE(l.ok()) << "accepted " << text;
  EXPECT_EQ(l.error().code, "invalid_config");
  EXPECT_NE(l.error().message.find("'" + token + "'"), std::string::npos) << l.error().message;
  EXPECT_NE(l.error().message.find(why), std::string::npos) << l.error().message;
}

TEST(Networks, ParsesIpv4AndIpv6CidrsWithSpaces) {
  auto l = list(" 10.0.0.0/8 ,fe80::/10,  192.168.1.7 , 2001:db8::1");
  ASSERT_EQ(l.networks().size(), 4u);
  EXPECT_EQ(l.to_string(), "10.0.0.0/8,fe80::/10,192.168.1.7/32,2001:db8::1/128");
  EXPECT_FALSE(l.empty());
}

TEST(Networks, EmptyTextIsTheEmptyList) {
  EXPECT_TRUE(list("").empty());
  EXPECT_TRUE(list("  ").empty());
  EXPECT_FALSE(list("").contains(ip::make_address("10.0.0.1")));
}

TEST(Networks, MatchesPrefixBoundaries) {
  EXPECT_TRUE(in("169.254.0.0/16", "169.254.169.254"));
  EXPECT_TRUE(in("169.254.0.0/16", "169.254.255.255"));
  EXPECT_FALSE(in("169.254.0.0/16", "169.255.0.0"));
  EXPECT_FALSE(in("169.254.0.0/16", "169.253.255.255"));
  // A prefix that does not fall on a byte boundary.
  EXPECT_TRUE(in("100.64.0.0/10", "100.127.255.255"));
  EXPECT_FALSE(in("100.64.0.0/10", "100.128.0.0"));
  EXPECT_TRUE(in("fe80::/10", "febf::1"));
  EXPECT_FALSE(in("fe80::/10", "fec0::1"));
  EXPECT_TRUE(in("0.0.0.0/0", "203.0.113.9"));
  EXPECT_TRUE(in("::/0", "2001:db8::5"));
}

TEST(Networks, BareAddressIsASingleHost) {
  EXPECT_TRUE(in("100.100.100.200", "100.100.100.200"));
  EXPECT_FALSE(in("100.100.100.200", "100.100.100.201"));
  EXPECT_TRUE(in("fd00:ec2::254", "fd00:ec2::254"));
  EXPECT_FALSE(in("fd00:ec2::254", "fd00:ec2::255"));
}

TEST(Networks, FamiliesDoNotMixExceptIpv4Mapped) {
  EXPECT_FALSE(in("::/0", "10.0.0.1"));
  EXPECT_FALSE(in("0.0.0.0/0", "2001:db8::1"));
  // ::ffff:a.b.c.d is matched as a.b.c.d, so a deny rule cannot be dodged by writing the
  // metadata address in its IPv4-mapped IPv6 form.
  EXPECT_TRUE(in("169.254.0.0/16", "::ffff:169.254.169.254"));
  EXPECT_FALSE(in("169.254.0.0/16", "::ffff:10.0.0.1"));
  EXPECT_TRUE(in("127.0.0.0/8", "::ffff:127.0.0.1"));
}

TEST(Networks, Ipv4MappedNetworkIsStoredAsIpv4) {
  auto l = list("::ffff:10.0.0.0/104");
  EXPECT_EQ(l.to_string(), "10.0.0.0/8");
  EXPECT_TRUE(l.contains(ip::make_address("10.9.9.9")));
  EXPECT_TRUE(l.contains(ip::make_address("::ffff:10.9.9.9")));
  EXPECT_FALSE(l.contains(ip::make_address("11.0.0.1")));
}

TEST(Networks, FindNamesTheMatchingRule) {
  auto l = list("10.0.0.0/8,169.254.0.0/16");
  const network* n = l.find(ip::make_address("169.254.169.254"));
  ASSERT_NE(n, nullptr);
  EXPECT_EQ(n->to_string(), "169.254.0.0/16");
  EXPECT_EQ(l.find(ip::make_address("8.8.8.8")), nullptr);
}

TEST(Networks, DefaultDenyListParses) {
  auto l = list(settings{}.webhook_deny_networks);
  EXPECT_EQ(l.networks().size(), 5u);
  EXPECT_TRUE(l.contains(ip::make_address("169.254.169.254")));
  EXPECT_TRUE(l.contains(ip::make_address("100.100.100.200")));
  EXPECT_TRUE(l.contains(ip::make_address("fd00:ec2::254")));
  EXPECT_TRUE(l.contains(ip::make_address("0.1.2.3")));
  EXPECT_FALSE(l.contains(ip::make_address("93.184.216.34")));
}

TEST(Networks, RefusesMalformedEntriesNamingTheToken) {
  expect_bad("10.0.0.0/8, 10.0.0.0/33", "10.0.0.0/33", "0 to 32");
  expect_bad("fe80::/129", "fe80::/129", "0 to 128");
  expect_bad("10.0.0.0/", "10.0.0.0/", "prefix length");
  expect_bad("10.0.0.0/-0", "10.0.0.0/-0", "prefix length");
  expect_bad("10.0.0.0/8x", "10.0.0.0/8x", "prefix length");
  expect_bad("10.0.0.0/8/8", "10.0.0.0/8/8", "prefix length");
  expect_bad("10.0.0/8", "10.0.0/8", "IPv4 or IPv6 address");
  expect_bad("example.com", "example.com", "IPv4 or IPv6 address");
  expect_bad("256.1.1.1", "256.1.1.1", "IPv4 or IPv6 address");
  expect_bad("fe80::1%eth0", "fe80::1%eth0", "zone ids");
  expect_bad("10.1.0.0/8", "10.1.0.0/8", "did you mean 10.0.0.0/8?");
  expect_bad("fe80::1/10", "fe80::1/10", "did you mean fe80::/10?");
}

TEST(Networks, RefusesEmptyEntries) {
  for (const char* text : {"10.0.0.0/8,,fe80::/10", "10.0.0.0/8,", ",10.0.0.0/8", " , "}) {
    auto l = parse_network_list(text);
    ASSERT_FALSE(l.ok()) << text;
    EXPECT_NE(l.error().message.find("empty entry"), std::string::npos) << l.error().message;
  }
}

TEST(Networks, UnmapV4) {
  EXPECT_EQ(unmap_v4(ip::make_address("::ffff:1.2.3.4")), ip::make_address("1.2.3.4"));
  EXPECT_EQ(unmap_v4(ip::make_address("1.2.3.4")), ip::make_address("1.2.3.4"));
  EXPECT_EQ(unmap_v4(ip::make_address("::1")), ip::make_address("::1"));
}

TEST(Networks, ValidationRefusesMalformedWebhookNetworks) {
  settings s;
  s.webhook_allow_networks = "10.0.0.0/8, 10.0.0.0/40";
  auto v = validate(s);
  ASSERT_FALSE(v.ok());
  EXPECT_EQ(v.error().code, "invalid_config");
  EXPECT_EQ(v.error().param, "webhook_allow_networks");
  EXPECT_NE(v.error().message.find("webhook_allow_networks"), std::string::npos);
  EXPECT_NE(v.error().message.find("'10.0.0.0/40'"), std::string::npos) << v.error().message;

  s.webhook_allow_networks = "10.0.0.0/8";
  s.webhook_deny_networks = "169.254.0.0/16,metadata";
  v = validate(s);
  ASSERT_FALSE(v.ok());
  EXPECT_EQ(v.error().param, "webhook_deny_networks");
  EXPECT_NE(v.error().message.find("'metadata'"), std::string::npos) << v.error().message;

  s.webhook_deny_networks = "";
  EXPECT_TRUE(validate(s).ok()) << validate(s).error().message;
}

}  // namespace SY_UNITY_ID
}  // namespace sy::config
