// The batch manager: the Files and Batch API (batch_service), starting the batches' actors
// (actors/batch_actor.hpp), recovery at start and the file-expiry sweep.

#include "actors/batch_manager.hpp"

#include <utility>

#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <set>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/strand.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <caf/send.hpp>

#include "actors/batch_actor.hpp"
#include "actors/detail/batch_io.hpp"
#include "actors/write.hpp"
#include "config/validate.hpp"
#include "runtime/log.hpp"
#include "runtime/metrics.hpp"
#include "runtime/thread_name.hpp"
#include "runtime/trace.hpp"

namespace sy::actors {
namespace {

namespace asio = boost::asio;
namespace fs = std::filesystem;

constexpr auto sweep_interval = std::chrono::seconds(1);

}  // namespace

batch_manager::batch_manager(engine_context& ctx, storage::environment& env,
                             const runtime::webhook_policy& webhooks,
                             std::optional<asio::any_io_executor> blocking)
    : ctx_(ctx),
      env_(env),
      webhooks_(webhooks),
      files_dir_((fs::path(ctx.cfg.data_dir) / "files").string()),
      uploads_dir_((fs::path(ctx.cfg.data_dir) / "files" / "uploads").string()),
      batches_dir_((fs::path(ctx.cfg.data_dir) / "batches").string()),
      blocking_(blocking ? *blocking : asio::any_io_executor(pool_.get_executor())),
      deps_(std::make_shared<const batch_deps>(
          batch_deps{&ctx, &env, ctx.writer, ctx.jobs, ctx.dispatchers, &ctx.gateways,
                     &ctx.stopping, blocking_, batch_paths{files_dir_, batches_dir_}, tries_})) {
  // The pool has one thread: the first task it runs names it.
  asio::post(pool_, [] { runtime::name_this_thread("sy-batch-io"); });
}

batch_manager::~batch_manager() {
  stop();
  pool_.join();
}

std::string batch_manager::upload_dir() const { return uploads_dir_; }
std::string batch_manager::file_path(const std::string& id) const { return files_dir_ + "/" + id; }
void batch_manager::set_retry_policy(batch_retry_policy p) { tries_->set_policy(p); }
batch_retry_policy batch_manager::retry_policy() const { return tries_->policy(); }

std::optional<storage::batch_record> batch_manager::get_batch_any(const std::string& id) const {
  auto txn = env_.begin_read();
  return storage::get_batch(txn, id);
}

asio::awaitable<result<storage::op_reply>> batch_manager::commit(storage::write_op op) {
  write_request req{std::move(op)};
  auto r = co_await write(ctx_.writer, std::move(req));
  if (!r) co_return r.error();
  if (!r->reply) co_return r->err;
  co_return std::move(*r->reply);
}

status batch_manager::start() {
  std::error_code ec;
  for (const auto& d : {files_dir_, uploads_dir_, batches_dir_}) {
    fs::create_directories(d, ec);
    if (ec) return make_error(errc::storage_error, "cannot create " + d + ": " + ec.message());
  }
  // Leftovers of a crash: partial uploads, files without a record (written by a finalization
  // that did not commit), plans of batches that are finished or gone.
  for (const auto& entry : fs::directory_iterator(uploads_dir_, ec)) fs::remove(entry.path(), ec);
  std::vector<std::string> active;
  {
    auto txn = env_.begin_read();
    for (const auto& entry : fs::directory_iterator(files_dir_, ec)) {
      auto name = entry.path().filename().string();
      if (name == "uploads") continue;
      if (!storage::get_file(txn, name)) {
        log::warn("batch", "removing a file without a record", {{"path", entry.path().string()}});
        fs::remove(entry.path(), ec);
      }
    }
    active = storage::active_batches(txn);
    for (const auto& id : active) {  // every one is resumed from its record and plans
      auto b = storage::get_batch(txn, id);
      metrics::batch_recovered(b ? storage::to_string(b->status) : "unknown", "resumed");
    }
    std::set<std::string> live(active.begin(), active.end());
    for (const auto& entry : fs::directory_iterator(batches_dir_, ec))
      if (!live.count(entry.path().filename().string())) fs::remove_all(entry.path(), ec);
  }
  for (const auto& id : active) launch(id);
  if (!active.empty()) log::info("batch", "resuming batches", {{"count", active.size()}});
  // On a strand of its own: stop() cancels the timer from another thread, by posting there.
  sweep_timer_ = ctx_.clock.make_timer(asio::make_strand(ctx_.exec));
  asio::co_spawn(sweep_timer_->executor(), sweep_expired_files(), asio::detached);
  return ok;
}

void batch_manager::stop() {
  if (stopping_.exchange(true)) return;
  if (sweep_timer_) asio::post(sweep_timer_->executor(), [t = sweep_timer_] { t->cancel(); });
}

void batch_manager::launch(const std::string& batch_id, bool patient) {
  if (!stopping_) spawn_batch_actor(deps_, batch_id, patient);
}

asio::awaitable<void> batch_manager::sweep_expired_files() {
  auto timer = sweep_timer_;
  while (!stopping_) {
    std::vector<std::string> due;
    {
      auto txn = env_.begin_read();
      due = storage::expired_files(txn, ctx_.clock.now_ms() / 1000, 100);
    }
    for (const auto& id : due) {
      storage::delete_file_op op{"", id};
      auto r = co_await commit(std::move(op));
      metrics::file_operation("delete", "garbage-collector", metrics::once(static_cast<bool>(r)));
      if (r && r->file) {
        ::unlink(file_path(id).c_str());
        log::info("batch", "file expired and deleted", {{"file_id", id}});
      }
    }
    co_await runtime::async_wait(*timer, sweep_interval.count(), asio::use_awaitable);
  }
}

// --- batch_service ------------------------------------------------------------------------------

asio::awaitable<result<storage::file_record>> batch_manager::create_file(
    admitted<staged_file> upload) {
  auto [f, staged, expires_after_s] = std::move(upload).take();
  if (ctx_.stopping) {
    ::unlink(staged.c_str());
    co_return make_error(errc::shutting_down, "the server is shutting down");
  }
  if (f.id.empty()) f.id = "file-" + ids_.next(ctx_.clock.now_ms());
  if (f.created_at == 0) f.created_at = ctx_.clock.now_ms() / 1000;
  if (expires_after_s > 0) f.expires_at = f.created_at + expires_after_s;
  const std::string path = file_path(f.id);
  if (std::rename(staged.c_str(), path.c_str()) != 0) {
    auto e = detail::sys_error("cannot move the upload to", path);
    ::unlink(staged.c_str());
    metrics::file_operation("store", "apiserver", "exhausted");
    co_return make_error(errc::storage_unavailable, e);
  }
  detail::fsync_dir(files_dir_);
  storage::create_file_op op{f};
  auto r = co_await commit(std::move(op));
  metrics::file_operation("store", "apiserver", metrics::once(static_cast<bool>(r)));
  if (!r) {
    ::unlink(path.c_str());
    co_return r.error();
  }
  co_return f;
}

result<storage::file_record> batch_manager::get_file(const std::string& tenant,
                                                     const std::string& id) {
  auto txn = env_.begin_read();
  auto f = storage::get_file(txn, id);
  if (!f || f->tenant != tenant ||
      (f->expires_at > 0 && f->expires_at <= ctx_.clock.now_ms() / 1000))
    return make_error(errc::file_not_found, "No such file: '" + id + "'.", "file_id");
  return std::move(*f);
}

result<file_page> batch_manager::list_files(const std::string& tenant, const std::string& purpose,
                                            bool ascending, const std::string& after, int limit) {
  file_page page;
  auto txn = env_.begin_read();
  page.files = storage::list_files(txn, tenant, purpose, ascending, after,
                                   static_cast<size_t>(limit), page.has_more);
  return page;
}

asio::awaitable<result<storage::file_record>> batch_manager::delete_file(std::string tenant,
                                                                         std::string id) {
  if (ctx_.stopping) co_return make_error(errc::shutting_down, "the server is shutting down");
  storage::delete_file_op op{tenant, id};
  auto r = co_await commit(std::move(op));
  metrics::file_operation("delete", "apiserver", metrics::once(static_cast<bool>(r)));
  if (!r) co_return r.error();
  if (!r->file)
    co_return make_error(errc::file_not_found, "No such file: '" + id + "'.", "file_id");
  // A batch still reading the file keeps its descriptor open; the bytes go when it closes it.
  ::unlink(file_path(id).c_str());
  co_return std::move(*r->file);
}

asio::awaitable<result<storage::batch_record>> batch_manager::create_batch(
    admitted<batch_request> in) {
  batch_request req = std::move(in).take();
  if (ctx_.stopping) co_return make_error(errc::shutting_down, "the server is shutting down");
  {
    auto input = get_file(req.tenant, req.input_file_id);
    if (!input)
      co_return make_error(errc::file_not_found, "No such file: '" + req.input_file_id + "'.",
                           "input_file_id");
    if (input->purpose != "batch")
      co_return make_error(errc::invalid_value,
                           "The input file must have been uploaded with purpose 'batch', not '" +
                               input->purpose + "'.",
                           "input_file_id");
  }
  // The configured default applies to a batch as to a job; the target's network is checked here.
  std::string webhook_url = req.webhook_url.empty() ? ctx_.cfg.webhook_url : req.webhook_url;
  if (!webhook_url.empty()) {
    if (auto st = runtime::check_webhook_url(webhook_url, webhooks_); !st) co_return st.error();
  }
  const int64_t now = ctx_.clock.now_ms();
  storage::batch_record b;
  b.id = "batch_" + ids_.next(now);
  b.tenant = req.tenant;
  b.endpoint = req.endpoint;
  b.input_file_id = req.input_file_id;
  b.completion_window = req.completion_window;
  b.created_at = now / 1000;
  b.deadline_ms = now + req.completion_window_ms;
  b.expires_at = b.deadline_ms / 1000;
  b.metadata = req.metadata;
  b.output_expires_after = req.output_expires_after;
  b.trace = trace::to_keep(req.trace);
  b.trace_state = req.trace.state;
  b.max_inflight = req.max_inflight;
  b.webhook_url = std::move(webhook_url);
  b.max_attempts = req.max_attempts > 0 ? req.max_attempts : ctx_.cfg.default_max_attempts;
  storage::create_batch_op op{b};
  auto r = co_await commit(std::move(op));
  if (!r) co_return r.error();
  if (r->what == storage::op_reply::kind::not_found)
    co_return make_error(errc::file_not_found, "No such file: '" + req.input_file_id + "'.",
                         "input_file_id");
  trace::record_child(b.id, b.trace, "submit", trace::span_kind::server, now, ctx_.clock.now_ms());
  log::info("batch", "batch created",
            {{"batch_id", b.id},
             {"input_file_id", b.input_file_id},
             {"endpoint", b.endpoint},
             {"tenant", b.tenant}});
  launch(b.id);
  co_return std::move(*r->batch);
}

result<storage::batch_record> batch_manager::get_batch(const std::string& tenant,
                                                       const std::string& id) {
  auto b = get_batch_any(id);
  if (!b || b->tenant != tenant)
    return make_error(errc::batch_not_found, "No such batch: '" + id + "'.", "batch_id");
  return std::move(*b);
}

result<batch_page> batch_manager::list_batches(const std::string& tenant, const std::string& after,
                                               int limit) {
  batch_page page;
  auto txn = env_.begin_read();
  page.batches =
      storage::list_batches(txn, tenant, after, static_cast<size_t>(limit), page.has_more);
  return page;
}

asio::awaitable<result<storage::batch_record>> batch_manager::cancel_batch(std::string tenant,
                                                                           std::string id) {
  if (ctx_.stopping) co_return make_error(errc::shutting_down, "the server is shutting down");
  storage::cancel_batch_op op{tenant, id, ctx_.clock.now_ms()};
  auto r = co_await commit(std::move(op));
  if (!r) co_return r.error();
  using kind = storage::op_reply::kind;
  if (r->what == kind::not_found)
    co_return make_error(errc::batch_not_found, "No such batch: '" + id + "'.", "batch_id");
  if (r->what == kind::conflict)
    co_return make_error(
        errc::batch_not_cancellable,
        "Batch " + id + " is already " + std::string(storage::to_string(r->batch->status)) +
            "; only validating, in_progress or finalizing batches can be cancelled.",
        "batch_id");
  if (r->batch->status == storage::batch_status::cancelling) {
    // The batch's actor stops; when none runs it here (it ended a moment ago, or gave up until
    // the next start), the new one finishes the cancel — the registry lets only one run.
    caf::anon_send(ctx_.jobs, cancel_atom::value, id);
    launch(id);
  }
  co_return std::move(*r->batch);
}

// --- rerun (the jobs API's, docs/batches.md "Rerun") ------------------------------------------

asio::awaitable<result<storage::batch_record>> batch_manager::rerun_batch(std::string tenant,
                                                                          std::string id) {
  if (ctx_.stopping) co_return make_error(errc::shutting_down, "the server is shutting down");
  auto b = get_batch_any(id);
  if (!b || b->tenant != tenant)
    co_return make_error(errc::batch_not_found, "No such batch: '" + id + "'.", "batch_id");
  // The files a rerun reads must still have their bytes (the operation checks their records).
  for (const auto& [what, fid] :
       {std::pair{"input", b->input_file_id}, std::pair{"error", b->error_file_id},
        std::pair{"output", b->output_file_id}}) {
    if (!fid.empty() && ::access(file_path(fid).c_str(), R_OK) != 0) {
      std::string why = "job " + id;
      why.append(" cannot be rerun: its ").append(what).append(" file ").append(fid);
      why.append(" was deleted");
      co_return make_error(errc::job_not_rerunnable, std::move(why), "id");
    }
  }
  // The window it was created with, restarted; a window no longer configured still parses.
  int64_t window_ms = b->deadline_ms - b->created_at * 1000;
  if (auto w = config::parse_completion_windows(b->completion_window); w && w->size() == 1)
    window_ms = w->front().ms;
  storage::rerun_batch_op op{tenant, id, ctx_.clock.now_ms(), window_ms};
  auto r = co_await commit(std::move(op));
  if (!r) co_return r.error();
  using kind = storage::op_reply::kind;
  if (r->what == kind::not_found)
    co_return make_error(errc::batch_not_found, "No such batch: '" + id + "'.", "batch_id");
  if (r->what == kind::refused && r->refusal) co_return *r->refusal;
  log::info("batch", "batch rerun",
            {{"batch_id", id}, {"run", r->batch->run}, {"error_file_id", r->batch->error_file_id}});
  launch(id, true);
  co_return std::move(*r->batch);
}

}  // namespace sy::actors
