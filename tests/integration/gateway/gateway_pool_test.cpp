// Keep-alive pooling, the connection cap, stale idle connections and abort.

#include <utility>  // before any Asio header

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/steady_timer.hpp>

#include <atomic>
#include <optional>

#include "tests/integration/gateway/gateway_env.hpp"
#include "tests/support/wait.hpp"

namespace sy::testing {
namespace SY_UNITY_ID {

using runtime::abort_handle;
using runtime::gateway_client;

TEST_F(GatewayTest, KeepAliveReusesOneConnection) {
  gateway_client client(ioc.get_executor(), settings());
  for (int i = 0; i < 5; ++i) ASSERT_EQ(send(client, chat("x")).status_code, 200);
  EXPECT_EQ(fake.requests(), 5);
  EXPECT_EQ(fake.connections(), 1);
  EXPECT_EQ(client.open_connections(), 1);
}

TEST_F(GatewayTest, ConcurrencyIsCappedByMaxConnections) {
  auto s = settings();
  s.max_connections = 2;
  gateway_client client(ioc.get_executor(), s);
  fake.set_latency_ms(60);
  auto outs = send_all(client, std::vector<runtime::gateway_request>(6, chat("x")));
  for (const auto& o : outs) EXPECT_EQ(o.status_code, 200);
  EXPECT_EQ(fake.requests(), 6);
  EXPECT_EQ(fake.connections(), 2);
  EXPECT_EQ(fake.peak_in_flight(), 2);  // both connections used, never more
  EXPECT_EQ(client.open_connections(), 2);
}

TEST_F(GatewayTest, ServerClosingIdleConnectionDoesNotFailTheNextRequest) {
  gateway_client client(ioc.get_executor(), settings());
  ASSERT_EQ(send(client, chat("x")).status_code, 200);
  fake.close_connections();
  ASSERT_TRUE(fake.wait_open_connections(0, 2'000));
  auto out = send(client, chat("y"));
  EXPECT_EQ(out.status_code, 200);
  EXPECT_EQ(out.tries, 1);  // the stale connection is not counted as a try
  EXPECT_EQ(fake.connections(), 2);
}

TEST_F(GatewayTest, AbortMidRequestReturnsPromptly) {
  auto s = settings();
  s.request_timeout_ms = 10'000;
  gateway_client client(ioc.get_executor(), s);
  auto abort = std::make_shared<abort_handle>();
  // Abort from the fake's io thread once the request has arrived: "any thread".
  std::atomic<bool> abort_returned{false};
  fake.on_request([abort, &abort_returned](const fakes::received_request&) {
    abort->abort();
    abort_returned = true;
  });
  const auto start = std::chrono::steady_clock::now();
  auto out = send(client, chat("x", R"({"latency_ms": 5000})"), abort);
  EXPECT_EQ(out.error, "aborted");
  EXPECT_FALSE(out.got_response);
  EXPECT_FALSE(out.retryable);
  EXPECT_EQ(out.tries, 1);
  EXPECT_LT(elapsed_ms(start), 2'000);
  EXPECT_EQ(client.open_connections(), 0);  // the aborted connection is not pooled
  // abort() drops the canceller it ran (which holds a strand of `ioc`) on the fake's thread
  // after the client already answered: let it return before the fixture destroys `ioc`.
  EXPECT_TRUE(test::wait_for([&] { return abort_returned.load(); }, std::chrono::seconds(5)));
}

TEST_F(GatewayTest, AbortDuringBackoffReturnsPromptly) {
  auto s = settings();
  s.initial_backoff_ms = 10'000;
  s.max_backoff_ms = 10'000;
  gateway_client client(ioc.get_executor(), s);
  fake.fail_next(3, 500);
  auto abort = std::make_shared<abort_handle>();
  // The 500 arrives within milliseconds; 300 ms later the client is in its 10 s backoff.
  boost::asio::steady_timer later(ioc, std::chrono::milliseconds(300));
  later.async_wait([abort](boost::system::error_code) { abort->abort(); });
  const auto start = std::chrono::steady_clock::now();
  auto out = send(client, chat("x"), abort);
  EXPECT_EQ(out.error, "aborted");
  EXPECT_EQ(out.tries, 1);
  EXPECT_EQ(fake.requests(), 1);
  // Well before the 10 s backoff ends (half of it: room for a loaded machine's scheduling).
  EXPECT_LT(elapsed_ms(start), 5'000);
}

TEST_F(GatewayTest, AbortBeforeSendDoesNothing) {
  gateway_client client(ioc.get_executor(), settings());
  auto abort = std::make_shared<abort_handle>();
  abort->abort();
  auto out = send(client, chat("x"), abort);
  EXPECT_EQ(out.error, "aborted");
  EXPECT_EQ(out.tries, 0);
  EXPECT_EQ(fake.requests(), 0);
}

TEST_F(GatewayTest, AbortWhileWaitingForAPooledConnection) {
  auto s = settings();
  s.max_connections = 1;
  s.request_timeout_ms = 10'000;
  gateway_client client(ioc.get_executor(), s);
  auto abort = std::make_shared<abort_handle>();
  // The first request holds the only connection for 300 ms; the second waits and is aborted as
  // soon as the first reaches the fake.
  fake.on_request([abort](const fakes::received_request&) { abort->abort(); });
  std::optional<runtime::gateway_outcome> first, second;
  boost::asio::co_spawn(ioc, client.send(chat("a", R"({"latency_ms": 300})")),
                        [&](std::exception_ptr, runtime::gateway_outcome o) { first = o; });
  boost::asio::co_spawn(ioc, client.send(chat("b"), abort),
                        [&](std::exception_ptr, runtime::gateway_outcome o) { second = o; });
  ioc.run_for(std::chrono::seconds(10));
  ASSERT_TRUE(first && second);
  EXPECT_EQ(first->status_code, 200);
  EXPECT_EQ(second->error, "aborted");
  EXPECT_EQ(second->tries, 0);
  EXPECT_EQ(fake.requests(), 1);
}

}  // namespace SY_UNITY_ID
}  // namespace sy::testing
