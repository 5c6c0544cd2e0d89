#pragma once
/// Test fixture: a started fake gateway and an io_context on the test thread that runs the
/// client's coroutines until they finish (with a generous deadline, never a sleep).

#include <utility>

#include <gtest/gtest.h>
#include <boost/asio/io_context.hpp>

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "runtime/gateway_client.hpp"
#include "tests/fakes/fake_gateway.hpp"

namespace sy::testing {

class GatewayTest : public ::testing::Test {
 protected:
  void SetUp() override;

  /// Settings pointing at the fake with fast, test-sized timings.
  config::gateway_settings settings() const;

  /// Sends one request and runs the io_context until it is answered.
  runtime::gateway_outcome send(runtime::gateway_client& client, runtime::gateway_request req,
                                std::shared_ptr<runtime::abort_handle> abort = nullptr);

  /// Sends all requests concurrently and runs until every one is answered.
  std::vector<runtime::gateway_outcome> send_all(runtime::gateway_client& client,
                                                 std::vector<runtime::gateway_request> reqs);

  /// Milliseconds since `start`, for asserting that something returned promptly.
  static int64_t elapsed_ms(std::chrono::steady_clock::time_point start);

  fakes::fake_gateway fake;
  boost::asio::io_context ioc;
};

/// A chat request whose body may carry a `"fake"` directive object (JSON text, may be empty).
runtime::gateway_request chat(const std::string& text, const std::string& fake_json = "");

}  // namespace sy::testing
