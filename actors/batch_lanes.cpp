// The lanes: one per model, on its gateway client's strand, each with workers that take a line,
// a slot of the model's and of the global budget, send the request and record its result.
// Results are committed in groups through the storage writer.

#include "actors/batch_runner.hpp"

#include <algorithm>
#include <chrono>

#include <boost/asio/bind_executor.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/this_coro.hpp>

#include "actors/batch_response.hpp"
#include "actors/detail/batch_io.hpp"
#include "runtime/log.hpp"

namespace sy::actors {
namespace {

namespace asio = boost::asio;
namespace plan = runtime::batch;
using runtime::batch::error_line;
using runtime::batch::request_id_for;

/// Results gathered before a commit. A scheduling delay on the real clock, not a time the engine
/// keeps (it only groups fsyncs), so it does not follow the injected clock: a test that holds its
/// manual clock still must not stall every result commit.
constexpr std::chrono::milliseconds record_gather{5};

}  // namespace

// Results are committed in groups: while one commit is under way, the next results gather and
// go in the following one. A result not yet committed when the process dies is simply run
// again; the first committed result per line wins (storage/batch_ops.hpp).
void batch_runner::record(storage::batch_line line) {
  {
    std::lock_guard lock{mu};
    unrecorded.push_back(std::move(line));
    if (recording) return;
    recording = true;
  }
  asio::co_spawn(strand, record_loop(), asio::detached);
}

asio::awaitable<void> batch_runner::record_loop() {
  auto self = shared_from_this();
  asio::steady_timer gather(strand);
  for (;;) {
    // Let a few more results arrive so that one commit (one fsync) carries many; the results'
    // slots are already free, so this delays only their durability, never dispatch.
    gather.expires_after(record_gather);
    boost::system::error_code gec;
    co_await gather.async_wait(detail::use_ec(gec));
    std::vector<storage::batch_line> lines;
    {
      std::lock_guard lock{mu};
      if (unrecorded.empty()) {
        recording = false;
        break;
      }
      lines.swap(unrecorded);
    }
    storage::batch_lines_op op{id, std::move(lines)};
    auto r = co_await mgr.commit(std::move(op));
    if (!r) {
      // A storage that cannot commit fails the batch rather than spinning; the lines not
      // recorded are drained with batch_failed (or run again after a restart).
      std::string why = "cannot record results: " + r.error().message;
      {
        std::lock_guard lock{mu};
        unrecorded.clear();
        recording = false;
      }
      wake.cancel();
      co_await fail(std::move(why));
      co_return;
    }
  }
  wake.cancel();
}

/// Waits until every result handed to `record` is committed.
asio::awaitable<void> batch_runner::recorded() {
  auto busy = [this] {
    std::lock_guard lock{mu};
    return recording || !unrecorded.empty();
  };
  while (busy()) {
    boost::system::error_code ec;
    co_await wake.async_wait(detail::use_ec(ec));
  }
}

asio::awaitable<void> batch_runner::request(std::string model, runtime::gateway_client* gw,
                                            plan::plan_entry e, uint64_t slot) {
  auto self = shared_from_this();
  auto text = plan::read_at(fd, e.offset, e.length);
  if (!text) {
    {
      std::string why = "cannot read the input file: " + text.error().message;
      co_await fail(std::move(why));
    }
    co_return;
  }
  auto parsed = plan::parse_request_line(*text);
  if (!parsed) {
    {
      std::string why = "input line at byte " + std::to_string(e.offset) +
                        " no longer parses: " + parsed.error().message;
      co_await fail(std::move(why));
    }
    co_return;
  }
  const std::string req_id = request_id_for(id_seed, e.offset);
  if (!gw) {
    storage::batch_line line{slot,
                             false,
                             error_line(req_id, parsed->custom_id, errc::model_not_found,
                                        "No gateway serves model '" + model + "'."),
                             {}};
    record(std::move(line));
    co_return;
  }
  auto abort = std::make_shared<runtime::abort_handle>();
  uint64_t key = 0;
  {
    std::lock_guard lock{mu};
    key = next_request++;
    inflight.emplace(key, abort);
  }
  runtime::gateway_request gr{endpoint, std::move(parsed->body)};
  auto out = co_await gw->send(std::move(gr), abort);
  {
    std::lock_guard lock{mu};
    inflight.erase(key);
  }
  if (abort->aborted()) co_return;  // stopped: drained with the stop code, or run again later
  storage::batch_line line;
  if (out.got_response) {
    line = response_line(slot, req_id, parsed->custom_id, out);
  } else {
    line = storage::batch_line{slot,
                               false,
                               error_line(req_id, parsed->custom_id, errc::gateway_unreachable,
                                          "The gateway could not be reached after " +
                                              std::to_string(out.tries) + " tries: " + out.error),
                               {}};
  }
  record(std::move(line));
}

// A lane dispatches one model's plan. It runs on the gateway client's strand, with as many
// workers as the per-model limit allows in flight; each worker takes the next line, a slot of
// the model's and of the global budget, sends, records and gives the slots back — so a request
// makes no hop between executors and no coroutine is spawned per request.
asio::awaitable<void> batch_runner::lane(plan::model_plan model, uint64_t model_index) {
  auto self = shared_from_this();
  auto open_plan = [p = plans_dir() + "/plans/" + model.safe_name + ".plan"] {
    return plan::plan_reader::open(p);
  };
  auto reader = co_await blocking(std::move(open_plan));
  if (!reader) {
    {
      std::string why =
          "cannot open the plan of model " + model.model + ": " + reader.error().message;
      co_await fail(std::move(why));
    }
    co_return;
  }
  lane_state lane{std::move(*reader), model.model, model_index};
  lane.gw = mgr.ctx_.gateway_for(model.model);
  lane.per_model = &mgr.ctx_.model_budget(model.model);
  lane.global = &mgr.ctx_.budget;
  const uint64_t lines = lane.reader.size();
  const int workers = static_cast<int>(std::max<uint64_t>(
      1, std::min<uint64_t>({lines, static_cast<uint64_t>(std::max(1, lane.per_model->limit())),
                             static_cast<uint64_t>(std::max(1, lane.global->limit()))})));
  const auto ex = co_await asio::this_coro::executor;
  asio::steady_timer done(ex, asio::steady_timer::time_point::max());
  int running = workers;
  for (int i = 0; i < workers; ++i) {
    asio::co_spawn(ex, worker(lane), asio::bind_executor(ex, [&](std::exception_ptr e) {
                     if (e) log::error("batch", "lane worker crashed", {{"batch_id", id}});
                     --running;
                     done.cancel();
                   }));
  }
  while (running > 0) {
    boost::system::error_code ec;
    co_await done.async_wait(detail::use_ec(ec));
  }
}

bool batch_runner::next_line(lane_state& lane, plan::plan_entry& e, uint64_t& slot) {
  while (!halted && lane.reader.next(e)) {
    slot = storage::batch_slot(lane.model_index, lane.position++);
    if (fresh) return true;
    auto txn = mgr.env_.begin_read();
    if (!storage::has_batch_line(txn, id, slot)) return true;  // else: done before a restart
  }
  return false;
}

asio::awaitable<void> batch_runner::worker(lane_state& lane) {
  auto self = shared_from_this();
  plan::plan_entry e{};
  uint64_t slot = 0;
  while (next_line(lane, e, slot)) {
    if (!co_await take(*lane.per_model)) break;
    if (!co_await take(*lane.global)) {
      lane.per_model->release(1);
      break;
    }
    co_await request(lane.model, lane.gw, e, slot);
    lane.per_model->release(1);
    lane.global->release(1);
  }
}

/// Takes one slot of `budget`, waiting (without blocking a thread) until one is handed to this
/// worker or the runner stops; false when it stopped first. A worker that stops while waiting
/// cancels its place, so a slot reserved for it goes to the next waiter (actors/budget.hpp).
asio::awaitable<bool> batch_runner::take(global_budget& budget) {
  static std::atomic<uint64_t> next_waiter{uint64_t{1} << 62};
  if (halted) co_return false;
  if (budget.try_acquire()) co_return true;  // the common case: no timer, no registration
  const uint64_t waiter = next_waiter++;
  const auto ex = co_await asio::this_coro::executor;
  for (;;) {
    auto timer = std::make_shared<asio::steady_timer>(ex, asio::steady_timer::time_point::max());
    bool stopped = false;
    {
      std::lock_guard lock{mu};
      stopped = halted;  // stop() sets halted before it cancels what is in `waiting`
      if (!stopped) waiting.insert(timer);
    }
    if (stopped) {
      budget.cancel(waiter);
      co_return false;
    }
    // The wake-up is posted to this strand, so it runs after the wait below has begun.
    int got = budget.acquire(
        1, waiter, [timer] { asio::post(timer->get_executor(), [timer] { timer->cancel(); }); });
    if (got != 1) {
      boost::system::error_code ec;
      co_await timer->async_wait(detail::use_ec(ec));
    }
    {
      std::lock_guard lock{mu};
      waiting.erase(timer);
    }
    if (got == 1) {
      if (!halted) co_return true;
      budget.release(1);
      co_return false;
    }
    if (halted) {
      budget.cancel(waiter);
      co_return false;
    }
  }
}

}  // namespace sy::actors
