#include <gtest/gtest.h>

#include <set>
#include <string>
#include <vector>

#include "runtime/jetstream.hpp"

namespace sy::runtime {
namespace SY_UNITY_ID {

TEST(SubjectToken, KeepsSafeCharactersAndEscapesTheRest) {
  EXPECT_EQ(subject_token("gpt-4o-mini"), "gpt-4o-mini");
  EXPECT_EQ(subject_token("meta-llama/Llama-3.1"), "meta-llama_2FLlama-3_2E1");
  EXPECT_EQ(subject_token("a_b"), "a_5Fb");
  EXPECT_EQ(subject_token("x y*>"), "x_20y_2A_3E");
  EXPECT_EQ(subject_token("\xff"), "_FF");
}

TEST(SubjectToken, TokenIsOneSubjectTokenAndAValidConsumerName) {
  for (std::string model : {"a.b", "a b", "*", ">", "tab\there", "dots...", "ü"}) {
    std::string token = subject_token(model);
    EXPECT_EQ(token.find_first_of(". *>\t"), std::string::npos) << model;
    EXPECT_FALSE(token.empty());
  }
}

TEST(SubjectToken, RoundTrips) {
  std::vector<std::string> models = {
      "gpt-4o", "a.b", "a_b", "a_2Eb", "", "ü/é", "__", "_5F", std::string("nul\0byte", 8)};
  for (const auto& m : models) {
    auto back = model_from_token(subject_token(m));
    ASSERT_TRUE(back.has_value()) << m;
    EXPECT_EQ(*back, m);
  }
}

TEST(SubjectToken, DistinctModelsNeverCollide) {
  // Pairs that a lossy mapping (e.g. keeping '_' or replacing '.' by '_') would merge.
  std::vector<std::string> models = {"a.b", "a_b",  "a_2Eb", "a-b", "a/b",
                                     "a b", "a__b", "a_5Fb", "A.B", "ab"};
  std::set<std::string> tokens;
  for (const auto& m : models) tokens.insert(subject_token(m));
  EXPECT_EQ(tokens.size(), models.size());
}

TEST(SubjectToken, RejectsInvalidEncodings) {
  EXPECT_FALSE(model_from_token("a.b").has_value());
  EXPECT_FALSE(model_from_token("a_").has_value());
  EXPECT_FALSE(model_from_token("a_2").has_value());
  EXPECT_FALSE(model_from_token("a_2e").has_value());  // lowercase hex is never produced
  EXPECT_FALSE(model_from_token("_61").has_value());   // 'a' is kept, never escaped
}

}  // namespace SY_UNITY_ID
}  // namespace sy::runtime
