#include "runtime/ulid.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <mutex>
#include <set>
#include <thread>
#include <vector>

namespace sy::runtime {
namespace SY_UNITY_ID {

constexpr std::string_view kAlphabet = "0123456789ABCDEFGHJKMNPQRSTVWXYZ";

TEST(Ulid, EncodesTheSpecExample) {
  // Time 1469918176385 is "01ARYZ6S41" in the spec; all-zero and all-one random parts.
  EXPECT_EQ(make_ulid(1469918176385, ulid_random{}), "01ARYZ6S410000000000000000");
  ulid_random ones;
  ones.fill(0xFF);
  EXPECT_EQ(make_ulid(1469918176385, ones), "01ARYZ6S41ZZZZZZZZZZZZZZZZ");
}

TEST(Ulid, HasTheRightFormatAndDecodesItsTime) {
  ulid_generator gen(42);
  const std::string id = gen.next(1'700'000'000'123);
  ASSERT_EQ(id.size(), 26u);
  for (char c : id) EXPECT_NE(kAlphabet.find(c), std::string_view::npos) << c;
  EXPECT_LE(id[0], '7');
  EXPECT_EQ(ulid_timestamp_ms(id), 1'700'000'000'123);
}

TEST(Ulid, RejectsMalformedIds) {
  EXPECT_FALSE(ulid_timestamp_ms("01ARYZ6S41"));
  EXPECT_FALSE(ulid_timestamp_ms("01ARYZ6S41000000000000000U"));  // U is not Crockford
  EXPECT_FALSE(ulid_timestamp_ms("81ARYZ6S410000000000000000"));  // more than 48 bits
  EXPECT_EQ(ulid_timestamp_ms("01aryz6s410000000000000000"), 1469918176385);
}

TEST(Ulid, ClampsTimeToFortyEightBits) {
  EXPECT_EQ(ulid_timestamp_ms(make_ulid(-5, {})), 0);
  EXPECT_EQ(make_ulid(INT64_MAX, {}).substr(0, 10), "7ZZZZZZZZZ");
}

TEST(Ulid, MonotonicWithinOneMillisecond) {
  ulid_generator gen(7);
  std::string prev = gen.next(1'000);
  for (int i = 0; i < 10'000; ++i) {
    const std::string next = gen.next(1'000);
    ASSERT_LT(prev, next);
    ASSERT_EQ(ulid_timestamp_ms(next), 1'000);
    prev = next;
  }
}

TEST(Ulid, SortsByTimeAndNeverGoesBackwardsWhenTheClockDoes) {
  ulid_generator gen(9);
  const std::string a = gen.next(1'000);
  const std::string b = gen.next(2'000);
  const std::string c = gen.next(1'500);  // clock stepped back
  EXPECT_LT(a, b);
  EXPECT_LT(b, c);
  EXPECT_EQ(ulid_timestamp_ms(c), 2'000);
  EXPECT_LT(make_ulid(999, ulid_random{{0xFF}}), make_ulid(1'000, ulid_random{}));
}

TEST(Ulid, UniqueAndOrderedAcrossThreads) {
  ulid_generator gen;
  std::mutex mu;
  std::vector<std::string> all;
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&] {
      std::vector<std::string> mine;
      for (int i = 0; i < 2'000; ++i) mine.push_back(gen.next(5'000 + i / 100));
      // Each thread sees its own ids strictly increasing.
      EXPECT_TRUE(std::is_sorted(mine.begin(), mine.end()));
      std::lock_guard lock(mu);
      all.insert(all.end(), mine.begin(), mine.end());
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(std::set<std::string>(all.begin(), all.end()).size(), all.size());
}

TEST(Ulid, DifferentSeedsGiveDifferentRandomness) {
  ulid_generator a(1), b(2);
  EXPECT_NE(a.next(1'000), b.next(1'000));
}

}  // namespace SY_UNITY_ID
}  // namespace sy::runtime
