// Every model name a client may submit (up to limits::model_max_bytes of any bytes) gets a
// subject token and a durable consumer that a real nats-server accepts, and a task published
// for it is delivered — the boundary of the token's length on both sides.

#include <gtest/gtest.h>

#include <chrono>
#include <set>
#include <string>

#include "config/limits.hpp"
#include "tests/integration/nats/nats_env.hpp"

namespace sy::runtime {
namespace SY_UNITY_ID {

using namespace std::chrono_literals;

/// A model whose plain encoding is exactly `encoded` bytes long ('/' encodes to 3 bytes).
std::string model_encoding_to(size_t encoded) {
  return std::string(encoded / 3, '/') + std::string(encoded % 3, 'a');
}

TEST(ModelNameLimits, TokensUpToTheLimitAreThePlainEncoding) {
  const auto at = model_encoding_to(limits::subject_token_max_bytes);
  EXPECT_EQ(subject_token(at).size(), limits::subject_token_max_bytes);
  EXPECT_EQ(model_from_token(subject_token(at)), at);
}

TEST(ModelNameLimits, LongerEncodingsAreShortenedHashedAndDistinct) {
  const auto over = model_encoding_to(limits::subject_token_max_bytes + 1);
  const std::string token = subject_token(over);
  EXPECT_LE(token.size(), limits::subject_token_max_bytes);
  EXPECT_NE(token.find("_h"), std::string::npos) << token;
  EXPECT_FALSE(model_from_token(token).has_value());  // not an encoding: never reversed
  // Models that share a long common prefix still get distinct tokens.
  std::set<std::string> tokens;
  for (char last : {'a', 'b', '/', '.'}) {
    std::string m(limits::model_max_bytes - 1, '/');
    m.push_back(last);
    tokens.insert(subject_token(m));
    EXPECT_LE(subject_token(m).size(), limits::subject_token_max_bytes);
    EXPECT_EQ(subject_token(m).find_first_of(". *>"), std::string::npos);
  }
  EXPECT_EQ(tokens.size(), 4u);
  // Never an escape cut in half, whatever the length before the hash.
  for (size_t n = 80; n < 90; ++n) {
    std::string m = std::string(n, 'a') + std::string(60, '.');
    auto t = subject_token(m);
    auto h = t.rfind("_h");
    ASSERT_NE(h, std::string::npos);
    EXPECT_TRUE(model_from_token(t.substr(0, h)).has_value()) << t;
  }
}

/// Binds the model's consumer on a real server, publishes one task and fetches it back.
void assert_runs(test::nats_env& env, const std::string& model) {
  auto sub = env.client->subscribe_tasks(model);
  ASSERT_TRUE(sub) << sub.error().message;
  auto acked = env.client->publish_batch({{env.client->task_subject(model), "", "task"}}, 5000);
  ASSERT_EQ(acked, std::vector<bool>{true});
  auto msg = test::fetch_one(**sub, 5s);
  ASSERT_TRUE(msg.has_value());
  EXPECT_EQ(msg->data(), "task");
  EXPECT_TRUE(msg->ack());
}

TEST(ModelNameLimits, ARealServerAcceptsTheLongestNames) {
  test::nats_env env;
  assert_runs(env, model_encoding_to(limits::subject_token_max_bytes));      // plain, at the limit
  assert_runs(env, model_encoding_to(limits::subject_token_max_bytes + 1));  // shortened
  assert_runs(env, std::string(limits::model_max_bytes, '/'));               // the longest model
  assert_runs(env, std::string(limits::model_max_bytes, '\xff'));
}

}  // namespace SY_UNITY_ID
}  // namespace sy::runtime
