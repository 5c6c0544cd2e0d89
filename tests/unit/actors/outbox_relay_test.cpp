// The outbox relay's decision after one publish (actors/outbox_relay.hpp, sort_acks): which
// records to delete and where to read next; and how one read's task records share messages
// (group_outbox, DESIGN rule 3). The relay's message flow is in
// tests/integration/flows/background_flow_test.cpp.

#include <gtest/gtest.h>

#include "actors/event_json.hpp"
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

// --- grouping (DESIGN rule 3: a task message may wake many tasks)

storage::outbox_record task(uint64_t seq, std::string queue, std::string id, int attempt = 1,
                            int64_t republished = 0) {
  return {seq, storage::task_message{std::move(queue), std::move(id), attempt, republished}};
}

TEST(group_outbox, first_publications_of_one_queue_share_one_message_at_the_first_ones_place) {
  const runtime::js_layout layout;
  std::vector<storage::outbox_record> rs = {task(1, "m", "a"), records({2})[0], task(3, "n", "x"),
                                            task(4, "m", "b"), task(5, "m", "c")};
  auto g = group_outbox(rs, layout);
  ASSERT_EQ(g.size(), 3u);
  EXPECT_EQ(g[0].covers, (std::vector<size_t>{0, 3, 4}));
  EXPECT_EQ(g[0].msg.subject, layout.task_subject("m"));
  EXPECT_EQ(g[0].msg.payload, "a:1\nb:1\nc:1");
  EXPECT_TRUE(g[0].msg.msg_id.starts_with("tasks:a:3:")) << g[0].msg.msg_id;
  EXPECT_EQ(g[1].covers, (std::vector<size_t>{1}));  // the event, in its place
  EXPECT_EQ(g[2].msg.msg_id, task_message_id("x", 1)) << "a group of one is the single message";
  EXPECT_EQ(g[2].msg.payload, task_message_payload("x", 1));
  // The id is derived from the records covered: the same again, another for another grouping.
  EXPECT_EQ(group_outbox(rs, layout)[0].msg.msg_id, g[0].msg.msg_id);
  rs.pop_back();
  EXPECT_NE(group_outbox(rs, layout)[0].msg.msg_id, g[0].msg.msg_id);
  // Every task a grouped message names parses back, in order.
  auto named = parse_task_messages(g[0].msg.payload);
  ASSERT_TRUE(named);
  EXPECT_EQ(*named, (std::vector<std::pair<std::string, int>>{{"a", 1}, {"b", 1}, {"c", 1}}));
  EXPECT_EQ(parse_task_messages("a:2"), (std::vector<std::pair<std::string, int>>{{"a", 2}}))
      << "an old single-task payload still parses";
  EXPECT_FALSE(parse_task_messages("a:1\nnot a task"));
  EXPECT_FALSE(parse_task_messages(""));
}

TEST(group_outbox, retries_republished_copies_and_runtime_tasks_go_alone_and_groups_are_capped) {
  const runtime::js_layout layout;
  std::vector<storage::outbox_record> rs = {task(1, "m", "a", 2), task(2, "m", "b", 1, 77),
                                            task(3, "runtime:r", "c"), task(4, "runtime:r", "d")};
  auto alone = group_outbox(rs, layout);
  ASSERT_EQ(alone.size(), 4u);
  EXPECT_EQ(alone[1].msg.msg_id, task_message_id("b", 1) + ":r77");

  std::vector<storage::outbox_record> five;
  for (uint64_t i = 0; i < 5; ++i) five.push_back(task(i + 1, "m", "t" + std::to_string(i)));
  auto capped = group_outbox(five, layout, 2);
  ASSERT_EQ(capped.size(), 3u);
  EXPECT_EQ(capped[1].covers, (std::vector<size_t>{2, 3}));
  EXPECT_EQ(capped[2].msg.msg_id, task_message_id("t4", 1));
  // A record is acked with its message.
  EXPECT_EQ(acked_records(capped, 5, {true, false, true}),
            (std::vector<bool>{true, true, false, false, true}));
}

}  // namespace SY_UNITY_ID
}  // namespace sy::actors
