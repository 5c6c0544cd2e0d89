// Fault isolation in the group commit: a write that fails for a reason of its own (here a model
// name longer than an LMDB key, which no client can send any more: the edge refuses it) is
// answered alone with its own error, and every other write of the same group commit succeeds.
// Real LMDB in a temp dir, the real storage writer actor.

#include <utility>  // before any Asio header (Boost 1.74)

#include <chrono>
#include <optional>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <caf/actor_system.hpp>
#include <caf/actor_system_config.hpp>
#include <caf/send.hpp>

#include "actors/storage_writer.hpp"
#include "actors/write.hpp"
#include "storage/lmdb_env.hpp"
#include "storage/ops.hpp"
#include "tests/support/temp_dir.hpp"

namespace sy::actors {
namespace SY_UNITY_ID {

storage::create_job_op make_job(const std::string& id, const std::string& model) {
  storage::create_job_op op;
  op.job.id = id;
  op.job.tenant = "t1";
  op.job.model = model;
  op.job.endpoint = "/v1/chat/completions";
  op.job.request_hash = "h";
  op.job.task_id = "task-" + id;
  op.job.max_attempts = 3;
  op.task.id = op.job.task_id;
  op.task.job_id = id;
  op.task.model = model;
  op.task.max_attempts = 3;
  return op;
}

/// Commits the creation of job `i` (a refused one when `bad`) through write() and records the
/// outcome; the last answer stops `ioc`.
boost::asio::awaitable<void> write_one(storage_writer_actor writer, size_t i, bool bad,
                                       std::optional<write_reply>& reply, size_t& answered,
                                       size_t total, boost::asio::io_context& ioc) {
  // Named, not a temporary in the co_await expression (GCC 12 destroys such temporaries twice).
  write_request req{make_job("job-" + std::to_string(i), bad ? std::string(600, 'm') : "m")};
  auto r = co_await write(writer, std::move(req));
  reply = r ? std::move(r.value()) : write_reply{std::nullopt, r.error()};
  if (++answered == total) ioc.stop();
}

TEST(writer_isolation, failing_writes_are_answered_alone_and_their_commits_go_ahead) {
  test::temp_dir dir;
  auto env = storage::environment::open(dir.path(), 64 << 20);
  ASSERT_TRUE(env.ok()) << env.error().message;
  caf::actor_system_config cfg;
  caf::actor_system sys{cfg};
  auto writer = spawn_storage_writer(sys, **env, 4096, {}, nullptr);

  // 1,000 valid creations and 10 that LMDB refuses, interleaved and sent at once (write(), as
  // the engine's coroutines do), so that they share group commits.
  constexpr size_t total = 1010;
  auto is_bad = [](size_t i) { return i % 101 == 50; };
  boost::asio::io_context ioc;
  auto keep = boost::asio::make_work_guard(ioc);
  std::vector<std::optional<write_reply>> replies(total);
  size_t answered = 0;
  for (size_t i = 0; i < total; ++i) {
    boost::asio::co_spawn(ioc, write_one(writer, i, is_bad(i), replies[i], answered, total, ioc),
                          boost::asio::detached);
  }
  boost::asio::steady_timer give_up(ioc, std::chrono::seconds(60));  // only if answers are lost
  give_up.async_wait([&](auto) { ioc.stop(); });
  ioc.run();
  ASSERT_EQ(answered, total) << answered << " of " << total << " answered";
  size_t good = 0, refused = 0;
  for (size_t i = 0; i < total; ++i) {
    const auto& r = *replies[i];
    if (is_bad(i)) {
      EXPECT_FALSE(r.reply.has_value()) << i;
      EXPECT_EQ(r.err.code, "value_not_storable") << i << ": " << r.err.message;
      refused += r.err.code == "value_not_storable";
    } else {
      ASSERT_TRUE(r.reply.has_value()) << i << ": " << r.err.code << " " << r.err.message;
      EXPECT_EQ(r.reply->what, storage::op_reply::kind::done) << i;
      good += r.reply->what == storage::op_reply::kind::done;
    }
  }
  EXPECT_EQ(good, 1000u);
  EXPECT_EQ(refused, 10u);
  // What was stored is exactly the valid jobs, each with its task and outbox records; the
  // refused ones left nothing, not even the half of their writes that LMDB had accepted.
  auto txn = (*env)->begin_read();
  auto count = [&](storage::db d) {
    size_t n = 0;
    txn.scan(d, "", [&](std::string_view, std::string_view) { return ++n, true; });
    return n;
  };
  EXPECT_EQ(count(storage::db::jobs), 1000u);
  EXPECT_EQ(count(storage::db::tasks), 1000u);
  EXPECT_EQ(count(storage::db::outbox), 2000u);  // each: its task message and its queued event
  size_t models = 0;
  txn.scan(storage::db::meta, storage::known_model_prefix, [&](std::string_view key, auto) {
    if (key.substr(0, storage::known_model_prefix.size()) != storage::known_model_prefix)
      return false;
    EXPECT_EQ(key, "model/m");
    return ++models, true;
  });
  EXPECT_EQ(models, 1u);
  for (size_t i = 0; i < total; ++i)
    EXPECT_EQ(storage::get_job(txn, "job-" + std::to_string(i)).has_value(), !is_bad(i)) << i;
  caf::anon_send_exit(writer, caf::exit_reason::user_shutdown);
}

}  // namespace SY_UNITY_ID
}  // namespace sy::actors
