// The storage writer meets a full LMDB map: it grows the map and redoes the group commit, so a
// client never sees the map's size (issue 2: "a full map grows instead of failing").

#include <gtest/gtest.h>

#include <set>
#include <string>
#include <thread>
#include <vector>

#include "storage/lmdb_env.hpp"
#include "tests/integration/engine/engine_env.hpp"

namespace sy::test {
namespace SY_UNITY_ID {

TEST(map_growth, a_full_map_grows_and_every_submission_is_accepted_and_kept) {
  constexpr int64_t initial = int64_t{1} << 20;  // the smallest map the settings allow
  constexpr int clients = 4;
  // Few jobs with large bodies: a value over ~2 KiB takes LMDB overflow pages of its own, so 400
  // jobs fill the map as the 4,000 small ones did before, in a tenth of the time under TSan.
  constexpr int per_client = 100;
  constexpr size_t body_bytes = 3'000;
  engine_env env;
  env.settings().lmdb_initial_map_bytes = initial;
  env.start();
  ASSERT_EQ(env.store().map_bytes(), initial);

  // Several keep-alive clients at once, so that commits are grouped as in production and the
  // map fills while other submissions wait for the same transaction.
  std::vector<std::vector<std::string>> ids(clients);
  std::vector<std::string> failures(clients);
  std::vector<std::thread> threads;
  for (int t = 0; t < clients; ++t) {
    threads.emplace_back([&, t] {
      http_client c(env.port());
      for (int i = 0; i < per_client; ++i) {
        auto content = "fill " + std::to_string(t) + "/" + std::to_string(i) + " " +
                       std::string(body_bytes, 'x');
        auto r = env.submit(c, content);
        if (r.status != 202) {
          failures[t] = std::to_string(r.status) + " " + r.error + " " + r.body;
          return;
        }
        ids[t].push_back(r.json()["id"]);
      }
    });
  }
  for (auto& th : threads) th.join();
  for (int t = 0; t < clients; ++t) ASSERT_TRUE(failures[t].empty()) << failures[t];

  // 400 jobs of 3 KB with their tasks, events and indexes need several megabytes: the map was
  // full at least twice (1 → 2 → 4 MiB) and every grow kept what was committed before it.
  EXPECT_GE(env.store().map_bytes(), 4 * initial);
  std::set<std::string> distinct;
  http_client c(env.port());
  for (const auto& list : ids) {
    for (const auto& id : list) {
      distinct.insert(id);
      auto r = c.get("/v1/jobs/" + id);
      ASSERT_EQ(r.status, 200) << id << ": " << r.body;
      EXPECT_EQ(r.json()["id"], id);
    }
  }
  EXPECT_EQ(distinct.size(), size_t{clients * per_client});
  EXPECT_EQ(env.count(storage::db::jobs), size_t{clients * per_client});
}

}  // namespace SY_UNITY_ID
}  // namespace sy::test
