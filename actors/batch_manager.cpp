#include "actors/batch_manager.hpp"

#include <utility>

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <set>
#include <thread>

#include <boost/asio/bind_executor.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <simdjson.h>

#include "actors/write.hpp"
#include "config/sha256.hpp"
#include "runtime/backoff.hpp"
#include "runtime/batch_output.hpp"
#include "runtime/batch_plan.hpp"
#include "runtime/failpoint.hpp"
#include "runtime/log.hpp"
#include "runtime/thread_name.hpp"
#include "storage/json_text.hpp"

namespace sy::actors {
namespace {

namespace asio = boost::asio;
namespace fs = std::filesystem;
using json = nlohmann::json;
namespace plan = runtime::batch;

constexpr size_t drain_chunk = 1'000;  ///< error lines per commit when draining
/// Results gathered before a commit. A scheduling delay on the real clock, not a time the engine
/// keeps (it only groups fsyncs), so it does not follow the injected clock: a test that holds its
/// manual clock still must not stall every result commit.
constexpr std::chrono::milliseconds record_gather{5};
constexpr auto sweep_interval = std::chrono::seconds(1);

auto use_ec(boost::system::error_code& ec) { return asio::redirect_error(asio::use_awaitable, ec); }

std::string sys_error(const std::string& what, const std::string& path) {
  return what + " " + path + ": " + std::strerror(errno);
}

void fsync_dir(const std::string& dir) {
  int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY);
  if (fd >= 0) {
    ::fsync(fd);
    ::close(fd);
  }
}

/// SplitMix64's finalizer: a bijection on 64-bit values that mixes every input bit.
uint64_t mix64(uint64_t x) {
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

/// The id OpenAI shows for one request of a batch, from the batch's seed (the first 16 bytes of
/// SHA-256 of its id) and the line's input offset: deterministic, so a line recorded again after
/// a crash carries the same id, and distinct for distinct offsets (mix64 is a bijection) — at
/// the cost of two multiplications instead of a SHA-256 per request.
std::string request_id_for(const std::array<uint64_t, 2>& seed, uint64_t offset) {
  static constexpr char hex[] = "0123456789abcdef";
  std::string id = "batch_req_";
  id.resize(id.size() + 32);
  char* p = id.data() + 10;
  for (uint64_t v : {mix64(seed[0] ^ offset), mix64(seed[1] + offset)})
    for (int shift = 60; shift >= 0; shift -= 4) *p++ = hex[(v >> shift) & 0xf];
  return id;
}

std::array<uint64_t, 2> request_id_seed(const std::string& batch_id) {
  const std::string digest = config::sha256_hex(batch_id);
  return {std::stoull(digest.substr(0, 16), nullptr, 16),
          std::stoull(digest.substr(16, 16), nullptr, 16)};
}

/// One response's usage, read straight from simdjson's DOM (no JSON tree of our own per line).
storage::token_usage usage_of(simdjson::dom::element u) {
  return storage::read_usage([u](const char* parent, const char* key) -> int64_t {
    simdjson::dom::element o = u;
    if (parent != nullptr && u[parent].get(o) != simdjson::SUCCESS) return 0;
    int64_t v = 0;
    return o.is_object() && o[key].get_int64().get(v) == simdjson::SUCCESS ? v : 0;
  });
}

std::string stop_message(const std::string& code) {
  if (code == errc::batch_expired)
    return "This request could not be executed before the completion window expired.";
  if (code == errc::batch_cancelled)
    return "This request was not executed: the batch was cancelled.";
  return "This request was not executed: the batch failed.";
}

/// An error line: {"id","custom_id","response":null,"error":{"code","message"}}.
std::string error_line(const std::string& id, const std::string& custom_id, const std::string& code,
                       const std::string& message) {
  // An unknown custom_id (the input file became unreadable before the line was drained) is null.
  json line = {{"id", id},
               {"custom_id", custom_id.empty() ? json(nullptr) : json(custom_id)},
               {"response", nullptr},
               {"error", {{"code", code}, {"message", message}}}};
  return line.dump(-1, ' ', false, json::error_handler_t::replace);
}

/// The line for a gateway answer; `ok` says whether it belongs to the output file (2xx). A JSON
/// body is spliced in as the gateway sent it (validated, not re-serialized); any other body is
/// kept as a JSON string.
storage::batch_line response_line(uint64_t slot, const std::string& id,
                                  const std::string& custom_id,
                                  const runtime::gateway_outcome& out) {
  thread_local simdjson::dom::parser parser;
  storage::batch_line line;
  line.slot = slot;
  line.ok = out.status_code >= 200 && out.status_code < 300;
  simdjson::dom::element doc;
  bool is_json = parser.parse(out.body).get(doc) == simdjson::SUCCESS;
  if (line.ok && is_json && doc.is_object()) {
    simdjson::dom::element usage;
    if (doc["usage"].get(usage) == simdjson::SUCCESS && usage.is_object())
      line.usage = usage_of(usage);
  }
  const std::string& request_id = out.request_id.empty() ? id : out.request_id;
  std::string& t = line.text;
  t.reserve(out.body.size() + custom_id.size() + 160);
  t += R"({"id":")";
  t += id;
  t += R"(","custom_id":)";
  storage::append_json_string(t, custom_id);
  t += R"(,"response":{"status_code":)";
  t += std::to_string(out.status_code);
  t += R"(,"request_id":)";
  storage::append_json_string(t, request_id);
  t += R"(,"body":)";
  if (is_json) {
    // One line per result: a body that spans lines is minified.
    if (out.body.find('\n') == std::string::npos && out.body.find('\r') == std::string::npos)
      t += out.body;
    else
      t += simdjson::minify(doc);
  } else {
    storage::append_json_string(t, out.body);
  }
  t += R"(},"error":null})";
  return line;
}

/// The batch_failed message of a finalization that gave up: what is missing from the files and
/// why; "" when nothing is. `undrained`: why the drain gave up (with its tries), if it did;
/// `tries`: the finalization's tries, after which a file that could not be written was given up.
std::string lost_message(const storage::batch_record& b, const std::string& undrained,
                         const std::string& output_failure, const std::string& error_failure,
                         int tries) {
  const std::string after = "after " + std::to_string(tries) + " tries: ";
  std::vector<std::string> parts;
  if (!undrained.empty())
    parts.push_back("cannot record the " + std::to_string(b.total - b.completed - b.failed) +
                    " requests that have no result as " + b.stop_code + " (" + undrained +
                    "); they are in neither file");
  if (!output_failure.empty())
    parts.push_back("cannot write the output file of " + std::to_string(b.completed) + " lines (" +
                    after + output_failure + "); those results are lost");
  if (!error_failure.empty())
    parts.push_back("cannot write the error file of " + std::to_string(b.failed) + " lines (" +
                    after + error_failure + "); those lines are lost");
  if (parts.empty()) return "";
  std::string m = "The batch could not be finalized: ";
  for (size_t i = 0; i < parts.size(); ++i) m += (i > 0 ? "; " : "") + parts[i];
  return m + ".";
}

}  // namespace

// ---------------------------------------------------------------------------------------------
// One batch in flight. Every member is touched on `strand` only, except `stop_requested`.

struct batch_manager::runner : std::enable_shared_from_this<runner> {
  runner(batch_manager& m, std::string id)
      : mgr(m),
        id(std::move(id)),
        strand(asio::make_strand(m.ctx_.exec)),
        wake(strand, asio::steady_timer::time_point::max()),
        deadline(m.ctx_.clock.make_timer(strand)),
        pause(m.ctx_.clock.make_timer(strand)) {}

  batch_manager& mgr;
  std::string id;
  const std::array<uint64_t, 2> id_seed = request_id_seed(id);  ///< see request_id_for
  asio::strand<asio::io_context::executor_type> strand;
  /// Never expires (set once to the maximum); cancel() wakes every wait on it, each of which
  /// re-checks its condition. Cancelled when a lane, a request or a commit of results ends.
  asio::steady_timer wake;
  std::unique_ptr<runtime::timer> deadline;  ///< the completion window's end (ctx.clock's)
  std::unique_ptr<runtime::timer> pause;     ///< the wait before a drain or finalization is retried
  std::string endpoint;
  std::string stop_code;  ///< set when dispatch must stop (cancel, expiry, failure)
  bool shutting_down = false;
  int fd = -1;
  int lanes = 0;  ///< lanes still dispatching
  /// Set by stop(): lanes run on their gateway clients' strands and read this instead of
  /// stop_code / shutting_down, which belong to `strand`.
  std::atomic<bool> halted{false};
  /// Guards what the lanes and requests touch from their own executors: inflight,
  /// next_request, waiting, unrecorded, recording. Everything else belongs to the strand.
  std::mutex mu;
  uint64_t next_request = 0;
  std::map<uint64_t, std::shared_ptr<runtime::abort_handle>> inflight;
  /// Budget waits, each cancelled on its own executor when the runner stops.
  std::set<std::shared_ptr<asio::steady_timer>> waiting;
  bool fresh = false;  ///< no line had a result when the run began: skip the per-line check
  std::vector<storage::batch_line> unrecorded;  ///< results waiting for the next commit
  bool recording = false;                       ///< a commit of results is under way

  bool stopped() const { return !stop_code.empty() || shutting_down; }

  /// Stops dispatch (on the strand): `code` for cancel/expiry/failure, empty for shutdown.
  void stop(const std::string& code) {
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

  /// What one lane's workers share; touched only on the lane's executor.
  struct lane_state {
    plan::plan_reader reader;
    std::string model;
    uint64_t model_index = 0;
    uint64_t position = 0;  ///< entries of the plan read so far
    runtime::gateway_client* gw = nullptr;
    global_budget* per_model = nullptr;
    global_budget* global = nullptr;
  };

  asio::awaitable<void> run();
  asio::awaitable<bool> ingest(const storage::batch_record& b);
  asio::awaitable<void> lane(plan::model_plan model, uint64_t model_index);
  asio::awaitable<void> worker(lane_state& lane);
  bool next_line(lane_state& lane, plan::plan_entry& e, uint64_t& slot);
  asio::awaitable<bool> take(global_budget& budget);
  asio::awaitable<void> request(std::string model, runtime::gateway_client* gw, plan::plan_entry e,
                                uint64_t slot);
  asio::awaitable<void> watch_deadline(int64_t deadline_ms);
  void record(storage::batch_line line);
  asio::awaitable<void> record_loop();
  asio::awaitable<void> recorded();
  asio::awaitable<void> fail(std::string message);

  // --- After dispatch: drain, write the files, make the batch terminal. Each step is retried
  // with backoff (batch_retry_policy) instead of leaving the batch stuck until a restart.

  /// What one finalization try wrote: a record per file now in place, and why a file could not
  /// be written (empty when it could).
  struct written_files {
    std::optional<storage::file_record> output, error;
    std::string output_failure, error_failure;
  };
  /// Dispatch ended: every line has a result, or a stop code says why some never ran. Drains
  /// those into the error file, then finalizes.
  asio::awaitable<void> finish(const std::optional<plan::ingest_result>& p);
  asio::awaitable<std::string> drain(const plan::ingest_result& p);
  /// "" once drained; why the last try failed when the tries ran out; nothing when the engine
  /// began shutting down (the batch resumes at the next start).
  asio::awaitable<std::optional<std::string>> drain_with_retries(const plan::ingest_result& p);
  /// Logs failed try `tries` of `what` and waits the policy's delay; false when the engine began
  /// shutting down.
  asio::awaitable<bool> back_off(int tries, const char* what, const std::string& failure);
  /// One try: "" once the batch is terminal, else why it is not (what it wrote is removed). On
  /// the `last` try a file that cannot be written is given up: the batch ends failed with the
  /// files that could be written and a batch_failed error saying what was lost (`undrained`:
  /// why the drain gave up, also reported there).
  asio::awaitable<std::string> finalize(const std::string& undrained, int tries, bool last);
  asio::awaitable<void> finalize_with_retries(std::string undrained);
  /// Streams the recorded lines into the output and error files (on the blocking pool).
  written_files write_files(const storage::batch_record& b, const std::string& out_id,
                            const std::string& err_id, int64_t now_s);
  /// Removes the files of `w` that are in place (not referenced by any record).
  void remove(const written_files& w) const;

  /// Runs `fn` on the blocking pool and resumes on the strand with its result.
  template <class F>
  auto blocking(F fn) -> asio::awaitable<decltype(fn())> {
    using T = decltype(fn());
    // Boxed: co_spawn's result must be default-constructible, a result<T> is not.
    // Named, not a temporary in the co_await expression (GCC 12 destroys such temporaries twice).
    auto task = [fn = std::move(fn)]() mutable -> asio::awaitable<std::optional<T>> {
      co_return std::optional<T>(fn());
    };
    auto box = co_await asio::co_spawn(mgr.blocking_, std::move(task), asio::use_awaitable);
    co_return std::move(*box);
  }

  std::string plans_dir() const { return mgr.batch_dir(id); }
};

asio::awaitable<void> batch_manager::runner::fail(std::string message) {
  log::error("batch", "batch failed", {{"batch_id", id}, {"error", message}});
  storage::stop_batch_op op{id, errc::batch_failed, message, mgr.ctx_.clock.now_ms()};
  (void)co_await mgr.commit(std::move(op));
  if (strand.running_in_this_thread()) {
    stop(errc::batch_failed);
  } else {
    asio::post(strand, [self = shared_from_this()] { self->stop(errc::batch_failed); });
  }
}

// Results are committed in groups: while one commit is under way, the next results gather and
// go in the following one. A result not yet committed when the process dies is simply run
// again; the first committed result per line wins (storage/batch_ops.hpp).
void batch_manager::runner::record(storage::batch_line line) {
  {
    std::lock_guard lock{mu};
    unrecorded.push_back(std::move(line));
    if (recording) return;
    recording = true;
  }
  asio::co_spawn(strand, record_loop(), asio::detached);
}

asio::awaitable<void> batch_manager::runner::record_loop() {
  auto self = shared_from_this();
  asio::steady_timer gather(strand);
  for (;;) {
    // Let a few more results arrive so that one commit (one fsync) carries many; the results'
    // slots are already free, so this delays only their durability, never dispatch.
    gather.expires_after(record_gather);
    boost::system::error_code gec;
    co_await gather.async_wait(use_ec(gec));
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
asio::awaitable<void> batch_manager::runner::recorded() {
  auto busy = [this] {
    std::lock_guard lock{mu};
    return recording || !unrecorded.empty();
  };
  while (busy()) {
    boost::system::error_code ec;
    co_await wake.async_wait(use_ec(ec));
  }
}

asio::awaitable<void> batch_manager::runner::watch_deadline(int64_t deadline_ms) {
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

asio::awaitable<bool> batch_manager::runner::ingest(const storage::batch_record& b) {
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

asio::awaitable<void> batch_manager::runner::request(std::string model, runtime::gateway_client* gw,
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
asio::awaitable<void> batch_manager::runner::lane(plan::model_plan model, uint64_t model_index) {
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
    co_await done.async_wait(use_ec(ec));
  }
}

bool batch_manager::runner::next_line(lane_state& lane, plan::plan_entry& e, uint64_t& slot) {
  while (!halted && lane.reader.next(e)) {
    slot = storage::batch_slot(lane.model_index, lane.position++);
    if (fresh) return true;
    auto txn = mgr.env_.begin_read();
    if (!storage::has_batch_line(txn, id, slot)) return true;  // else: done before a restart
  }
  return false;
}

asio::awaitable<void> batch_manager::runner::worker(lane_state& lane) {
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
asio::awaitable<bool> batch_manager::runner::take(global_budget& budget) {
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
      co_await timer->async_wait(use_ec(ec));
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

// Every line without a result gets an error line with the stop code. Reading and matching run
// on the blocking pool, a chunk at a time; each chunk commits before the next is read, so a try
// that fails part way keeps what it committed and the next try skips those lines. "" when every
// line has its result, else what failed.
asio::awaitable<std::string> batch_manager::runner::drain(const plan::ingest_result& p) {
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

asio::awaitable<std::optional<std::string>> batch_manager::runner::drain_with_retries(
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

asio::awaitable<bool> batch_manager::runner::back_off(int tries, const char* what,
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

batch_manager::runner::written_files batch_manager::runner::write_files(
    const storage::batch_record& b, const std::string& out_id, const std::string& err_id,
    int64_t now_s) {
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
  fsync_dir(mgr.files_dir_);
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

void batch_manager::runner::remove(const written_files& w) const {
  if (w.output) ::unlink(mgr.file_path(w.output->id).c_str());
  if (w.error) ::unlink(mgr.file_path(w.error->id).c_str());
}

asio::awaitable<std::string> batch_manager::runner::finalize(const std::string& undrained,
                                                             int tries, bool last) {
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
  if (auto lost = lost_message(*b0, undrained, w.output_failure, w.error_failure, tries);
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

asio::awaitable<void> batch_manager::runner::finalize_with_retries(std::string undrained) {
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

asio::awaitable<void> batch_manager::runner::finish(const std::optional<plan::ingest_result>& p) {
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
  if (fd >= 0) ::close(fd);
  fd = -1;
  deadline->cancel();
  co_await finalize_with_retries(std::move(undrained));
}

asio::awaitable<void> batch_manager::runner::run() {
  auto self = shared_from_this();
  auto b = mgr.get_batch_any(id);
  if (!b || storage::is_terminal(b->status)) co_return;
  endpoint = b->endpoint;
  if (!b->stop_code.empty()) stop_code = b->stop_code;
  if (b->deadline_ms > 0) asio::co_spawn(strand, watch_deadline(b->deadline_ms), asio::detached);

  bool have_plan =
      b->status != storage::batch_status::validating && fs::exists(plans_dir() + "/model_map.json");
  if (b->status == storage::batch_status::validating && !stopped()) {
    bool valid = co_await ingest(*b);
    if (!valid) {
      // Failed validation is terminal already; an I/O failure set the stop code.
      b = mgr.get_batch_any(id);
      if (b && storage::is_terminal(b->status)) {
        std::error_code ec;
        fs::remove_all(plans_dir(), ec);
        co_return;
      }
    } else {
      have_plan = true;
    }
  }
  std::optional<plan::ingest_result> p;
  if (have_plan) {
    auto load = [d = plans_dir()] { return plan::load_plan(d); };
    auto loaded = co_await blocking(std::move(load));
    if (loaded) {
      p = std::move(*loaded);
    } else {
      {
        std::string why = "cannot load the batch's plan: " + loaded.error().message;
        co_await fail(std::move(why));
      }
    }
  }
  if (p) {
    auto input = mgr.file_path(b->input_file_id);
    fd = ::open(input.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
      std::string why = sys_error("cannot open the input file", input);
      co_await fail(std::move(why));
    }
  }
  if (p && fd >= 0 && !stopped()) {
    {
      auto now = mgr.get_batch_any(id);
      fresh = now && now->completed == 0 && now->failed == 0;
    }
    log::info("batch", "dispatching",
              {{"batch_id", id}, {"lines", p->line_count}, {"models", p->models.size()}});
    for (uint64_t i = 0; i < p->models.size(); ++i) {
      ++lanes;
      // On the gateway client's strand (see lane); a model without a gateway on the runner's.
      auto* gw = mgr.ctx_.gateway_for(p->models[i].model);
      auto ex = gw ? gw->executor() : asio::any_io_executor(strand);
      asio::co_spawn(ex, lane(p->models[i], i),
                     asio::bind_executor(strand, [self](std::exception_ptr ex) {
                       if (ex) log::error("batch", "lane crashed", {{"batch_id", self->id}});
                       --self->lanes;
                       self->wake.cancel();
                     }));
    }
    while (lanes > 0) {
      boost::system::error_code ec;
      co_await wake.async_wait(use_ec(ec));
    }
    co_await recorded();
  }
  if (shutting_down) {
    if (fd >= 0) ::close(fd);
    co_return;  // resumed at the next start
  }
  co_await finish(p);
}

// ---------------------------------------------------------------------------------------------

batch_manager::batch_manager(engine_context& ctx, storage::environment& env)
    : ctx_(ctx),
      env_(env),
      files_dir_((fs::path(ctx.cfg.data_dir) / "files").string()),
      uploads_dir_((fs::path(ctx.cfg.data_dir) / "files" / "uploads").string()),
      batches_dir_((fs::path(ctx.cfg.data_dir) / "batches").string()) {
  // The pool has one thread: the first task it runs names it.
  asio::post(blocking_, [] { runtime::name_this_thread("sy-batch-io"); });
}

batch_manager::~batch_manager() {
  stop(std::chrono::milliseconds(0));
  blocking_.join();
}

std::string batch_manager::upload_dir() const { return uploads_dir_; }
std::string batch_manager::file_path(const std::string& id) const { return files_dir_ + "/" + id; }
std::string batch_manager::batch_dir(const std::string& id) const {
  return batches_dir_ + "/" + id;
}

size_t batch_manager::running() const {
  std::lock_guard lock{mu_};
  return runners_.size();
}

void batch_manager::set_retry_policy(batch_retry_policy p) {
  std::lock_guard lock{mu_};
  retry_ = p;
}

batch_retry_policy batch_manager::retry_policy() const {
  std::lock_guard lock{mu_};
  return retry_;
}

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

void batch_manager::stop(std::chrono::milliseconds grace) {
  if (stopping_.exchange(true)) return;
  std::vector<std::shared_ptr<runner>> all;
  {
    std::lock_guard lock{mu_};
    for (auto& [id, r] : runners_) all.push_back(r);
  }
  for (auto& r : all) asio::post(r->strand, [r] { r->stop(""); });
  if (sweep_timer_) asio::post(sweep_timer_->executor(), [t = sweep_timer_] { t->cancel(); });
  auto until = std::chrono::steady_clock::now() + grace;
  while (running() > 0 && std::chrono::steady_clock::now() < until)
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
}

void batch_manager::launch(const std::string& batch_id) {
  auto r = std::make_shared<runner>(*this, batch_id);
  {
    std::lock_guard lock{mu_};
    if (stopping_ || runners_.count(batch_id)) return;
    runners_[batch_id] = r;
  }
  asio::co_spawn(r->strand, r->run(), [this, r](std::exception_ptr ex) {
    if (ex) {
      try {
        std::rethrow_exception(ex);
      } catch (const std::exception& e) {
        log::error("batch", "runner crashed", {{"batch_id", r->id}, {"what", e.what()}});
      }
    }
    r->deadline->cancel();  // on the strand: the completion runs there
    if (r->fd >= 0) ::close(r->fd);
    r->fd = -1;
    finished(r->id);
  });
}

void batch_manager::finished(const std::string& batch_id) {
  std::lock_guard lock{mu_};
  runners_.erase(batch_id);
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
      if (r && r->file) {
        ::unlink(file_path(id).c_str());
        log::info("batch", "file expired and deleted", {{"file_id", id}});
      }
    }
    co_await runtime::async_wait(*timer, sweep_interval.count(), asio::use_awaitable);
  }
}

// --- batch_service ------------------------------------------------------------------------------

asio::awaitable<result<storage::file_record>> batch_manager::create_file(storage::file_record f,
                                                                         std::string staged) {
  if (ctx_.stopping) {
    ::unlink(staged.c_str());
    co_return make_error(errc::shutting_down, "the server is shutting down");
  }
  if (f.id.empty()) f.id = "file-" + ids_.next(ctx_.clock.now_ms());
  if (f.created_at == 0) f.created_at = ctx_.clock.now_ms() / 1000;
  const std::string path = file_path(f.id);
  if (std::rename(staged.c_str(), path.c_str()) != 0) {
    auto e = sys_error("cannot move the upload to", path);
    ::unlink(staged.c_str());
    co_return make_error(errc::storage_unavailable, e);
  }
  fsync_dir(files_dir_);
  storage::create_file_op op{f};
  auto r = co_await commit(std::move(op));
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
  if (!r) co_return r.error();
  if (!r->file)
    co_return make_error(errc::file_not_found, "No such file: '" + id + "'.", "file_id");
  // A batch still reading the file keeps its descriptor open; the bytes go when it closes it.
  ::unlink(file_path(id).c_str());
  co_return std::move(*r->file);
}

asio::awaitable<result<storage::batch_record>> batch_manager::create_batch(batch_request req) {
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
  storage::create_batch_op op{b};
  auto r = co_await commit(std::move(op));
  if (!r) co_return r.error();
  if (r->what == storage::op_reply::kind::not_found)
    co_return make_error(errc::file_not_found, "No such file: '" + req.input_file_id + "'.",
                         "input_file_id");
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
    std::shared_ptr<runner> rn;
    {
      std::lock_guard lock{mu_};
      if (auto it = runners_.find(id); it != runners_.end()) rn = it->second;
    }
    if (rn) {
      asio::post(rn->strand, [rn] { rn->stop(errc::batch_cancelled); });
    } else {
      launch(id);  // not running here (e.g. finished dispatch a moment ago): finish the cancel
    }
  }
  co_return std::move(*r->batch);
}

}  // namespace sy::actors
