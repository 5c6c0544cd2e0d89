#include "config/address.hpp"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace sy::config {
namespace SY_UNITY_ID {

TEST(HostPort, Parses) {
  auto v4 = parse_host_port("127.0.0.1:8080");
  ASSERT_TRUE(v4.ok());
  EXPECT_EQ(v4->host, "127.0.0.1");
  EXPECT_EQ(v4->port, 8080);
  auto v6 = parse_host_port("[::1]:0");
  ASSERT_TRUE(v6.ok());
  EXPECT_EQ(v6->host, "::1");
  EXPECT_EQ(v6->port, 0);
  auto name = parse_host_port("localhost:65535");
  ASSERT_TRUE(name.ok());
  EXPECT_EQ(name->port, 65535);
}

TEST(HostPort, Rejects) {
  for (const char* bad : {"", "8080", ":8080", "host:", "host:65536", "host:-1", "host:x",
                          "::1:8080", "[::1]", "[::1:80", "a b:80"}) {
    EXPECT_FALSE(parse_host_port(bad).ok()) << bad;
  }
}

TEST(Loopback, Classifies) {
  for (const char* host : {"127.0.0.1", "127.255.0.9", "::1", "localhost", "0:0:0:0:0:0:0:1"}) {
    EXPECT_TRUE(is_loopback_host(host)) << host;
  }
  for (const char* host : {"0.0.0.0", "10.0.0.1", "128.0.0.1", "::", "example.com", ""}) {
    EXPECT_FALSE(is_loopback_host(host)) << host;
  }
}

TEST(GatewayUrl, Parses) {
  auto plain = parse_gateway_url("http://127.0.0.1:8000");
  ASSERT_TRUE(plain.ok());
  EXPECT_EQ(plain->host, "127.0.0.1");
  EXPECT_EQ(plain->port, 8000);
  EXPECT_EQ(plain->prefix, "");
  auto prefixed = parse_gateway_url("http://gw.local/openai/");
  ASSERT_TRUE(prefixed.ok());
  EXPECT_EQ(prefixed->port, 80);
  EXPECT_EQ(prefixed->prefix, "/openai");
  auto v6 = parse_gateway_url("http://[::1]:9000/v1");
  ASSERT_TRUE(v6.ok());
  EXPECT_EQ(v6->host, "::1");
  EXPECT_EQ(v6->prefix, "/v1");
}

TEST(GatewayUrl, ParsesHttpsWithPort443ByDefault) {
  auto https = parse_gateway_url("https://api.example.com/v1");
  ASSERT_TRUE(https.ok()) << https.error().message;
  EXPECT_TRUE(https->tls);
  EXPECT_EQ(https->host, "api.example.com");
  EXPECT_EQ(https->port, 443);
  EXPECT_EQ(https->prefix, "/v1");
  auto other_port = parse_gateway_url("https://127.0.0.1:8443");
  ASSERT_TRUE(other_port.ok());
  EXPECT_EQ(other_port->port, 8443);
  EXPECT_FALSE(parse_gateway_url("http://a:1")->tls);
  EXPECT_FALSE(parse_gateway_url("httpsx://a:1").ok());
}

TEST(GatewayUrl, Rejects) {
  for (const char* bad :
       {"", "127.0.0.1:8000", "ftp://h:1", "http://", "http://:80", "http://h:0", "http://h:70000",
        "http://u@h:80", "http://h:80/?q=1", "http://h:80/#x"}) {
    EXPECT_FALSE(parse_gateway_url(bad).ok()) << bad;
  }
}

TEST(NatsUrls, SplitsAtCommasTrimmingAndDroppingEmptyItems) {
  using list = std::vector<std::string>;
  auto one = split_nats_urls("nats://127.0.0.1:4222");
  ASSERT_TRUE(one.ok());
  EXPECT_EQ(*one, list{"nats://127.0.0.1:4222"});
  auto several = split_nats_urls("nats://a:4222,tls://b:4223,nats://c");
  ASSERT_TRUE(several.ok());
  EXPECT_EQ(*several, (list{"nats://a:4222", "tls://b:4223", "nats://c"}));
  auto spaced = split_nats_urls(" nats://a:4222 ,\tnats://b:4223\n");
  ASSERT_TRUE(spaced.ok());
  EXPECT_EQ(*spaced, (list{"nats://a:4222", "nats://b:4223"}));
  auto gaps = split_nats_urls(",nats://a:4222,, ,nats://b:4223,");
  ASSERT_TRUE(gaps.ok());
  EXPECT_EQ(*gaps, (list{"nats://a:4222", "nats://b:4223"}));
  for (const char* none : {"", ",", " , ,"}) {
    auto empty = split_nats_urls(none);
    ASSERT_FALSE(empty.ok()) << none;
    EXPECT_EQ(empty.error().code, "invalid_config");
    EXPECT_EQ(empty.error().param, "nats_url");
    EXPECT_NE(empty.error().message.find("nats_url: names no NATS server"), std::string::npos)
        << empty.error().message;
  }
}

TEST(NatsUrls, ChecksEachServer) {
  for (const char* good : {"nats://127.0.0.1:4222", "tls://nats.example.com:4443", "nats://host",
                           "nats://[::1]:4222", "nats://user:pw@10.0.0.1:4222"}) {
    EXPECT_TRUE(check_nats_server_url(good).ok()) << good;
  }
  for (const char* bad : {"127.0.0.1:4222", "http://a:4222", "nats://", "nats://a:0",
                          "nats://a:65536", "nats://a:x", "nats://a:4222/x", "nats:/a:4222"}) {
    auto st = check_nats_server_url(bad);
    ASSERT_FALSE(st.ok()) << bad;
    EXPECT_NE(st.error().message.find(std::string("'") + bad + "'"), std::string::npos)
        << st.error().message;
  }
  // A password is never echoed.
  auto secret = check_nats_server_url("nats://u:hunter2@a:0");
  ASSERT_FALSE(secret.ok());
  EXPECT_EQ(secret.error().message.find("hunter2"), std::string::npos) << secret.error().message;
}

}  // namespace SY_UNITY_ID
}  // namespace sy::config
