#pragma once
/// A small PKI for TLS tests, generated with the openssl command-line tool into a directory the
/// test owns (a temp_dir): a CA, a server and a client certificate it signed, an unrelated CA,
/// and a server certificate of the CA for another host name. EC P-256 keys, valid for one day,
/// every file PEM. A missing openssl tool is an error, never a reason to skip a test.

#include <string>

namespace sy::test {

/// Paths of the generated files (all inside the directory given to make_test_pki).
struct test_pki {
  std::string ca_cert;      ///< self-signed CA ("Switchyard Test CA")
  std::string ca_key;       ///< its key
  std::string server_cert;  ///< signed by the CA; SAN DNS:localhost, IP:127.0.0.1; serverAuth
  std::string server_key;
  std::string client_cert;  ///< signed by the CA; extendedKeyUsage clientAuth
  std::string client_key;
  std::string other_ca_cert;    ///< another self-signed CA that signed none of the above
  std::string wrong_host_cert;  ///< signed by the CA; SAN DNS:not-this-host.example only
  std::string wrong_host_key;
};

/// Generates the PKI into `dir` (created if missing). On failure returns an empty test_pki and
/// sets `error` to what failed, with the openssl output (also kept in `dir`/openssl.log); on
/// success clears `error`. Takes a few tens of milliseconds.
test_pki make_test_pki(const std::string& dir, std::string& error);

}  // namespace sy::test
