// The standalone webhook receiver for system tests:
//   fake_webhook_receiver [--port N] [--secret TEXT (whsec_<base64> or raw)] [--tolerance-s N]
//   [--tls-cert PEM --tls-key PEM]
// prints "listening <port>" once ready and runs until SIGTERM or SIGINT. Observed over
// GET /_receiver/deliveries, steered over POST /_receiver/control (see webhook_receiver.hpp).

#include <pthread.h>

#include <csignal>
#include <cstdlib>
#include <iostream>
#include <string>

#include "tests/fakes/webhook_receiver.hpp"

namespace {

/// Reads `--name value` pairs; returns false on anything it does not know.
bool parse_args(int argc, char** argv, sy::fakes::webhook_receiver_options& options) {
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--help" || arg == "-h" || i + 1 >= argc) return false;
    const std::string value = argv[++i];
    if (arg == "--secret") {
      options.secret = value;
      continue;
    }
    if (arg == "--tls-cert" || arg == "--tls-key") {
      (arg == "--tls-cert" ? options.tls_cert_file : options.tls_key_file) = value;
      continue;
    }
    char* end = nullptr;
    const long long number = std::strtoll(value.c_str(), &end, 10);
    if (value.empty() || *end != '\0') return false;
    if (arg == "--port" && number >= 0 && number < 65536) {
      options.port = static_cast<uint16_t>(number);
    } else if (arg == "--tolerance-s") {
      options.tolerance_s = number;
    } else {
      return false;
    }
  }
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  sy::fakes::webhook_receiver_options options;
  if (!parse_args(argc, argv, options)) {
    std::cerr << "usage: fake_webhook_receiver [--port N] [--secret TEXT] [--tolerance-s N] "
                 "[--tls-cert PEM --tls-key PEM]\n";
    return 2;
  }
  // Block the stop signals before any thread starts, so that only sigwait below receives them.
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGTERM);
  sigaddset(&signals, SIGINT);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);

  sy::fakes::webhook_receiver receiver(options);
  if (const std::string err = receiver.start(); !err.empty()) {
    std::cerr << err << "\n";
    return 1;
  }
  std::cout << "listening " << receiver.port() << std::endl;
  int received = 0;
  sigwait(&signals, &received);
  receiver.stop();
  return 0;
}
