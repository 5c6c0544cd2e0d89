#include "api/detail/sse.hpp"

#include <gtest/gtest.h>

namespace sy::api::detail {
namespace SY_UNITY_ID {

TEST(sse_event, frames_one_event) {
  EXPECT_EQ(sse_event(3, "completed", R"({"a":1})"),
            "id: 3\nevent: completed\ndata: {\"a\":1}\n\n");
}

TEST(sse_event, splits_line_breaks_into_data_lines) {
  EXPECT_EQ(sse_event(1, "queued", "a\nb\r\nc"),
            "id: 1\nevent: queued\ndata: a\ndata: b\ndata: c\n\n");
}

TEST(last_event_id, absent_or_empty_is_zero) {
  EXPECT_EQ(parse_last_event_id(""), 0u);
  EXPECT_EQ(parse_last_event_id("  "), 0u);
  EXPECT_EQ(parse_last_event_id("17"), 17u);
  EXPECT_EQ(parse_last_event_id(" 4 "), 4u);
  EXPECT_EQ(parse_last_event_id("18446744073709551615"), 18446744073709551615ull);
}

TEST(last_event_id, rejects_non_numbers_and_overflow) {
  EXPECT_EQ(parse_last_event_id("abc"), std::nullopt);
  EXPECT_EQ(parse_last_event_id("-1"), std::nullopt);
  EXPECT_EQ(parse_last_event_id("18446744073709551616"), std::nullopt);
}

}  // namespace SY_UNITY_ID
}  // namespace sy::api::detail
