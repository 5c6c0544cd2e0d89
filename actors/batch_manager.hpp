#pragma once
/// The batch manager: implements `batch_service` for the API and runs every batch that is not
/// terminal — one job actor per batch (actors/batch_actor.hpp), registered in the job registry
/// like every job with work on this node. A batch's actor ingests the
/// input file (plans per model, runtime/batch_plan.hpp), dispatches each model's plan in
/// prefix-hash order under the per-model and global budgets, records each result line exactly
/// once (storage/batch_ops.hpp), stops on cancel, expiry or failure (draining undispatched lines
/// with the stop code), and finalizes the output and error files — retrying a drain or
/// finalization that fails (batch_retry_policy) before it fails the batch. Lifecycle, layout and
/// recovery: docs/batches.md.
///
/// Files on disk, under the data dir: `files/<file id>` (uploaded and produced files),
/// `files/uploads/` (uploads in progress), `batches/<batch id>/` (plans while a batch runs).

#include <utility>

#include <atomic>
#include <chrono>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/thread_pool.hpp>

#include "actors/batch_actor.hpp"
#include "actors/batch_service.hpp"
#include "actors/engine_context.hpp"
#include "runtime/ulid.hpp"
#include "runtime/webhook_policy.hpp"
#include "storage/ops.hpp"

namespace sy::actors {

class batch_manager final : public batch_service {
 public:
  /// `webhooks`: the network policy a batch's webhook URL is checked against. `blocking`: where
  /// ingestion, draining and finalization run; none: a thread of its own. Flow tests on CAF's
  /// test coordinator pass the execution context their thread runs.
  batch_manager(engine_context& ctx, storage::environment& env,
                const runtime::webhook_policy& webhooks,
                std::optional<boost::asio::any_io_executor> blocking = std::nullopt);
  ~batch_manager() override;
  batch_manager(const batch_manager&) = delete;
  batch_manager& operator=(const batch_manager&) = delete;

  /// Creates the directories, removes leftovers of a crash (partial uploads, files without a
  /// record, plans of finished batches), resumes every batch that is not terminal and starts the
  /// file-expiry sweep. Call once, after the storage writer runs and before the API serves.
  status start();
  /// Shutdown: no batch starts any more and the file-expiry sweep ends. The batches' actors are
  /// stopped through the job registry (`release`): they abort their requests without recording
  /// anything for them (they run again after the restart).
  void stop();

  std::string upload_dir() const override;
  std::string file_path(const std::string& id) const override;
  /// Where batch `id`'s plans are while it runs (`batches/<id>/`).
  std::string batch_dir(const std::string& id) const { return deps_->paths.batch(id); }
  boost::asio::awaitable<result<storage::file_record>> create_file(
      admitted<staged_file> upload) override;
  result<storage::file_record> get_file(const std::string& tenant, const std::string& id) override;
  result<file_page> list_files(const std::string& tenant, const std::string& purpose,
                               bool ascending, const std::string& after, int limit) override;
  boost::asio::awaitable<result<storage::file_record>> delete_file(std::string tenant,
                                                                   std::string id) override;
  boost::asio::awaitable<result<storage::batch_record>> create_batch(
      admitted<batch_request> in) override;
  result<storage::batch_record> get_batch(const std::string& tenant,
                                          const std::string& id) override;
  result<batch_page> list_batches(const std::string& tenant, const std::string& after,
                                  int limit) override;
  boost::asio::awaitable<result<storage::batch_record>> cancel_batch(std::string tenant,
                                                                     std::string id) override;

  /// POST /v1/jobs/{id}/rerun of a finished batch (docs/batches.md, "Rerun"): commits its new
  /// run (storage::rerun_batch_op: `in_progress` again, its completion window restarted) and
  /// starts its actor, which runs the lines of its error file again. Errors: batch_not_found
  /// (unknown, another tenant's), job_not_rerunnable (not finished, failed validation, no error
  /// file, its input, output or error file deleted), storage_unavailable, shutting_down.
  boost::asio::awaitable<result<storage::batch_record>> rerun_batch(std::string tenant,
                                                                    std::string id);

  /// Replaces the retry policy of draining and finalization (tests shorten it); takes effect
  /// for the next try.
  void set_retry_policy(batch_retry_policy p);
  batch_retry_policy retry_policy() const;
  /// What each batch actor it spawns gets (flow tests spawn one themselves).
  std::shared_ptr<const batch_deps> actor_deps() const { return deps_; }
  /// Tries to drain or finalize a batch that failed so far (tests, metrics).
  uint64_t failed_tries() const { return tries_->failed_count(); }

 private:
  /// Commits one operation through the storage writer.
  boost::asio::awaitable<result<storage::op_reply>> commit(storage::write_op op);
  /// Spawns the batch's actor (it ends at once when one already runs the batch; `patient`:
  /// spawn_batch_actor's).
  void launch(const std::string& batch_id, bool patient = false);
  boost::asio::awaitable<void> sweep_expired_files();
  /// The batch, whichever tenant owns it.
  std::optional<storage::batch_record> get_batch_any(const std::string& id) const;

  engine_context& ctx_;
  storage::environment& env_;
  const runtime::webhook_policy& webhooks_;
  std::string files_dir_;
  std::string uploads_dir_;
  std::string batches_dir_;
  runtime::ulid_generator ids_;
  boost::asio::thread_pool pool_{1};       ///< the blocking thread, unless `blocking` was given
  boost::asio::any_io_executor blocking_;  ///< ingestion, draining and finalization file I/O
  std::atomic<bool> stopping_{false};
  std::shared_ptr<batch_tries> tries_ = std::make_shared<batch_tries>();
  std::shared_ptr<const batch_deps> deps_;       ///< what every batch actor it spawns gets
  std::shared_ptr<runtime::timer> sweep_timer_;  ///< the file-expiry sweep's wait (on its strand)
};

}  // namespace sy::actors
