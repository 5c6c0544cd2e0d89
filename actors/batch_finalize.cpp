// After dispatch: the lines that never ran are drained into the error file with the stop code,
// the recorded lines are written into the output and error files, and the batch is made
// terminal — each step retried with backoff (batch_retry_policy) when it fails.

#include "actors/batch_runner.hpp"

#include <unistd.h>

#include <filesystem>

#include "actors/detail/batch_io.hpp"
#include "runtime/backoff.hpp"
#include "runtime/batch_output.hpp"
#include "runtime/failpoint.hpp"
#include "runtime/log.hpp"

namespace sy::actors {
namespace {

namespace asio = boost::asio;
namespace fs = std::filesystem;
namespace plan = runtime::batch;
using runtime::batch::error_line;
using runtime::batch::request_id_for;
using runtime::batch::stop_message;

constexpr size_t drain_chunk = 1'000;  ///< error lines per commit when draining

}  // namespace

// Every line without a result gets an error line with the stop code. Reading and matching run
// on the blocking pool, a chunk at a time; each chunk commits before the next is read, so a try
// that fails part way keeps what it committed and the next try skips those lines. "" when every
// line has its result, else what failed.
asio::awaitable<std::string> batch_runner::drain(const plan::ingest_result& p) {
  const std::string code = stop_code;
  const std::string message = stop_message(code);
  for (uint64_t model_index = 0; model_index < p.models.size(); ++model_index) {
    const auto& model = p.models[model_index];
    uint64_t position = 0;
    auto open_plan = [p = plans_dir() + "/plans/" + model.safe_name + ".plan"] {
      return plan::plan_reader::open(p);
    };
    auto reader = co_await blocking(std::move(open_plan));
    if (!reader)
      co_return "cannot open the plan of model " + model.model + ": " + reader.error().message;
    for (;;) {
      auto next_chunk = [&] {
        std::vector<storage::batch_line> lines;
        plan::plan_entry e{};
        auto txn = mgr.env_.begin_read();
        while (lines.size() < drain_chunk && reader->next(e)) {
          const uint64_t slot = storage::batch_slot(model_index, position++);
          if (storage::has_batch_line(txn, id, slot)) continue;
          std::string custom_id;
          if (fd >= 0)
            if (auto text = plan::read_at(fd, e.offset, e.length))
              if (auto parsed = plan::parse_request_line(*text)) custom_id = parsed->custom_id;
          lines.push_back(storage::batch_line{
              slot,
              false,
              error_line(request_id_for(id_seed, e.offset), custom_id, code, message),
              {}});
        }
        return lines;
      };
      auto chunk = co_await blocking(std::move(next_chunk));
      if (chunk.empty()) break;
      storage::batch_lines_op op{id, std::move(chunk)};
      auto r = co_await mgr.commit(std::move(op));
      if (!r) co_return "cannot record drained lines: " + r.error().message;
    }
    if (reader->failed()) co_return "cannot read the plan of model " + model.model;
  }
  co_return std::string{};
}

asio::awaitable<std::optional<std::string>> batch_runner::drain_with_retries(
    const plan::ingest_result& p) {
  for (int tries = 1;; ++tries) {
    std::string failure = co_await drain(p);
    if (failure.empty()) co_return failure;
    ++mgr.failed_tries_;
    if (tries >= mgr.retry_policy().tries) {
      log::error("batch", "cannot drain the batch; giving up",
                 {{"batch_id", id}, {"tries", tries}, {"error", failure}});
      co_return "after " + std::to_string(tries) + " tries: " + failure;
    }
    if (!co_await back_off(tries, "drain", failure)) co_return std::nullopt;
  }
}

asio::awaitable<bool> batch_runner::back_off(int tries, const char* what,
                                             const std::string& failure) {
  const batch_retry_policy policy = mgr.retry_policy();
  // Jitter (1.0: none) spreads clients that failed together; one batch's retries need none.
  const int64_t delay =
      runtime::backoff_delay_ms(tries - 1, policy.initial.count(), policy.max.count(), 1.0);
  log::warn("batch", std::string("cannot ") + what + " the batch; retrying",
            {{"batch_id", id}, {"try", tries}, {"retry_in_ms", delay}, {"error", failure}});
  if (shutting_down) co_return false;
  co_await runtime::async_wait(*pause, delay, asio::use_awaitable);
  co_return !shutting_down;
}

batch_runner::written_files batch_runner::write_files(const storage::batch_record& b,
                                                      const std::string& out_id,
                                                      const std::string& err_id, int64_t now_s) {
  runtime::batch::result_file out(mgr.file_path(out_id)), err(mgr.file_path(err_id));
  {
    auto txn = mgr.env_.begin_read();
    storage::scan_batch_lines(txn, id, [&](uint64_t, bool ok, std::string_view text) {
      (ok ? out : err).append(text);
      return !(out.failed() && err.failed());  // nothing more can be written
    });
  }
  // Each file on its own: when one cannot be written the other may still be kept.
  out.commit();
  err.commit();
  detail::fsync_dir(mgr.files_dir_);
  auto record = [&](const runtime::batch::result_file& f, const std::string& fid,
                    const char* kind) {
    storage::file_record r;
    r.id = fid;
    r.tenant = b.tenant;
    r.filename = id + "_" + kind + ".jsonl";
    r.purpose = "batch_output";
    r.bytes = f.bytes();
    r.created_at = now_s;
    r.expires_at = b.output_expires_after > 0 ? now_s + b.output_expires_after : 0;
    return r;
  };
  written_files w;
  if (out.created()) w.output = record(out, out_id, "output");
  if (err.created()) w.error = record(err, err_id, "error");
  w.output_failure = out.failure();
  w.error_failure = err.failure();
  return w;
}

void batch_runner::remove(const written_files& w) const {
  if (w.output) ::unlink(mgr.file_path(w.output->id).c_str());
  if (w.error) ::unlink(mgr.file_path(w.error->id).c_str());
}

asio::awaitable<std::string> batch_runner::finalize(const std::string& undrained, int tries,
                                                    bool last) {
  // Both files are written from the recorded lines in slot order (model by model, each in its
  // plan's order; OpenAI does not keep input order either), so each line appears exactly once
  // whatever happened before; a crash here redoes finalization from the same lines.
  runtime::failpoint("batch_finalize_start");
  const int64_t started_ms = mgr.ctx_.clock.now_ms();
  auto b0 = mgr.get_batch_any(id);
  if (!b0) co_return std::string{};
  const int64_t now_ms = mgr.ctx_.clock.now_ms();
  auto out_id = "file-" + mgr.ids_.next(now_ms);
  auto err_id = "file-" + mgr.ids_.next(now_ms);
  auto write = [&] { return write_files(*b0, out_id, err_id, now_ms / 1000); };
  auto w = co_await blocking(std::move(write));
  const bool incomplete = !w.output_failure.empty() || !w.error_failure.empty();
  if (incomplete) {
    ++mgr.failed_tries_;
    const auto& failure = w.output_failure.empty() ? w.error_failure : w.output_failure;
    if (!last) {
      remove(w);  // all or nothing until the last try
      co_return failure;
    }
    log::error("batch", "cannot write the result files; giving up, the batch fails",
               {{"batch_id", id}, {"tries", tries}, {"error", failure}});
  }
  runtime::failpoint("batch_files_written");
  storage::batch_finish_op op{id, w.output, w.error, mgr.ctx_.clock.now_ms(), std::nullopt};
  const runtime::batch::line_counts counts{b0->total, b0->completed, b0->failed};
  if (auto lost = runtime::batch::lost_message(counts, b0->stop_code, undrained, w.output_failure,
                                               w.error_failure, tries);
      !lost.empty())
    op.failure = storage::batch_error{errc::batch_failed, std::move(lost), "", 0};
  auto r = co_await mgr.commit(std::move(op));
  if (!r) {
    if (!incomplete) ++mgr.failed_tries_;
    remove(w);  // without a record they would only be removed at the next start
    co_return "cannot record finalization: " + r.error().message;
  }
  if (!r->batch) {  // the batch is gone: nothing to finalize
    remove(w);
    co_return std::string{};
  }
  const auto& b = *r->batch;
  // Already terminal (finalized before): the files just written are not referenced.
  if (r->what != storage::op_reply::kind::done) remove(w);
  std::error_code ec;
  fs::remove_all(plans_dir(), ec);
  log::info("batch", "batch finished",
            {{"batch_id", id},
             {"status", storage::to_string(b.status)},
             {"total", b.total},
             {"completed", b.completed},
             {"failed", b.failed},
             {"output_file_id", b.output_file_id},
             {"error_file_id", b.error_file_id},
             {"finalize_ms", mgr.ctx_.clock.now_ms() - started_ms}});
  co_return std::string{};
}

asio::awaitable<void> batch_runner::finalize_with_retries(std::string undrained) {
  for (int tries = 1;; ++tries) {
    const bool last = tries >= mgr.retry_policy().tries;
    std::string failure = co_await finalize(undrained, tries, last);
    if (failure.empty()) co_return;
    if (last) {
      // Files that cannot be written are given up on the last try, so only a storage that
      // cannot commit ends here: nothing more can be done now; the batch resumes at the next
      // start.
      log::error("batch", "cannot finalize the batch; giving up until the next start",
                 {{"batch_id", id}, {"tries", tries}, {"error", failure}});
      co_return;
    }
    if (!co_await back_off(tries, "finalize", failure)) co_return;
  }
}

asio::awaitable<void> batch_runner::finish(const std::optional<plan::ingest_result>& p) {
  auto b = mgr.get_batch_any(id);
  if (!b || storage::is_terminal(b->status)) co_return;
  std::string undrained;  // why lines without a result could not be drained, if they could not
  if (b->stop_code.empty()) {
    storage::batch_finalizing_op op{id, mgr.ctx_.clock.now_ms()};
    (void)co_await mgr.commit(std::move(op));
  } else {
    stop_code = b->stop_code;
    if (p) {
      // Also without the input file (a system failure may be just that): the lines then carry
      // no custom_id, but every one of them is accounted for.
      auto drained = co_await drain_with_retries(*p);
      if (!drained) co_return;  // shutting down: resumed at the next start
      undrained = std::move(*drained);
    }
  }
  close_input();
  deadline->cancel();
  co_await finalize_with_retries(std::move(undrained));
}

}  // namespace sy::actors
