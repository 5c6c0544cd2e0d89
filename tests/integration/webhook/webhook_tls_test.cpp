// https delivery: chain verification against ca_file, host name verification, SNI. The
// certificate is generated at test time with the openssl CLI.

#include <cstdlib>
#include <fstream>

#include "tests/integration/webhook/webhook_env.hpp"
#include "tests/support/temp_dir.hpp"

namespace sy::testing {
namespace SY_UNITY_ID {

using runtime::webhook_client;

class WebhookTlsTest : public WebhookTest {
 protected:
  void SetUp() override {
    WebhookTest::SetUp();
    // scripts/setup installs it: a missing tool fails the test instead of skipping it.
    ASSERT_EQ(std::system("openssl version > /dev/null 2>&1"), 0)
        << "the openssl command-line tool is not installed (scripts/setup installs it)";
    // A self-signed certificate for the name "localhost" only (no IP address in it), so that
    // https://127.0.0.1 must fail host name verification.
    const std::string cmd =
        "openssl req -x509 -newkey rsa:2048 -nodes -days 1 -subj /CN=localhost"
        " -addext subjectAltName=DNS:localhost -keyout " +
        dir.sub("key.pem") + " -out " + dir.sub("cert.pem") + " > " + dir.sub("openssl.log") +
        " 2>&1";
    ASSERT_EQ(std::system(cmd.c_str()), 0) << log();
    auto options = receiver_options();
    options.tls_cert_file = dir.sub("cert.pem");
    options.tls_key_file = dir.sub("key.pem");
    tls_receiver.emplace(options);
    ASSERT_EQ(tls_receiver->start(), "");
  }

  std::string log() const {
    std::ifstream in(dir.sub("openssl.log"));
    return std::string(std::istreambuf_iterator<char>(in), {});
  }

  runtime::webhook_policy trusting_policy() const {
    auto p = loopback_policy();
    p.ca_file = dir.sub("cert.pem");
    return p;
  }

  std::string localhost_url() const {
    return "https://localhost:" + std::to_string(tls_receiver->port()) + "/tls-hook";
  }

  test::temp_dir dir;
  std::optional<fakes::webhook_receiver> tls_receiver;
};

TEST_F(WebhookTlsTest, DeliversOverHttpsWhenTheCertificateIsTrusted) {
  webhook_client client(ioc.get_executor(), trusting_policy(), kWebhookKey);
  auto out = deliver(client, localhost_url(), body("job_tls", 1));
  EXPECT_TRUE(out.delivered) << out.error;
  EXPECT_EQ(out.status_code, 200);
  ASSERT_EQ(tls_receiver->delivered(), 1);
  EXPECT_EQ(tls_receiver->count("job_tls", 1), 1);
  EXPECT_EQ(tls_receiver->deliveries().at(0).path, "/tls-hook");
  EXPECT_EQ(tls_receiver->deliveries().at(0).headers.at("host"),
            "localhost:" + std::to_string(tls_receiver->port()));
}

TEST_F(WebhookTlsTest, UntrustedCertificateIsRefused) {
  webhook_client client(ioc.get_executor(), loopback_policy(), kWebhookKey);
  auto out = deliver(client, localhost_url(), body("job_tls", 1));
  EXPECT_FALSE(out.delivered);
  EXPECT_FALSE(out.permanent);
  EXPECT_NE(out.error.find("TLS handshake with"), std::string::npos) << out.error;
  EXPECT_NE(out.error.find("certificate verify failed"), std::string::npos) << out.error;
  EXPECT_EQ(tls_receiver->delivered(), 0);
}

TEST_F(WebhookTlsTest, HostNameMustMatchTheCertificate) {
  webhook_client client(ioc.get_executor(), trusting_policy(), kWebhookKey);
  // Trusted chain, but the certificate names "localhost", not 127.0.0.1.
  auto out = deliver(client, tls_receiver->url() + "/tls-hook", body("job_tls", 1));
  EXPECT_FALSE(out.delivered);
  EXPECT_NE(out.error.find("certificate verify failed"), std::string::npos) << out.error;
  EXPECT_EQ(tls_receiver->delivered(), 0);
}

TEST_F(WebhookTlsTest, PlainHttpToATlsReceiverFails) {
  webhook_client client(ioc.get_executor(), trusting_policy(), kWebhookKey);
  auto out = deliver(client, "http://localhost:" + std::to_string(tls_receiver->port()) + "/",
                     body("job_tls", 1));
  EXPECT_FALSE(out.delivered);
  EXPECT_FALSE(out.permanent);
  EXPECT_FALSE(out.error.empty());
  EXPECT_EQ(tls_receiver->delivered(), 0);
}

TEST_F(WebhookTlsTest, UnreadableCaFileIsReported) {
  auto p = loopback_policy();
  p.ca_file = dir.sub("missing.pem");
  webhook_client client(ioc.get_executor(), p, kWebhookKey);
  auto out = deliver(client, localhost_url(), body("job_tls", 1));
  EXPECT_FALSE(out.delivered);
  EXPECT_NE(out.error.find("cannot load the CA certificates"), std::string::npos) << out.error;
  EXPECT_EQ(tls_receiver->connections(), 0);
}

}  // namespace SY_UNITY_ID
}  // namespace sy::testing
