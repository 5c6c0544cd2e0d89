// The gateway client's outcomes and retries against the fake gateway.

#include <nlohmann/json.hpp>

#include <boost/asio/co_spawn.hpp>

#include <chrono>
#include <memory>
#include <mutex>
#include <optional>
#include <vector>

#include "runtime/clock.hpp"
#include "tests/integration/gateway/gateway_env.hpp"

namespace sy::testing {
namespace SY_UNITY_ID {

using json = nlohmann::json;
using runtime::gateway_client;

TEST_F(GatewayTest, SuccessRecordsBodyRequestIdAndSendsOurHeaders) {
  auto s = settings();
  s.url = fake.url() + "/gw/";
  s.api_key = "sk-test";
  gateway_client client(ioc.get_executor(), s);
  auto out = send(client, chat("hello there"));
  EXPECT_TRUE(out.got_response);
  EXPECT_EQ(out.status_code, 200);
  EXPECT_EQ(out.tries, 1);
  EXPECT_FALSE(out.retryable);
  EXPECT_EQ(out.error, "");
  EXPECT_EQ(out.request_id.rfind("req_fake", 0), 0u) << out.request_id;
  const json body = json::parse(out.body);
  EXPECT_EQ(body["object"], "chat.completion");
  EXPECT_EQ(body["model"], "gpt-test");
  EXPECT_EQ(body["choices"][0]["message"]["content"], "echo: hello there");
  EXPECT_EQ(body["usage"]["prompt_tokens"], 2);

  const auto seen = fake.received();
  ASSERT_EQ(seen.size(), 1u);
  EXPECT_EQ(seen[0].method, "POST");
  EXPECT_EQ(seen[0].target, "/gw/v1/chat/completions");
  EXPECT_EQ(seen[0].headers.at("authorization"), "Bearer sk-test");
  EXPECT_EQ(seen[0].headers.at("content-type"), "application/json");
  EXPECT_EQ(seen[0].headers.at("user-agent"), "switchyard/0.1");
  EXPECT_EQ(seen[0].headers.at("host"), "127.0.0.1:" + std::to_string(fake.port()));
  EXPECT_EQ(json::parse(seen[0].body)["messages"][0]["content"], "hello there");
}

TEST_F(GatewayTest, NoAuthorizationHeaderWithoutApiKey) {
  gateway_client client(ioc.get_executor(), settings());
  EXPECT_EQ(send(client, chat("x")).status_code, 200);
  ASSERT_EQ(fake.received().size(), 1u);
  EXPECT_EQ(fake.received()[0].headers.count("authorization"), 0u);
}

TEST_F(GatewayTest, EmbeddingsAndCompletionsAnswer) {
  gateway_client client(ioc.get_executor(), settings());
  auto e = send(client, {"/v1/embeddings", R"({"model":"emb","input":["a b","c"]})"});
  ASSERT_EQ(e.status_code, 200);
  const json eb = json::parse(e.body);
  EXPECT_EQ(eb["object"], "list");
  EXPECT_EQ(eb["data"].size(), 2u);
  EXPECT_EQ(eb["data"][1]["embedding"].size(), 8u);
  auto c = send(client, {"/v1/completions", R"({"model":"m","prompt":"say hi"})"});
  ASSERT_EQ(c.status_code, 200);
  EXPECT_EQ(json::parse(c.body)["choices"][0]["text"], "echo: say hi");
}

TEST_F(GatewayTest, ClientErrorIsFinalWithBodyRecorded) {
  gateway_client client(ioc.get_executor(), settings());
  auto out = send(client, chat("x", R"({"status": 400})"));
  EXPECT_TRUE(out.got_response);
  EXPECT_EQ(out.status_code, 400);
  EXPECT_FALSE(out.retryable);
  EXPECT_EQ(out.tries, 1);
  EXPECT_EQ(json::parse(out.body)["error"]["type"], "invalid_request_error");
  EXPECT_NE(out.error.find("HTTP 400"), std::string::npos) << out.error;
  EXPECT_EQ(fake.requests(), 1);
}

TEST_F(GatewayTest, ServerErrorTwiceThenSuccess) {
  gateway_client client(ioc.get_executor(), settings());
  auto out = send(client, chat("x", R"({"fail_times": 2, "key": "abc"})"));
  EXPECT_EQ(out.status_code, 200);
  EXPECT_EQ(out.tries, 3);
  EXPECT_EQ(out.error, "");
  EXPECT_EQ(fake.requests_by_key().at("abc"), 3);
}

TEST_F(GatewayTest, ServerErrorsExhaustRetriesAndStayRetryable) {
  auto s = settings();
  s.max_retries = 1;
  gateway_client client(ioc.get_executor(), s);
  fake.fail_next(5, 503);
  auto out = send(client, chat("x"));
  EXPECT_TRUE(out.got_response);
  EXPECT_EQ(out.status_code, 503);
  EXPECT_TRUE(out.retryable);
  EXPECT_EQ(out.tries, 2);
  EXPECT_EQ(json::parse(out.body)["error"]["type"], "server_error");
  EXPECT_EQ(fake.requests(), 2);
}

// A request's own try budget (a batch line's max_attempts) replaces max_retries, either way.
TEST_F(GatewayTest, ARequestsMaxTriesOverridesTheClientsRetries) {
  auto s = settings();
  s.max_retries = 1;
  gateway_client client(ioc.get_executor(), s);
  auto more = chat("x", R"({"status": 500, "key": "more"})");
  more.max_tries = 4;
  auto out = send(client, more);
  EXPECT_EQ(out.status_code, 500);
  EXPECT_TRUE(out.retryable);
  EXPECT_EQ(out.tries, 4);
  auto once = chat("x", R"({"status": 500, "key": "once"})");
  once.max_tries = 1;
  EXPECT_EQ(send(client, once).tries, 1);
  EXPECT_EQ(fake.requests_by_key().at("more"), 4);
  EXPECT_EQ(fake.requests_by_key().at("once"), 1);
}

TEST_F(GatewayTest, RateLimitIsRetriedWithRetryAfterCappedAtMaxBackoff) {
  gateway_client client(ioc.get_executor(), settings());  // max_backoff 20 ms caps Retry-After 1 s
  fake.fail_next(1, 429);
  // When each try reached the fake (on its io thread, before it answered). The pause between the
  // two holds the backoff, and honouring the Retry-After would make it more than 1 s whatever the
  // machine's load; measured there rather than around the whole send, whose connect and answers
  // a loaded machine stretches towards that same second.
  std::mutex mu;
  std::vector<std::chrono::steady_clock::time_point> arrivals;
  fake.on_request([&](const fakes::received_request&) {
    std::lock_guard lock(mu);
    arrivals.push_back(std::chrono::steady_clock::now());
  });
  auto out = send(client, chat("x"));
  fake.on_request(nullptr);
  EXPECT_EQ(out.status_code, 200);
  EXPECT_EQ(out.tries, 2);
  std::lock_guard lock(mu);
  ASSERT_EQ(arrivals.size(), 2u);
  EXPECT_LT(arrivals[1] - arrivals[0], std::chrono::milliseconds(1'000))
      << "the retry waited out the Retry-After instead of max_backoff_ms";
}

/// Runs the io_context until `done()`, or fails after a generous real-time deadline.
template <class F>
bool run_until(boost::asio::io_context& ioc, F done) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while (!done() && std::chrono::steady_clock::now() < deadline) {
    if (ioc.stopped()) ioc.restart();  // out of work: the clock's completion is yet to be posted
    ioc.run_one_for(std::chrono::milliseconds(10));
  }
  return done();
}

TEST_F(GatewayTest, RateLimitHonoursRetryAfterSecondsOnTheInjectedClock) {
  auto s = settings();
  s.max_backoff_ms = 5'000;
  s.initial_backoff_ms = 1;
  runtime::manual_clock clock(1'000'000);
  gateway_client client(ioc.get_executor(), s, clock);
  fake.fail_next(1, 429);  // Retry-After: 1
  std::optional<runtime::gateway_outcome> out;
  boost::asio::co_spawn(
      ioc, client.send(chat("x")),
      [&](std::exception_ptr, runtime::gateway_outcome o) { out = std::move(o); });
  // The pause is a timer of the clock, due at the Retry-After's second, not the 1 ms backoff.
  ASSERT_TRUE(run_until(ioc, [&] { return clock.armed_due_at(1'001'000) == 1; }));
  EXPECT_EQ(fake.requests(), 1);
  clock.advance(999);
  ioc.restart();
  ioc.poll();
  EXPECT_FALSE(out) << "retried before the Retry-After passed on the clock";
  EXPECT_EQ(clock.armed(), 1u);
  clock.advance(1);
  ASSERT_TRUE(run_until(ioc, [&] { return out.has_value(); }));
  EXPECT_EQ(out->status_code, 200);
  EXPECT_EQ(out->tries, 2);
  EXPECT_EQ(fake.requests(), 2);
}

TEST_F(GatewayTest, AnAbortEndsTheRetryPauseAtOnce) {
  auto s = settings();
  s.initial_backoff_ms = 3'600'000;  // an hour of the clock, which never moves here
  s.max_backoff_ms = 3'600'000;
  runtime::manual_clock clock;
  gateway_client client(ioc.get_executor(), s, clock);
  auto abort = std::make_shared<runtime::abort_handle>();
  std::optional<runtime::gateway_outcome> out;
  boost::asio::co_spawn(
      ioc, client.send(chat("x", R"({"status": 500})"), abort),
      [&](std::exception_ptr, runtime::gateway_outcome o) { out = std::move(o); });
  ASSERT_TRUE(run_until(ioc, [&] { return clock.armed() == 1; }));
  abort->abort();
  ASSERT_TRUE(run_until(ioc, [&] { return out.has_value(); }));
  EXPECT_EQ(out->error, "aborted");
  EXPECT_EQ(out->tries, 1);
  EXPECT_EQ(clock.armed(), 0u) << "the pause's timer is cancelled";
  EXPECT_EQ(fake.requests(), 1);
}

TEST_F(GatewayTest, RefusedConnectionIsARetryableTransportError) {
  fake.set_refusing(true);
  auto s = settings();
  s.max_retries = 1;
  gateway_client client(ioc.get_executor(), s);
  auto out = send(client, chat("x"));
  EXPECT_FALSE(out.got_response);
  EXPECT_TRUE(out.retryable);
  EXPECT_EQ(out.tries, 2);
  EXPECT_EQ(out.error, "connect 127.0.0.1:" + std::to_string(fake.port()) + ": Connection refused");
  EXPECT_EQ(fake.requests(), 0);

  fake.set_refusing(false);  // back on the same port
  EXPECT_EQ(send(client, chat("x")).status_code, 200);
}

TEST_F(GatewayTest, DroppedConnectionIsRetried) {
  gateway_client client(ioc.get_executor(), settings());
  fake.drop_next(1);
  auto out = send(client, chat("x"));
  EXPECT_EQ(out.status_code, 200);
  EXPECT_EQ(out.tries, 2);
  EXPECT_EQ(fake.requests(), 2);
}

TEST_F(GatewayTest, DroppedEveryTimeReportsTheCut) {
  auto s = settings();
  s.max_retries = 0;
  gateway_client client(ioc.get_executor(), s);
  auto out = send(client, chat("x", R"({"drop": true})"));
  EXPECT_FALSE(out.got_response);
  EXPECT_TRUE(out.retryable);
  EXPECT_EQ(out.tries, 1);
  EXPECT_NE(out.error.find("read response"), std::string::npos) << out.error;
}

TEST_F(GatewayTest, SlowGatewayTimesOut) {
  auto s = settings();
  s.request_timeout_ms = 150;
  s.max_retries = 0;
  gateway_client client(ioc.get_executor(), s);
  const auto start = std::chrono::steady_clock::now();
  auto out = send(client, chat("x", R"({"latency_ms": 3000})"));
  EXPECT_FALSE(out.got_response);
  EXPECT_TRUE(out.retryable);
  EXPECT_NE(out.error.find("timeout after 150 ms"), std::string::npos) << out.error;
  EXPECT_LT(elapsed_ms(start), 2'000);
}

TEST_F(GatewayTest, InvalidUrlFailsWithoutTrying) {
  auto s = settings();
  s.url = "ftp://example.com";
  gateway_client client(ioc.get_executor(), s);
  auto out = send(client, chat("x"));
  EXPECT_FALSE(out.retryable);
  EXPECT_EQ(out.tries, 0);
  // The reason is config::parse_gateway_url's, the parser startup validation uses.
  EXPECT_NE(out.error.find("expected a URL http(s)://"), std::string::npos) << out.error;
  EXPECT_NE(out.error.find("ftp://example.com"), std::string::npos) << out.error;
}

}  // namespace SY_UNITY_ID
}  // namespace sy::testing
