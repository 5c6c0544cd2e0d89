#pragma once
/// One batch in flight (the job actor of DESIGN.md for batches): ingests the input file, runs
/// one lane per model under the per-model and global budgets, records each result line exactly
/// once, stops on cancel, expiry, failure or shutdown, drains the lines that never ran and
/// finalizes the output and error files. Lifecycle and recovery: docs/batches.md.
///
/// Owner: the batch manager (actors/batch_manager.hpp) makes one per batch that is not terminal,
/// keeps it in its table while `run` is under way, and talks to it only through `run`, `stop`
/// and `ended`, each on `strand`.
///
/// Threads: every member belongs to `strand`, except what the lanes touch from their gateway
/// clients' strands — `halted` (atomic) and what `mu` guards — and what the blocking pool's
/// tasks read (`fd`, `id`, the plans and the storage environment). Files:
///   batch_runner.cpp    run, ingestion, the completion window, stop and failure
///   batch_lanes.cpp     the lanes and their workers, budget slots, requests, recording results
///   batch_finalize.cpp  draining, writing the result files, finalization, retries

#include <utility>  // before any Asio header (Boost 1.74 coroutine support needs it)

#include <array>
#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include <boost/asio/awaitable.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>
#include <boost/asio/use_awaitable.hpp>

#include "actors/batch_manager.hpp"
#include "runtime/batch_plan.hpp"
#include "runtime/batch_render.hpp"
#include "runtime/clock.hpp"
#include "runtime/gateway_client.hpp"
#include "storage/batch_ops.hpp"

namespace sy::actors {

struct batch_runner : std::enable_shared_from_this<batch_runner> {
  template <class T>
  using awaitable = boost::asio::awaitable<T>;
  using strand_type = boost::asio::strand<boost::asio::io_context::executor_type>;
  using ingest_result = runtime::batch::ingest_result;

  batch_runner(batch_manager& m, std::string id);

  // --- What the batch manager calls (on `strand`) ---------------------------------------------

  /// Runs the batch from where its record says it is until it is terminal, or until the engine
  /// shuts down (it resumes at the next start).
  awaitable<void> run();
  /// Stops dispatch: `code` for cancel/expiry/failure, empty for shutdown.
  void stop(const std::string& code);
  /// `run` ended (or threw): cancels the completion-window wait and closes the input file.
  void ended();

  batch_manager& mgr;
  const std::string id;
  strand_type strand;

  // --- Run (batch_runner.cpp) ------------------------------------------------------------------

  bool stopped() const { return !stop_code.empty() || shutting_down; }
  /// Fails the batch (commits batch_failed with `message`) and stops it; from any executor.
  awaitable<void> fail(std::string message);
  /// Expires the batch when its completion window ends first.
  awaitable<void> watch_deadline(int64_t deadline_ms);
  /// Scans and validates the input file into plans and commits the outcome; true when the batch
  /// is valid and in progress.
  awaitable<bool> ingest(const storage::batch_record& b);
  /// The batch's plans; nothing when they cannot be loaded (the batch then failed).
  awaitable<std::optional<ingest_result>> load_plans();
  /// Opens the input file into `fd`; fails the batch when it cannot.
  awaitable<void> open_input(const std::string& file_id);
  /// Runs every model's lane and waits until they ended and their results are committed.
  awaitable<void> dispatch(const ingest_result& p);
  /// Closes the input file, once: `fd` is -1 afterwards, so a later call cannot close a
  /// descriptor that another thread has opened under the same number meanwhile.
  void close_input();

  const std::array<uint64_t, 2> id_seed = runtime::batch::request_id_seed(id);  ///< request ids
  /// Never expires (set once to the maximum); cancel() wakes every wait on it, each of which
  /// re-checks its condition. Cancelled when a lane, a request or a commit of results ends.
  boost::asio::steady_timer wake;
  std::unique_ptr<runtime::timer> deadline;  ///< the completion window's end (ctx.clock's)
  std::unique_ptr<runtime::timer> pause;     ///< the wait before a drain or finalization is retried
  std::string endpoint;
  std::string stop_code;  ///< set when dispatch must stop (cancel, expiry, failure)
  bool shutting_down = false;
  int fd = -1;
  int lanes = 0;       ///< lanes still dispatching
  bool fresh = false;  ///< no line had a result when the run began: skip the per-line check

  // --- Lanes (batch_lanes.cpp) -----------------------------------------------------------------

  /// What one lane's workers share; touched only on the lane's executor.
  struct lane_state {
    runtime::batch::plan_reader reader;
    std::string model;
    uint64_t model_index = 0;
    uint64_t position = 0;  ///< entries of the plan read so far
    runtime::gateway_client* gw = nullptr;
    global_budget* per_model = nullptr;
    global_budget* global = nullptr;
  };

  /// Dispatches one model's plan with as many workers as its budgets allow.
  awaitable<void> lane(runtime::batch::model_plan model, uint64_t model_index);
  awaitable<void> worker(lane_state& lane);
  /// The next line of the lane's plan that has no result yet; false at the end or when halted.
  bool next_line(lane_state& lane, runtime::batch::plan_entry& e, uint64_t& slot);
  awaitable<bool> take(global_budget& budget);
  /// Sends one line to the gateway and records its result.
  awaitable<void> request(std::string model, runtime::gateway_client* gw,
                          runtime::batch::plan_entry e, uint64_t slot);
  /// Hands a result to the next commit of results.
  void record(storage::batch_line line);
  awaitable<void> record_loop();
  /// Waits until every result handed to `record` is committed.
  awaitable<void> recorded();

  /// Set by stop(): lanes run on their gateway clients' strands and read this instead of
  /// stop_code / shutting_down, which belong to `strand`.
  std::atomic<bool> halted{false};
  /// Guards what the lanes and requests touch from their own executors: inflight,
  /// next_request, waiting, unrecorded, recording. Everything else belongs to the strand.
  std::mutex mu;
  uint64_t next_request = 0;
  std::map<uint64_t, std::shared_ptr<runtime::abort_handle>> inflight;
  /// Budget waits, each cancelled on its own executor when the runner stops.
  std::set<std::shared_ptr<boost::asio::steady_timer>> waiting;
  std::vector<storage::batch_line> unrecorded;  ///< results waiting for the next commit
  bool recording = false;                       ///< a commit of results is under way

  // --- After dispatch (batch_finalize.cpp): drain, write the files, make the batch terminal.
  // Each step is retried with backoff (batch_retry_policy) instead of leaving the batch stuck
  // until a restart.

  /// What one finalization try wrote: a record per file now in place, and why a file could not
  /// be written (empty when it could).
  struct written_files {
    std::optional<storage::file_record> output, error;
    std::string output_failure, error_failure;
  };
  /// Dispatch ended: every line has a result, or a stop code says why some never ran. Drains
  /// those into the error file, then finalizes.
  awaitable<void> finish(const std::optional<ingest_result>& p);
  awaitable<std::string> drain(const ingest_result& p);
  /// "" once drained; why the last try failed when the tries ran out; nothing when the engine
  /// began shutting down (the batch resumes at the next start).
  awaitable<std::optional<std::string>> drain_with_retries(const ingest_result& p);
  /// Logs failed try `tries` of `what` and waits the policy's delay; false when the engine began
  /// shutting down.
  awaitable<bool> back_off(int tries, const char* what, const std::string& failure);
  /// One try: "" once the batch is terminal, else why it is not (what it wrote is removed). On
  /// the `last` try a file that cannot be written is given up: the batch ends failed with the
  /// files that could be written and a batch_failed error saying what was lost (`undrained`:
  /// why the drain gave up, also reported there).
  awaitable<std::string> finalize(const std::string& undrained, int tries, bool last);
  awaitable<void> finalize_with_retries(std::string undrained);
  /// Streams the recorded lines into the output and error files (on the blocking pool).
  written_files write_files(const storage::batch_record& b, const std::string& out_id,
                            const std::string& err_id, int64_t now_s);
  /// Removes the files of `w` that are in place (not referenced by any record).
  void remove(const written_files& w) const;

  // --- Helpers ---------------------------------------------------------------------------------

  /// Runs `fn` on the blocking pool and resumes on the strand with its result.
  template <class F>
  auto blocking(F fn) -> awaitable<decltype(fn())> {
    using T = decltype(fn());
    // Boxed: co_spawn's result must be default-constructible, a result<T> is not.
    // Named, not a temporary in the co_await expression (GCC 12 destroys such temporaries twice).
    auto task = [fn = std::move(fn)]() mutable -> awaitable<std::optional<T>> {
      co_return std::optional<T>(fn());
    };
    auto box =
        co_await boost::asio::co_spawn(mgr.blocking_, std::move(task), boost::asio::use_awaitable);
    co_return std::move(*box);
  }

  std::string plans_dir() const { return mgr.batch_dir(id); }
};

}  // namespace sy::actors
