// A batch's lines as tasks on the native jobs API (docs/batches.md, "A batch as a job"):
// GET /v1/jobs/{batch id}/tasks, /tasks/{id or custom_id} (and /export, which pages through
// list_tasks). A batch keeps no task records: a line's task is read from where the line is —
// the request from the input file, its result from db::batch_lines while the batch runs (found
// through the plans: slot = the line's place in them) or from the output and error files once
// it has ended (found by the request id each result line carries, a bijection of the input
// offset). Pages stream: one pass over the input up to the page, the plans and the result files
// once per page, memory for the page's lines only. The rest of engine is in engine.cpp.

#include <unordered_map>
#include <utility>

#include <nlohmann/json.hpp>

#include "actors/batch_front.hpp"
#include "actors/engine.hpp"
#include "runtime/batch_plan.hpp"
#include "runtime/batch_render.hpp"
#include "runtime/batch_tasks.hpp"
#include "runtime/line_reader.hpp"
#include "storage/batch_ops.hpp"
#include "storage/lmdb_env.hpp"

namespace sy::actors {
namespace {

namespace plan = runtime::batch;
using seed_type = std::array<uint64_t, 2>;

/// A batch's files are read a whole line at a time: no input line is longer than a plan entry
/// can say (UINT32_MAX), no result line either.
constexpr runtime::line_reader_options batch_lines{.max_line_bytes = UINT32_MAX,
                                                   .io_error = errc::batch_io_error};

/// A request line of a page, and its result line once found.
struct batch_line_ref {
  uint64_t offset = 0;
  int64_t index = 0;
  std::string custom_id;
  std::string model;
  std::optional<std::string> result;
};

error job_missing(const std::string& id) {
  return make_error(errc::job_not_found, "no job with id '" + id + "'", "id");
}

/// A batch's lines cannot be read once its input file is gone.
error input_deleted(const storage::batch_record& b) {
  return make_error(errc::file_not_found,
                    "the input file " + b.input_file_id + " of batch " + b.id +
                        " was deleted: its lines cannot be read",
                    "id");
}

error task_missing(const std::string& id, const std::string& task, const char* param) {
  return make_error(errc::task_not_found,
                    "job " + id + " has no task with id or custom_id '" + task + "'", param);
}

/// The request line at `offset` as a page entry (its custom_id and model; a line that no longer
/// parses keeps neither).
batch_line_ref request_of(uint64_t offset, int64_t index, std::string_view text) {
  batch_line_ref l{offset, index, {}, {}, std::nullopt};
  if (auto req = plan::parse_request_line(text)) {
    l.custom_id = std::move(req->custom_id);
    l.model = std::move(req->model);
  }
  return l;
}

/// What a result line says of its task: status, result, error (throws on a line of another
/// shape than the engine writes).
void read_result_line(const std::string& text, storage::task_record& t) {
  using storage::job_status;
  auto line = nlohmann::ordered_json::parse(text, nullptr, false);
  const auto* response =
      line.is_object() && line.contains("response") ? &line["response"] : nullptr;
  if (response && response->is_object()) {
    const int code = response->value("status_code", 0);
    const auto body = response->find("body");
    t.result = storage::gateway_result{code, body == response->end() ? "null" : body->dump()};
    if (code >= 200 && code < 300) {
      t.status = job_status::completed;
    } else {
      t.status = job_status::failed;
      t.error = storage::job_error{code >= 400 && code < 500 ? std::string(errc::gateway_rejected)
                                                             : std::string(errc::gateway_error),
                                   "The gateway answered HTTP " + std::to_string(code) + "."};
    }
    return;
  }
  t.status = job_status::failed;
  const auto* err = line.is_object() && line.contains("error") ? &line["error"] : nullptr;
  if (!err || !err->is_object()) {
    t.error = storage::job_error{std::string(errc::internal_error), "unreadable result line"};
    return;
  }
  t.error = storage::job_error{err->value("code", ""), err->value("message", "")};
  if (t.error->code == errc::batch_cancelled) t.status = job_status::cancelled;
  if (t.error->code == errc::batch_expired) t.status = job_status::expired;
}

/// The task a line shows: queued until it has a result line; then completed (a 2xx response),
/// failed (another response: its status and body are the result), or as its error line's code
/// says (batch_cancelled: cancelled, batch_expired: expired, any other: failed).
storage::task_record task_of(const storage::batch_record& b, const seed_type& seed,
                             const batch_line_ref& l) {
  storage::task_record t;
  t.id = plan::request_id_for(seed, l.offset);
  t.job_id = b.id;
  t.tenant = b.tenant;
  t.model = l.model;
  t.index = static_cast<int>(l.index);
  t.max_attempts = b.max_attempts;
  t.custom_id = l.custom_id;
  if (!l.result) return t;
  t.state = storage::task_state::done;
  try {
    read_result_line(*l.result, t);
  } catch (const nlohmann::json::exception&) {  // not a line this engine wrote
    t.status = storage::job_status::failed;
    t.result.reset();
    t.error = storage::job_error{std::string(errc::internal_error), "unreadable result line"};
  }
  return t;
}

/// Finds the result lines of `lines` (those that have one). Files are read outside any read
/// transaction (one holds the store's resize lock: kept short); `b` becomes the batch as it is
/// now when it ended meanwhile (its results then are in its files).
status find_results(const storage::environment& env, const batch_reads& batches,
                    storage::batch_record& b, std::vector<batch_line_ref>& lines) {
  std::unordered_map<uint64_t, size_t> at;
  for (size_t i = 0; i < lines.size(); ++i) at.emplace(lines[i].offset, i);
  size_t missing = lines.size();
  auto found = [&](uint64_t offset, std::string_view text) {
    auto it = at.find(offset);
    if (it == at.end() || lines[it->second].result) return;
    lines[it->second].result = std::string(text);
    --missing;
  };
  if (!storage::is_terminal(b.status)) {
    // While it runs, a line's result is in db::batch_lines under its slot: its place in the plans.
    // No plans yet (a rerun being planned): no line of this run has a result.
    std::vector<std::pair<uint64_t, uint64_t>> slots;  // (slot, offset) of the page's lines
    const std::string dir = batches.batch_dir(b.id);
    if (auto plans = plan::load_plan(dir)) {
      for (uint64_t m = 0; m < plans->models.size() && slots.size() < lines.size(); ++m) {
        // A plan gone meanwhile (the batch ended and its directory went): the record read below
        // says so.
        auto reader =
            plan::plan_reader::open(dir + "/plans/" + plans->models[m].safe_name + ".plan");
        if (!reader) break;
        plan::plan_entry e;
        for (uint64_t position = 0; slots.size() < lines.size() && reader->next(e); ++position) {
          if (at.count(e.offset)) slots.emplace_back(storage::batch_slot(m, position), e.offset);
        }
      }
    }
    auto txn = env.begin_read();
    auto now = storage::get_batch(txn, b.id);
    if (!now) return ok;  // deleted meanwhile: no result
    if (storage::is_terminal(now->status)) {
      b = std::move(*now);
    } else {
      for (const auto& [slot, offset] : slots) {
        auto value = txn.get(storage::db::batch_lines, storage::batch_line_key(b.id, slot));
        if (value && !value->empty()) found(offset, std::string_view(*value).substr(1));
      }
    }
  }
  // Ended: every result is in the output or error file. A rerun that runs: the lines it does not
  // run again are in the previous output file (those of the error file run again).
  const bool ended = storage::is_terminal(b.status);
  std::vector<std::string> files;
  {
    auto txn = env.begin_read();
    for (const auto* file : {&b.output_file_id, &b.error_file_id}) {
      if (file->empty() || (!ended && file == &b.error_file_id)) continue;
      if (storage::get_file(txn, *file)) files.push_back(*file);  // deleted: no result
    }
  }
  const auto seed = plan::request_id_seed(b.id);
  for (const auto& file : files) {
    if (missing == 0) break;
    runtime::line_reader in(batches.file_path(file), 0, batch_lines);
    runtime::line l;
    while (missing > 0 && in.next(l)) {
      if (auto offset = plan::result_line_offset(seed, l.text)) found(*offset, l.text);
    }
    if (in.failure()) return *in.failure();
  }
  return ok;
}

/// Batch `id` (any tenant's) and whether its input file is still there, in one read.
std::pair<std::optional<storage::batch_record>, bool> read_batch(const storage::environment& env,
                                                                 const std::string& id) {
  auto txn = env.begin_read();
  auto b = storage::get_batch(txn, id);
  const bool input_kept = b && storage::get_file(txn, b->input_file_id).has_value();
  return {std::move(b), input_kept};
}

}  // namespace

result<task_page> engine::list_batch_tasks(const std::string& tenant, const std::string& id,
                                           std::optional<storage::job_status> filter, int limit,
                                           const std::string& after) {
  auto read = read_batch(deps_.env, id);  // not a structured binding: a lambda captures `b`
  auto& b = read.first;
  const bool input_kept = read.second;
  if (!b || b->tenant != tenant) return job_missing(id);
  task_page page;
  page.job = storage::job_of(*b);
  const auto seed = plan::request_id_seed(id);
  std::optional<uint64_t> after_offset;
  if (!after.empty()) {
    after_offset = plan::request_offset(seed, after);
    if (!after_offset) return task_missing(id, after, "after");
  }
  // Validating (its lines not known yet) or refused at validation: no task.
  if (b->status == storage::batch_status::validating || b->total == 0) {
    if (after_offset) return task_missing(id, after, "after");
    return page;
  }
  if (!input_kept) return input_deleted(*b);
  const auto n = static_cast<size_t>(limit);
  std::vector<batch_line_ref> chunk;
  status failed = ok;
  // Resolves the chunk's results and adds the lines that pass the filter; false once the page
  // is full and another line passes (has_more).
  auto flush = [&] {
    if (auto st = find_results(deps_.env, batches_->reads(), *b, chunk); !st) {
      failed = st.error();
      return false;
    }
    for (const auto& l : chunk) {
      auto task = task_of(*b, seed, l);
      if (filter && storage::shown_status(page.job, task) != *filter) continue;
      if (page.tasks.size() == n) {
        page.has_more = true;
        return false;
      }
      page.tasks.push_back(std::move(task));
    }
    chunk.clear();
    return true;
  };
  int64_t index = 0;
  bool started = !after_offset;
  bool full = false;
  runtime::line_reader in(batches_->file_path(b->input_file_id), 0, batch_lines);
  runtime::line l;
  while (!full && in.next(l)) {
    if (!l.too_long && runtime::is_blank(l.text)) continue;
    const int64_t i = index++;
    if (!started) {
      if (l.offset > *after_offset) break;  // passed it without a match
      started = l.offset == *after_offset;
      continue;
    }
    chunk.push_back(request_of(l.offset, i, l.text));
    if (chunk.size() > n) full = !flush();
  }
  if (in.failure()) return *in.failure();
  if (!started) return task_missing(id, after, "after");
  if (!full && !chunk.empty()) flush();
  if (!failed) return failed.error();
  return page;
}

result<task_page> engine::get_batch_task(const std::string& tenant, const std::string& id,
                                         const std::string& task) {
  auto read = read_batch(deps_.env, id);  // not a structured binding: a lambda captures `b`
  auto& b = read.first;
  const bool input_kept = read.second;
  if (!b || b->tenant != tenant) return job_missing(id);
  if (b->status == storage::batch_status::validating || b->total == 0 || !input_kept)
    return task_missing(id, task, "task_id");
  const auto seed = plan::request_id_seed(id);
  // By its id (the request id of its result lines) or, failing that, by its custom_id.
  const auto offset = plan::request_offset(seed, task);
  std::vector<batch_line_ref> found;
  int64_t index = 0;
  runtime::line_reader in(batches_->file_path(b->input_file_id), 0, batch_lines);
  runtime::line l;
  while (found.empty() && in.next(l)) {
    if (!l.too_long && runtime::is_blank(l.text)) continue;
    const int64_t i = index++;
    if (offset) {
      if (l.offset > *offset) break;
      if (l.offset == *offset) found.push_back(request_of(l.offset, i, l.text));
      continue;
    }
    if (auto r = request_of(l.offset, i, l.text); r.custom_id == task)
      found.push_back(std::move(r));
  }
  if (in.failure()) return *in.failure();
  if (found.empty()) return task_missing(id, task, "task_id");
  if (auto r = find_results(deps_.env, batches_->reads(), *b, found); !r) return r.error();
  task_page page;
  page.job = storage::job_of(*b);
  page.tasks.push_back(task_of(*b, seed, found.front()));
  return page;
}

}  // namespace sy::actors
