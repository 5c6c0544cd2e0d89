#include "actors/storage_writer.hpp"

#include "actors/job_watch.hpp"

#include <optional>
#include <utility>
#include <vector>

#include <boost/asio/post.hpp>

#include <caf/actor_system.hpp>
#include <caf/send.hpp>
#include <caf/stateful_actor.hpp>
#include <caf/typed_event_based_actor.hpp>

#include "actors/detail/write_tickets.hpp"
#include "actors/observe_changes.hpp"
#include "runtime/log.hpp"
#include "runtime/metrics.hpp"
#include "runtime/thread_name.hpp"

namespace sy::actors {
namespace {

using promise = caf::typed_response_promise<write_reply>;

/// One operation waiting for the next commit, and whom to answer: a CAF requester, or the
/// waiter filed under `ticket` (a write_call) in write_tickets.
struct pending_op {
  storage::write_op op;
  std::optional<promise> rp;
  uint64_t ticket = 0;  ///< 0: answer `rp`
};

struct writer_state {
  storage::environment* env = nullptr;
  size_t max_ops = 4096;
  storage::store_policy policy;
  job_watch* watch = nullptr;             ///< wakes the waiters of changed jobs
  const runtime::clock* clock = nullptr;  ///< times the commits: the watch's (the engine's)
  writer_wakes wakes;                     ///< the relay and the deliverer, once they exist
  detail::writer_key key = nullptr;       ///< this writer's slot in write_tickets
  std::vector<pending_op> pending;
  bool flush_scheduled = false;
  static inline const char* name = "storage_writer";
};

using writer_ptr = storage_writer_actor::stateful_pointer<writer_state>;

/// Answers `batch[i]` with `replies[i]`. The waiters of write_calls are taken from
/// write_tickets under one lock for the whole commit, and complete into the completion_batch
/// the caller has open.
void answer_all(writer_ptr self, std::vector<pending_op>& batch,
                std::vector<write_reply>& replies) {
  std::vector<uint64_t> tickets;
  for (const auto& p : batch)
    if (p.ticket != 0) tickets.push_back(p.ticket);
  std::vector<detail::write_waiter_ptr> waiters;
  if (!tickets.empty()) detail::write_tickets::process().take(self->state.key, tickets, waiters);
  size_t next_waiter = 0;
  for (size_t i = 0; i < batch.size(); ++i) {
    if (batch[i].ticket == 0) {
      if (batch[i].rp) batch[i].rp->deliver(std::move(replies[i]));
      continue;
    }
    // Missing: the waiter was already failed (the writer's slot closed).
    if (auto& w = waiters[next_waiter++]) w->complete(result<write_reply>(std::move(replies[i])));
  }
}

void fail_all(writer_ptr self, std::vector<pending_op>& batch, const sy::error& e) {
  std::vector<write_reply> replies(batch.size(), write_reply{std::nullopt, e});
  completion_batch continuations;
  answer_all(self, batch, replies);
}

/// Per operation of one commit: its reply, or the error of that operation alone.
using op_outcomes = std::vector<result<storage::op_reply>>;

/// Applies one operation inside its own nested transaction: when it fails, only its own writes
/// are undone and the others of the commit stay.
result<storage::op_reply> apply_nested(storage::write_txn& txn, const storage::write_op& op,
                                       const storage::store_policy& policy) {
  auto child = txn.begin_nested();
  if (!child) return child.error();
  auto r = storage::apply(*child, op, policy);
  if (!r) {
    child->abort();
    return r;
  }
  if (auto st = child->commit(); !st) return st.error();
  return r;
}

/// Applies `batch` in one transaction and commits once. Returns each operation's outcome, or the
/// error that failed them all (the transaction could not begin or commit).
///
/// The fast path applies everything in the one transaction. When an operation fails for a
/// reason of its own (a value LMDB refuses, a record that is not as expected), the batch is
/// applied again with each operation in a nested transaction, so that the failing one is
/// answered alone and the others commit. A full map is grown and the batch retried from
/// scratch (the aborted attempt left nothing).
result<op_outcomes> commit_batch(storage::environment& env, const storage::store_policy& policy,
                                 const std::vector<pending_op>& batch) {
  bool isolate = false;
  for (int grow_round = 0;;) {
    auto txn = env.begin_write();
    if (!txn) return txn.error();
    op_outcomes outcomes;
    outcomes.reserve(batch.size());
    std::optional<sy::error> failure;  // fails this try of the whole batch
    for (const auto& p : batch) {
      auto r = isolate ? apply_nested(*txn, p.op, policy) : storage::apply(*txn, p.op, policy);
      if (!r && (!isolate || r.error().code == errc::map_full)) {
        failure = r.error();
        break;
      }
      outcomes.push_back(std::move(r));
    }
    if (!failure) {
      // Result bodies appended by this batch reach the disk before the records naming them.
      auto st = policy.results ? policy.results->sync() : sy::status{ok};
      if (st) st = txn->commit();
      if (st) return outcomes;
      if (st.error().code != errc::map_full) return st.error();
      failure = st.error();
    }
    txn->abort();
    if (failure->code == errc::map_full) {
      if (grow_round++ >= 16) return *failure;
      if (auto st = env.grow(); !st) return st.error();
      log::info("storage", "map grown", {{"map_bytes", env.map_bytes()}});
      continue;
    }
    if (isolate) return *failure;  // not one operation's fault: a nested transaction failed
    log::warn("storage", "an operation failed inside a group commit; applying each on its own",
              {{"ops", batch.size()}, {"code", failure->code}, {"error", failure->message}});
    isolate = true;
  }
}

/// What a client is told about an operation that failed on its own.
sy::error answer_for(const sy::error& e) {
  if (e.code == errc::value_rejected)
    return make_error(errc::value_not_storable, "The job store refused a value of this request (" +
                                                    e.message + "); nothing was stored.");
  return make_error(errc::storage_unavailable,
                    "the job store could not apply this write: " + e.message);
}

void flush(writer_ptr self) {
  auto& st = self->state;
  st.flush_scheduled = false;
  std::vector<pending_op> batch;
  if (st.pending.size() <= st.max_ops) {
    batch.swap(st.pending);
  } else {
    auto cut = st.pending.begin() + static_cast<std::ptrdiff_t>(st.max_ops);
    batch.assign(std::make_move_iterator(st.pending.begin()), std::make_move_iterator(cut));
    st.pending.erase(st.pending.begin(), cut);
    st.flush_scheduled = true;
    self->send(self, flush_atom::value);
  }
  if (batch.empty()) return;
  const int64_t t0_us = st.clock->monotonic_us();
  auto outcomes = commit_batch(*st.env, st.policy, batch);
  metrics::commit(static_cast<double>(st.clock->monotonic_us() - t0_us) / 1e6, batch.size());
  if (!outcomes) {
    log::error("storage", "group commit failed",
               {{"ops", batch.size()},
                {"code", outcomes.error().code},
                {"error", outcomes.error().message}});
    fail_all(self, batch,
             make_error(errc::storage_unavailable,
                        "the job store could not commit: " + outcomes.error().message));
    return;
  }
  bool wake_relay = false;
  bool wake_webhooks = false;
  std::vector<std::string> changed;
  for (auto& r : outcomes.value()) {
    if (!r) continue;
    observe_changes(*r);
    r->changes = {};  // counted: the reply's copies on their way to the callers need none
    wake_relay = wake_relay || r->outbox_appended;
    wake_webhooks = wake_webhooks || r->webhooks_appended;
    changed.insert(changed.end(), r->changed_jobs.begin(), r->changed_jobs.end());
  }
  size_t failed = 0;
  std::optional<sy::error> first_failure;
  {
    std::vector<write_reply> replies;
    replies.reserve(batch.size());
    for (auto& r : outcomes.value()) {
      if (r) {
        replies.push_back(write_reply{std::move(r.value()), {}});
        continue;
      }
      if (failed++ == 0) first_failure = r.error();
      replies.push_back(write_reply{std::nullopt, answer_for(r.error())});
    }
    completion_batch continuations;  // one post per executor for all the answers
    answer_all(self, batch, replies);
  }
  if (failed > 0)  // one line per commit, however many of its operations failed
    log::warn("storage", "operations failed on their own; the rest of their commit went ahead",
              {{"failed", failed},
               {"ops", batch.size()},
               {"code", first_failure->code},
               {"error", first_failure->message}});
  if (wake_relay && st.wakes.relay) caf::anon_send(st.wakes.relay, wake_atom::value);
  if (wake_webhooks && st.wakes.webhooks) caf::anon_send(st.wakes.webhooks, wake_atom::value);
  if (!changed.empty() && st.watch) st.watch->notify(changed);
}

storage_writer_actor::behavior_type writer(writer_ptr self, storage::environment* env,
                                           size_t max_ops, storage::store_policy policy,
                                           job_watch* watch, bool own_thread) {
  if (own_thread) runtime::name_this_thread("sy-writer");  // detached: its own thread
  self->state.env = env;
  self->state.max_ops = max_ops == 0 ? 1 : max_ops;
  self->state.policy = std::move(policy);
  self->state.watch = watch;
  static const runtime::system_clock_source system_time;  // a writer without a watch (tests)
  self->state.clock = watch ? &watch->clock() : &system_time;
  self->state.key = static_cast<caf::abstract_actor*>(self);
  // The flush message queues behind every request already in the mailbox, so all of them join
  // this commit: that is the group commit.
  auto schedule_flush = [self] {
    if (!self->state.flush_scheduled) {
      self->state.flush_scheduled = true;
      self->send(self, flush_atom::value);
    }
  };
  return {
      [=](write_request& req) -> promise {
        auto rp = self->make_response_promise<write_reply>();
        self->state.pending.push_back(pending_op{std::move(req.op), rp, 0});
        schedule_flush();
        return rp;
      },
      [=](write_call& call) {
        self->state.pending.push_back(pending_op{std::move(call.op), std::nullopt, call.ticket});
        schedule_flush();
      },
      [=](flush_atom) { flush(self); },
      [=](writer_wakes& w) { self->state.wakes = std::move(w); },
  };
}

}  // namespace

namespace {
thread_local completion_batch* open_batch = nullptr;
}  // namespace

completion_batch::completion_batch() : previous_(open_batch) { open_batch = this; }

completion_batch::~completion_batch() {
  open_batch = previous_;
  for (auto& [ex, group] : groups_) {
    boost::asio::post(ex, [cs = std::move(group)] {
      for (auto& c : cs) c->run();
    });
  }
}

completion_batch* completion_batch::current() { return open_batch; }

void completion_batch::add_erased(boost::asio::any_io_executor ex,
                                  std::unique_ptr<continuation> c) {
  // A handful of executors (the HTTP threads, the execution context): a linear search.
  for (auto& [known, group] : groups_) {
    if (known == ex) {
      group.push_back(std::move(c));
      return;
    }
  }
  groups_.emplace_back(std::move(ex), continuations{}).second.push_back(std::move(c));
}

storage_writer_actor spawn_storage_writer(caf::actor_system& sys, storage::environment& env,
                                          size_t max_ops_per_commit, storage::store_policy policy,
                                          job_watch* watch, runs_on where) {
  auto w = where == runs_on::own_thread
               ? sys.spawn<caf::detached>(writer, &env, max_ops_per_commit, std::move(policy),
                                          watch, true)
               : sys.spawn(writer, &env, max_ops_per_commit, std::move(policy), watch, false);
  // The slot opens before anyone can send a write_call, and closes once the writer has ended
  // and dropped its mailbox (attached to a writer already gone, the functor runs at once).
  auto key = detail::key_of(w);
  detail::write_tickets::process().open(key);
  w->attach_functor([key] { detail::write_tickets::process().close(key); });
  return w;
}

}  // namespace sy::actors
