// The standalone fake gateway for system tests and benchmarks:
//   fake_gateway [--port N] [--threads N] [--latency-ms N]
//                [--tls-cert FILE --tls-key FILE [--tls-client-ca FILE]]
// serves HTTPS when given a certificate and key (client certificates required with
// --tls-client-ca), prints "listening <port>" once ready and runs until SIGTERM or SIGINT.

#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <string>

#include "tests/fakes/fake_gateway.hpp"

namespace {

/// Reads `--name value` pairs; returns false on anything it does not know.
bool parse_args(int argc, char** argv, sy::fakes::fake_gateway_options& options) {
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--help" || arg == "-h" || i + 1 >= argc) return false;
    if (arg == "--tls-cert" || arg == "--tls-key" || arg == "--tls-client-ca") {
      std::string& file = arg == "--tls-cert"  ? options.tls_cert_file
                          : arg == "--tls-key" ? options.tls_key_file
                                               : options.tls_client_ca_file;
      file = argv[++i];
      continue;
    }
    char* end = nullptr;
    const long long value = std::strtoll(argv[++i], &end, 10);
    if (*end != '\0' || value < 0) return false;
    if (arg == "--port" && value < 65536) {
      options.port = static_cast<uint16_t>(value);
    } else if (arg == "--threads" && value > 0 && value <= 64) {
      options.threads = static_cast<int>(value);
    } else if (arg == "--latency-ms") {
      options.latency_ms = value;
    } else {
      return false;
    }
  }
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  sy::fakes::fake_gateway_options options;
  options.record_requests = false;  // nothing outside the process could read them
  if (!parse_args(argc, argv, options)) {
    std::cerr << "usage: fake_gateway [--port N] [--threads N] [--latency-ms N]"
                 " [--tls-cert FILE --tls-key FILE [--tls-client-ca FILE]]\n";
    return 2;
  }
  // Block the stop signals before any thread starts, so that only sigwait below receives them.
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGTERM);
  sigaddset(&signals, SIGINT);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);

  sy::fakes::fake_gateway gateway(options);
  if (const std::string err = gateway.start(); !err.empty()) {
    std::cerr << err << "\n";
    return 1;
  }
  std::cout << "listening " << gateway.port() << std::endl;
  int received = 0;
  sigwait(&signals, &received);
  gateway.stop();
  return 0;
}
