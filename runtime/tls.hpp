#pragma once
/// TLS for the engine's outgoing HTTPS clients (the gateway client and the webhook client): one
/// way to build a client context and to point a connection at its host, so that both verify
/// servers alike. OpenSSL 3 through Asio's ssl wrappers.
///
/// Threading: a context is built once and only read afterwards (shared by every connection of
/// its client); `set_tls_peer` and `tls_failure` act on one connection.

#include <utility>  // before any Asio header (Boost 1.74)

#include <memory>
#include <string>

#include <openssl/ssl.h>
#include <boost/asio/ssl/context.hpp>
#include <boost/system/error_code.hpp>

#include "config/result.hpp"

namespace sy::runtime {

/// How a client verifies the servers it talks to, and how it identifies itself.
struct tls_client_options {
  std::string ca_file;           ///< PEM CAs to trust instead of the system's; empty: the system's
  std::string client_cert_file;  ///< PEM certificate for mutual TLS; empty: none
  std::string client_key_file;   ///< its private key
  bool insecure_skip_verify = false;  ///< no certificate or name check at all
};

/// A TLS client context: TLS 1.2 or later, the server's certificate verified against `o`'s CAs
/// (unless insecure), `o`'s client certificate presented when asked. The error names the file
/// that could not be loaded and why.
sy::result<std::shared_ptr<boost::asio::ssl::context>> make_tls_client_context(
    const tls_client_options& o);

/// Prepares the connection `ssl` for a handshake with `host` (a name or an IP address as in the
/// URL): SNI for a name (RFC 6066), and — when `verify` — the certificate's names or addresses
/// checked against `host` during the handshake.
void set_tls_peer(SSL* ssl, const std::string& host, bool verify);

/// What a failed handshake on `ssl` means: `ec`'s message, and the certificate check's reason
/// when that is what failed (e.g. "certificate verify failed: hostname mismatch").
std::string tls_failure(SSL* ssl, const boost::system::error_code& ec);

}  // namespace sy::runtime
