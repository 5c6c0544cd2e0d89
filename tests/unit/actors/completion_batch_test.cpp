#include <utility>  // before any Asio header (Boost 1.74)

#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <boost/asio/bind_executor.hpp>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>

#include "actors/storage_writer.hpp"
#include "actors/write.hpp"

namespace sy::actors {
namespace SY_UNITY_ID {

namespace asio = boost::asio;

TEST(completion_batch, posts_one_handler_per_executor_when_it_closes_in_the_order_added) {
  asio::io_context a, b;
  auto keep_a = asio::make_work_guard(a);  // an idle poll() must not stop the context
  auto keep_b = asio::make_work_guard(b);
  std::vector<std::string> ran;
  EXPECT_EQ(completion_batch::current(), nullptr);
  {
    completion_batch batch;
    ASSERT_EQ(completion_batch::current(), &batch);
    for (const char* name : {"a1", "b1", "a2", "a3", "b2"}) {
      auto& ctx = name[0] == 'a' ? a : b;
      batch.add(ctx.get_executor(), [&ran, name] { ran.emplace_back(name); });
    }
    EXPECT_EQ(a.poll(), 0u);  // nothing is posted while the batch is open
    EXPECT_TRUE(ran.empty());
  }
  EXPECT_EQ(completion_batch::current(), nullptr);
  EXPECT_EQ(a.poll(), 1u);  // one handler ran all three
  EXPECT_EQ(ran, (std::vector<std::string>{"a1", "a2", "a3"}));
  EXPECT_EQ(b.poll(), 1u);
  EXPECT_EQ(ran, (std::vector<std::string>{"a1", "a2", "a3", "b1", "b2"}));
}

TEST(completion_batch, nests_and_restores_the_outer_batch) {
  asio::io_context ctx;
  int ran = 0;
  {
    completion_batch outer;
    {
      completion_batch inner;
      EXPECT_EQ(completion_batch::current(), &inner);
      inner.add(ctx.get_executor(), [&] { ++ran; });
    }
    EXPECT_EQ(completion_batch::current(), &outer);
    EXPECT_EQ(ctx.poll(), 1u);  // the inner batch posted when it closed
  }
  EXPECT_EQ(ran, 1);
}

TEST(completion_batch, a_writer_answer_joins_the_open_batch_and_is_posted_alone_without_one) {
  asio::io_context ctx;
  auto keep = asio::make_work_guard(ctx);
  std::vector<bool> answers;
  auto handler = [&](result<write_reply> r) { answers.push_back(r.ok()); };
  {
    detail::reply_once once(asio::bind_executor(ctx.get_executor(), handler));
    completion_batch batch;
    once.complete(write_reply{storage::op_reply{}, {}});
    EXPECT_EQ(ctx.poll(), 0u);
  }
  EXPECT_EQ(ctx.poll(), 1u);
  {
    detail::reply_once once(asio::bind_executor(ctx.get_executor(), handler));
    once.complete(write_reply{storage::op_reply{}, {}});
    EXPECT_EQ(ctx.poll(), 1u);
  }
  {
    // Destroyed unanswered (the writer dropped the message): the caller still hears, with an error.
    detail::reply_once once(asio::bind_executor(ctx.get_executor(), handler));
  }
  EXPECT_EQ(ctx.poll(), 1u);
  EXPECT_EQ(answers, (std::vector<bool>{true, true, false}));
}

}  // namespace SY_UNITY_ID
}  // namespace sy::actors
