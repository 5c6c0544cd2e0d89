#pragma once
/// The actors' message flows on CAF's test coordinator (issue 16, item 5): every actor runs on
/// the test's thread when the test runs the scheduler, and time moves only when the test
/// advances the manual clock (the engine's timers) or triggers CAF's delayed messages.
///
/// Real parts: a nats-server on a random port (JetStream deliveries, acks, publishes), LMDB in a
/// temp dir behind the real storage writer, the real job registry, gateway client and fake
/// gateway. The test coordinator's queue is not thread-safe, so nothing may send to an actor from
/// another thread: the writer and the relay run on the scheduler (runs_on::scheduler), and the
/// execution context (gateway client, the clock's timers) is an io_context this thread polls.

#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <caf/actor_system.hpp>
#include <caf/actor_system_config.hpp>
#include <caf/scheduler/test_coordinator.hpp>
#include <nlohmann/json.hpp>

#include "actors/engine_context.hpp"
#include "actors/model_dispatcher.hpp"
#include "config/settings.hpp"
#include "runtime/clock.hpp"
#include "runtime/jetstream.hpp"
#include "runtime/nats_server.hpp"
#include "storage/lmdb_env.hpp"
#include "tests/fakes/fake_gateway.hpp"
#include "tests/support/temp_dir.hpp"

namespace sy::test {

/// What a job actor told its dispatcher, in order: "answered", "done:true", "done:false".
using dispatcher_log = std::vector<std::string>;

class flow_env {
 public:
  static constexpr int64_t start_ms = 1'800'000'000'000;
  static constexpr const char* model = "flow-model";

  /// `global_concurrency` and `per_model_concurrency`: the budgets' slots (0: the defaults).
  explicit flow_env(int global_concurrency = 0, int per_model_concurrency = 0);
  ~flow_env();
  flow_env(const flow_env&) = delete;
  flow_env& operator=(const flow_env&) = delete;

  caf::actor_system& sys() { return *sys_; }
  caf::scheduler::test_coordinator& sched() { return *sched_; }
  runtime::manual_clock& clock() { return clock_; }
  actors::engine_context& ctx() { return *ctx_; }
  fakes::fake_gateway& gateway() { return gateway_; }
  runtime::nats_server& nats() { return *nats_; }
  runtime::js_client& js() { return *js_; }
  storage::environment& store() { return *env_; }
  config::settings& settings() { return cfg_; }
  /// The execution context this thread polls (the gateway client's, the clock's timers').
  boost::asio::io_context& io() { return io_; }

  /// Runs the actors and the execution context on this thread until `cond` holds (true) or
  /// `deadline` of real time passed (false). Between rounds it waits for I/O (the gateway's
  /// answer, a closed socket) up to 2 ms, never sleeps.
  bool drive_until(const std::function<bool()>& cond,
                   std::chrono::milliseconds deadline = std::chrono::seconds(20));
  /// Like drive_until, but checks `cond` after every actor step: for flows that never go quiet
  /// (an idle dispatcher fetches again after every empty fetch, which blocks up to 250 ms).
  bool step_until(const std::function<bool()>& cond,
                  std::chrono::milliseconds deadline = std::chrono::seconds(20));
  /// Runs everything that is runnable now, until neither the actors nor the execution context
  /// have anything ready.
  void settle();

  /// Commits `op` through the writer (from an actor, as the engine's actors do) and returns
  /// the writer's reply.
  actors::write_reply write(storage::write_op op);
  /// Commits a new job for `model` whose request carries `fake` (the fake gateway's per-request
  /// behaviour); `timeout_ms` > 0 gives it a deadline on the manual clock.
  storage::job_record create_job(const std::string& id, nlohmann::json fake = nullptr,
                                 int64_t timeout_ms = 0, int max_attempts = 3,
                                 const std::string& for_model = model);
  /// Publishes the job's task message (attempt 1) to JetStream, as the relay would.
  void publish(const storage::job_record& job);
  /// publish, then fetches it from `model`'s consumer: a real delivery.
  runtime::delivery deliver(const storage::job_record& job);
  /// Fetches the next task message of `model` (waits up to `wait_ms`), if any.
  std::optional<runtime::delivery> fetch(int64_t wait_ms);
  /// Spawns an actor that commits the cancel of `job_id` and, when the job was running, tells
  /// the job registry, as engine::cancel does; its reply lands in `*out`. Nothing runs until the
  /// test drives, so the test chooses what the cancel races with.
  void start_cancel(const std::string& job_id, std::optional<actors::write_reply>* out);
  /// start_cancel, driven until it committed.
  actors::write_reply cancel(const std::string& job_id);

  std::optional<storage::job_record> job(const std::string& id);
  std::optional<storage::task_record> task(const std::string& id);
  std::optional<storage::lease_record> lease(const std::string& task_id);
  std::vector<std::string> outbox_ids();
  /// Messages of `model`'s consumer not yet acked (waiting or delivered), -1 on error.
  int64_t backlog();

  /// A stand-in for the model dispatcher that records what job actors tell it ("lease",
  /// "answered", "done:<stage>"). `grant`: a leased attempt gets its slot at once (else it waits).
  actors::model_dispatcher_actor recording_dispatcher(dispatcher_log* log, bool grant = true);
  /// Ends `a` when the environment ends (before the actor system goes).
  void keep(caf::actor a) { long_lived_.push_back(std::move(a)); }
  /// Spawns the job actor for `d`, as the dispatcher does.
  actors::job_actor spawn_job(const runtime::delivery& d, actors::model_dispatcher_actor disp);

 private:
  temp_dir dir_;
  config::settings cfg_;
  fakes::fake_gateway gateway_;
  std::unique_ptr<runtime::nats_server> nats_;
  std::unique_ptr<runtime::js_client> js_;
  std::unique_ptr<runtime::pull_subscription> sub_;
  std::unique_ptr<storage::environment> env_;
  runtime::manual_clock clock_{start_ms};
  boost::asio::io_context io_;
  std::optional<boost::asio::executor_work_guard<boost::asio::io_context::executor_type>> work_;
  caf::actor_system_config caf_cfg_;
  std::unique_ptr<caf::actor_system> sys_;
  caf::scheduler::test_coordinator* sched_ = nullptr;
  std::unique_ptr<actors::engine_context> ctx_;
  std::vector<caf::actor> long_lived_;  ///< ended at teardown, before the registry and writer
};

}  // namespace sy::test
