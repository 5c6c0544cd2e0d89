#include "actors/storage_writer.hpp"

#include <utility>
#include <vector>
#include <optional>

#include <boost/asio/post.hpp>

#include <caf/actor_system.hpp>
#include <caf/typed_event_based_actor.hpp>
#include <caf/stateful_actor.hpp>

#include "runtime/log.hpp"
#include "runtime/thread_name.hpp"

namespace sy::actors {
namespace {

using promise = caf::typed_response_promise<write_reply>;

/// One operation waiting for the next commit, and whom to answer: a CAF requester or a callback.
struct pending_op {
  storage::write_op op;
  std::optional<promise> rp;
  std::function<void(write_reply)> done;

  void answer(write_reply r) {
    if (done) {
      done(std::move(r));
    } else if (rp) {
      rp->deliver(std::move(r));
    }
  }
};

struct writer_state {
  storage::environment* env = nullptr;
  size_t max_ops = 4096;
  storage::store_policy policy;
  writer_hooks hooks;
  std::vector<pending_op> pending;
  bool flush_scheduled = false;
  static inline const char* name = "storage_writer";
};

using writer_ptr = storage_writer_actor::stateful_pointer<writer_state>;

void fail_all(std::vector<pending_op>& batch, const sy::error& e) {
  for (auto& p : batch) p.answer(write_reply{std::nullopt, e});
}

/// Applies `batch` in one transaction. Returns the replies, or the error that failed the batch.
/// A full map is grown and the batch retried from scratch (the aborted attempt left nothing).
result<std::vector<storage::op_reply>> commit_batch(
    storage::environment& env, const storage::store_policy& policy,
    const std::vector<pending_op>& batch) {
  for (int grow_round = 0;; ++grow_round) {
    auto txn = env.begin_write();
    if (!txn) return txn.error();
    std::vector<storage::op_reply> replies;
    replies.reserve(batch.size());
    std::optional<sy::error> failure;
    for (const auto& p : batch) {
      auto r = storage::apply(*txn, p.op, policy);
      if (!r) {
        failure = r.error();
        break;
      }
      replies.push_back(std::move(r.value()));
    }
    if (!failure) {
      auto st = txn->commit();
      if (st) return replies;
      failure = st.error();
    }
    txn->abort();
    if (failure->code != "map_full" || grow_round >= 16) return *failure;
    if (auto st = env.grow(); !st) return st.error();
    log::info("storage", "map grown", {{"map_bytes", env.map_bytes()}});
  }
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
  auto replies = commit_batch(*st.env, st.policy, batch);
  if (!replies) {
    log::error("storage", "group commit failed",
               {{"ops", batch.size()}, {"code", replies.error().code},
                {"error", replies.error().message}});
    fail_all(batch, make_error("storage_unavailable",
                               "the job store could not commit: " + replies.error().message));
    return;
  }
  bool wake_relay = false;
  bool wake_webhooks = false;
  std::vector<std::string> changed;
  for (auto& r : replies.value()) {
    wake_relay = wake_relay || r.outbox_appended;
    wake_webhooks = wake_webhooks || r.webhooks_appended;
    changed.insert(changed.end(), r.changed_jobs.begin(), r.changed_jobs.end());
  }
  {
    completion_batch continuations;  // one post per executor for all the answers below
    for (size_t i = 0; i < batch.size(); ++i)
      batch[i].answer(write_reply{std::move(replies.value()[i]), {}});
  }
  if (wake_relay && st.hooks.on_outbox) st.hooks.on_outbox();
  if (wake_webhooks && st.hooks.on_webhooks) st.hooks.on_webhooks();
  if (!changed.empty() && st.hooks.on_changed) st.hooks.on_changed(changed);
}

storage_writer_actor::behavior_type writer(writer_ptr self, storage::environment* env,
                                           size_t max_ops, storage::store_policy policy,
                                           writer_hooks hooks) {
  runtime::name_this_thread("sy-writer");  // detached: this actor has its own thread
  self->state.env = env;
  self->state.max_ops = max_ops == 0 ? 1 : max_ops;
  self->state.policy = std::move(policy);
  self->state.hooks = std::move(hooks);
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
        self->state.pending.push_back(pending_op{std::move(req.op), rp, nullptr});
        schedule_flush();
        return rp;
      },
      [=](write_call& call) {
        self->state.pending.push_back(pending_op{std::move(call.op), std::nullopt,
                                                 std::move(call.done)});
        schedule_flush();
      },
      [=](flush_atom) { flush(self); },
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

void completion_batch::add_erased(boost::asio::any_io_executor ex, std::unique_ptr<continuation> c) {
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
                                          writer_hooks hooks) {
  return sys.spawn<caf::detached>(writer, &env, max_ops_per_commit, std::move(policy),
                                  std::move(hooks));
}

}  // namespace sy::actors
