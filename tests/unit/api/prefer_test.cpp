#include "api/detail/prefer.hpp"

#include <gtest/gtest.h>

namespace sy::api::detail {
namespace SY_UNITY_ID {

std::optional<int64_t> wait_of(std::string_view header) { return prefer_wait_seconds({header}); }

TEST(prefer_wait, plain_value) {
  EXPECT_EQ(wait_of("wait=10"), 10);
  EXPECT_EQ(wait_of("wait=0"), 0);
  EXPECT_EQ(wait_of(" wait = 7 "), 7);
}

TEST(prefer_wait, among_other_preferences) {
  EXPECT_EQ(wait_of("respond-async, wait=10"), 10);
  EXPECT_EQ(wait_of("return=minimal,wait=3,handling=lenient"), 3);
  EXPECT_EQ(wait_of("respond-async"), std::nullopt);
  EXPECT_EQ(wait_of(""), std::nullopt);
}

TEST(prefer_wait, name_is_case_insensitive_and_value_may_be_quoted) {
  EXPECT_EQ(wait_of("WAIT=5"), 5);
  EXPECT_EQ(wait_of("Wait=\"12\""), 12);
}

TEST(prefer_wait, parameters_are_skipped) {
  EXPECT_EQ(wait_of("wait=4; foo=bar"), 4);
  EXPECT_EQ(wait_of("foo=\"a,wait=9\", wait=2"), 2);  // a comma inside quotes separates nothing
}

TEST(prefer_wait, bad_values_are_ignored) {
  EXPECT_EQ(wait_of("wait=abc"), std::nullopt);
  EXPECT_EQ(wait_of("wait=-1"), std::nullopt);
  EXPECT_EQ(wait_of("wait=1.5"), std::nullopt);
  EXPECT_EQ(wait_of("wait="), std::nullopt);
  EXPECT_EQ(wait_of("wait"), std::nullopt);
  EXPECT_EQ(wait_of("wait=9999999999999999999999"), std::nullopt);  // would overflow
  EXPECT_EQ(wait_of("waiting=5"), std::nullopt);
}

TEST(prefer_wait, first_occurrence_wins_across_headers) {
  EXPECT_EQ(wait_of("wait=1, wait=20"), 1);
  EXPECT_EQ(prefer_wait_seconds({"respond-async", "wait=6"}), 6);
  EXPECT_EQ(prefer_wait_seconds({"wait=2", "wait=6"}), 2);
  EXPECT_EQ(prefer_wait_seconds({}), std::nullopt);
}

}  // namespace SY_UNITY_ID
}  // namespace sy::api::detail
