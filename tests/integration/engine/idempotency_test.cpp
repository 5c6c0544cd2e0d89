// Idempotency-Key: one job per (tenant, key), also under 50 concurrent duplicates.

#include <gtest/gtest.h>

#include <set>
#include <thread>

#include "config/sha256.hpp"
#include "tests/integration/engine/engine_env.hpp"

namespace sy::test {
namespace SY_UNITY_ID {

TEST(idempotency, same_key_same_body_is_the_same_job) {
  engine_env env;
  env.start();
  http_client c(env.port());
  auto a = env.submit(c, "once", nullptr, {{"Idempotency-Key", "k1"}});
  ASSERT_EQ(a.status, 202);
  std::string id = a.json()["id"];
  ASSERT_EQ(env.wait_terminal(c, id)["status"], "completed");
  auto b = env.submit(c, "once", nullptr, {{"Idempotency-Key", "k1"}});
  EXPECT_EQ(b.status, 200);  // terminal: answered with the finished job
  EXPECT_EQ(b.json()["id"], id);
  EXPECT_EQ(b.json()["status"], "completed");
  EXPECT_EQ(env.gateway().requests(), 1);
}

TEST(idempotency, same_key_different_body_is_a_conflict) {
  engine_env env;
  env.start();
  http_client c(env.port());
  ASSERT_EQ(env.submit(c, "one", nullptr, {{"Idempotency-Key", "k"}}).status, 202);
  auto r = env.submit(c, "two", nullptr, {{"Idempotency-Key", "k"}});
  EXPECT_EQ(r.status, 422);
  EXPECT_EQ(r.json()["error"]["code"], "idempotency_conflict");
}

TEST(idempotency, fifty_concurrent_duplicates_make_one_job) {
  engine_env env;
  env.gateway().set_latency_ms(200);  // keep the job running while duplicates arrive
  env.start();
  std::vector<std::thread> threads;
  std::mutex mu;
  std::set<std::string> ids;
  std::vector<int> statuses;
  for (int i = 0; i < 50; ++i) {
    threads.emplace_back([&] {
      http_client c(env.port());
      auto r = env.submit(c, "dup", nullptr, {{"Idempotency-Key", "same"}});
      std::lock_guard lock{mu};
      statuses.push_back(r.status);
      if (r.status == 202 || r.status == 200) ids.insert(r.json()["id"].get<std::string>());
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(ids.size(), 1u);
  for (int s : statuses) EXPECT_TRUE(s == 202 || s == 200) << s;
  http_client c(env.port());
  ASSERT_EQ(env.wait_terminal(c, *ids.begin())["status"], "completed");
  EXPECT_EQ(env.gateway().requests(), 1);
}

TEST(idempotency, keys_are_scoped_to_the_tenant) {
  engine_env env;
  env.settings().api_keys = {{config::sha256_hex("ka"), "a"}, {config::sha256_hex("kb"), "b"}};
  env.start();
  http_client c(env.port());
  auto a = env.submit(c, "x", nullptr, {{"Idempotency-Key", "k"}, {"Authorization", "Bearer ka"}});
  auto b = env.submit(c, "x", nullptr, {{"Idempotency-Key", "k"}, {"Authorization", "Bearer kb"}});
  ASSERT_EQ(a.status, 202);
  ASSERT_EQ(b.status, 202);
  EXPECT_NE(a.json()["id"], b.json()["id"]);
}

}  // namespace SY_UNITY_ID
}  // namespace sy::test
