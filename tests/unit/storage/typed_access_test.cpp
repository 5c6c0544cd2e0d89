#include <string>

#include <gtest/gtest.h>

#include "storage/lmdb_env.hpp"
#include "tests/unit/storage/temp_dir.hpp"

namespace sy::storage {
namespace SY_UNITY_ID {

constexpr int64_t one_mib = int64_t{1} << 20;

class TypedAccess : public ::testing::Test {
 protected:
  void SetUp() override { reopen(); }
  void reopen() {
    env_.reset();
    auto env = environment::open(dir_.path(), one_mib);
    ASSERT_TRUE(env.ok()) << env.error().message;
    env_ = std::move(env.value());
  }
  write_txn writer() {
    auto w = env_->begin_write();
    EXPECT_TRUE(w.ok());
    return std::move(w.value());
  }
  testing::temp_dir dir_;
  std::unique_ptr<environment> env_;
};

outbox_record msg(std::string id) {
  return outbox_record{0, task_message{"m", std::move(id), 1, 0}};
}
const task_message& task_of(const outbox_record& r) { return std::get<task_message>(r.what); }
const rendered_message& rendered(const outbox_record& r) {
  return std::get<rendered_message>(r.what);
}

TEST_F(TypedAccess, RecordsRoundTripThroughTheStore) {
  job_record job;
  job.id = "job_1";
  job.tenant = "acme";
  job.status = job_status::in_progress;
  job.result = gateway_result{200, "{\"ok\":true}"};
  task_record task;
  task.id = "t1";
  task.job_id = "job_1";
  task.state = task_state::leased;
  {
    auto w = writer();
    ASSERT_TRUE(put_job(w, job).ok());
    ASSERT_TRUE(put_task(w, task).ok());
    ASSERT_TRUE(put_lease(w, lease_record{"t1", 1, "tok", 500, "node"}).ok());
    ASSERT_TRUE(put_idempotency(w, "acme", "k1", idempotency_record{"job_1", "h", 7}).ok());
    EXPECT_TRUE(get_job(w, "job_1").has_value());  // the writer sees its own typed writes
    ASSERT_TRUE(w.commit().ok());
  }
  reopen();
  auto r = env_->begin_read();
  auto j = get_job(r, "job_1");
  ASSERT_TRUE(j.has_value());
  EXPECT_EQ(j->tenant, "acme");
  EXPECT_EQ(j->status, job_status::in_progress);
  ASSERT_TRUE(j->result.has_value());
  EXPECT_EQ(j->result->body, "{\"ok\":true}");
  auto t = get_task(r, "t1");
  ASSERT_TRUE(t.has_value());
  EXPECT_EQ(t->state, task_state::leased);
  auto l = get_lease(r, "t1");
  ASSERT_TRUE(l.has_value());
  EXPECT_EQ(l->token, "tok");
  auto i = get_idempotency(r, "acme", "k1");
  ASSERT_TRUE(i.has_value());
  EXPECT_EQ(i->job_id, "job_1");
  EXPECT_FALSE(get_job(r, "job_2").has_value());
}

TEST_F(TypedAccess, IdempotencyKeysAreScopedByTenant) {
  EXPECT_EQ(idempotency_db_key("acme", "k"), std::string("acme\x1f"
                                                         "k"));
  auto w = writer();
  ASSERT_TRUE(put_idempotency(w, "acme", "k", idempotency_record{"job_a", "h", 1}).ok());
  ASSERT_TRUE(put_idempotency(w, "globex", "k", idempotency_record{"job_b", "h", 1}).ok());
  ASSERT_TRUE(w.commit().ok());
  auto r = env_->begin_read();
  EXPECT_EQ(get_idempotency(r, "acme", "k")->job_id, "job_a");
  EXPECT_EQ(get_idempotency(r, "globex", "k")->job_id, "job_b");
  EXPECT_FALSE(get_idempotency(r, "initech", "k").has_value());
}

TEST_F(TypedAccess, CorruptValueReadsAsAbsent) {
  auto w = writer();
  ASSERT_TRUE(w.put(db::jobs, "job_bad", "{not json").ok());
  ASSERT_TRUE(w.put(db::tasks, "t_arr", "[1,2]").ok());
  EXPECT_FALSE(get_job(w, "job_bad").has_value());
  EXPECT_FALSE(get_task(w, "t_arr").has_value());
}

TEST_F(TypedAccess, InvalidUtf8IsStoredWithoutThrowing) {
  job_record job;
  job.id = "job_utf";
  job.result = gateway_result{502, std::string("bad \xff\xfe bytes")};
  auto w = writer();
  ASSERT_TRUE(put_job(w, job).ok());
  auto back = get_job(w, "job_utf");
  ASSERT_TRUE(back.has_value());
  EXPECT_EQ(back->result->status_code, 502);
  EXPECT_EQ(back->result->body.rfind("bad ", 0), 0u);
}

TEST_F(TypedAccess, OutboxSequenceIsMonotonicAcrossDrainAndReopen) {
  {
    auto w = writer();
    EXPECT_EQ(append_outbox(w, msg("a")), 1u);
    EXPECT_EQ(append_outbox(w, msg("b")), 2u);
    EXPECT_EQ(append_outbox(w, msg("c")), 3u);
    ASSERT_TRUE(w.commit().ok());
  }
  {
    auto r = env_->begin_read();
    auto all = read_outbox(r, 0, 100);
    ASSERT_EQ(all.size(), 3u);
    EXPECT_EQ(all[0].seq, 1u);
    EXPECT_EQ(task_of(all[0]).task_id, "a");
    EXPECT_EQ(all[2].seq, 3u);
    EXPECT_EQ(task_of(all[2]).queue, "m");
  }
  {
    auto w = writer();  // the relay drains everything
    for (uint64_t s = 1; s <= 3; ++s) EXPECT_TRUE(del_outbox(w, s));
    EXPECT_FALSE(del_outbox(w, 3));
    ASSERT_TRUE(w.commit().ok());
  }
  reopen();
  auto w = writer();
  EXPECT_EQ(append_outbox(w, msg("d")), 4u);
  ASSERT_TRUE(w.commit().ok());
  auto r = env_->begin_read();
  auto all = read_outbox(r, 0, 100);
  ASSERT_EQ(all.size(), 1u);
  EXPECT_EQ(all[0].seq, 4u);
  EXPECT_EQ(task_of(all[0]).task_id, "d");
}

// A rendered message is what a previous build stored (written here in its encoding).
TEST_F(TypedAccess, OutboxKeepsPayloadBytesVerbatimAndReadsRecordsOfOlderStores) {
  const std::string payload = std::string("{\"a\":\"q\\\"uote\"}\n\xc3\xa9") + '\0' + "tail";
  {
    auto w = writer();
    EXPECT_EQ(
        append_outbox(w, outbox_record{0, rendered_message{"task:t-0:1", "sy.tasks.m", payload}}),
        1u);
    // A record as stores before the compact encoding wrote it, and one that is unreadable.
    ASSERT_TRUE(
        w.put(db::outbox, outbox_key(2),
              R"({"id":"event:j:1","pl":"{\"x\":1}","sb":"sy.events.jobs.j.queued","sq":2})")
            .ok());
    ASSERT_TRUE(w.put(db::outbox, outbox_key(3), "\x01no-separators").ok());
    ASSERT_TRUE(w.commit().ok());
  }
  auto r = env_->begin_read();
  auto all = read_outbox(r, 0, 100);
  ASSERT_EQ(all.size(), 2u);
  EXPECT_EQ(all[0].seq, 1u);
  EXPECT_EQ(rendered(all[0]), (rendered_message{"task:t-0:1", "sy.tasks.m", payload}));
  EXPECT_EQ(all[1].seq, 2u);
  EXPECT_EQ(rendered(all[1]),
            (rendered_message{"event:j:1", "sy.events.jobs.j.queued", R"({"x":1})"}));
}

TEST_F(TypedAccess, JobsTasksLeasesAndEventsOfOlderStoresAreReadAndRewrittenInBinary) {
  {
    auto w = writer();  // values as schema 2 wrote them
    ASSERT_TRUE(
        w.put(db::jobs, "job_1",
              R"({"id":"job_1","tn":"acme","md":"m","ma":3,"st":"in_progress","at":1,"ev":2})")
            .ok());
    ASSERT_TRUE(
        w.put(db::tasks, "job_1-0", R"({"id":"job_1-0","jb":"job_1","at":1,"ma":3,"st":"leased"})")
            .ok());
    ASSERT_TRUE(w.put(db::leases, "job_1-0", R"({"tk":"job_1-0","at":1,"to":"tok","ex":99})").ok());
    ASSERT_TRUE(
        w.put(db::events, event_key("job_1", 1), R"({"jb":"job_1","sq":1,"st":"queued"})").ok());
    ASSERT_TRUE(w.put(db::events, event_key("job_1", 2),
                      R"({"jb":"job_1","sq":2,"st":"in_progress","pv":"queued","an":1})")
                    .ok());
    ASSERT_TRUE(w.commit().ok());
  }
  {
    auto w = writer();
    auto job = get_job(w, "job_1");
    ASSERT_TRUE(job.has_value());
    EXPECT_EQ(job->tenant, "acme");
    EXPECT_EQ(job->status, job_status::in_progress);
    EXPECT_EQ(job->event_seq, 2u);
    auto task = get_task(w, "job_1-0");
    ASSERT_TRUE(task.has_value());
    EXPECT_EQ(task->state, task_state::leased);
    auto lease = get_lease(w, "job_1-0");
    ASSERT_TRUE(lease.has_value());
    EXPECT_EQ(lease->token, "tok");
    EXPECT_EQ(read_leases(w).size(), 1u);
    auto events = read_events(w, "job_1", 0);
    ASSERT_EQ(events.size(), 2u);
    EXPECT_EQ(events[1].previous, job_status::queued);
    job->status = job_status::completed;
    ASSERT_TRUE(put_job(w, *job).ok());
    ASSERT_TRUE(put_task(w, *task).ok());
    ASSERT_TRUE(w.commit().ok());
  }
  auto r = env_->begin_read();
  EXPECT_EQ(r.get(db::jobs, "job_1")->front(), '\x01');
  EXPECT_EQ(r.get(db::tasks, "job_1-0")->front(), '\x01');
  EXPECT_EQ(get_job(r, "job_1")->status, job_status::completed);
  EXPECT_EQ(get_job(r, "job_1")->tenant, "acme");
}

TEST_F(TypedAccess, AbortedAppendDoesNotConsumeASequence) {
  {
    auto w = writer();
    EXPECT_EQ(append_outbox(w, msg("a")), 1u);
    ASSERT_TRUE(w.commit().ok());
  }
  {
    auto w = writer();
    EXPECT_EQ(append_outbox(w, msg("lost")), 2u);
  }  // aborted
  auto w = writer();
  EXPECT_EQ(append_outbox(w, msg("b")), 2u);
}

TEST_F(TypedAccess, ReadOutboxHonoursFromAndLimit) {
  auto w = writer();
  for (int i = 0; i < 300; ++i) append_outbox(w, msg("m" + std::to_string(i)));
  auto mid = read_outbox(w, 256, 10);  // crosses a byte boundary of the big-endian key
  ASSERT_EQ(mid.size(), 10u);
  for (size_t i = 0; i < mid.size(); ++i) EXPECT_EQ(mid[i].seq, 256 + i);
  EXPECT_EQ(task_of(mid[0]).task_id, "m255");
  EXPECT_EQ(read_outbox(w, 295, 100).size(), 6u);
  EXPECT_TRUE(read_outbox(w, 301, 100).empty());
  EXPECT_TRUE(read_outbox(w, 1, 0).empty());
  EXPECT_EQ(outbox_key(258), std::string("\0\0\0\0\0\0\x01\x02", 8));
}

TEST_F(TypedAccess, ReadLeasesAndDeleteOne) {
  auto w = writer();
  ASSERT_TRUE(put_lease(w, lease_record{"t1", 1, "a", 10, "n"}).ok());
  ASSERT_TRUE(put_lease(w, lease_record{"t2", 1, "b", 20, "n"}).ok());
  ASSERT_TRUE(put_lease(w, lease_record{"t1", 2, "c", 30, "n"}).ok());  // replaces attempt 1
  auto leases = read_leases(w);
  ASSERT_EQ(leases.size(), 2u);
  EXPECT_EQ(leases[0].task_id, "t1");
  EXPECT_EQ(leases[0].attempt, 2);
  EXPECT_EQ(leases[0].token, "c");
  EXPECT_TRUE(del_lease(w, "t1"));
  EXPECT_FALSE(del_lease(w, "t1"));
  ASSERT_TRUE(w.commit().ok());
  auto r = env_->begin_read();
  leases = read_leases(r);
  ASSERT_EQ(leases.size(), 1u);
  EXPECT_EQ(leases[0].task_id, "t2");
  EXPECT_FALSE(get_lease(r, "t1").has_value());
}

TEST_F(TypedAccess, AppendOnAFullMapPoisonsTheCommit) {
  testing::temp_dir small_dir;
  auto env = environment::open(small_dir.path(), 64 * 1024);
  ASSERT_TRUE(env.ok());
  auto w = (*env)->begin_write();
  ASSERT_TRUE(w.ok());
  outbox_record big = msg(std::string(2000, 'p'));
  for (int i = 0; i < 1000 && w->ok(); ++i) append_outbox(*w, big);
  EXPECT_FALSE(w->ok());
  auto st = w->commit();
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.error().code, "map_full");
  EXPECT_TRUE(read_outbox((*env)->begin_read(), 0, 10).empty());
}

}  // namespace SY_UNITY_ID
}  // namespace sy::storage
