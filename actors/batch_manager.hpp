#pragma once
/// The batch manager: one actor per engine that owns every change of the Files and Batch API and
/// runs every batch that is not terminal — one job actor per batch (actors/batch_actor.hpp),
/// registered in the job registry like every job with work on this node. A batch's actor ingests
/// the input file (plans per model, runtime/batch_plan.hpp), dispatches each model's plan in
/// prefix-hash order under the per-model and global budgets, records each result line exactly
/// once (storage/batch_ops.hpp), stops on cancel, expiry or failure (draining undispatched lines
/// with the stop code), and finalizes the output and error files — retrying a drain or
/// finalization that fails (batch_retry_policy) before it fails the batch. Lifecycle, layout and
/// recovery: docs/batches.md.
///
/// Who owns what: the actor's state — whether it stopped, the id generator, the file-expiry
/// sweep's clock timer — is touched by the actor alone. It is reached only by messages: the
/// requests of actors/core_messages.hpp that change something (create_file, delete_file,
/// create_batch, cancel_batch, rerun_batch, delete_batch), `start` (recovery) and `stop`
/// (shutdown), each answered with a `batch_answer`. Commits go to the storage writer as requests
/// from the actor; file I/O (renames, fsyncs, unlinks, recovery's directory scans) runs on the
/// blocking executor of its deps and answers the actor by message (`io_done`), so the actor's
/// thread never waits on the disk. Reads go through the read model (actors/batch_front.hpp), from
/// any thread.
///
/// Files on disk, under the data dir: `files/<file id>` (uploaded and produced files),
/// `files/uploads/` (uploads in progress), `batches/<batch id>/` (plans while a batch runs).

#include <utility>  // before any Asio header (Boost 1.74)

#include <cstdint>
#include <memory>
#include <string>

#include <boost/asio/any_io_executor.hpp>
#include <caf/replies_to.hpp>
#include <caf/typed_actor.hpp>

#include "actors/atoms.hpp"
#include "actors/batch_actor.hpp"
#include "actors/core_messages.hpp"
#include "actors/engine_context.hpp"
#include "runtime/webhook_policy.hpp"

namespace sy::actors {

/// What the batch manager answers every request with: the core's reply to it — its error, a
/// file or batch record, or `done` (start, stop).
struct batch_answer {
  core::reply value;

  bool operator==(const batch_answer&) const = default;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, batch_answer& x) {
  return f(storage::variant_field{x.value});
}

/// A step of file I/O the manager ran on its blocking executor ended (`key` names the step,
/// `failure` says why it failed; empty: it did not).
struct io_done {
  uint64_t key = 0;
  std::string failure;

  bool operator==(const io_done&) const = default;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, io_done& x) {
  return f(x.key, x.failure);
}

/// `start`: creates the directories, removes leftovers of a crash (partial uploads, files
/// without a record, plans of finished batches), resumes every batch that is not terminal and
/// starts the file-expiry sweep; send it once, after the storage writer runs and before the API
/// serves. `stop`: no batch starts any more and the sweep ends (the batches' actors are stopped
/// through the job registry, `release`); later requests are answered shutting_down. `tick`: the
/// sweep's timer fired.
using batch_manager_actor =
    caf::typed_actor<caf::replies_to<start_atom>::with<batch_answer>,
                     caf::replies_to<stop_atom>::with<batch_answer>,
                     caf::replies_to<core::create_file>::with<batch_answer>,
                     caf::replies_to<core::delete_file>::with<batch_answer>,
                     caf::replies_to<core::create_batch>::with<batch_answer>,
                     caf::replies_to<core::cancel_batch>::with<batch_answer>,
                     caf::replies_to<core::rerun_batch>::with<batch_answer>,
                     caf::replies_to<core::delete_batch>::with<batch_answer>,
                     caf::reacts_to<tick_atom>, caf::reacts_to<io_done>>;

/// What the manager uses: what every batch actor it spawns gets (the store, the writer, the
/// registry, the clock, the blocking executor, the paths, the engine's shutdown flag), and the
/// network policy a batch's webhook URL is checked against (it outlives the actor).
struct batch_manager_deps {
  std::shared_ptr<const batch_deps> batches;
  const runtime::webhook_policy* webhooks = nullptr;
};

/// The batch actors' deps from the engine's context: files under `cfg.data_dir`, file I/O on
/// `blocking`, the retry knobs in `tries`.
std::shared_ptr<const batch_deps> make_batch_deps(const engine_context& ctx,
                                                  storage::environment& env,
                                                  boost::asio::any_io_executor blocking,
                                                  std::shared_ptr<batch_tries> tries);

/// Spawns the manager on the scheduler; it does nothing until it gets `start`.
batch_manager_actor spawn_batch_manager(batch_manager_deps d);

}  // namespace sy::actors
