#pragma once
/// The storage writer: the one actor that owns the LMDB write transaction (DESIGN.md). Requests
/// queue in its mailbox; it applies every request that has arrived since the last commit in one
/// transaction and commits once (one fsync), then answers each request. A full map is grown and
/// the batch retried. An operation that fails on its own (a value LMDB refuses) is answered
/// alone with its error while the others commit (the batch is redone with one nested transaction
/// per operation); only a failure of the transaction itself fails the whole batch.
/// Runs detached (its own thread) because a commit blocks on fsync.

#include <utility>  // before any Asio header (Boost 1.74)

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <boost/asio/any_io_executor.hpp>

#include <caf/replies_to.hpp>
#include <caf/typed_actor.hpp>

#include "actors/atoms.hpp"
#include "actors/detail/caf_inspect.hpp"
#include "config/result.hpp"
#include "storage/lmdb_env.hpp"
#include "storage/ops.hpp"

namespace sy::actors {

/// The messages are plain values with `inspect` overloads (storage/inspect.hpp for the storage
/// types), so that they can be serialized and compared; none carries a callback.

/// One state-machine operation to apply (storage/ops.hpp).
struct write_request {
  storage::write_op op;

  bool operator==(const write_request&) const = default;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, write_request& x) {
  return f(storage::variant_field{x.op});
}

/// Its outcome once committed: the reply, or why the batch failed.
struct write_reply {
  std::optional<storage::op_reply> reply;
  sy::error err;  ///< set when `reply` is empty

  bool operator==(const write_reply&) const = default;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, write_reply& x) {
  return f(storage::optional_field{x.reply}, x.err);
}

/// The same request from outside CAF (see write() in actors/write.hpp): `ticket` names the
/// caller's waiter in this writer's slot of the process's write_tickets table
/// (actors/detail/write_tickets.hpp), which the writer completes after the commit. This spares
/// a caller the short-lived actor, the request and the timeout an `ask` costs. A ticket means
/// something only to the writer of this process it was sent to.
struct write_call {
  storage::write_op op;
  uint64_t ticket = 0;

  bool operator==(const write_call&) const = default;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, write_call& x) {
  return f(storage::variant_field{x.op}, x.ticket);
}

/// The writer answers one commit's operations inside a completion_batch: a write_call's waiter
/// may hand it the continuation to run on `ex` instead of posting it there itself, and the batch
/// posts everything bound for one executor as one handler when the answers are out — one post (one
/// scheduler lock, at most one wake-up) per executor and commit instead of one per operation.
/// Continuations for one executor run in the order they were added.
class completion_batch {
 public:
  completion_batch();
  ~completion_batch();  ///< posts what was gathered
  completion_batch(const completion_batch&) = delete;
  completion_batch& operator=(const completion_batch&) = delete;

  /// The batch open on this thread, or null.
  static completion_batch* current();

  template <class F>
  void add(const boost::asio::any_io_executor& ex, F fn) {
    add_erased(ex, std::make_unique<continuation_of<F>>(std::move(fn)));
  }

 private:
  struct continuation {
    virtual ~continuation() = default;
    virtual void run() = 0;
  };
  template <class F>
  struct continuation_of final : continuation {
    explicit continuation_of(F f) : fn(std::move(f)) {}
    void run() override { fn(); }
    F fn;
  };
  using continuations = std::vector<std::unique_ptr<continuation>>;
  void add_erased(boost::asio::any_io_executor ex, std::unique_ptr<continuation> c);

  std::vector<std::pair<boost::asio::any_io_executor, continuations>> groups_;
  completion_batch* previous_;
};

/// Whom the writer wakes after a commit, by message (`wake_atom`): the outbox relay when
/// outbox records were appended, the webhook deliverer when deliveries were. Sent to the writer
/// once they exist (they are spawned after it: the relay needs the writer's handle); either may
/// be empty (nobody to wake).
struct writer_wakes {
  caf::actor relay;
  caf::actor webhooks;

  bool operator==(const writer_wakes&) const = default;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, writer_wakes& x) {
  return f(x.relay, x.webhooks);
}

using storage_writer_actor =
    caf::typed_actor<caf::replies_to<write_request>::with<write_reply>, caf::reacts_to<write_call>,
                     caf::reacts_to<flush_atom>, caf::reacts_to<writer_wakes>>;

class job_watch;

/// Where an actor whose handlers block (the writer on fsync, the relay on JetStream acks) runs:
/// on a thread of its own (the engine), or on the actor system's scheduler like the others — for
/// message-flow tests on CAF's test coordinator, which runs every actor on the test's thread and
/// cannot take messages from another thread.
enum class runs_on { own_thread, scheduler };

/// Spawns the writer; `policy` is handed to every operation (storage/ops.hpp). Opens the writer's
/// slot in write_tickets before returning the handle; the slot closes when the writer ends.
/// `watch` (may be null): its waiters of the jobs a commit changed are woken (Prefer: wait, SSE);
/// it must outlive the writer. Its clock (the engine's) times the commits for the
/// commit-duration histogram; a writer without a watch times them by the system clock.
storage_writer_actor spawn_storage_writer(caf::actor_system& sys, storage::environment& env,
                                          size_t max_ops_per_commit, storage::store_policy policy,
                                          job_watch* watch, runs_on where = runs_on::own_thread);

}  // namespace sy::actors
