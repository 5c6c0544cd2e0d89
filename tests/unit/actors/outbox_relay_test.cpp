// The outbox relay's decision after one publish (actors/outbox_relay.hpp, sort_acks): which
// records to delete and where to read next. The relay's message flow is in
// tests/integration/flows/background_flow_test.cpp.

#include <gtest/gtest.h>

#include "actors/outbox_relay.hpp"

namespace sy::actors {
namespace SY_UNITY_ID {

std::vector<storage::outbox_record> records(std::vector<uint64_t> seqs) {
  std::vector<storage::outbox_record> out;
  for (auto s : seqs)
    out.push_back({s, storage::rendered_message{"id-" + std::to_string(s), "sy.tasks.m", "p"}});
  return out;
}

TEST(sort_acks, all_acked_deletes_all_and_reads_on_past_the_last) {
  auto o = sort_acks(records({3, 4, 7}), {true, true, true});
  EXPECT_TRUE(o.all_acked);
  EXPECT_EQ(o.acked_seqs, (std::vector<uint64_t>{3, 4, 7}));
  EXPECT_EQ(o.next_cursor, 8u);
}

TEST(sort_acks, a_failed_record_is_kept_and_retried_with_everything_after_it) {
  auto o = sort_acks(records({3, 4, 7}), {true, false, true});
  EXPECT_FALSE(o.all_acked);
  EXPECT_EQ(o.acked_seqs, (std::vector<uint64_t>{3, 7})) << "only acked records are deleted";
  EXPECT_EQ(o.next_cursor, 4u) << "the next read starts at the first record not acked";
}

TEST(sort_acks, missing_answers_count_as_not_acked) {
  auto o = sort_acks(records({5, 6}), {true});
  EXPECT_FALSE(o.all_acked);
  EXPECT_EQ(o.acked_seqs, (std::vector<uint64_t>{5}));
  EXPECT_EQ(o.next_cursor, 6u);
  auto none = sort_acks(records({5, 6}), {});
  EXPECT_TRUE(none.acked_seqs.empty()) << "NATS down: nothing is deleted";
  EXPECT_EQ(none.next_cursor, 5u);
}

}  // namespace SY_UNITY_ID
}  // namespace sy::actors
