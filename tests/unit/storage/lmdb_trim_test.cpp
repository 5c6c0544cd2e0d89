#include <chrono>
#include <fstream>
#include <string>

#include <gtest/gtest.h>

#include "storage/lmdb_env.hpp"
#include "tests/unit/storage/temp_dir.hpp"

namespace sy::storage {
namespace SY_UNITY_ID {

/// This process's file-backed resident bytes (RssFile in /proc/self/status).
int64_t rss_file() {
  std::ifstream in("/proc/self/status");
  std::string key;
  int64_t kb = -1;
  while (in >> key) {
    if (key == "RssFile:") {
      in >> kb;
      return kb * 1024;
    }
    in.ignore(1 << 12, '\n');
  }
  return -1;
}

/// Reads every value of db::jobs in one snapshot; their bytes summed (so nothing is skipped).
/// `rss_at_end`: RssFile before the snapshot ends (its end may trim).
size_t read_all(const environment& env, int64_t* rss_at_end = nullptr) {
  auto r = env.begin_read();
  size_t bytes = 0;
  r.scan(db::jobs, "", [&](std::string_view, std::string_view v) {
    bytes += v.size() + static_cast<unsigned char>(v[v.size() / 2]);
    return true;
  });
  if (rss_at_end != nullptr) *rss_at_end = rss_file();
  return bytes;
}

// A store larger than the budget, read end to end, does not stay mapped into the process: the
// next transactions to end drop its pages, and the data reads back the same afterwards. The map
// starts small so that it is grown (and moved) on the way: the trim follows it.
TEST(LmdbTrim, PagesReadFromABigStoreLeaveTheProcessOnceOverTheBudget) {
  testing::temp_dir dir;
  auto opened = environment::open(dir.path(), 1 << 20);
  ASSERT_TRUE(opened.ok()) << opened.error().message;
  auto& env = **opened;
  const std::string value(8000, 'v');
  constexpr int n = 12'000;  // ~96 MB: three times the budget
  for (int i = 0; i < n;) {
    auto w = env.begin_write();
    ASSERT_TRUE(w.ok());
    int j = 0;
    // A put that does not fit poisons the transaction; its commit then reports map_full.
    for (; j < 500 && i + j < n; ++j) {
      if (!w->put(db::jobs, std::to_string(i + j), value)) break;
    }
    if (auto st = w->commit(); !st) {
      ASSERT_EQ(st.error().code, "map_full") << st.error().message;
      ASSERT_TRUE(env.grow());
      continue;
    }
    i += j;
  }
  ASSERT_GT(env.map_bytes(), int64_t{1} << 20);  // grown: the map was moved at least once

  int64_t after_read = -1;
  const size_t expected = read_all(env, &after_read);
  ASSERT_GT(after_read, 0);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  int64_t now = after_read;
  while (std::chrono::steady_clock::now() < deadline) {
    { auto r = env.begin_read(); }  // a transaction ending checks (at most every 50 ms)
    now = rss_file();
    if (now < after_read - environment::trim_budget_bytes) break;
  }
  EXPECT_LT(now, after_read - environment::trim_budget_bytes)
      << "mapped pages were not dropped: RssFile " << now << " bytes after reading, " << after_read
      << " right after";
  EXPECT_EQ(read_all(env), expected);  // the data is untouched
}

}  // namespace SY_UNITY_ID
}  // namespace sy::storage
