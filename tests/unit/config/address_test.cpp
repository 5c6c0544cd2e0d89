#include "config/address.hpp"

#include <gtest/gtest.h>

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

}  // namespace SY_UNITY_ID
}  // namespace sy::config
