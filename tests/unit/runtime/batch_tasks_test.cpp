// Reading a batch's lines as tasks: a request id gives back its input offset (and only a request
// id of that batch does), a result line names its request by that id, and a file streams line by
// line with each line's offset, CRLF and a last line without a newline included.

#include "runtime/batch_tasks.hpp"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <random>
#include <vector>

#include "runtime/batch_render.hpp"

namespace sy::runtime::batch {
namespace SY_UNITY_ID {

namespace fs = std::filesystem;

TEST(unmix64, undoes_mix64) {
  std::mt19937_64 rng(7);
  for (int i = 0; i < 10'000; ++i) {
    const uint64_t x = rng();
    EXPECT_EQ(unmix64(mix64(x)), x);
  }
  EXPECT_EQ(unmix64(0), 0u);
}

TEST(request_offset, gives_back_the_offset_of_a_request_id_of_the_batch) {
  const auto seed = request_id_seed("batch_01");
  for (uint64_t offset : {uint64_t{0}, uint64_t{1}, uint64_t{4096}, uint64_t{209'715'199}}) {
    EXPECT_EQ(request_offset(seed, request_id_for(seed, offset)), offset);
  }
  const auto other = request_id_seed("batch_02");
  EXPECT_FALSE(request_offset(seed, request_id_for(other, 10))) << "another batch's id";
  EXPECT_FALSE(request_offset(seed, "c1"));
  EXPECT_FALSE(request_offset(seed, "batch_req_" + std::string(32, 'g')));
  auto id = request_id_for(seed, 10);
  id.back() = id.back() == '0' ? '1' : '0';
  EXPECT_FALSE(request_offset(seed, id)) << "its second half disagrees";
}

TEST(result_line_offset, reads_the_id_of_response_and_error_lines) {
  const auto seed = request_id_seed("batch_01");
  const std::string id = request_id_for(seed, 77);
  EXPECT_EQ(result_line_offset(seed, R"({"id":")" + id +
                                         R"(","custom_id":"a","response":{"status_code":200,)"
                                         R"("body":{"id":"x"}},"error":null})"),
            77u);
  EXPECT_EQ(
      result_line_offset(seed, error_line(id, "a\",\"id\":\"batch_req_", "batch_expired", "late")),
      77u)
      << "an id in a custom_id is escaped";
  EXPECT_FALSE(result_line_offset(seed, R"({"custom_id":"a"})"));
}

TEST(for_each_line, streams_lines_with_their_offsets) {
  const auto path = fs::temp_directory_path() / "sy_batch_tasks_test.jsonl";
  {
    std::ofstream f(path, std::ios::binary);
    f << "one\n\r\ntwo\r\n" << std::string(3 << 20, 'x') << "\nlast";
  }
  std::vector<std::pair<uint64_t, std::string>> seen;
  auto st = for_each_line(path.string(), 0, [&](uint64_t offset, std::string_view text) {
    seen.emplace_back(offset, text.size() > 10 ? "long" : std::string(text));
    return true;
  });
  ASSERT_TRUE(st) << st.error().message;
  const std::vector<std::pair<uint64_t, std::string>> want{
      {0, "one"}, {4, ""}, {6, "two"}, {11, "long"}, {11 + (3 << 20) + 1, "last"}};
  EXPECT_EQ(seen, want);
  EXPECT_TRUE(is_blank_line(""));
  EXPECT_TRUE(is_blank_line(" \t\r"));
  EXPECT_FALSE(is_blank_line(" {"));
  seen.clear();
  st = for_each_line(path.string(), 6, [&](uint64_t offset, std::string_view text) {
    seen.emplace_back(offset, std::string(text));
    return false;
  });
  ASSERT_TRUE(st);
  EXPECT_EQ(seen, (std::vector<std::pair<uint64_t, std::string>>{{6, "two"}}));
  fs::remove(path);
  EXPECT_FALSE(for_each_line(path.string(), 0, [](uint64_t, std::string_view) { return true; }));
}

}  // namespace SY_UNITY_ID
}  // namespace sy::runtime::batch
