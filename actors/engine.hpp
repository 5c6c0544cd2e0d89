#pragma once
/// The engine: the actor system and all it runs — writer, relay, reaper, the dispatcher directory,
/// the batch manager (an actor behind actors/batch_front.hpp), the Asio threads that run attempts.
/// It implements `job_service` for the API. Start with `engine::start`, stop with `shutdown()`
/// (graceful) before destroying it.

#include <utility>

#include <atomic>
#include <chrono>
#include <map>
#include <memory>
#include <set>
#include <thread>
#include <vector>

#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <caf/actor_system.hpp>
#include <caf/actor_system_config.hpp>

#include "actors/batch_front.hpp"
#include "actors/credential_minter.hpp"
#include "actors/engine_context.hpp"
#include "actors/job_service.hpp"
#include "actors/lease_reaper.hpp"
#include "actors/outbox_relay.hpp"
#include "actors/storage_writer.hpp"
#include "actors/webhook_deliverer.hpp"
#include "actors/worker_service.hpp"
#include "config/s3_scope.hpp"
#include "runtime/metrics.hpp"
#include "runtime/ulid.hpp"
#include "runtime/webhook_policy.hpp"

namespace sy::actors {

class engine final : public job_service, public worker_service {
 public:
  /// Everything the engine runs on; all must outlive the engine.
  struct deps {
    const config::settings& cfg;
    storage::environment& env;
    runtime::js_client& js;
    const runtime::clock& clock;
  };

  static result<std::unique_ptr<engine>> start(deps d);
  ~engine() override;

  const runtime::clock& clock() const override { return deps_.clock; }

  boost::asio::awaitable<result<submit_outcome>> submit(admitted<submission> in) override;
  result<storage::job_record> get(const std::string& tenant, const std::string& id) override;
  boost::asio::awaitable<result<storage::job_record>> wait_terminal(
      std::string tenant, std::string id, std::chrono::milliseconds timeout) override;
  boost::asio::awaitable<result<event_batch>> next_events(
      std::string tenant, std::string id, uint64_t after_seq,
      std::chrono::milliseconds timeout) override;
  boost::asio::awaitable<result<storage::job_record>> cancel(std::string tenant,
                                                             std::string id) override;
  result<job_page> list(const std::string& tenant, std::optional<storage::job_status> status,
                        std::optional<storage::job_kind> kind, int limit,
                        const std::string& after) override;
  result<task_page> list_tasks(const std::string& tenant, const std::string& id,
                               std::optional<storage::job_status> status, int limit,
                               const std::string& after) override;
  result<task_page> get_task(const std::string& tenant, const std::string& id,
                             const std::string& task) override;
  boost::asio::awaitable<result<storage::job_record>> remove(std::string tenant,
                                                             std::string id) override;
  boost::asio::awaitable<result<storage::job_record>> rerun(std::string tenant,
                                                            std::string id) override;
  boost::asio::awaitable<result<storage::job_record>> append(std::string id,
                                                             admitted<task_append> in) override;

  // The worker protocol (engine_workers.cpp, docs/workers.md).
  boost::asio::awaitable<result<lease_reply>> lease(
      admitted<worker_request> call, std::shared_ptr<caller_presence> caller) override;
  boost::asio::awaitable<result<heartbeat_answer>> heartbeat(
      admitted<worker_request> call) override;
  boost::asio::awaitable<status> complete(admitted<worker_request> call) override;
  boost::asio::awaitable<status> fail(admitted<worker_request> call) override;
  boost::asio::awaitable<result<storage_credentials>> credentials(
      admitted<worker_request> call) override;
  boost::asio::awaitable<result<std::string>> jwks() override;
  boost::asio::awaitable<result<std::string>> rotate_keys() override;
  /// The Files and Batch API of this engine.
  batch_service& batches() { return *batches_; }

  /// Ready to run work: storage open, NATS connected with the streams in place, and this store's
  /// claim on the streams held (js_client::consuming(); docs/jetstream.md, "Several engines").
  bool ready() const;
  /// Stops dispatching, lets running attempts finish up to `shutdown_timeout_ms`, gives the rest
  /// back to the queue, publishes what the outbox holds, and stops every actor. Idempotent.
  void shutdown();

 private:
  explicit engine(deps d);
  /// Submission checks (engine_tasks.cpp for lists): the job's webhook URL (the configured
  /// default when the submission has none; checked against the network policy), and the queues
  /// of its models, asked of the dispatcher directory — each must have a gateway, and together
  /// they stay within max_models (`params[i]` names model i in an error). Afterwards every
  /// model's queue is taken.
  result<std::string> job_webhook(const submission& s) const;
  /// Job `id` of `tenant` as clients see it (a batch as a job), or nothing (another tenant's,
  /// deleted, or none).
  std::optional<storage::job_record> read_job(const storage::txn_view& txn,
                                              const std::string& tenant,
                                              const std::string& id) const;
  /// Cancels batch `id` as a job (engine_jobs.cpp): answers it in the job vocabulary.
  boost::asio::awaitable<result<storage::job_record>> cancel_batch(std::string tenant,
                                                                   std::string id);
  /// Reruns batch `id` as a job (engine_jobs.cpp; docs/batches.md, "Rerun").
  boost::asio::awaitable<result<storage::job_record>> rerun_batch(std::string tenant,
                                                                  std::string id);
  boost::asio::awaitable<status> queue_models(std::vector<std::string> models,
                                              std::vector<std::string> params);
  boost::asio::awaitable<result<submit_outcome>> submit_list(submission s);
  /// The path of a submission's staged list (`input_file_id`: a file of the tenant with purpose
  /// "tasks"); empty without one. Errors: file_not_found, invalid_tasks.
  result<std::string> uploaded_list(const submission& s);
  /// The ingest actor of a staged task list (list_ingest.hpp); at start, one per list of
  /// db::list_ingest.
  void start_ingest(const std::string& job_id);
  void resume_ingests();
  /// Commits a change to job `id` through its owner (actors/job_owner.hpp), which stops what the
  /// change names of the job's attempts here before it answers (a batch's changes are the batch
  /// manager's: actors/batch_manager.hpp).
  boost::asio::awaitable<result<write_reply>> ask_owner(storage::write_op op,
                                                        const std::string& id);
  /// Commits an operation on job `id` (append, delete, rerun) with ask_owner: `not_found`
  /// becomes job_not_found ("no <what> with id ..."), `refused` its refusal; otherwise the reply.
  boost::asio::awaitable<result<storage::op_reply>> commit_job_op(storage::write_op op,
                                                                  const std::string& id,
                                                                  std::string_view what);
  /// A new job's record with what every submission sets (id, tenant, options, grants, times).
  storage::job_record new_job(const submission& s, std::string webhook_url);
  /// Commits `req` (a create) and turns its reply into the submit's outcome.
  boost::asio::awaitable<result<submit_outcome>> commit_create(write_request req,
                                                               const std::string& key);
  /// A runtime job's queue (`runtime_queue(s.runtime)`), its max_attempts defaulted from the
  /// runtime. Errors: runtime_not_found.
  result<std::string> runtime_model(submission& s) const;
  /// The attempt a token names, when the minter accepts it. Errors: invalid_capability_token.
  boost::asio::awaitable<result<runtime::capability_claims>> verified(std::string token);
  /// Commits a worker's op on its attempt: `stale`/`not_found` become stale_attempt (or
  /// lease_expired once the token's lease end has passed), `refused` its refusal.
  boost::asio::awaitable<status> commit_attempt_op(storage::write_op op,
                                                   const runtime::capability_claims& c);
  /// The outcome op of a worker's attempt, fenced by its token's lease and refused once the lease
  /// ran out; the caller sets how it ended.
  storage::finish_attempt_op worker_outcome(const runtime::capability_claims& c) const;
  /// OK while the token's attempt holds its task's lease (read from the store): stale_attempt or
  /// lease_expired otherwise.
  status holds_lease(const runtime::capability_claims& c) const;
  /// The credential minter and one queue per configured runtime; stopped with the actors.
  status start_workers();
  void stop_workers();
  // Steps of start():
  void spawn_storage_actors();  ///< the storage writer, the job registry and the outbox relay
  /// The dispatcher directory; every model seen before or configured gets a dispatcher that
  /// takes its queue. Returns how many models' queues are taken.
  int32_t start_dispatchers();
  void start_metrics();  ///< the limits, and the gauges read at scrape time (engine_metrics.cpp)
  // Steps of shutdown(), in order:
  /// True once no job has work in flight here (the registry answers when its last job ends).
  bool jobs_drained(std::chrono::milliseconds within);
  void stop_jobs();       ///< batches stop; attempts finish within the grace or are released
  void flush_outbox();    ///< the relay publishes what the outbox holds; its deletions commit
  void drain_webhooks();  ///< deliveries in flight end; the deliverer stops
  void
  stop_actors();  ///< the directory (dispatchers), global budget, reaper, relay, writer, registry

  /// Reads the bodies of the page's results that live in the job's result segment.
  status load_results(task_page& page) const;
  /// A batch's lines as tasks (engine_batch_tasks.cpp; docs/batches.md, "A batch as a job").
  result<task_page> list_batch_tasks(const std::string& tenant, const std::string& id,
                                     std::optional<storage::job_status> status, int limit,
                                     const std::string& after);
  result<task_page> get_batch_task(const std::string& tenant, const std::string& id,
                                   const std::string& task);
  /// DELETE of a finished batch (engine_jobs.cpp): its record, lines and events; not its files.
  boost::asio::awaitable<result<storage::job_record>> remove_batch(std::string tenant,
                                                                   std::string id);

  deps deps_;
  /// Task-list result bodies over `inline_result_bytes`: written by the storage writer, read by
  /// list_tasks and get_task.
  std::shared_ptr<storage::result_segments> results_;
  /// Released with the system at shutdown, never destroyed: the system's last threads still read
  /// it (engine::shutdown).
  std::unique_ptr<caf::actor_system_config> caf_cfg_ = std::make_unique<caf::actor_system_config>();
  std::unique_ptr<caf::actor_system> sys_;
  boost::asio::io_context exec_;
  std::optional<boost::asio::executor_work_guard<boost::asio::io_context::executor_type>> work_;
  std::vector<std::thread> exec_threads_;
  std::unique_ptr<engine_context> ctx_;
  runtime::ulid_generator ids_;
  outbox_relay_actor relay_;
  lease_reaper_actor reaper_;
  runtime::webhook_policy webhook_policy_;
  runtime::webhook_policy http_task_policy_;  ///< submissions' http tasks are checked against it
  webhook_deliverer_actor webhooks_;          ///< set once at start, kept until destruction
  std::atomic<bool> webhooks_ready_{false};   ///< webhooks_ is set (shutdown drains it)
  /// The batch manager's actor and the Files and Batch API's read model (actors/batch_front.hpp).
  std::unique_ptr<batch_front> batches_;
  /// The models whose queues the dispatcher directory took: published by it, read by the HTTP
  /// threads (queue_models) without a message.
  std::shared_ptr<queued_models> queued_ = std::make_shared<queued_models>();
  std::atomic<bool> shut_down_{false};
  credential_minter_actor minter_;                       ///< set once at start
  std::map<std::string, runtime_queue_actor> runtimes_;  ///< by runtime name, set once at start
  std::atomic<uint64_t> lease_calls_{0};                 ///< names long polls for `withdraw`
  /// tenant_storage_prefixes, parsed (validate() checked every one): set once at start.
  std::map<std::string, std::vector<config::s3_prefix>> storage_prefixes_;
  std::unique_ptr<runtime::outbound_client> sts_;       ///< sends the minter's STS calls
  std::vector<metrics::reader_handle> metric_readers_;  ///< dropped first at shutdown
};

}  // namespace sy::actors
