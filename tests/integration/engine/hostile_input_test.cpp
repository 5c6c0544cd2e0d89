// Hostile input against the real engine (LMDB, JetStream, the fake gateway): a value that is
// accepted can always be stored, published and run — the longest model names included — and
// refused submissions interleaved with valid ones from several clients at once never hurt the
// valid ones.

#include <gtest/gtest.h>

#include <atomic>
#include <string>
#include <thread>
#include <vector>

#include "config/limits.hpp"
#include "storage/lmdb_env.hpp"
#include "tests/integration/engine/engine_env.hpp"

namespace sy::test {
namespace SY_UNITY_ID {

using nlohmann::json;

json job_for(const std::string& model) {
  return {{"endpoint", "/v1/chat/completions"},
          {"body", {{"model", model}, {"messages", {{{"role", "user"}, {"content", "hi"}}}}}}};
}

TEST(hostile_input, the_longest_accepted_model_names_are_stored_published_and_run) {
  engine_env env;
  env.start();
  http_client c(env.port());
  const std::vector<std::string> models = {
      std::string(limits::model_max_bytes, '/'),  // every byte escaped: the token is hashed
      std::string(limits::model_max_bytes, 'a'),  // kept bytes, longer than a plain token
      std::string(limits::subject_token_max_bytes / 3, '.'),  // a plain token at its limit
      std::string(limits::model_max_bytes, '\xff'),  // not UTF-8: refused as JSON, not stored
  };
  std::vector<std::string> ids;
  for (size_t i = 0; i + 1 < models.size(); ++i) {
    auto r = c.post_json("/v1/jobs", job_for(models[i]));
    ASSERT_EQ(r.status, 202) << r.body;
    ids.push_back(r.json()["id"]);
  }
  auto invalid = c.request(
      "POST", "/v1/jobs",
      R"({"endpoint":"/v1/chat/completions","body":{"model":")" + models.back() + R"("}})",
      {{"Content-Type", "application/json"}});
  EXPECT_EQ(invalid.status, 400) << invalid.body;
  for (size_t i = 0; i < ids.size(); ++i) {
    auto job = env.wait_terminal(c, ids[i]);
    EXPECT_EQ(job["status"], "completed") << "model #" << i << ": " << job.dump();
  }
  EXPECT_EQ(env.gateway().requests(), static_cast<int>(ids.size()));
}

TEST(hostile_input, refused_submissions_among_valid_ones_never_fail_the_valid_ones) {
  engine_env env;
  env.start();
  // 1,000 valid and 10 refused submissions, interleaved, from 4 clients at once.
  constexpr int clients = 4, per_client = 1010 / clients + 1;
  const std::string deep = R"({"endpoint":"/v1/chat/completions","body":{"model":"m","x":)" +
                           std::string(50'000, '[') + std::string(50'000, ']') + "}}";
  const std::string long_model = job_for(std::string(600, 'm')).dump();
  const std::string valid = job_for("test-model").dump();
  std::atomic<int> next{0}, accepted{0}, refused{0}, wrong{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < clients; ++t) {
    threads.emplace_back([&] {
      http_client c(env.port());
      for (int n = 0; n < per_client; ++n) {
        const int i = next++;
        if (i >= 1010) return;
        const bool bad = i % 101 == 50;
        const std::string& body = !bad ? valid : (i % 2 ? deep : long_model);
        auto r = c.request("POST", "/v1/jobs", body, {{"Content-Type", "application/json"}});
        if (!bad && r.status == 202) {
          ++accepted;
        } else if (bad && r.status == 400) {
          ++refused;
        } else {
          ++wrong;
          ADD_FAILURE() << "submission " << i << ": " << r.status << " " << r.body;
        }
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(accepted.load(), 1000);
  EXPECT_EQ(refused.load(), 10);
  EXPECT_EQ(wrong.load(), 0);
  EXPECT_EQ(env.count(storage::db::jobs), 1000u);
}

TEST(hostile_input, distinct_models_are_bounded_by_max_models) {
  engine_env env;
  env.settings().max_models = 2;
  env.start();
  http_client c(env.port());
  for (const char* model : {"m-1", "m-2"}) {
    auto r = c.post_json("/v1/jobs", job_for(model));
    ASSERT_EQ(r.status, 202) << r.body;
  }
  auto third = c.post_json("/v1/jobs", job_for("m-3"));
  ASSERT_EQ(third.status, 400) << third.body;
  EXPECT_EQ(third.json()["error"]["code"], "too_many_models");
  EXPECT_EQ(third.json()["error"]["param"], "body.model");
  EXPECT_EQ(env.count(storage::db::jobs), 2u);
  // A model that already has its queue is still served.
  auto again = c.post_json("/v1/jobs", job_for("m-2"));
  ASSERT_EQ(again.status, 202) << again.body;
  EXPECT_EQ(env.wait_terminal(c, again.json()["id"])["status"], "completed");
}

}  // namespace SY_UNITY_ID
}  // namespace sy::test
