#include "actors/engine.hpp"

#include <utility>

#include <algorithm>
#include <chrono>
#include <map>

#include <caf/scoped_actor.hpp>
#include <caf/send.hpp>

#include <boost/asio/strand.hpp>
#include <boost/asio/this_coro.hpp>

#include "actors/ask.hpp"
#include "actors/http_task.hpp"
#include "actors/job_actor.hpp"
#include "actors/submission.hpp"
#include "actors/write.hpp"
#include "runtime/backoff.hpp"
#include "runtime/log.hpp"
#include "runtime/log_throttle.hpp"
#include "runtime/thread_name.hpp"
#include "runtime/trace.hpp"
#include "runtime/webhook_signature.hpp"

namespace sy::actors {
namespace {

constexpr const char* node_prefix = "local/";

/// Deterministic task id (seed 000): a re-ingest rewrites the same task instead of adding one.
/// It is the job's ULID and the task's index, so task ids sort by creation time like job ids:
/// a commit's new tasks land on the last pages of `tasks` and `queued` instead of on a random
/// page each (a hash here made every submission dirty two more B-tree pages).
std::string task_id_for(const std::string& job_id, int index) {
  std::string_view ulid{job_id};
  if (ulid.starts_with("job_")) ulid.remove_prefix(4);
  return std::string(ulid) + "-" + std::to_string(index);
}

/// Waits until `done()` or the deadline, checking every few milliseconds (shutdown only). Real
/// time on purpose, not the engine's clock: it bounds how long the stopping thread waits before
/// it logs, which must pass while a test's manual clock stands still, and no state depends on it.
template <class F>
bool wait_until(F done, std::chrono::milliseconds timeout) {
  auto deadline = std::chrono::steady_clock::now() + timeout;
  while (!done()) {
    if (std::chrono::steady_clock::now() >= deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return true;
}

}  // namespace

engine::engine(deps d)
    : deps_(d),
      results_(std::make_shared<storage::result_segments>(deps_.cfg.data_dir + "/task-results",
                                                          deps_.cfg.inline_result_bytes)) {}

result<std::unique_ptr<engine>> engine::start(deps d) {
  std::unique_ptr<engine> e{new engine(d)};
  // Checked before anything starts, so a bad setting leaves nothing running.
  auto policy_or = runtime::make_webhook_policy(d.cfg);
  if (!policy_or) return policy_or.error();
  e->webhook_policy_ = std::move(*policy_or);
  auto http_policy = runtime::make_http_task_policy(d.cfg);
  if (!http_policy) return http_policy.error();
  e->http_task_policy_ = *http_policy;
  auto webhook_key = runtime::load_or_create_webhook_key(d.cfg);
  if (!webhook_key) return webhook_key.error();
  // One worker: the actors on the scheduler (job actors, dispatchers, the registry, budgets)
  // never block, and each does little per message. A second worker mostly slept and was woken
  // for messages the first would have taken next — a context switch per hand-off on a 2-core
  // machine (docs/benchmarks.md, "One CAF worker"). Whatever blocks has its own thread: the
  // writer, the relay, the reaper, each model's task fetcher.
  e->caf_cfg_->set("scheduler.max-threads", 1);
  e->caf_cfg_->set("scheduler.policy", caf::atom("sharing"));
  e->caf_cfg_->set("logger.console", caf::atom("none"));
  e->sys_ = std::make_unique<caf::actor_system>(*e->caf_cfg_);
  e->ctx_ = std::make_unique<engine_context>(*e->sys_, d.cfg, d.clock, d.js, e->exec_);
  auto& ctx = *e->ctx_;
  ctx.env = &d.env;
  ctx.holder = node_prefix + e->ids_.next(d.clock.now_ms());
  if (d.cfg.gateway) ctx.gateways.add("*", *d.cfg.gateway);
  for (const auto& [model, gw] : d.cfg.model_gateways) ctx.gateways.add(model, gw);
  ctx.http_tasks = std::make_unique<runtime::outbound_client>(
      e->exec_.get_executor(), std::move(*http_policy),
      std::shared_ptr<const runtime::clock>(std::shared_ptr<void>{}, &d.clock));

  engine* self = e.get();
  ctx.budget = spawn_global_budget(*e->sys_, d.cfg.global_concurrency);
  e->spawn_storage_actors();
  e->start_metrics();
  const int32_t queued_models = e->start_dispatchers();
  e->reaper_ = spawn_lease_reaper(ctx.reaper(node_prefix));
  if (auto st = e->start_workers(); !st) {
    e->shutdown();
    return st.error();
  }

  e->work_.emplace(e->exec_.get_executor());
  for (int i = 0; i < d.cfg.exec_threads; ++i)
    e->exec_threads_.emplace_back([self] {
      runtime::name_this_thread("sy-exec");
      self->exec_.run();
    });
  e->webhooks_ =
      spawn_webhook_deliverer(ctx, d.env, ctx.writer, e->webhook_policy_, std::move(*webhook_key));
  e->webhooks_ready_ = true;
  // The writer wakes it from now on (after the relay's wake, the same sender's earlier message).
  caf::anon_send(ctx.writer, writer_wakes{caf::actor_cast<caf::actor>(e->relay_),
                                          caf::actor_cast<caf::actor>(e->webhooks_)});
  e->batches_ = std::make_unique<batch_front>(ctx, d.env, e->webhook_policy_);
  if (auto st = e->batches_->start(); !st) {
    e->shutdown();
    return st.error();
  }
  e->resume_ingests();
  log::info("engine", "started",
            {{"holder", ctx.holder},
             {"models", queued_models},
             {"global_concurrency", d.cfg.global_concurrency},
             {"per_model_concurrency", d.cfg.per_model_concurrency}});
  return e;
}

void engine::spawn_storage_actors() {
  auto& ctx = *ctx_;
  storage::store_policy policy;
  policy.inline_result_bytes = deps_.cfg.webhook_inline_result_bytes;
  policy.retention_completed_ms = deps_.cfg.retention_completed_ms;
  policy.retention_failed_ms = deps_.cfg.retention_failed_ms;
  policy.retain_inputs = deps_.cfg.retain_inputs;
  using events = storage::store_policy::nats_events;
  policy.events = deps_.cfg.nats_events == "all"    ? events::all
                  : deps_.cfg.nats_events == "none" ? events::none
                                                    : events::terminal;
  policy.results = results_;
  ctx.writer =
      spawn_storage_writer(*sys_, deps_.env, static_cast<size_t>(deps_.cfg.group_commit_max_ops),
                           std::move(policy), &ctx.watch);
  ctx.jobs = spawn_job_registry(ctx, ctx.writer, heartbeat_period_ms(deps_.cfg) / 2);
  outbox_relay_options relay_opts;
  relay_opts.retry_timer = ctx.clock.make_timer(boost::asio::make_strand(ctx.exec));
  relay_ = spawn_outbox_relay(*sys_, deps_.env, ctx.writer, deps_.js, std::move(relay_opts));
  caf::anon_send(ctx.writer, writer_wakes{caf::actor_cast<caf::actor>(relay_), {}});
}

int32_t engine::start_dispatchers() {
  ctx_->dispatchers = spawn_dispatcher_directory(ctx_->dispatcher(), queued_);
  dispatchers_wanted known;
  known.queue = true;
  known.known = true;
  auto& models = known.models;
  {
    auto txn = deps_.env.begin_read();
    txn.scan(storage::db::meta, storage::known_model_prefix, [&](auto key, auto) {
      if (key.substr(0, storage::known_model_prefix.size()) != storage::known_model_prefix)
        return false;
      models.emplace_back(key.substr(storage::known_model_prefix.size()));
      return true;
    });
  }
  for (const auto& [model, gw] : deps_.cfg.model_gateways) models.push_back(model);
  // Runtimes have their queues (their workers take them, not a dispatcher).
  std::erase_if(models, [](const std::string& m) { return is_runtime_queue(m); });
  int32_t queued = 0;
  caf::scoped_actor self{*sys_};
  self->request(ctx_->dispatchers, caf::infinite, std::move(known))
      .receive([&](dispatchers_found& f) { queued = f.queued_models; }, [](caf::error&) {});
  return queued;
}

engine::~engine() { shutdown(); }

result<std::string> engine::job_webhook(const submission& s) const {
  // The default applies to the job, not to the request hash (idempotency compares requests).
  std::string url = s.webhook_url.empty() ? deps_.cfg.webhook_url : s.webhook_url;
  if (!url.empty()) {
    if (auto st = runtime::check_webhook_url(url, webhook_policy_); !st) return st.error();
  }
  return url;
}

boost::asio::awaitable<status> engine::queue_models(std::vector<std::string> models,
                                                    std::vector<std::string> params) {
  // After shutdown began no queue is taken (the directory refuses too; this spares the ask).
  if (ctx_->stopping) co_return make_error(errc::shutting_down, "the server is shutting down");
  // The hot path: models whose queues are taken already need no message, only their gateways
  // (a model this store queued before may have lost its gateway in the settings). An ask per
  // submission cost about 10 us of CPU and 15 % or more of bench/run.sh's phase a1.
  if (queued_->has_all(models)) co_return have_gateways(ctx_->gateways, models, params);
  dispatchers_wanted want{std::move(models), std::move(params), true, false};
  auto found = co_await ask<dispatchers_found>(*sys_, ctx_->dispatchers, std::chrono::seconds(30),
                                               std::move(want));
  if (!found) co_return found.error();
  if (!found->refusal.code.empty()) co_return found->refusal;
  co_return ok;
}

boost::asio::awaitable<result<submit_outcome>> engine::submit(admitted<submission> in) {
  submission s = std::move(in).take();
  if (ctx_->stopping) co_return make_error(errc::shutting_down, "the server is shutting down");
  if (s.task_list()) co_return co_await submit_list(std::move(s));
  auto model = s.runtime.empty() ? result<std::string>(s.model) : runtime_model(s);
  if (!model) co_return model.error();
  auto webhook_url = job_webhook(s);
  if (!webhook_url) co_return webhook_url.error();
  if (s.runtime.empty()) {
    std::vector<std::string> models{*model};
    std::vector<std::string> params{"body.model"};
    if (auto st = co_await queue_models(std::move(models), std::move(params)); !st)
      co_return st.error();
  }
  storage::job_record job = new_job(s, std::move(*webhook_url));
  job.model = *model;
  job.body = std::move(s.body);
  job.task_id = task_id_for(job.id, 0);
  storage::task_record task;
  task.id = job.task_id;
  task.job_id = job.id;
  task.tenant = job.tenant;
  task.model = *model;
  task.max_attempts = job.max_attempts;
  // Named rather than a temporary in the co_await expression: GCC 12 mishandles the lifetime of
  // aggregate temporaries passed to a coroutine inside co_await.
  write_request req{storage::create_job_op{std::move(job), std::move(task)}};
  co_return co_await commit_create(std::move(req), s.idempotency_key);
}

boost::asio::awaitable<result<submit_outcome>> engine::commit_create(write_request req,
                                                                     const std::string& key) {
  auto r = co_await write(ctx_->writer, std::move(req));
  if (!r) co_return r.error();
  if (!r->reply) co_return r->err;
  auto& rep = *r->reply;
  using kind = storage::op_reply::kind;
  if (rep.what == kind::conflict)
    co_return make_error(errc::idempotency_conflict,
                         "Idempotency-Key '" + key +
                             "' was already used for a "
                             "different request (job " +
                             rep.job->id + ")",
                         "Idempotency-Key");
  if (rep.what == kind::done)
    trace::record_child(rep.job->id, rep.job->trace, "submit", trace::span_kind::server,
                        rep.job->created_at_ms, deps_.clock.now_ms());
  co_return submit_outcome{std::move(*rep.job), rep.what == kind::done};
}

boost::asio::awaitable<result<storage::job_record>> engine::wait_terminal(
    std::string tenant, std::string id, std::chrono::milliseconds timeout) {
  const int64_t until = deps_.clock.now_ms() + timeout.count();
  job_subscription sub{ctx_->watch, id, co_await boost::asio::this_coro::executor};
  for (;;) {
    sub.waiter().changed = false;  // before the read: a change after it wakes the wait below
    auto job = get(tenant, id);
    if (!job || storage::is_terminal(job->status)) co_return job;
    const int64_t left = until - deps_.clock.now_ms();
    if (left <= 0) co_return job;
    // Re-read at least every second, whatever happens to the wake-up (belt and braces).
    co_await job_watch::wait_for_change(sub.waiter(), std::min<int64_t>(left, 1'000));
  }
}

boost::asio::awaitable<result<event_batch>> engine::next_events(std::string tenant, std::string id,
                                                                uint64_t after_seq,
                                                                std::chrono::milliseconds timeout) {
  const int64_t until = deps_.clock.now_ms() + timeout.count();
  job_subscription sub{ctx_->watch, id, co_await boost::asio::this_coro::executor};
  for (;;) {
    sub.waiter().changed = false;
    int64_t left = 0;
    {
      auto txn = deps_.env.begin_read();
      auto job = read_job(txn, tenant, id);
      if (!job) co_return make_error(errc::job_not_found, "no job with id '" + id + "'", "id");
      auto events = storage::read_events(txn, id, after_seq);
      left = until - deps_.clock.now_ms();
      if (!events.empty() || left <= 0) co_return event_batch{std::move(*job), std::move(events)};
    }
    co_await job_watch::wait_for_change(sub.waiter(), std::min<int64_t>(left, 1'000));
  }
}

boost::asio::awaitable<result<storage::job_record>> engine::cancel(std::string tenant,
                                                                   std::string id) {
  if (ctx_->stopping) co_return make_error(errc::shutting_down, "the server is shutting down");
  if (storage::is_batch_id(id)) co_return co_await cancel_batch(std::move(tenant), std::move(id));
  // Named, not a temporary in the co_await expression (engine::remove).
  storage::write_op op = storage::cancel_job_op{tenant, id, deps_.clock.now_ms()};
  auto r = co_await ask_owner(std::move(op), id);
  if (!r) co_return r.error();
  if (!r->reply) co_return r->err;
  auto& rep = *r->reply;
  using kind = storage::op_reply::kind;
  if (rep.what == kind::not_found)
    co_return make_error(errc::job_not_found, "no job with id '" + id + "'", "id");
  if (rep.what == kind::conflict)
    co_return make_error(errc::job_not_cancellable,
                         "job " + id + " is already " +
                             std::string(storage::to_string(rep.job->status)) +
                             "; only queued or running jobs can be cancelled",
                         "id");
  co_return std::move(*rep.job);
}

// Ready means work flows: NATS is connected and its streams are in place on this connection
// (js_layout_keeper makes them after a late connect or a reconnect).
bool engine::ready() const {
  return !ctx_->stopping && deps_.js.layout_ready() && deps_.js.consuming();
}

bool engine::jobs_drained(std::chrono::milliseconds within) {
  bool drained = false;
  caf::scoped_actor self{*sys_};
  self->request(ctx_->jobs, within, drain_atom::value)
      .receive([&](bool) { drained = true; }, [](caf::error&) {});
  return drained;
}

void engine::stop_jobs() {
  auto grace = std::chrono::milliseconds(deps_.cfg.shutdown_timeout_ms);
  // Batches stop at once: their in-flight requests are aborted unrecorded and run again after
  // the restart (a batch's lines are recorded one by one, so nothing finished is redone). Their
  // actors are in the registry, so the drain below waits for them too.
  if (batches_) batches_->stop();
  caf::anon_send(ctx_->jobs, release_atom::value, true);
  if (jobs_drained(grace)) return;
  log::warn("engine", "shutdown timeout: returning running attempts to the queue", {});
  caf::anon_send(ctx_->jobs, release_atom::value);
  if (!jobs_drained(std::chrono::seconds(5)))
    log::warn("engine", "attempts still running after they were released", {});
}

void engine::flush_outbox() {
  caf::scoped_actor self{*sys_};
  self->request(relay_, std::chrono::seconds(5), drain_atom::value)
      .receive(
          [](bool empty) {
            if (!empty) log::warn("engine", "outbox not empty at shutdown; kept for next start");
          },
          [](caf::error&) { log::warn("engine", "outbox flush timed out"); });
  // The relay asked the writer to delete what JetStream acked without waiting for it. A write
  // sent now queues behind those deletions, so its answer means they are committed; without
  // it the writer's exit below could overtake them, and the records would be published again
  // at the next start (duplicate events for core NATS subscribers).
  self->request(ctx_->writer, std::chrono::seconds(5), write_request{storage::outbox_ack_op{}})
      .receive([](const write_reply&) {},
               [](caf::error&) { log::warn("engine", "last outbox deletions timed out"); });
}

void engine::drain_webhooks() {
  if (!webhooks_ready_) return;
  // Deliveries in flight end within webhook_timeout_ms; pending ones stay for the next start.
  caf::scoped_actor self{*sys_};
  self->request(webhooks_, std::chrono::milliseconds(deps_.cfg.webhook_timeout_ms + 1'000),
                drain_atom::value)
      .receive([](bool) {},
               [](caf::error&) {
                 log::warn("webhooks",
                           "deliveries still running at shutdown; they are retried on next start",
                           {});
               });
  caf::anon_send_exit(webhooks_, caf::exit_reason::user_shutdown);
}

void engine::stop_actors() {
  auto& ctx = *ctx_;
  stop_workers();
  if (batches_) batches_->end();  // stopped (stop_jobs): it ends before the writer it commits to
  // Ingests read the context and call this engine: they end before either goes (they check
  // `stopping` between lines and chunks, and a write they wait for fails once the writer goes).
  while (!wait_until([&] { return ctx.ingests.load() == 0; }, std::chrono::seconds(5)))
    log::warn("engine", "waiting for task-list ingests to stop", {{"running", ctx.ingests.load()}});
  // The directory stops every dispatcher before it answers, and ends: the dispatchers go before
  // the budget, the writer and the registry, as they did when the engine held them.
  if (ctx.dispatchers) {
    caf::scoped_actor self{*sys_};
    self->request(ctx.dispatchers, std::chrono::seconds(5), stop_atom::value)
        .receive([](int32_t) {},
                 [](caf::error&) { log::warn("engine", "the dispatcher directory did not stop"); });
  }
  caf::anon_send_exit(ctx.budget, caf::exit_reason::user_shutdown);
  caf::anon_send_exit(reaper_, caf::exit_reason::user_shutdown);
  caf::anon_send_exit(relay_, caf::exit_reason::user_shutdown);
  caf::anon_send_exit(ctx.writer, caf::exit_reason::user_shutdown);
  caf::anon_send_exit(ctx.jobs, caf::exit_reason::user_shutdown);
  // A detached actor's thread ends only when the last handle to it is gone.
  ctx.dispatchers = nullptr;
  ctx.budget = nullptr;
  reaper_ = nullptr;
  relay_ = nullptr;
  ctx.writer = nullptr;
  ctx.jobs = nullptr;
  if (!wait_until([&] { return sys_->registry().running() == 0; }, std::chrono::seconds(5)))
    log::warn("engine", "actors still running at shutdown",
              {{"running", sys_->registry().running()}});
}

void engine::shutdown() {
  if (shut_down_.exchange(true)) return;
  // start() refused a setting (the webhook policy or key) before anything was started.
  if (!ctx_) return;
  metric_readers_.clear();
  ctx_->stopping = true;
  log::info("engine", "shutting down", {});
  stop_jobs();
  flush_outbox();
  drain_webhooks();
  stop_actors();
  work_.reset();
  exec_.stop();
  for (auto& t : exec_threads_) t.join();
  batches_.reset();
  // Every actor has terminated (checked above). CAF 0.17's actor_system destructor also waits
  // for the threads of detached actors to see their last reference dropped, which in this
  // version never happens for our detached actors, so the system object is released on purpose
  // instead of destroyed: its remaining threads are idle and end with the process. Its config
  // too: those threads read its thread hooks as they end (a use after free TSan found once CAF
  // was instrumented).
  (void)sys_.release();
  (void)caf_cfg_.release();
  log::info("engine", "stopped");
}

}  // namespace sy::actors
