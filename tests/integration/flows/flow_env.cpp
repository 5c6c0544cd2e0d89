#include "tests/integration/flows/flow_env.hpp"

#include <utility>

#include <caf/event_based_actor.hpp>
#include <caf/send.hpp>
#include <caf/typed_event_based_actor.hpp>

#include "actors/event_json.hpp"
#include "actors/global_budget.hpp"
#include "actors/job_actor.hpp"
#include "actors/job_registry.hpp"
#include "actors/outbox_relay.hpp"
#include "actors/storage_writer.hpp"

namespace sy::test {
namespace {

/// Asks `writer` to commit `op` and keeps the reply in `*out`.
caf::behavior write_asker(caf::event_based_actor* self, actors::storage_writer_actor writer,
                          storage::write_op op, std::optional<actors::write_reply>* out) {
  self->request(writer, caf::infinite, actors::write_request{std::move(op)})
      .then([self, out](actors::write_reply& r) {
        *out = std::move(r);
        self->quit();
      });
  return {};
}

/// Asks the job's owner, through the registry, to commit a cancel (engine::cancel): it stops the
/// job's running attempt here before it answers.
caf::behavior cancel_asker(caf::event_based_actor* self, actors::engine_context* ctx,
                           storage::cancel_job_op op, std::optional<actors::write_reply>* out) {
  auto id = op.job_id;
  self->request(ctx->jobs, caf::infinite, actors::commit_atom::value, std::move(id),
                actors::write_request{std::move(op)})
      .then([self, out](actors::write_reply& r) {
        *out = std::move(r);
        self->quit();
      });
  return {};
}

/// Asks `registry` to drain and sets `*drained` when it answers.
caf::behavior drain_asker(caf::event_based_actor* self, actors::job_registry_actor registry,
                          bool* drained) {
  self->request(registry, caf::infinite, actors::drain_atom::value).then([=](bool) {
    *drained = true;
    self->quit();
  });
  return {};
}

actors::model_dispatcher_actor::behavior_type recorder(actors::model_dispatcher_actor::pointer self,
                                                       dispatcher_log* log, bool grant) {
  return {
      [=](actors::wake_atom) { log->push_back("wake"); },
      [=](actors::fetch_atom) { log->push_back("fetch"); },
      [=](actors::fetched_tasks&) { log->push_back("fetched"); },
      [=](actors::tick_atom) { log->push_back("tick"); },
      [=](actors::lease_atom, uint64_t, actors::job_actor& a, bool chained) {
        log->push_back(chained ? "lease:chained" : "lease");
        if (grant) self->send(a, actors::start_atom::value, false);
      },
      [=](actors::answered_atom, int64_t) { log->push_back("answered"); },
      [=](actors::done_atom, int32_t stage, uint64_t) {
        static constexpr const char* names[] = {"starting", "ready", "granted", "answered"};
        log->push_back(std::string("done:") + names[stage]);
      },
      [=](actors::slot_update&, actors::slot_holder_actor&) { log->push_back("slot_update"); },
      [=](actors::slot_atom, uint64_t, int32_t) { log->push_back("slot"); },
      [=](actors::yield_atom, uint64_t, int32_t) { log->push_back("yield"); },
  };
}

}  // namespace

flow_env::flow_env(int global_concurrency, int per_model_concurrency) {
  if (auto e = gateway_.start(); !e.empty()) throw std::runtime_error("fake gateway: " + e);
  runtime::nats_server_options o;
  o.store_dir = dir_.sub("nats");
  o.log_file = dir_.sub("nats.log");
  auto n = runtime::nats_server::start(o);
  if (!n) throw std::runtime_error("nats-server: " + n.error().message);
  nats_ = std::move(n.value());
  runtime::js_layout layout;
  auto js = runtime::js_client::connect(nats_->url(), "flow-test", layout, 5'000);
  if (!js) throw std::runtime_error("nats: " + js.error().message);
  js_ = std::move(js.value());
  if (auto st = js_->ensure_layout(); !st) throw std::runtime_error(st.error().message);
  auto sub = js_->subscribe_tasks(model);
  if (!sub) throw std::runtime_error("subscribe: " + sub.error().message);
  sub_ = std::move(sub.value());
  auto e = storage::environment::open(dir_.path(), int64_t{64} << 20);
  if (!e) throw std::runtime_error("lmdb: " + e.error().message);
  env_ = std::move(e.value());

  cfg_.data_dir = dir_.path();
  config::gateway_settings gw;
  gw.url = gateway_.url();
  gw.request_timeout_ms = 600'000;  // an exchange ends by its answer or an abort, never by time
  gw.max_retries = 0;
  cfg_.gateway = gw;
  cfg_.lease_ttl_ms = 30'000;
  cfg_.requeue_initial_backoff_ms = 50;
  cfg_.requeue_max_backoff_ms = 200;
  cfg_.reaper_interval_ms = 1'000;
  if (global_concurrency > 0) cfg_.global_concurrency = global_concurrency;
  if (per_model_concurrency > 0) cfg_.per_model_concurrency = per_model_concurrency;

  work_.emplace(io_.get_executor());
  caf_cfg_.set("scheduler.policy", caf::atom("testing"));
  caf_cfg_.set("logger.console", caf::atom("none"));
  sys_ = std::make_unique<caf::actor_system>(caf_cfg_);
  sched_ = &dynamic_cast<caf::scheduler::test_coordinator&>(sys_->scheduler());
  ctx_ = std::make_unique<actors::engine_context>(*sys_, cfg_, clock_, *js_, io_);
  ctx_->env = env_.get();
  ctx_->holder = "local/flow-run";
  ctx_->gateways.add("*", gw);
  ctx_->writer = actors::spawn_storage_writer(*sys_, *env_, 64, storage::store_policy{}, nullptr,
                                              actors::runs_on::scheduler);
  ctx_->jobs =
      actors::spawn_job_registry(*ctx_, ctx_->writer, actors::heartbeat_period_ms(cfg_) / 2);
  ctx_->budget = actors::spawn_global_budget(*sys_, cfg_.global_concurrency);
  settle();
}

flow_env::~flow_env() {
  // As the engine stops: the other actors first (an idle dispatcher never goes quiet), then every
  // job actor still running gives its task back, and the registry answers once none is left.
  for (auto& a : long_lived_) caf::anon_send_exit(a, caf::exit_reason::user_shutdown);
  caf::anon_send(ctx_->jobs, actors::release_atom::value);
  bool drained = false;
  sys_->spawn(drain_asker, ctx_->jobs, &drained);
  drained = drive_until([&] { return drained; }, std::chrono::seconds(10));
  caf::anon_send_exit(ctx_->writer, caf::exit_reason::user_shutdown);
  caf::anon_send_exit(ctx_->jobs, caf::exit_reason::user_shutdown);
  caf::anon_send_exit(ctx_->budget, caf::exit_reason::user_shutdown);
  settle();
  sys_->await_actors_before_shutdown(false);
  if (!drained) {
    // A test failed with a job actor stuck mid-request: its coroutine still refers to the
    // gateway client and the actor system. Leak both rather than crash in the teardown.
    ctx_->gateways.leak();
    (void)sys_.release();
    return;
  }
  ctx_->gateways.clear();  // before the io_context they run on
  work_.reset();
  io_.poll();
}

bool flow_env::drive_until(const std::function<bool()>& cond, std::chrono::milliseconds deadline) {
  const auto until = std::chrono::steady_clock::now() + deadline;
  for (;;) {
    settle();
    if (cond()) return true;
    if (std::chrono::steady_clock::now() > until) return false;
    io_.run_one_for(std::chrono::milliseconds(2));  // waits for I/O, at most 2 ms
  }
}

bool flow_env::step_until(const std::function<bool()>& cond, std::chrono::milliseconds deadline) {
  const auto until = std::chrono::steady_clock::now() + deadline;
  for (;;) {
    const bool ran = sched_->try_run_once();
    io_.poll();
    if (cond()) return true;
    if (std::chrono::steady_clock::now() > until) return false;
    if (!ran) io_.run_one_for(std::chrono::milliseconds(2));
  }
}

void flow_env::settle() {
  for (;;) {
    const size_t ran = sched_->run() + io_.poll();
    if (ran == 0) return;
  }
}

actors::write_reply flow_env::write(storage::write_op op) {
  std::optional<actors::write_reply> out;
  sys_->spawn(write_asker, ctx_->writer, std::move(op), &out);
  if (!drive_until([&] { return out.has_value(); }))
    throw std::runtime_error("the writer did not answer");
  return std::move(*out);
}

storage::job_record flow_env::create_job(const std::string& id, nlohmann::json fake,
                                         int64_t timeout_ms, int max_attempts,
                                         const std::string& for_model) {
  nlohmann::json body = {{"model", for_model}, {"messages", {{{"role", "user"}, {"content", id}}}}};
  if (!fake.is_null()) body["fake"] = std::move(fake);
  const int64_t now = clock_.now_ms();
  storage::job_record job;
  job.id = id;
  job.tenant = "tenant";
  job.endpoint = "/v1/chat/completions";
  job.model = for_model;
  job.body = body.dump();
  // As the engine names them: the job's id without "job_", "-", the index (storage::job_id_of_task
  // finds the job again from it).
  job.task_id = (id.starts_with("job_") ? id.substr(4) : id) + "-0";
  job.max_attempts = max_attempts;
  job.created_at_ms = job.updated_at_ms = now;
  job.deadline_ms = timeout_ms > 0 ? now + timeout_ms : 0;
  storage::task_record task;
  task.id = job.task_id;
  task.job_id = job.id;
  task.tenant = job.tenant;
  task.model = for_model;
  task.max_attempts = max_attempts;
  task.queued_at_ms = now;
  auto r = write(storage::create_job_op{job, task});
  if (!r.reply || !r.reply->job) throw std::runtime_error("create_job failed: " + r.err.message);
  return *r.reply->job;
}

void flow_env::publish(const storage::job_record& job) {
  runtime::pub_msg m{js_->task_subject(job.model), actors::task_message_id(job.task_id, 1),
                     actors::task_message_payload(job.task_id, 1)};
  auto acked = js_->publish_batch({m}, 5'000);
  if (acked.empty() || !acked[0]) throw std::runtime_error("publishing the task failed");
}

runtime::delivery flow_env::deliver(const storage::job_record& job) {
  publish(job);
  auto d = fetch(5'000);
  if (!d) throw std::runtime_error("the task message was not delivered");
  return std::move(*d);
}

std::optional<runtime::delivery> flow_env::fetch(int64_t wait_ms) {
  auto msgs = sub_->fetch(1, wait_ms);
  if (!msgs || msgs->empty()) return std::nullopt;
  return msgs->front().to_delivery();
}

void flow_env::start_cancel(const std::string& job_id, std::optional<actors::write_reply>* out) {
  sys_->spawn(cancel_asker, ctx_.get(), storage::cancel_job_op{"tenant", job_id, clock_.now_ms()},
              out);
}

actors::write_reply flow_env::cancel(const std::string& job_id) {
  std::optional<actors::write_reply> out;
  start_cancel(job_id, &out);
  if (!drive_until([&] { return out.has_value(); }))
    throw std::runtime_error("the cancel did not commit");
  return std::move(*out);
}

std::optional<storage::job_record> flow_env::job(const std::string& id) {
  return storage::get_job(env_->begin_read(), id);
}

std::optional<storage::task_record> flow_env::task(const std::string& id) {
  return storage::get_task(env_->begin_read(), id);
}

std::optional<storage::lease_record> flow_env::lease(const std::string& task_id) {
  return storage::get_lease(env_->begin_read(), task_id);
}

std::vector<std::string> flow_env::outbox_ids() {
  std::vector<std::string> out;
  for (auto& r : storage::read_outbox(env_->begin_read(), 0, 1'000))
    out.push_back(actors::outbox_message(r, js_->layout()).msg_id);
  return out;
}

int64_t flow_env::backlog() {
  auto n = js_->task_backlog(model);
  return n ? static_cast<int64_t>(*n) : -1;
}

actors::model_dispatcher_actor flow_env::recording_dispatcher(dispatcher_log* log, bool grant) {
  auto d = sys_->spawn(recorder, log, grant);
  long_lived_.push_back(caf::actor_cast<caf::actor>(d));
  return d;
}

actors::job_actor flow_env::spawn_job(const runtime::delivery& d,
                                      actors::model_dispatcher_actor disp) {
  auto parsed = actors::parse_task_message(d.data);
  if (!parsed) throw std::runtime_error("not a task message");
  // The message's hold, as the dispatcher makes it: acked or nak'ed once its task settled.
  auto hold = std::make_shared<actors::task_message_hold>(
      d, 1, [js = js_.get()](const runtime::delivery& m, std::optional<int64_t> again) {
        if (again) {
          (void)js->nak(m, *again);
        } else {
          (void)js->ack(m);
        }
      });
  return actors::spawn_job_actor(ctx_->job(), model, {hold, parsed->first, parsed->second},
                                 std::move(disp));
}

}  // namespace sy::test
