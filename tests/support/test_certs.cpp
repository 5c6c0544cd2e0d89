#include "tests/support/test_certs.hpp"

#include <sys/wait.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <utility>

namespace sy::test {
namespace {

/// `s` as one word for /bin/sh.
std::string quoted(const std::string& s) {
  std::string out = "'";
  for (char c : s) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

bool write_file(const std::string& path, const std::string& text) {
  std::ofstream out(path, std::ios::trunc);
  out << text;
  return static_cast<bool>(out);
}

std::string read_file(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

/// Runs openssl commands in one directory, appending each command and its output to a log.
class openssl_runner {
 public:
  explicit openssl_runner(std::string dir) : dir_(std::move(dir)), log_(dir_ + "/openssl.log") {}

  std::string path(const std::string& name) const { return dir_ + "/" + name; }

  /// Runs `openssl <args>`; returns what failed, with the log, or an empty string.
  std::string run(const std::string& args) const {
    const std::string cmd = "openssl " + args;
    {
      std::ofstream log(log_, std::ios::app);
      log << "$ " << cmd << "\n";
    }
    const int status = std::system((cmd + " >> " + quoted(log_) + " 2>&1").c_str());
    if (status != -1 && WIFEXITED(status) && WEXITSTATUS(status) == 0) return {};
    const int code = status != -1 && WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    return "openssl failed (exit status " + std::to_string(code) + "): " + cmd + "\n" +
           read_file(log_);
  }

  /// A self-signed CA certificate `<name>.pem` with key `<name>.key`.
  std::string make_ca(const std::string& name, const std::string& common_name) const {
    const std::string cnf = path(name + ".cnf");
    if (!write_file(cnf,
                    "[req]\n"
                    "distinguished_name = dn\n"
                    "prompt = no\n"
                    "x509_extensions = v3_ca\n"
                    "[dn]\n"
                    "CN = " +
                        common_name +
                        "\n"
                        "[v3_ca]\n"
                        "basicConstraints = critical, CA:TRUE\n"
                        "keyUsage = critical, keyCertSign, cRLSign\n"
                        "subjectKeyIdentifier = hash\n"
                        "authorityKeyIdentifier = keyid:always\n")) {
      return "cannot write " + cnf;
    }
    return run("req -x509 -config " + quoted(cnf) + " " + new_key(name) + " -days 1 -sha256 -out " +
               quoted(path(name + ".pem")));
  }

  /// A certificate `<name>.pem` (key `<name>.key`) for `common_name` signed by the CA `ca`, with
  /// the X.509 v3 extensions `extensions` (lines of an openssl extension file).
  std::string make_leaf(const std::string& name, const std::string& common_name,
                        const std::string& ca, const std::string& extensions) const {
    const std::string cnf = path(name + ".cnf");
    const std::string ext = path(name + ".ext");
    if (!write_file(
            cnf, "[req]\ndistinguished_name = dn\nprompt = no\n[dn]\nCN = " + common_name + "\n")) {
      return "cannot write " + cnf;
    }
    if (!write_file(ext, extensions)) return "cannot write " + ext;
    const std::string csr = path(name + ".csr");
    std::string err =
        run("req -new -config " + quoted(cnf) + " " + new_key(name) + " -out " + quoted(csr));
    if (!err.empty()) return err;
    return run("x509 -req -in " + quoted(csr) + " -CA " + quoted(path(ca + ".pem")) + " -CAkey " +
               quoted(path(ca + ".key")) + " -CAserial " + quoted(path(ca + ".srl")) +
               " -CAcreateserial -days 1 -sha256 -extfile " + quoted(ext) + " -out " +
               quoted(path(name + ".pem")));
  }

 private:
  /// Arguments for `openssl req` to make a new unencrypted P-256 key `<name>.key`.
  std::string new_key(const std::string& name) const {
    return "-newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout " +
           quoted(path(name + ".key"));
  }

  std::string dir_;
  std::string log_;
};

constexpr const char* kLeafExtensions =
    "basicConstraints = critical, CA:FALSE\n"
    "keyUsage = critical, digitalSignature\n"
    "subjectKeyIdentifier = hash\n"
    "authorityKeyIdentifier = keyid, issuer\n";

}  // namespace

test_pki make_test_pki(const std::string& dir, std::string& error) {
  error.clear();
  // scripts/setup installs it: tests that need certificates fail without it, they never skip.
  if (std::system("command -v openssl > /dev/null 2>&1") != 0) {
    error =
        "the openssl command-line tool is not installed (scripts/setup installs it); "
        "cannot generate the test certificates";
    return {};
  }
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) {
    error = "cannot create " + dir + ": " + ec.message();
    return {};
  }
  const openssl_runner r(dir);
  const std::string leaf = kLeafExtensions;
  const std::string server_ext = leaf + "extendedKeyUsage = serverAuth\n";
  std::string err = r.make_ca("ca", "Switchyard Test CA");
  if (err.empty()) err = r.make_ca("other_ca", "Switchyard Other Test CA");
  if (err.empty()) {
    err = r.make_leaf("server", "localhost", "ca",
                      server_ext + "subjectAltName = DNS:localhost, IP:127.0.0.1\n");
  }
  if (err.empty()) {
    err = r.make_leaf("client", "switchyard-test-client", "ca",
                      leaf + "extendedKeyUsage = clientAuth\n");
  }
  if (err.empty()) {
    err = r.make_leaf("wrong_host", "not-this-host.example", "ca",
                      server_ext + "subjectAltName = DNS:not-this-host.example\n");
  }
  if (!err.empty()) {
    error = std::move(err);
    return {};
  }
  test_pki pki;
  pki.ca_cert = r.path("ca.pem");
  pki.ca_key = r.path("ca.key");
  pki.server_cert = r.path("server.pem");
  pki.server_key = r.path("server.key");
  pki.client_cert = r.path("client.pem");
  pki.client_key = r.path("client.key");
  pki.other_ca_cert = r.path("other_ca.pem");
  pki.wrong_host_cert = r.path("wrong_host.pem");
  pki.wrong_host_key = r.path("wrong_host.key");
  return pki;
}

}  // namespace sy::test
