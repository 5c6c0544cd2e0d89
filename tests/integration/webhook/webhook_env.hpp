#pragma once
/// Test fixture: a started webhook receiver and an io_context on the test thread that runs the
/// client's deliveries until they finish (with a generous deadline, never a sleep).

#include <utility>

#include <gtest/gtest.h>
#include <boost/asio/io_context.hpp>

#include <chrono>
#include <string>
#include <vector>

#include "runtime/webhook_client.hpp"
#include "tests/fakes/webhook_receiver.hpp"

namespace sy::testing {

/// The receivers' secret, in the Standard Webhooks form (as in a webhook_secret_file), and the
/// key it stands for, which the clients sign with: base64 of the key after `whsec_`.
inline constexpr const char* kWebhookSecret = "whsec_aW50ZWdyYXRpb24ta2V5LTAxMjM0NTY3ODlhYmNkZWY=";
inline constexpr const char* kWebhookKey = "integration-key-0123456789abcdef";

class WebhookTest : public ::testing::Test {
 protected:
  void SetUp() override;

  /// The default deny list with loopback allowed (the receiver listens on 127.0.0.1).
  static runtime::webhook_policy loopback_policy(int64_t timeout_ms = 5'000);

  /// Runs one delivery to the end.
  runtime::webhook_outcome deliver(runtime::webhook_client& client, const std::string& url,
                                   const std::string& body, const std::string& delivery_id = "d1");

  /// Runs all deliveries concurrently to the end.
  std::vector<runtime::webhook_outcome> deliver_all(runtime::webhook_client& client,
                                                    const std::string& url,
                                                    const std::vector<std::string>& bodies);

  /// A state-change body as the engine sends it (only the fields the receiver counts by).
  static std::string body(const std::string& job_id, int64_t sequence);

  /// Milliseconds since `start`, for asserting that something returned promptly.
  static int64_t elapsed_ms(std::chrono::steady_clock::time_point start);

  /// A loopback port with nothing listening on it (bound, read back, closed).
  static uint16_t closed_port();

  /// Receiver options with the test secret (GCC 12 warns on partial designated initializers).
  static fakes::webhook_receiver_options receiver_options(int64_t tolerance_s = 300);

  fakes::webhook_receiver receiver{receiver_options()};
  boost::asio::io_context ioc;
};

}  // namespace sy::testing
