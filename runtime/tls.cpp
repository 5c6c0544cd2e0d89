#include "runtime/tls.hpp"

#include <openssl/x509v3.h>

#include <boost/asio/ip/address.hpp>

namespace sy::runtime {

namespace ssl = boost::asio::ssl;
using error_code = boost::system::error_code;

namespace {

sy::error load_error(const char* what, const std::string& file, const error_code& ec) {
  return sy::make_error(errc::invalid_config,
                        std::string("cannot load ") + what + " '" + file + "': " + ec.message());
}

}  // namespace

sy::result<std::shared_ptr<ssl::context>> make_tls_client_context(const tls_client_options& o) {
  auto ctx = std::make_shared<ssl::context>(ssl::context::tls_client);
  SSL_CTX_set_min_proto_version(ctx->native_handle(), TLS1_2_VERSION);
  error_code ec;
  if (o.insecure_skip_verify) {
    ctx->set_verify_mode(ssl::verify_none, ec);
  } else {
    ctx->set_verify_mode(ssl::verify_peer, ec);
    if (!ec && o.ca_file.empty()) ctx->set_default_verify_paths(ec);
    if (ec) return load_error("the system CA certificates", "default paths", ec);
    if (!o.ca_file.empty()) ctx->load_verify_file(o.ca_file, ec);
    if (ec) return load_error("the CA certificates", o.ca_file, ec);
  }
  if (!o.client_cert_file.empty()) {
    ctx->use_certificate_chain_file(o.client_cert_file, ec);
    if (ec) return load_error("the client certificate", o.client_cert_file, ec);
    ctx->use_private_key_file(o.client_key_file, ssl::context::pem, ec);
    // OpenSSL checks here that the key is the certificate's ("key values mismatch").
    if (ec) return load_error("the client key", o.client_key_file, ec);
  }
  return ctx;
}

void set_tls_peer(SSL* ssl, const std::string& host, bool verify) {
  error_code not_ip;
  (void)boost::asio::ip::make_address(host, not_ip);
  if (not_ip) {
    SSL_set_tlsext_host_name(ssl, host.c_str());
    if (verify) SSL_set1_host(ssl, host.c_str());
  } else if (verify) {
    X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(ssl), host.c_str());
  }
}

std::string tls_failure(SSL* ssl, const error_code& ec) {
  std::string out = ec.message();
  const long verdict = SSL_get_verify_result(ssl);
  if (verdict != X509_V_OK) out += ": " + std::string(X509_verify_cert_error_string(verdict));
  return out;
}

}  // namespace sy::runtime
