// GET /v1/jobs: newest first, status filter, cursor pagination.

#include <gtest/gtest.h>

#include <set>

#include "tests/integration/engine/engine_env.hpp"
#include "tests/support/wait.hpp"

namespace sy::test {
namespace SY_UNITY_ID {

using nlohmann::json;

std::vector<std::string> ids_of(const json& page) {
  std::vector<std::string> out;
  for (const auto& j : page["data"]) out.push_back(j["id"]);
  return out;
}

TEST(list, newest_first_with_cursor_pages_stable_under_new_jobs) {
  engine_env env;
  env.start();
  http_client c(env.port());
  std::vector<std::string> submitted;
  for (int i = 0; i < 5; ++i)
    submitted.push_back(env.submit(c, "j" + std::to_string(i)).json()["id"]);
  std::vector<std::string> newest_first(submitted.rbegin(), submitted.rend());

  auto first = c.get("/v1/jobs?limit=2");
  ASSERT_EQ(first.status, 200) << first.body;
  auto p1 = first.json();
  EXPECT_EQ(p1["object"], "list");
  EXPECT_EQ(ids_of(p1), std::vector<std::string>(newest_first.begin(), newest_first.begin() + 2));
  EXPECT_EQ(p1["first_id"], newest_first[0]);
  EXPECT_EQ(p1["last_id"], newest_first[1]);
  EXPECT_EQ(p1["has_more"], true);
  EXPECT_EQ(p1["data"][0]["object"], "job");

  // New jobs arrive between pages: they are newer than the cursor, so they never shift it.
  env.submit(c, "late 1");
  env.submit(c, "late 2");
  std::vector<std::string> seen = ids_of(p1);
  std::string cursor = p1["last_id"];
  for (;;) {
    auto page = c.get("/v1/jobs?limit=2&after=" + cursor).json();
    for (const auto& id : ids_of(page)) seen.push_back(id);
    if (!page["has_more"].get<bool>()) break;
    cursor = page["last_id"];
  }
  EXPECT_EQ(seen, newest_first);

  auto all = c.get("/v1/jobs").json();
  EXPECT_EQ(all["data"].size(), 7u);  // default limit 20
  EXPECT_EQ(all["has_more"], false);
}

TEST(list, filters_by_status) {
  engine_env env;
  env.settings().gateway->request_timeout_ms = 60'000;
  env.start();
  http_client c(env.port());
  std::string done = env.submit(c, "done").json()["id"];
  ASSERT_EQ(env.wait_terminal(c, done)["status"], "completed");
  std::string slow = env.submit(c, "slow", {{"latency_ms", 20'000}}).json()["id"];
  ASSERT_TRUE(
      wait_for([&] { return c.get("/v1/jobs/" + slow).json()["status"] == "in_progress"; }));

  auto completed = c.get("/v1/jobs?status=completed").json();
  EXPECT_EQ(ids_of(completed), std::vector<std::string>{done});
  auto running = c.get("/v1/jobs?status=in_progress").json();
  EXPECT_EQ(ids_of(running), std::vector<std::string>{slow});
  auto none = c.get("/v1/jobs?status=expired").json();
  EXPECT_TRUE(none["data"].empty());
  EXPECT_TRUE(none["first_id"].is_null());
  EXPECT_TRUE(none["last_id"].is_null());
}

TEST(list, bad_parameters_are_400_invalid_value) {
  engine_env env;
  env.start();
  http_client c(env.port());
  for (const char* q : {"limit=0", "limit=101", "limit=ten"}) {
    auto r = c.get(std::string("/v1/jobs?") + q);
    ASSERT_EQ(r.status, 400) << q;
    EXPECT_EQ(r.json()["error"]["code"], "invalid_value");
    EXPECT_EQ(r.json()["error"]["param"], "limit");
  }
  auto s = c.get("/v1/jobs?status=finished");
  ASSERT_EQ(s.status, 400);
  EXPECT_EQ(s.json()["error"]["param"], "status");
  EXPECT_EQ(c.get("/v1/jobs?status=in%5Fprogress").status, 200);  // percent-decoded
}

}  // namespace SY_UNITY_ID
}  // namespace sy::test
