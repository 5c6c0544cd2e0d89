// The gateway client over https against the fake gateway serving TLS with a PKI the test
// generates (tests/support/test_certs.hpp): verification against a private CA, a wrong CA and a
// host name mismatch refused with a clear error, mutual TLS, tls_insecure_skip_verify, keep-alive
// and the request timeout over TLS.

#include <nlohmann/json.hpp>

#include "tests/integration/gateway/gateway_env.hpp"
#include "tests/support/temp_dir.hpp"
#include "tests/support/test_certs.hpp"

namespace sy::testing {
namespace SY_UNITY_ID {

using runtime::gateway_client;
using runtime::gateway_outcome;

class GatewayTlsTest : public GatewayTest {
 protected:
  void SetUp() override {
    GatewayTest::SetUp();
    std::string error;
    pki = test::make_test_pki(dir.sub("pki"), error);
    ASSERT_EQ(error, "");
  }

  /// Starts `f` serving TLS with `cert`/`key`, requiring client certificates of `client_ca`.
  static std::unique_ptr<fakes::fake_gateway> tls_fake(const std::string& cert,
                                                       const std::string& key,
                                                       const std::string& client_ca = "") {
    fakes::fake_gateway_options o;
    o.tls_cert_file = cert;
    o.tls_key_file = key;
    o.tls_client_ca_file = client_ca;
    auto f = std::make_unique<fakes::fake_gateway>(o);
    EXPECT_EQ(f->start(), "");
    return f;
  }

  /// Settings for `f` reached as `host`, trusting `ca` (empty: the system's CAs).
  config::gateway_settings tls_settings(const fakes::fake_gateway& f, const std::string& host,
                                        const std::string& ca) const {
    auto s = settings();
    s.url = f.url_for_host(host);
    s.tls_ca_cert_file = ca;
    s.max_retries = 0;
    return s;
  }

  test::temp_dir dir;
  test::test_pki pki;
};

TEST_F(GatewayTlsTest, AServerOfThePrivateCaIsVerifiedByNameAndByAddressAndKeptAlive) {
  auto f = tls_fake(pki.server_cert, pki.server_key);
  gateway_client by_name(ioc.get_executor(), tls_settings(*f, "localhost", pki.ca_cert));
  auto out = send(by_name, chat("over tls"));
  ASSERT_EQ(out.status_code, 200) << out.error;
  EXPECT_EQ(nlohmann::json::parse(out.body)["choices"][0]["message"]["content"], "echo: over tls");
  EXPECT_EQ(send(by_name, chat("again")).status_code, 200);
  EXPECT_EQ(f->connections(), 1) << "the TLS connection is kept alive and reused";
  const auto seen = f->received();
  ASSERT_EQ(seen.size(), 2u);
  EXPECT_EQ(seen[0].headers.at("host"), "localhost:" + std::to_string(f->port()));

  gateway_client by_address(ioc.get_executor(), tls_settings(*f, "127.0.0.1", pki.ca_cert));
  EXPECT_EQ(send(by_address, chat("by ip")).status_code, 200);
  EXPECT_EQ(f->tls_handshake_failures(), 0);
}

TEST_F(GatewayTlsTest, AServerOfAnotherCaIsRefusedWithTheReason) {
  auto f = tls_fake(pki.server_cert, pki.server_key);
  gateway_client client(ioc.get_executor(), tls_settings(*f, "localhost", pki.other_ca_cert));
  auto out = send(client, chat("x"));
  EXPECT_FALSE(out.got_response);
  EXPECT_EQ(out.tries, 1);
  EXPECT_NE(out.error.find("TLS handshake with localhost:" + std::to_string(f->port()) +
                           " failed: certificate verify failed"),
            std::string::npos)
      << out.error;
  EXPECT_NE(out.error.find("unable to get local issuer certificate"), std::string::npos)
      << out.error;
  EXPECT_EQ(f->requests(), 0);
}

TEST_F(GatewayTlsTest, ACertificateForAnotherHostIsRefusedAsAHostnameMismatch) {
  auto f = tls_fake(pki.wrong_host_cert, pki.wrong_host_key);
  gateway_client client(ioc.get_executor(), tls_settings(*f, "localhost", pki.ca_cert));
  auto out = send(client, chat("x"));
  EXPECT_FALSE(out.got_response);
  EXPECT_NE(out.error.find("hostname mismatch"), std::string::npos) << out.error;
  EXPECT_EQ(f->requests(), 0);
}

TEST_F(GatewayTlsTest, MutualTlsIsRefusedWithoutTheClientCertificateAndPassesWithIt) {
  auto f = tls_fake(pki.server_cert, pki.server_key, pki.ca_cert);
  auto s = tls_settings(*f, "localhost", pki.ca_cert);
  gateway_client anonymous(ioc.get_executor(), s);
  auto refused = send(anonymous, chat("x"));
  EXPECT_FALSE(refused.got_response) << refused.body;
  EXPECT_NE(refused.error, "");
  EXPECT_EQ(f->requests(), 0);

  s.tls_client_cert_file = pki.client_cert;
  s.tls_client_key_file = pki.client_key;
  gateway_client identified(ioc.get_executor(), s);
  auto out = send(identified, chat("x"));
  EXPECT_EQ(out.status_code, 200) << out.error;
  EXPECT_EQ(f->requests(), 1);
}

TEST_F(GatewayTlsTest, InsecureSkipVerifyAcceptsAnUnknownCaAndAnotherHostsName) {
  auto f = tls_fake(pki.wrong_host_cert, pki.wrong_host_key);
  auto s = tls_settings(*f, "localhost", "");
  s.tls_insecure_skip_verify = true;
  gateway_client client(ioc.get_executor(), s);
  auto out = send(client, chat("x"));
  EXPECT_EQ(out.status_code, 200) << out.error;
}

TEST_F(GatewayTlsTest, AClientKeyThatDoesNotMatchFailsEverySendWithoutTrying) {
  auto f = tls_fake(pki.server_cert, pki.server_key);
  auto s = tls_settings(*f, "localhost", pki.ca_cert);
  s.tls_client_cert_file = pki.client_cert;
  s.tls_client_key_file = pki.server_key;
  gateway_client client(ioc.get_executor(), s);
  auto out = send(client, chat("x"));
  EXPECT_EQ(out.tries, 0);
  EXPECT_FALSE(out.retryable);
  EXPECT_NE(out.error.find("cannot load the client key"), std::string::npos) << out.error;
  EXPECT_NE(out.error.find("key values mismatch"), std::string::npos) << out.error;
  EXPECT_EQ(f->connections(), 0);
}

TEST_F(GatewayTlsTest, TheRequestTimeoutHoldsOverTls) {
  auto f = tls_fake(pki.server_cert, pki.server_key);
  auto s = tls_settings(*f, "localhost", pki.ca_cert);
  s.request_timeout_ms = 150;
  gateway_client client(ioc.get_executor(), s);
  const auto start = std::chrono::steady_clock::now();
  auto out = send(client, chat("x", R"({"latency_ms": 5000})"));
  EXPECT_FALSE(out.got_response);
  EXPECT_NE(out.error.find("timeout after 150 ms"), std::string::npos) << out.error;
  EXPECT_LT(elapsed_ms(start), 2'000);
}

}  // namespace SY_UNITY_ID
}  // namespace sy::testing
