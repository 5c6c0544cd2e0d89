#include <cctype>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <string>

#include <gtest/gtest.h>

#include "storage/lmdb_env.hpp"
#include "tests/unit/storage/temp_dir.hpp"

namespace sy::storage {
namespace SY_UNITY_ID {

/// The resident bytes of this process's mappings of `file` (their `Rss` in /proc/self/smaps).
/// Whatever file system holds the store: a file on disk counts as RssFile in /proc/self/status,
/// one on a tmpfs as RssShmem, and the mapping's own Rss is both.
int64_t mapped_resident(const std::string& file) {
  std::ifstream in("/proc/self/smaps");
  std::string line;
  bool in_file = false;
  int64_t kb = 0;
  bool found = false;
  while (std::getline(in, line)) {
    // A mapping's header: "start-end perms offset dev inode   path"; its fields follow.
    if (!line.empty() && std::isxdigit(static_cast<unsigned char>(line[0])) &&
        line.find('-') < line.find(' ')) {
      in_file = line.size() >= file.size() &&
                line.compare(line.size() - file.size(), file.size(), file) == 0;
      found = found || in_file;
    } else if (in_file && line.rfind("Rss:", 0) == 0) {
      kb += std::stoll(line.substr(4));
    }
  }
  return found ? kb * 1024 : -1;
}

/// Reads every value of db::jobs in one snapshot; their bytes summed (so nothing is skipped).
/// `rss_at_end`: the store's resident bytes before the snapshot ends (its end may trim).
size_t read_all(const environment& env, const std::string& file, int64_t* rss_at_end = nullptr) {
  auto r = env.begin_read();
  size_t bytes = 0;
  r.scan(db::jobs, "", [&](std::string_view, std::string_view v) {
    bytes += v.size() + static_cast<unsigned char>(v[v.size() / 2]);
    return true;
  });
  if (rss_at_end != nullptr) *rss_at_end = mapped_resident(file);
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

  // environment::open keeps its store in <data_dir>/lmdb.
  const std::string file = std::filesystem::canonical(dir.path()).string() + "/lmdb/data.mdb";
  int64_t after_read = -1;
  const size_t expected = read_all(env, file, &after_read);
  // The precondition: the read really took the store's pages in, well past the budget (so that a
  // trim has something to drop, and the comparison below can only fail if it did not).
  ASSERT_GT(after_read, 2 * environment::trim_budget_bytes)
      << "reading the store left only " << after_read << " bytes of it resident (" << file << ")";
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  int64_t now = after_read;
  while (std::chrono::steady_clock::now() < deadline) {
    { auto r = env.begin_read(); }  // a transaction ending checks (at most every 50 ms)
    now = mapped_resident(file);
    if (now < after_read - environment::trim_budget_bytes) break;
  }
  EXPECT_LT(now, after_read - environment::trim_budget_bytes)
      << "mapped pages were not dropped: " << now << " bytes of the store resident after reading, "
      << after_read << " right after";
  EXPECT_EQ(read_all(env, file), expected);  // the data is untouched
}

}  // namespace SY_UNITY_ID
}  // namespace sy::storage
