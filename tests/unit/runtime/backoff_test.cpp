#include "runtime/backoff.hpp"

#include <gtest/gtest.h>

namespace sy::runtime {
namespace SY_UNITY_ID {

TEST(Backoff, NoJitterIsHalfTheExponentialBase) {
  EXPECT_EQ(backoff_delay_ms(0, 200, 10'000, 0.0), 100);
  EXPECT_EQ(backoff_delay_ms(1, 200, 10'000, 0.0), 200);
  EXPECT_EQ(backoff_delay_ms(2, 200, 10'000, 0.0), 400);
}

TEST(Backoff, FullJitterIsTheExponentialBase) {
  EXPECT_EQ(backoff_delay_ms(0, 200, 10'000, 1.0), 200);
  EXPECT_EQ(backoff_delay_ms(3, 200, 10'000, 1.0), 1'600);
}

TEST(Backoff, GrowsUntilTheCapAndStaysThere) {
  EXPECT_EQ(backoff_delay_ms(5, 200, 10'000, 1.0), 6'400);
  EXPECT_EQ(backoff_delay_ms(6, 200, 10'000, 1.0), 10'000);
  EXPECT_EQ(backoff_delay_ms(60, 200, 10'000, 1.0), 10'000);
  EXPECT_EQ(backoff_delay_ms(1'000'000, 200, 10'000, 0.0), 5'000);
}

TEST(Backoff, StaysWithinEqualJitterBoundsForEveryRetry) {
  for (int retry = 0; retry < 70; ++retry) {
    for (double j : {0.0, 0.1, 0.5, 0.99, 1.0}) {
      const int64_t d = backoff_delay_ms(retry, 150, 7'000, j);
      int64_t base = 150;
      for (int i = 0; i < retry && base < 7'000; ++i) base = std::min<int64_t>(base * 2, 7'000);
      EXPECT_GE(d, (base + 1) / 2) << retry << " " << j;
      EXPECT_LE(d, base) << retry << " " << j;
    }
  }
}

TEST(Backoff, JitterIsMonotonicAndClamped) {
  EXPECT_LT(backoff_delay_ms(2, 200, 10'000, 0.25), backoff_delay_ms(2, 200, 10'000, 0.75));
  EXPECT_EQ(backoff_delay_ms(2, 200, 10'000, -3.0), backoff_delay_ms(2, 200, 10'000, 0.0));
  EXPECT_EQ(backoff_delay_ms(2, 200, 10'000, 7.0), backoff_delay_ms(2, 200, 10'000, 1.0));
}

TEST(Backoff, DegenerateInputs) {
  EXPECT_EQ(backoff_delay_ms(3, 0, 10'000, 0.5), 0);
  EXPECT_EQ(backoff_delay_ms(3, -5, 10'000, 0.5), 0);
  // A cap below the initial delay is raised to it rather than producing a shrinking delay.
  EXPECT_EQ(backoff_delay_ms(3, 500, 100, 1.0), 500);
  // Huge values do not overflow.
  const int64_t big = int64_t{1} << 62;
  EXPECT_EQ(backoff_delay_ms(200, big, INT64_MAX, 1.0), INT64_MAX);
}

TEST(RetryableStatus, RetriesThrottlingTimeoutsAndServerErrors) {
  for (int s : {408, 429, 500, 502, 503, 504, 599}) EXPECT_TRUE(retryable_status(s)) << s;
  for (int s : {200, 201, 204, 301, 400, 401, 403, 404, 409, 413, 422, 600, 0}) {
    EXPECT_FALSE(retryable_status(s)) << s;
  }
}

}  // namespace SY_UNITY_ID
}  // namespace sy::runtime
