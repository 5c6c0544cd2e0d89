#pragma once
/// The job actor of a batch: one CAF actor per batch with work on this node, from its validation
/// to its terminal state (lifecycle, layout and recovery: docs/batches.md). It owns the batch's
/// progress: the input file and the plans, one lane per model with the lane's budget slots and
/// its next plan entry, the requests in flight and their abort handles, the results waiting for
/// their commit, the completion-window timer, and draining and finalization with their retries.
///
/// It claims the batch's id in the job registry (actors/job_registry.hpp) before it does
/// anything, so at most one runs per batch here; cancel, expiry and shutdown reach it by message.
/// Commits go through the storage writer; each result line is recorded exactly once (the first
/// commit per line wins, storage/batch_ops.hpp), so an actor that dies with the process loses
/// nothing: the next start resumes the batch from its record and its plan files.
///
/// What blocks runs elsewhere and answers by message: ingestion, loading the plans, draining and
/// writing the result files on the batch manager's blocking thread (`batch_plans`,
/// `drained_lines`, `written_files`); the requests on their gateway client's executor, a window of
/// lines per slot sent back to back (`window_done`). Each lane asks its model's dispatcher for
/// slots by message. Reading a plan entry (a buffered read, local disk) is done in the handler,
/// as the reaper's short LMDB reads are.
///
/// Files: batch_actor.cpp (start, ingestion, plans, control messages, failure),
/// batch_lanes.cpp (lanes, slots, requests, recording results), batch_finalize.cpp (draining,
/// the result files, finalization, retries); the state in actors/detail/batch_state.hpp.

#include <utility>  // before any Asio header (Boost 1.74)

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include <boost/asio/any_io_executor.hpp>
#include <caf/typed_actor.hpp>

#include "actors/ambient.hpp"
#include "actors/dispatcher_directory.hpp"
#include "actors/gateway_table.hpp"
#include "actors/job_registry.hpp"
#include "actors/slots.hpp"
#include "actors/storage_writer.hpp"
#include "runtime/batch_plan.hpp"
#include "runtime/gateway_client.hpp"
#include "storage/batch_ops.hpp"
#include "storage/batch_records.hpp"
#include "storage/inspect.hpp"

namespace sy::actors {

/// The batch's plans — ingested from the input file now (`ingested`), or loaded from the plan
/// files after a restart — or why they could not be had (`failure`: an I/O error).
struct batch_plans {
  bool ingested = false;
  runtime::batch::ingest_result plans;
  std::string failure;

  bool operator==(const batch_plans&) const = default;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, batch_plans& x) {
  return f(x.ingested, x.plans, x.failure);
}

/// Results of a window of lines (`key`) that one slot of a lane sends back to back on its
/// gateway client's executor: the result line of each line that ended since the last report (an
/// aborted one has none: it is drained with the stop code, or runs again after a restart). The
/// `last` report of the window also says how many of its lines were started (those not started
/// go back to the lane), how long they took by the clock's monotonic reading (the lane sizes its
/// next windows from it), and why the window stopped when a line could not be read or parsed.
struct window_done {
  uint64_t key = 0;
  std::vector<storage::batch_line> lines;
  bool last = true;
  uint32_t started = 0;
  int64_t elapsed_us = 0;
  std::string failure;

  bool operator==(const window_done&) const = default;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, window_done& x) {
  return f(x.key, x.lines, x.last, x.started, x.elapsed_us, x.failure);
}

/// The next chunk of error lines for lines that never ran; no lines and no failure: every line
/// has its result.
struct drained_lines {
  std::vector<storage::batch_line> lines;
  std::string failure;

  bool operator==(const drained_lines&) const = default;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, drained_lines& x) {
  return f(x.lines, x.failure);
}

/// What one finalization try wrote: a record per file now in place, and why a file could not be
/// written (empty when it could).
struct written_files {
  std::optional<storage::file_record> output, error;
  std::string output_failure, error_failure;
  int64_t output_lines = 0, error_lines = 0;  ///< lines each file holds (or would have held)

  bool operator==(const written_files&) const = default;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, written_files& x) {
  return f(storage::optional_field{x.output}, storage::optional_field{x.error}, x.output_failure,
           x.error_failure, x.output_lines, x.error_lines);
}

/// Receives the control messages of every job (`cancel`: the batch's cancel committed;
/// `expire`: its completion window passed; `release`: shutdown; `beat`: ignored), `flush`
/// (commit the results gathered), `tick` (a retry's pause is
/// over) and the answers of what it runs elsewhere. As a holder of model slots (one key per
/// lane): grants and yields from the models' dispatchers (actors/slots.hpp).
using batch_actor = job_control_actor::extend<
    caf::reacts_to<slot_atom, uint64_t, int32_t>, caf::reacts_to<yield_atom, uint64_t, int32_t>,
    caf::reacts_to<flush_atom>, caf::reacts_to<tick_atom>, caf::reacts_to<batch_plans>,
    caf::reacts_to<window_done>, caf::reacts_to<drained_lines>, caf::reacts_to<written_files>>;

/// How a batch's draining and finalization are retried when they fail (a full disk, an I/O
/// error, a storage that cannot commit): `tries` in all, waiting `initial` before the second
/// and twice as long before each next one, at most `max`. The default gives up after about four
/// minutes; then the batch ends `failed` with what could be kept (docs/batches.md).
struct batch_retry_policy {
  int tries = 10;
  std::chrono::milliseconds initial{1'000};
  std::chrono::milliseconds max{60'000};
};

/// The retry policy of draining and finalization (tests shorten it while batches run) and the
/// count of tries that failed (tests): test knobs shared by the batch manager and the batch
/// actors, read when a try fails.
class batch_tries {
 public:
  void set_policy(batch_retry_policy p) {
    std::lock_guard lock{mu_};
    policy_ = p;
  }
  batch_retry_policy policy() const {
    std::lock_guard lock{mu_};
    return policy_;
  }
  void failed() { ++failed_; }
  uint64_t failed_count() const { return failed_; }

 private:
  mutable std::mutex mu_;
  batch_retry_policy policy_;  ///< guarded by mu_
  std::atomic<uint64_t> failed_{0};
};

/// Where the Files and Batch API keeps bytes, under the data dir: `files/<file id>` (uploaded
/// and produced files) and `batches/<batch id>/` (a batch's plans while it runs).
struct batch_paths {
  std::string files_dir;
  std::string batches_dir;
  std::string file(const std::string& id) const { return files_dir + "/" + id; }
  std::string batch(const std::string& id) const { return batches_dir + "/" + id; }
};

/// What a batch's actor uses: the store it reads its batch and lines from, the writer of its
/// commits, the registry it claims its id in, the dispatcher directory its lanes ask for their
/// models' dispatchers, the gateways, the engine's shutdown flag, the executor its blocking
/// steps run on (ingestion, draining, the result files), where its files are, and the retry
/// knobs. Shared by every batch actor of an engine.
struct batch_deps {
  const ambient* at = nullptr;
  storage::environment* env = nullptr;
  storage_writer_actor writer;
  job_registry_actor jobs;
  dispatcher_directory_actor dispatchers;
  const gateway_table* gateways = nullptr;
  const std::atomic<bool>* stopping = nullptr;
  boost::asio::any_io_executor blocking;
  batch_paths paths;
  std::shared_ptr<batch_tries> tries;
};

/// Spawns the actor of batch `id`. It ends at once when another actor runs the batch here, or
/// when the batch is terminal. `patient` (a rerun): the actor of the run that just ended may
/// still hold the batch's claim for a moment, so a refused claim is tried again for about 2 s.
batch_actor spawn_batch_actor(std::shared_ptr<const batch_deps> d, std::string id,
                              bool patient = false);

}  // namespace sy::actors
