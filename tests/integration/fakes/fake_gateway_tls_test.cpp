// The fake gateway serving HTTPS: a client that trusts the test CA gets answers (keep-alive and
// faults work as over plain HTTP); with client certificates required, a client without one is
// refused and the failed handshake counted. Certificates come from make_test_pki.

#include <utility>

#include <gtest/gtest.h>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http.hpp>

#include <optional>
#include <string>

#include "tests/fakes/fake_gateway.hpp"
#include "tests/support/temp_dir.hpp"
#include "tests/support/test_certs.hpp"
#include "tests/support/wait.hpp"

namespace sy::testing {
namespace SY_UNITY_ID {

namespace asio = boost::asio;
namespace http = boost::beast::http;
using tcp = asio::ip::tcp;
using error_code = boost::system::error_code;

/// A blocking HTTPS client on one keep-alive connection to 127.0.0.1, checking the server's
/// chain against a CA file and its certificate against a host name (also sent as SNI).
class https_client {
 public:
  https_client(const std::string& ca_file, std::string host) : host_(std::move(host)) {
    ctx_.load_verify_file(ca_file);
  }

  void use_client_certificate(const std::string& cert, const std::string& key) {
    ctx_.use_certificate_chain_file(cert);
    ctx_.use_private_key_file(key, asio::ssl::context::pem);
  }

  /// Connects and handshakes; returns what failed, or an empty string.
  std::string connect(uint16_t port) {
    port_ = port;
    stream_.emplace(ioc_, ctx_);
    stream_->set_verify_mode(asio::ssl::verify_peer);
    stream_->set_verify_callback(asio::ssl::host_name_verification(host_));
    SSL_set_tlsext_host_name(stream_->native_handle(), host_.c_str());
    error_code ec;
    stream_->next_layer().connect({asio::ip::make_address_v4("127.0.0.1"), port}, ec);
    if (ec) return "connect: " + ec.message();
    stream_->handshake(asio::ssl::stream_base::client, ec);
    return ec ? "handshake: " + ec.message() : "";
  }

  /// POSTs a chat completion on the open connection; the status, or 0 with `error` set.
  int post_chat(std::string& error) {
    http::request<http::string_body> req{http::verb::post, "/v1/chat/completions", 11};
    req.set(http::field::host, host_ + ":" + std::to_string(port_));
    req.set(http::field::content_type, "application/json");
    req.body() = R"({"model":"m","messages":[{"role":"user","content":"hi"}]})";
    req.prepare_payload();
    error_code ec;
    http::write(*stream_, req, ec);
    boost::beast::flat_buffer buffer;
    http::response<http::string_body> res;
    if (!ec) http::read(*stream_, buffer, res, ec);
    error = ec ? ec.message() : "";
    return ec ? 0 : res.result_int();
  }

 private:
  asio::io_context ioc_;
  asio::ssl::context ctx_{asio::ssl::context::tls_client};
  std::optional<asio::ssl::stream<tcp::socket>> stream_;
  std::string host_;
  uint16_t port_ = 0;
};

class FakeGatewayTlsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string error;
    pki = test::make_test_pki(dir.sub("pki"), error);
    ASSERT_EQ(error, "");
  }

  fakes::fake_gateway_options tls_options() const {
    fakes::fake_gateway_options o;
    o.tls_cert_file = pki.server_cert;
    o.tls_key_file = pki.server_key;
    return o;
  }

  test::temp_dir dir;
  test::test_pki pki;
};

TEST_F(FakeGatewayTlsTest, ServesHttpsToAClientThatTrustsTheCa) {
  fakes::fake_gateway fake(tls_options());
  ASSERT_EQ(fake.start(), "");
  const std::string port = std::to_string(fake.port());
  EXPECT_EQ(fake.url(), "https://127.0.0.1:" + port);
  EXPECT_EQ(fake.url_for_host("localhost"), "https://localhost:" + port);

  https_client client(pki.ca_cert, "localhost");
  ASSERT_EQ(client.connect(fake.port()), "");
  std::string error;
  EXPECT_EQ(client.post_chat(error), 200) << error;
  fake.fail_next(1, 503);
  EXPECT_EQ(client.post_chat(error), 503) << error;  // same connection: keep-alive
  EXPECT_EQ(fake.requests(), 2);
  EXPECT_EQ(fake.connections(), 1);
  fake.close_connections();
  EXPECT_TRUE(fake.wait_open_connections(0, 5'000));

  // A client trusting another CA refuses the certificate; the server counts the failure.
  https_client stranger(pki.other_ca_cert, "localhost");
  EXPECT_NE(stranger.connect(fake.port()).find("certificate verify failed"), std::string::npos);
  EXPECT_TRUE(test::wait_for([&] { return fake.tls_handshake_failures() == 1; }));
  EXPECT_EQ(fake.requests(), 2);
}

TEST_F(FakeGatewayTlsTest, RequiresAClientCertificateSignedByTheClientCa) {
  auto o = tls_options();
  o.tls_client_ca_file = pki.ca_cert;
  fakes::fake_gateway fake(o);
  ASSERT_EQ(fake.start(), "");

  // Under TLS 1.3 the client's handshake ends before the server has checked the client's
  // certificate: the refusal may surface at the handshake or at the first read.
  https_client anonymous(pki.ca_cert, "localhost");
  std::string error = anonymous.connect(fake.port());
  if (error.empty()) {
    EXPECT_EQ(anonymous.post_chat(error), 0);
  }
  EXPECT_NE(error, "");
  EXPECT_TRUE(test::wait_for([&] { return fake.tls_handshake_failures() == 1; }));
  EXPECT_EQ(fake.requests(), 0);

  https_client known(pki.ca_cert, "localhost");
  known.use_client_certificate(pki.client_cert, pki.client_key);
  ASSERT_EQ(known.connect(fake.port()), "");
  EXPECT_EQ(known.post_chat(error), 200) << error;
  EXPECT_EQ(fake.tls_handshake_failures(), 1);
}

TEST_F(FakeGatewayTlsTest, StartReportsFilesItCannotLoad) {
  auto start_error = [](const fakes::fake_gateway_options& o) {
    return fakes::fake_gateway(o).start();
  };
  auto o = tls_options();
  o.tls_key_file = pki.wrong_host_key;  // not the certificate's key
  std::string error = start_error(o);
  EXPECT_NE(error.find("cannot load tls_key_file"), std::string::npos) << error;
  o.tls_key_file = dir.sub("missing.key");
  error = start_error(o);
  EXPECT_NE(error.find("missing.key: No such file"), std::string::npos) << error;
  o = tls_options();
  o.tls_client_ca_file = pki.server_key;  // no certificate in it
  error = start_error(o);
  EXPECT_NE(error.find("cannot load tls_client_ca_file"), std::string::npos) << error;
  o.tls_cert_file.clear();
  error = start_error(o);
  EXPECT_NE(error.find("must both be set"), std::string::npos) << error;
}

}  // namespace SY_UNITY_ID
}  // namespace sy::testing
