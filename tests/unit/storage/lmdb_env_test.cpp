#include "storage/lmdb_env.hpp"

#include <filesystem>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "tests/unit/storage/temp_dir.hpp"

namespace sy::storage {
namespace SY_UNITY_ID {

constexpr int64_t one_mib = int64_t{1} << 20;

std::unique_ptr<environment> open_env(const std::string& dir, int64_t map = one_mib) {
  auto env = environment::open(dir, map);
  EXPECT_TRUE(env.ok()) << (env.ok() ? "" : env.error().message);
  return env.ok() ? std::move(env.value()) : nullptr;
}

void put_all(environment& env, db d, const std::vector<std::string>& keys) {
  auto w = env.begin_write();
  ASSERT_TRUE(w.ok());
  for (const auto& k : keys) ASSERT_TRUE(w->put(d, k, "v" + k).ok());
  ASSERT_TRUE(w->commit().ok());
}

/// Creates a store at `dir` whose meta/schema_version is `version` (as another build left it).
void store_with_schema(const std::string& dir, const std::string& version) {
  auto env = open_env(dir);
  ASSERT_TRUE(env);
  auto w = env->begin_write();
  ASSERT_TRUE(w.ok());
  ASSERT_TRUE(w->put(db::meta, "schema_version", version).ok());
  ASSERT_TRUE(w->put(db::jobs, "job_1", "kept").ok());
  ASSERT_TRUE(w->commit().ok());
}

std::vector<std::string> keys_of(const txn_view& t, db d, std::string_view from, bool reverse,
                                 size_t max = 100) {
  std::vector<std::string> out;
  auto fn = [&](std::string_view k, std::string_view) {
    out.emplace_back(k);
    return out.size() < max;
  };
  if (reverse) {
    t.scan_reverse(d, from, fn);
  } else {
    t.scan(d, from, fn);
  }
  return out;
}

using keys = std::vector<std::string>;

TEST(LmdbEnv, OpenCreatesSubdirectoryAndSchemaRecord) {
  testing::temp_dir dir;
  auto env = open_env(dir.path());
  ASSERT_TRUE(env);
  EXPECT_TRUE(std::filesystem::exists(std::filesystem::path(dir.path()) / "lmdb" / "data.mdb"));
  EXPECT_EQ(env->begin_read().get(db::meta, "schema_version"), std::to_string(schema_version));
  EXPECT_GE(env->map_bytes(), one_mib);
}

TEST(LmdbEnv, OlderSchemaIsMigratedSoThatOlderBuildsRefuseTheStore) {
  for (int older = 1; older < schema_version; ++older) {
    testing::temp_dir dir;
    store_with_schema(dir.path(), std::to_string(older));
    auto env = open_env(dir.path());
    ASSERT_TRUE(env) << "from schema " << older;
    EXPECT_EQ(env->begin_read().get(db::meta, "schema_version"), std::to_string(schema_version));
    EXPECT_EQ(env->begin_read().get(db::jobs, "job_1"), "kept");
  }
}

TEST(LmdbEnv, ReopenKeepsCommittedData) {
  testing::temp_dir dir;
  {
    auto env = open_env(dir.path());
    ASSERT_TRUE(env);
    put_all(*env, db::jobs, {"a", "b"});
    put_all(*env, db::tasks, {"a"});
  }
  auto env = open_env(dir.path());
  ASSERT_TRUE(env);
  auto r = env->begin_read();
  EXPECT_EQ(r.get(db::jobs, "a"), "va");
  EXPECT_EQ(r.get(db::jobs, "b"), "vb");
  EXPECT_EQ(r.get(db::tasks, "a"), "va");
  EXPECT_FALSE(r.get(db::tasks, "b").has_value());  // databases are separate
  EXPECT_FALSE(r.get(db::leases, "a").has_value());
}

TEST(LmdbEnv, NewerSchemaIsRefusedNamingBothVersions) {
  testing::temp_dir dir;
  store_with_schema(dir.path(), "7");
  auto env = environment::open(dir.path(), one_mib);
  ASSERT_FALSE(env.ok());
  EXPECT_EQ(env.error().code, "schema_too_new");
  EXPECT_NE(env.error().message.find("version 7"), std::string::npos) << env.error().message;
  EXPECT_NE(env.error().message.find("version " + std::to_string(schema_version)),
            std::string::npos)
      << env.error().message;
}

TEST(LmdbEnv, UnreadableSchemaIsRefused) {
  testing::temp_dir dir;
  store_with_schema(dir.path(), "one");
  auto env = environment::open(dir.path(), one_mib);
  ASSERT_FALSE(env.ok());
  EXPECT_EQ(env.error().code, "schema_invalid");
}

TEST(LmdbEnv, UnusableDirectoryIsAnError) {
  testing::temp_dir dir;
  const std::string file = dir.path() + "/plain-file";
  {
    std::FILE* f = std::fopen(file.c_str(), "w");
    ASSERT_NE(f, nullptr);
    std::fclose(f);
  }
  auto env = environment::open(file, one_mib);
  ASSERT_FALSE(env.ok());
  EXPECT_EQ(env.error().code, "storage_error");
  EXPECT_NE(env.error().message.find(file), std::string::npos) << env.error().message;
}

TEST(LmdbEnv, WriteTxnSeesItsOwnWritesAndReadersDoNotUntilCommit) {
  testing::temp_dir dir;
  auto env = open_env(dir.path());
  ASSERT_TRUE(env);
  put_all(*env, db::jobs, {"a"});
  auto w = env->begin_write();
  ASSERT_TRUE(w.ok());
  ASSERT_TRUE(w->put(db::jobs, "b", "new").ok());
  ASSERT_TRUE(w->put(db::jobs, "a", "changed").ok());
  EXPECT_EQ(w->get(db::jobs, "b"), "new");
  EXPECT_EQ(w->get(db::jobs, "a"), "changed");
  EXPECT_EQ(keys_of(*w, db::jobs, "", false), (keys{"a", "b"}));
  EXPECT_TRUE(w->del(db::jobs, "a"));
  EXPECT_FALSE(w->get(db::jobs, "a").has_value());
  EXPECT_FALSE(w->del(db::jobs, "a"));  // already gone
  {
    auto r = env->begin_read();  // a snapshot from before the write
    EXPECT_EQ(r.get(db::jobs, "a"), "va");
    EXPECT_FALSE(r.get(db::jobs, "b").has_value());
  }
  ASSERT_TRUE(w->commit().ok());
  auto r = env->begin_read();
  EXPECT_FALSE(r.get(db::jobs, "a").has_value());
  EXPECT_EQ(r.get(db::jobs, "b"), "new");
}

TEST(LmdbEnv, AbortedOrDroppedTxnLeavesNothing) {
  testing::temp_dir dir;
  auto env = open_env(dir.path());
  ASSERT_TRUE(env);
  {
    auto w = env->begin_write();
    ASSERT_TRUE(w.ok());
    ASSERT_TRUE(w->put(db::jobs, "x", "1").ok());
    w->abort();
    EXPECT_FALSE(w->commit().ok());  // nothing left to commit
  }
  {
    auto w = env->begin_write();
    ASSERT_TRUE(w.ok());
    ASSERT_TRUE(w->put(db::jobs, "y", "1").ok());
  }  // destroyed without commit
  auto r = env->begin_read();
  EXPECT_FALSE(r.get(db::jobs, "x").has_value());
  EXPECT_FALSE(r.get(db::jobs, "y").has_value());
  EXPECT_TRUE(keys_of(r, db::jobs, "", false).empty());
}

TEST(LmdbEnv, EmptyKeyIsRejectedAndPoisonsTheTxn) {
  testing::temp_dir dir;
  auto env = open_env(dir.path());
  ASSERT_TRUE(env);
  auto w = env->begin_write();
  ASSERT_TRUE(w.ok());
  ASSERT_TRUE(w->put(db::jobs, "ok", "1").ok());
  auto st = w->put(db::jobs, "", "1");
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.error().code, "value_rejected");  // this write's own fault, not the store's
  EXPECT_NE(st.error().message.find("'jobs'"), std::string::npos) << st.error().message;
  EXPECT_FALSE(w->ok());
  EXPECT_FALSE(w->commit().ok());
  EXPECT_FALSE(env->begin_read().get(db::jobs, "ok").has_value());
}

TEST(LmdbEnv, AKeyOverLmdbsLimitIsRejectedAsThisWritesOwnFault) {
  testing::temp_dir dir;
  auto env = open_env(dir.path());
  ASSERT_TRUE(env);
  auto w = env->begin_write();
  ASSERT_TRUE(w.ok());
  EXPECT_TRUE(w->put(db::meta, std::string(511, 'k'), "v").ok());
  auto st = w->put(db::meta, std::string(512, 'k'), "v");
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.error().code, "value_rejected");
  // Reading with such a key is not an error: there is no such record.
  EXPECT_FALSE(env->begin_read().get(db::meta, std::string(4096, 'k')).has_value());
}

TEST(LmdbEnv, ANestedTransactionFailsAloneAndCommitsIntoItsParent) {
  testing::temp_dir dir;
  auto env = open_env(dir.path());
  ASSERT_TRUE(env);
  auto w = env->begin_write();
  ASSERT_TRUE(w.ok());
  ASSERT_TRUE(w->put(db::jobs, "parent", "1").ok());
  {
    auto bad = w->begin_nested();
    ASSERT_TRUE(bad.ok()) << bad.error().message;
    EXPECT_TRUE(bad->get(db::jobs, "parent").has_value());  // sees the parent's writes
    ASSERT_TRUE(bad->put(db::jobs, "half-done", "1").ok());
    EXPECT_FALSE(bad->put(db::jobs, "", "1").ok());  // poisons the child only
    EXPECT_FALSE(bad->commit().ok());
  }
  {
    auto good = w->begin_nested();
    ASSERT_TRUE(good.ok());
    ASSERT_TRUE(good->put(db::jobs, "child", "2").ok());
    ASSERT_TRUE(good->commit().ok());
  }
  {
    auto dropped = w->begin_nested();
    ASSERT_TRUE(dropped.ok());
    ASSERT_TRUE(dropped->put(db::jobs, "dropped", "3").ok());
    dropped->abort();
  }
  EXPECT_TRUE(w->ok());
  ASSERT_TRUE(w->commit().ok());
  auto r = env->begin_read();
  EXPECT_TRUE(r.get(db::jobs, "parent").has_value());
  EXPECT_TRUE(r.get(db::jobs, "child").has_value());
  EXPECT_FALSE(r.get(db::jobs, "half-done").has_value());
  EXPECT_FALSE(r.get(db::jobs, "dropped").has_value());
}

TEST(LmdbEnv, ScanBoundaries) {
  testing::temp_dir dir;
  auto env = open_env(dir.path());
  ASSERT_TRUE(env);
  auto r0 = env->begin_read();
  EXPECT_TRUE(keys_of(r0, db::jobs, "", false).empty());
  EXPECT_TRUE(keys_of(r0, db::jobs, "", true).empty());
  EXPECT_TRUE(keys_of(r0, db::jobs, "m", true).empty());
  r0 = env->begin_read();  // move-assign releases the old snapshot
  put_all(*env, db::jobs, {"b", "d", "f"});
  auto r = env->begin_read();
  EXPECT_EQ(keys_of(r, db::jobs, "", false), (keys{"b", "d", "f"}));
  EXPECT_EQ(keys_of(r, db::jobs, "a", false), (keys{"b", "d", "f"}));
  EXPECT_EQ(keys_of(r, db::jobs, "c", false), (keys{"d", "f"}));
  EXPECT_EQ(keys_of(r, db::jobs, "d", false), (keys{"d", "f"}));
  EXPECT_EQ(keys_of(r, db::jobs, "f", false), (keys{"f"}));
  EXPECT_TRUE(keys_of(r, db::jobs, "g", false).empty());
  EXPECT_EQ(keys_of(r, db::jobs, "", false, 2), (keys{"b", "d"}));  // stops when fn says so
  EXPECT_EQ(keys_of(r, db::jobs, "", true), (keys{"f", "d", "b"}));
  EXPECT_EQ(keys_of(r, db::jobs, "z", true), (keys{"f", "d", "b"}));
  EXPECT_EQ(keys_of(r, db::jobs, "f", true), (keys{"f", "d", "b"}));
  EXPECT_EQ(keys_of(r, db::jobs, "e", true), (keys{"d", "b"}));
  EXPECT_EQ(keys_of(r, db::jobs, "d", true), (keys{"d", "b"}));
  EXPECT_EQ(keys_of(r, db::jobs, "b", true), (keys{"b"}));
  EXPECT_TRUE(keys_of(r, db::jobs, "a", true).empty());
  EXPECT_EQ(keys_of(r, db::jobs, "", true, 1), (keys{"f"}));
  std::string value;
  r.scan(db::jobs, "d", [&](std::string_view, std::string_view v) {
    value = v;
    return false;
  });
  EXPECT_EQ(value, "vd");
}

TEST(LmdbEnv, ReadTxnCanBeUsedAndEndedOnAnotherThread) {
  testing::temp_dir dir;
  auto env = open_env(dir.path());
  ASSERT_TRUE(env);
  put_all(*env, db::leases, {"t1"});
  auto r = env->begin_read();
  ASSERT_TRUE(r.ok());
  std::optional<std::string> seen;
  std::thread other([&, txn = std::move(r)] { seen = txn.get(db::leases, "t1"); });
  other.join();
  EXPECT_EQ(seen, "vt1");
  put_all(*env, db::leases, {"t2"});  // the writer is not blocked by the ended snapshot
  EXPECT_EQ(env->begin_read().get(db::leases, "t2"), "vt2");
}

}  // namespace SY_UNITY_ID
}  // namespace sy::storage
