// The fake gateway's own contract: HTTP control, statistics, errors for bad requests.

#include <nlohmann/json.hpp>

#include "tests/integration/gateway/gateway_env.hpp"

namespace sy::testing {
namespace SY_UNITY_ID {

using json = nlohmann::json;
using runtime::gateway_client;

TEST_F(GatewayTest, FakeIsControlledOverHttp) {
  auto s = settings();
  s.max_retries = 0;
  gateway_client client(ioc.get_executor(), s);
  auto ctl = send(client, {"/_fake/control", R"({"fail_next": 1, "status": 502})"});
  ASSERT_EQ(ctl.status_code, 200);
  EXPECT_EQ(send(client, chat("x", R"({"key": "k1"})")).status_code, 502);
  EXPECT_EQ(send(client, chat("x", R"({"key": "k1"})")).status_code, 200);
  auto stats = send(client, {"/_fake/stats", ""});
  ASSERT_EQ(stats.status_code, 200);
  const json j = json::parse(stats.body);
  EXPECT_EQ(j["requests"], 2);  // control and stats requests are not counted
  EXPECT_EQ(j["by_key"]["k1"], 2);

  ASSERT_EQ(send(client, {"/_fake/control", R"({"reset": true})"}).status_code, 200);
  EXPECT_EQ(fake.requests(), 0);
}

TEST_F(GatewayTest, FakeRefusesForAWhileOverHttpThenListensAgain) {
  auto s = settings();
  s.max_retries = 0;
  gateway_client client(ioc.get_executor(), s);
  ASSERT_EQ(send(client, {"/_fake/control", R"({"refuse_for_ms": 300})"}).status_code, 200);
  ASSERT_TRUE(fake.wait_open_connections(0, 2'000));
  EXPECT_FALSE(send(client, chat("x")).got_response);
  s.max_retries = 50;
  s.initial_backoff_ms = 20;
  s.max_backoff_ms = 40;
  gateway_client patient(ioc.get_executor(), s);
  auto out = send(patient, chat("x"));
  EXPECT_EQ(out.status_code, 200);
  EXPECT_GT(out.tries, 1);
}

TEST_F(GatewayTest, FakeAnswersBadRequestsWithOpenAiErrors) {
  auto s = settings();
  s.max_retries = 0;
  gateway_client client(ioc.get_executor(), s);
  auto unknown = send(client, {"/v1/nope", "{}"});
  EXPECT_EQ(unknown.status_code, 404);
  EXPECT_TRUE(json::parse(unknown.body)["error"].contains("message"));
  EXPECT_EQ(send(client, {"/v1/chat/completions", "not json"}).status_code, 400);
  EXPECT_EQ(send(client, {"/v1/chat/completions", R"({"model":"m"})"}).status_code, 400);
}

TEST_F(GatewayTest, FakeStatusDirectiveAlwaysFails) {
  auto s = settings();
  s.max_retries = 2;
  gateway_client client(ioc.get_executor(), s);
  auto out = send(client, chat("x", R"({"status": 500})"));
  EXPECT_EQ(out.status_code, 500);
  EXPECT_EQ(out.tries, 3);
}

}  // namespace SY_UNITY_ID
}  // namespace sy::testing
