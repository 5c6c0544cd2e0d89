// Reading a batch's lines as tasks: a request id gives back its input offset (and only a request
// id of that batch does), and a result line names its request by that id. (The files are read
// by runtime/line_reader.hpp: line_reader_test.cpp.)

#include "runtime/batch_tasks.hpp"

#include <gtest/gtest.h>

#include <random>
#include <vector>

#include "runtime/batch_render.hpp"

namespace sy::runtime::batch {
namespace SY_UNITY_ID {

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

}  // namespace SY_UNITY_ID
}  // namespace sy::runtime::batch
