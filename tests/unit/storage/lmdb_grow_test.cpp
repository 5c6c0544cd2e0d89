#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "storage/lmdb_env.hpp"
#include "tests/unit/storage/temp_dir.hpp"

namespace sy::storage {
namespace SY_UNITY_ID {

constexpr int64_t tiny_map = 64 * 1024;
const std::string big_value(1000, 'x');

/// Writes w<n>.. (and the count in meta) in batches of `batch` until a put fails; returns the
/// number committed. The failing batch must report map_full (from a put or the commit).
int fill_until_full(environment& env, int first, int batch = 8) {
  int n = first;
  for (int round = 0; round < 10000; ++round) {
    auto w = env.begin_write();
    EXPECT_TRUE(w.ok());
    if (!w.ok()) return n;
    status st = sy::ok;
    for (int i = 0; i < batch && st.ok(); ++i) {
      st = w->put(db::jobs, "w" + std::to_string(n + i), big_value);
    }
    if (st.ok()) st = w->put(db::meta, "count", std::to_string(n + batch));
    if (!st.ok()) {
      EXPECT_EQ(st.error().code, "map_full") << st.error().message;
      auto c = w->commit();  // poisoned: aborts and reports the first failure
      EXPECT_FALSE(c.ok());
      if (!c.ok()) {
        EXPECT_EQ(c.error().code, "map_full");
      }
      return n;
    }
    // Commit itself can run out of map (it writes the free list), with the same code.
    if (auto c = w->commit(); !c.ok()) {
      EXPECT_EQ(c.error().code, "map_full") << c.error().message;
      return n;
    }
    n += batch;
  }
  ADD_FAILURE() << "the map never filled up";
  return n;
}

TEST(LmdbGrow, FullMapGrowsAndTheRetriedPutSucceeds) {
  testing::temp_dir dir;
  auto opened = environment::open(dir.path(), tiny_map);
  ASSERT_TRUE(opened.ok()) << opened.error().message;
  auto& env = **opened;
  const int64_t before = env.map_bytes();
  const int committed = fill_until_full(env, 0);
  ASSERT_GT(committed, 0);
  ASSERT_TRUE(env.grow().ok());
  EXPECT_EQ(env.map_bytes(), before * 2);
  {
    auto w = env.begin_write();
    ASSERT_TRUE(w.ok());
    ASSERT_TRUE(w->put(db::jobs, "after-grow", big_value).ok());
    ASSERT_TRUE(w->commit().ok());
  }
  auto r = env.begin_read();
  EXPECT_EQ(r.get(db::jobs, "after-grow"), big_value);
  for (int i = 0; i < committed; ++i) {
    ASSERT_EQ(r.get(db::jobs, "w" + std::to_string(i)), big_value) << i;
  }
}

TEST(LmdbGrow, GrownSizeSurvivesReopen) {
  testing::temp_dir dir;
  int64_t grown = 0;
  {
    auto env = environment::open(dir.path(), tiny_map);
    ASSERT_TRUE(env.ok());
    ASSERT_TRUE((*env)->grow().ok());
    ASSERT_TRUE((*env)->grow().ok());
    grown = (*env)->map_bytes();
    EXPECT_GE(grown, 4 * tiny_map);
  }
  auto env = environment::open(dir.path(), tiny_map);
  ASSERT_TRUE(env.ok());
  EXPECT_EQ((*env)->map_bytes(), grown);
}

/// Readers on other threads keep taking snapshots while the writer fills and grows the map three
/// times. Each snapshot must be consistent: the count the writer stored with a batch names keys
/// that all exist in the same snapshot, and the fixed keys never change.
TEST(LmdbGrow, ConcurrentReadersDuringGrowSeeConsistentSnapshots) {
  testing::temp_dir dir;
  auto opened = environment::open(dir.path(), tiny_map);
  ASSERT_TRUE(opened.ok());
  auto& env = **opened;
  {
    auto w = env.begin_write();
    ASSERT_TRUE(w.ok());
    for (int i = 0; i < 4; ++i)
      ASSERT_TRUE(w->put(db::tasks, "fixed" + std::to_string(i), "f").ok());
    ASSERT_TRUE(w->commit().ok());
  }
  std::atomic<bool> stop{false};
  std::atomic<int> bad{0};
  std::atomic<long> reads{0};
  std::mutex m;
  std::condition_variable cv;
  auto reader = [&] {
    while (!stop.load()) {
      auto r = env.begin_read();
      if (!r.ok()) {
        ++bad;
        continue;
      }
      for (int i = 0; i < 4; ++i) {
        if (r.get(db::tasks, "fixed" + std::to_string(i)) != "f") ++bad;
      }
      if (auto c = r.get(db::meta, "count")) {
        const int count = std::stoi(*c);
        if (r.get(db::jobs, "w" + std::to_string(count - 1)) != big_value) ++bad;
        if (r.get(db::jobs, "w" + std::to_string(count)).has_value()) ++bad;
      }
      if (++reads == 100) cv.notify_all();
    }
  };
  std::vector<std::thread> readers;
  for (int i = 0; i < 3; ++i) readers.emplace_back(reader);
  {
    std::unique_lock lock(m);
    ASSERT_TRUE(cv.wait_for(lock, std::chrono::seconds(5), [&] { return reads.load() >= 100; }));
  }
  const int64_t before = env.map_bytes();
  int n = 0;
  for (int g = 0; g < 3; ++g) {
    n = fill_until_full(env, n);
    ASSERT_TRUE(env.grow().ok());
  }
  const long reads_at_end = reads.load();
  stop = true;
  for (auto& t : readers) t.join();
  EXPECT_EQ(bad.load(), 0);
  EXPECT_GT(reads_at_end, 100);
  EXPECT_EQ(env.map_bytes(), before * 8);
  auto r = env.begin_read();
  EXPECT_EQ(r.get(db::meta, "count"), std::to_string(n));
  EXPECT_EQ(r.get(db::jobs, "w" + std::to_string(n - 1)), big_value);
}

}  // namespace SY_UNITY_ID
}  // namespace sy::storage
