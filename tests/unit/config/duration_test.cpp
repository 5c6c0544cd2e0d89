#include "config/duration.hpp"

#include <gtest/gtest.h>

namespace sy::config {
namespace SY_UNITY_ID {

int64_t ms(std::string_view text) {
  auto parsed = parse_duration_ms(text);
  EXPECT_TRUE(parsed.ok()) << text << ": " << (parsed.ok() ? "" : parsed.error().message);
  return parsed.ok() ? *parsed : -1;
}

TEST(Duration, IntegersAreMilliseconds) {
  EXPECT_EQ(ms("0"), 0);
  EXPECT_EQ(ms("1500"), 1500);
  EXPECT_EQ(ms(" 42 "), 42);
}

TEST(Duration, Units) {
  EXPECT_EQ(ms("200ms"), 200);
  EXPECT_EQ(ms("30s"), 30'000);
  EXPECT_EQ(ms("2m"), 120'000);
  EXPECT_EQ(ms("1h"), 3'600'000);
  EXPECT_EQ(ms("1m30s"), 90'000);
  EXPECT_EQ(ms("1h2m3s4ms"), 3'723'004);
}

TEST(Duration, RejectsGarbage) {
  for (const char* bad : {"", "s", "10x", "-5", "-5s", "1.5s", "10 s", "abc", "5sm", "s5",
                          "99999999999999999999", "9999999999999999h"}) {
    auto parsed = parse_duration_ms(bad);
    EXPECT_FALSE(parsed.ok()) << bad;
    if (!parsed.ok()) {
      EXPECT_EQ(parsed.error().code, "invalid_config");
      EXPECT_NE(parsed.error().message.find("expected a duration"), std::string::npos);
    }
  }
}

TEST(Duration, FormatRoundTrips) {
  EXPECT_EQ(format_duration_ms(30'000), "30s");
  EXPECT_EQ(format_duration_ms(120'000), "2m");
  EXPECT_EQ(format_duration_ms(3'600'000), "1h");
  EXPECT_EQ(format_duration_ms(1'500), "1500ms");
  EXPECT_EQ(format_duration_ms(0), "0ms");
  for (int64_t value : {0, 1, 999, 1'000, 61'000, 7'200'000}) {
    EXPECT_EQ(ms(format_duration_ms(value)), value);
  }
}

}  // namespace SY_UNITY_ID
}  // namespace sy::config
