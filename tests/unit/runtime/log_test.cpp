#include "runtime/log.hpp"
#include "runtime/log_throttle.hpp"

#include <gtest/gtest.h>

namespace sy::log {
namespace SY_UNITY_ID {

/// The level is process-wide: put it back for the other tests of this binary.
struct level_guard {
  ~level_guard() { set_level("info"); }
};

TEST(Log, LazyDebugFieldsAreBuiltOnlyWhenDebugIsOn) {
  level_guard restore;
  int built = 0;
  auto fields = [&] {
    ++built;
    return nlohmann::json{{"n", built}};
  };
  set_level("info");
  debug("test", "dropped", fields);
  EXPECT_EQ(built, 0);
  EXPECT_FALSE(enabled(level::debug));
  set_level("debug");
  testing::internal::CaptureStderr();
  debug("test", "written", fields);
  const std::string line = testing::internal::GetCapturedStderr();
  EXPECT_EQ(built, 1);
  EXPECT_NE(line.find(R"("msg":"written")"), std::string::npos) << line;
  EXPECT_NE(line.find(R"("n":1)"), std::string::npos) << line;
}

TEST(LogThrottle, OneLinePerIntervalCountingWhatItSuppressed) {
  throttle t(1000);
  EXPECT_EQ(t.occur(0), 1u);  // the first occurrence is logged at once
  EXPECT_EQ(t.occur(10), 0u);
  EXPECT_EQ(t.occur(999), 0u);
  EXPECT_EQ(t.occur(1000), 3u);  // one line for the three since the last
  EXPECT_EQ(t.occur(1500), 0u);
  EXPECT_EQ(t.occur(5000), 2u);
  EXPECT_EQ(t.occur(5001), 0u);
}

}  // namespace SY_UNITY_ID
}  // namespace sy::log
