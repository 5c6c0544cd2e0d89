#include "runtime/log.hpp"

#include <gtest/gtest.h>

namespace sy::log {
namespace {

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

}  // namespace
}  // namespace sy::log
