// The runner's life: from the batch's record to dispatch (ingestion, plans, the input file, the
// lanes), the completion window, stop and failure. Lanes: batch_lanes.cpp; after dispatch:
// batch_finalize.cpp.

#include "actors/batch_runner.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <filesystem>

#include <boost/asio/bind_executor.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/post.hpp>

#include "actors/detail/batch_io.hpp"
#include "runtime/failpoint.hpp"
#include "runtime/log.hpp"

namespace sy::actors {
namespace {

namespace asio = boost::asio;
namespace fs = std::filesystem;
namespace plan = runtime::batch;

}  // namespace

batch_runner::batch_runner(batch_manager& m, std::string id)
    : mgr(m),
      id(std::move(id)),
      strand(asio::make_strand(m.ctx_.exec)),
      wake(strand, asio::steady_timer::time_point::max()),
      deadline(m.ctx_.clock.make_timer(strand)),
      pause(m.ctx_.clock.make_timer(strand)) {}

void batch_runner::stop(const std::string& code) {
  if (code.empty()) {
    shutting_down = true;
    pause->cancel();  // a retry waiting for its backoff ends; the next start resumes the batch
  } else if (stop_code.empty()) {
    stop_code = code;
  }
  halted = true;
  {
    std::lock_guard lock{mu};
    for (auto& [k, h] : inflight) h->abort();
    for (auto& t : waiting) asio::post(t->get_executor(), [t] { t->cancel(); });
  }
  wake.cancel();
}

void batch_runner::ended() {
  deadline->cancel();
  close_input();
}

void batch_runner::close_input() {
  if (fd >= 0) ::close(fd);
  fd = -1;
}

asio::awaitable<void> batch_runner::fail(std::string message) {
  log::error("batch", "batch failed", {{"batch_id", id}, {"error", message}});
  storage::stop_batch_op op{id, errc::batch_failed, message, mgr.ctx_.clock.now_ms()};
  (void)co_await mgr.commit(std::move(op));
  if (strand.running_in_this_thread()) {
    stop(errc::batch_failed);
  } else {
    asio::post(strand, [self = shared_from_this()] { self->stop(errc::batch_failed); });
  }
}

asio::awaitable<void> batch_runner::watch_deadline(int64_t deadline_ms) {
  auto self = shared_from_this();
  int64_t left = deadline_ms - mgr.ctx_.clock.now_ms();
  if (left > 0) {
    if (!co_await runtime::async_wait(*deadline, left, asio::use_awaitable))
      co_return;  // the runner ended first
  }
  if (stopped()) co_return;
  storage::stop_batch_op op{id, errc::batch_expired, "", mgr.ctx_.clock.now_ms()};
  auto r = co_await mgr.commit(std::move(op));
  if (r && r->batch && r->batch->stop_code == errc::batch_expired) {
    log::info("batch", "completion window passed; stopping", {{"batch_id", id}});
    stop(errc::batch_expired);
  }
}

asio::awaitable<bool> batch_runner::ingest(const storage::batch_record& b) {
  plan::ingest_options o;
  o.input_path = mgr.file_path(b.input_file_id);
  o.endpoint = b.endpoint;
  o.work_dir = plans_dir();
  o.max_lines = mgr.ctx_.cfg.batch_max_lines;
  engine_context* ctx = &mgr.ctx_;
  o.model_known = [ctx](std::string_view model) {
    return ctx->gateway_for(std::string(model)) != nullptr;
  };
  const int64_t started_ms = mgr.ctx_.clock.now_ms();
  auto scan = [o] { return plan::ingest(o); };
  auto r = co_await blocking(std::move(scan));
  if (!r) {
    {
      std::string why = "cannot read the input file " + b.input_file_id + ": " + r.error().message;
      co_await fail(std::move(why));
    }
    co_return false;
  }
  // The plans and model_map.json are in place, the batch is still validating: a restart must
  // ingest again from scratch rather than trust them.
  if (r->errors.empty()) runtime::failpoint("batch_ingest_map_written");
  const int64_t ms = mgr.ctx_.clock.now_ms() - started_ms;
  storage::batch_ingested_op op;
  op.id = id;
  op.total = r->line_count;
  op.now_ms = mgr.ctx_.clock.now_ms();
  for (auto& e : r->errors)
    op.errors.push_back(storage::batch_error{e.code, e.message, e.param, e.line});
  log::info("batch", op.errors.empty() ? "input validated" : "input invalid; batch failed",
            {{"batch_id", id},
             {"lines", r->line_count},
             {"bytes", r->bytes},
             {"errors", op.errors.size()},
             {"models", r->models.size()},
             {"ms", ms}});
  auto c = co_await mgr.commit(std::move(op));
  if (!c) {
    {
      std::string why = "cannot record validation: " + c.error().message;
      co_await fail(std::move(why));
    }
    co_return false;
  }
  const bool valid = c->batch && c->batch->status != storage::batch_status::failed;
  // Committed in_progress, nothing dispatched yet: a restart loads the plans as they are.
  if (valid) runtime::failpoint("batch_ingest_committed");
  co_return valid;
}

asio::awaitable<std::optional<plan::ingest_result>> batch_runner::load_plans() {
  auto load = [d = plans_dir()] { return plan::load_plan(d); };
  auto loaded = co_await blocking(std::move(load));
  if (loaded) co_return std::move(*loaded);
  {
    std::string why = "cannot load the batch's plan: " + loaded.error().message;
    co_await fail(std::move(why));
  }
  co_return std::nullopt;
}

asio::awaitable<void> batch_runner::open_input(const std::string& file_id) {
  auto input = mgr.file_path(file_id);
  fd = ::open(input.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    std::string why = detail::sys_error("cannot open the input file", input);
    co_await fail(std::move(why));
  }
}

asio::awaitable<void> batch_runner::dispatch(const plan::ingest_result& p) {
  auto self = shared_from_this();
  {
    auto now = mgr.get_batch_any(id);
    fresh = now && now->completed == 0 && now->failed == 0;
  }
  log::info("batch", "dispatching",
            {{"batch_id", id}, {"lines", p.line_count}, {"models", p.models.size()}});
  for (uint64_t i = 0; i < p.models.size(); ++i) {
    ++lanes;
    // On the gateway client's strand (see lane); a model without a gateway on the runner's.
    auto* gw = mgr.ctx_.gateway_for(p.models[i].model);
    auto ex = gw ? gw->executor() : asio::any_io_executor(strand);
    asio::co_spawn(ex, lane(p.models[i], i),
                   asio::bind_executor(strand, [self](std::exception_ptr ex) {
                     if (ex) log::error("batch", "lane crashed", {{"batch_id", self->id}});
                     --self->lanes;
                     self->wake.cancel();
                   }));
  }
  while (lanes > 0) {
    boost::system::error_code ec;
    co_await wake.async_wait(detail::use_ec(ec));
  }
  co_await recorded();
}

asio::awaitable<void> batch_runner::run() {
  auto self = shared_from_this();
  auto b = mgr.get_batch_any(id);
  if (!b || storage::is_terminal(b->status)) co_return;
  endpoint = b->endpoint;
  if (!b->stop_code.empty()) stop_code = b->stop_code;
  if (b->deadline_ms > 0) asio::co_spawn(strand, watch_deadline(b->deadline_ms), asio::detached);

  bool have_plan =
      b->status != storage::batch_status::validating && fs::exists(plans_dir() + "/model_map.json");
  if (b->status == storage::batch_status::validating && !stopped()) {
    if (co_await ingest(*b)) {
      have_plan = true;
    } else if (auto now = mgr.get_batch_any(id); now && storage::is_terminal(now->status)) {
      // Failed validation is terminal already; an I/O failure set the stop code.
      std::error_code ec;
      fs::remove_all(plans_dir(), ec);
      co_return;
    }
  }
  std::optional<plan::ingest_result> p;
  if (have_plan) p = co_await load_plans();
  if (p) co_await open_input(b->input_file_id);
  if (p && fd >= 0 && !stopped()) co_await dispatch(*p);
  if (shutting_down) {
    close_input();
    co_return;  // resumed at the next start
  }
  co_await finish(p);
}

}  // namespace sy::actors
