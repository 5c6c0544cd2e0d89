#pragma once
/// What the API and the engine hold of the batch manager (actors/batch_manager.hpp): its actor's
/// handle, the read model of the Files and Batch API, and the thread its file I/O runs on.
///
/// Reads (`batch_reads`: get_file, list_files, get_batch, list_batches, file_path, upload_dir)
/// only read LMDB and compute paths: plain functions any thread may call at once (LMDB readers
/// are concurrent). Every call that changes something (create_file, delete_file, create_batch,
/// cancel_batch, rerun_batch) is a request to the manager's actor, asked from the caller's
/// coroutine (actors/ask.hpp); `batch_front` holds no state of the manager's.

#include <utility>  // before any Asio header (Boost 1.74)

#include <chrono>
#include <memory>
#include <optional>
#include <string>

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/thread_pool.hpp>

#include "actors/batch_manager.hpp"
#include "actors/batch_service.hpp"

namespace sy::actors {

/// The read model of the Files and Batch API: short LMDB read transactions, from any thread.
class batch_reads {
 public:
  explicit batch_reads(const batch_deps& d);

  /// Where uploads in progress are written (`files/uploads/`).
  std::string upload_dir() const;
  std::string file_path(const std::string& id) const { return paths_.file(id); }
  /// Where batch `id`'s plans are while it runs (`batches/<id>/`).
  std::string batch_dir(const std::string& id) const { return paths_.batch(id); }
  /// Errors: file_not_found (also another tenant's file, or one that has expired).
  result<storage::file_record> get_file(const std::string& tenant, const std::string& id) const;
  result<file_page> list_files(const std::string& tenant, const std::string& purpose,
                               bool ascending, const std::string& after, int limit) const;
  /// Errors: batch_not_found (also another tenant's).
  result<storage::batch_record> get_batch(const std::string& tenant, const std::string& id) const;
  result<batch_page> list_batches(const std::string& tenant, const std::string& after,
                                  int limit) const;

 private:
  storage::environment* env_;
  const runtime::clock* clock_;
  batch_paths paths_;
};

/// `batch_service` for the API and the engine: reads from the read model, changes asked of the
/// manager's actor. Owned by the engine; made before the API serves, destroyed after the actors
/// stopped (its destructor joins the blocking thread).
class batch_front final : public batch_service {
 public:
  /// Spawns the manager (not started). `webhooks` outlives this object.
  batch_front(const engine_context& ctx, storage::environment& env,
              const runtime::webhook_policy& webhooks);
  ~batch_front() override;
  batch_front(const batch_front&) = delete;
  batch_front& operator=(const batch_front&) = delete;

  /// Asks the manager to start (recovery) and waits for it. Call once, after the storage
  /// writer runs and before the API serves.
  status start();
  /// Asks the manager to stop (no batch starts any more, the sweep ends) and waits for it.
  void stop();
  /// Ends the manager's actor (the engine's shutdown, with the other actors); requests after it
  /// fail at once.
  void end();

  std::string upload_dir() const override { return reads_.upload_dir(); }
  std::string file_path(const std::string& id) const override { return reads_.file_path(id); }
  const batch_reads& reads() const { return reads_; }
  boost::asio::awaitable<result<storage::file_record>> create_file(
      admitted<staged_file> upload) override;
  result<storage::file_record> get_file(const std::string& tenant, const std::string& id) override {
    return reads_.get_file(tenant, id);
  }
  result<file_page> list_files(const std::string& tenant, const std::string& purpose,
                               bool ascending, const std::string& after, int limit) override {
    return reads_.list_files(tenant, purpose, ascending, after, limit);
  }
  boost::asio::awaitable<result<storage::file_record>> delete_file(std::string tenant,
                                                                   std::string id) override;
  boost::asio::awaitable<result<storage::batch_record>> create_batch(
      admitted<batch_request> in) override;
  result<storage::batch_record> get_batch(const std::string& tenant,
                                          const std::string& id) override {
    return reads_.get_batch(tenant, id);
  }
  result<batch_page> list_batches(const std::string& tenant, const std::string& after,
                                  int limit) override {
    return reads_.list_batches(tenant, after, limit);
  }
  boost::asio::awaitable<result<storage::batch_record>> cancel_batch(std::string tenant,
                                                                     std::string id) override;

  /// POST /v1/jobs/{id}/rerun of a finished batch (docs/batches.md, "Rerun"): the manager
  /// commits its new run (storage::rerun_batch_op: `in_progress` again, its completion window
  /// restarted) and starts its actor, which runs the lines of its error file again. Errors:
  /// batch_not_found (unknown, another tenant's), job_not_rerunnable (not finished, failed
  /// validation, no error file, its input, output or error file deleted),
  /// storage_unavailable, shutting_down.
  boost::asio::awaitable<result<storage::batch_record>> rerun_batch(std::string tenant,
                                                                    std::string id);
  /// DELETE /v1/jobs/{id} of a batch (docs/batches.md, "A batch as a job"): the manager deletes
  /// a finished batch's record, listing entry, events and lines (not its files). Errors:
  /// job_not_found (unknown, another tenant's), job_not_deletable (not finished),
  /// storage_unavailable, shutting_down.
  boost::asio::awaitable<result<storage::batch_record>> delete_batch(std::string tenant,
                                                                     std::string id);

  /// Replaces the retry policy of draining and finalization (tests shorten it); takes effect
  /// for the next try.
  void set_retry_policy(batch_retry_policy p) { tries_->set_policy(p); }
  batch_retry_policy retry_policy() const { return tries_->policy(); }
  /// What each batch actor gets (flow tests spawn one themselves).
  std::shared_ptr<const batch_deps> actor_deps() const { return deps_; }
  /// Tries to drain or finalize a batch that failed so far (tests, metrics).
  uint64_t failed_tries() const { return tries_->failed_count(); }

 private:
  template <class T, class Request>
  boost::asio::awaitable<result<T>> ask_manager(Request r);

  caf::actor_system& sys_;
  boost::asio::thread_pool pool_{1};  ///< the blocking thread: file I/O of the manager and batches
  std::shared_ptr<batch_tries> tries_ = std::make_shared<batch_tries>();
  std::shared_ptr<const batch_deps> deps_;
  batch_reads reads_;
  batch_manager_actor actor_;
};

}  // namespace sy::actors
