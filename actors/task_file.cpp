#include "actors/task_file.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <string_view>
#include <unordered_set>

#include "actors/submission.hpp"
#include "config/client_text.hpp"
#include "config/limits.hpp"
#include "runtime/fnv.hpp"
#include "runtime/json_text.hpp"
#include "runtime/line_reader.hpp"
#include "storage/ops.hpp"

namespace sy::actors {
namespace {

using nlohmann::json;

constexpr size_t max_line_bytes = size_t{64} << 20;  // as a batch line's (docs/task-lists.md)
constexpr runtime::line_reader_options task_lines{.max_line_bytes = max_line_bytes};
constexpr size_t write_block = size_t{1} << 20;

/// A line as a task (its body's text only when `keep_body`), or the error its line reports.
result<task_input> parse_line(std::string_view line, bool too_long, bool keep_body) {
  if (too_long)
    return make_error(errc::invalid_json_line,
                      "The line is longer than " + std::to_string(max_line_bytes) + " bytes.");
  return parse_task_line(line, keep_body);
}

/// The most bytes of a line's error message kept in the job's `errors`: a message quotes each
/// client value at most 256 bytes (docs/limits.md, "No echo"), so this only cuts one that does
/// not, such as a 900 KB key named whole.
constexpr size_t line_message_max_bytes = 1024;

storage::batch_error line_error(const sy::error& e, int64_t line) {
  // Stored, listed in the job and logged: never a line's value whole, whatever the check quoted.
  return storage::batch_error{e.code, quote_client(e.message, line_message_max_bytes),
                              quote_client(e.param), line};
}

}  // namespace

result<task_file_check> check_task_file(const std::string& path, int64_t max_tasks,
                                        const std::function<status(task_input&)>& task_ok,
                                        size_t max_errors, const std::atomic<bool>* stop) {
  task_file_check out;
  auto add = [&](storage::batch_error e) {
    ++out.error_count;
    if (out.errors.size() < max_errors) out.errors.push_back(std::move(e));
  };
  std::vector<std::pair<uint64_t, int64_t>> ids;  // (hash of custom_id, line)
  std::unordered_set<std::string> models;
  runtime::line_reader in(path, 0, task_lines);
  runtime::line l;
  for (int64_t number = 1; in.next(l); ++number) {
    if (stop != nullptr && stop->load())
      return make_error(errc::shutting_down, "the check stopped: the server is shutting down");
    if (!l.too_long && runtime::is_blank(l.text)) continue;
    if (++out.tasks > max_tasks) {
      add({std::string(errc::too_many_tasks),
           "The list holds more than " + std::to_string(max_tasks) +
               " tasks (max_tasks_per_job); the check stopped at line " + std::to_string(number) +
               ".",
           "", 0});
      break;
    }
    auto task = parse_line(l.text, l.too_long, false);  // the verdict only: the chunks keep bodies
    if (!task) {
      add(line_error(task.error(), number));
      continue;
    }
    if (auto st = task_ok(*task); !st) {
      add(line_error(st.error(), number));
      continue;
    }
    if (models.insert(task->model).second) out.models.push_back(task->model);
    if (!task->custom_id.empty()) ids.emplace_back(runtime::fnv1a64(task->custom_id), number);
  }
  if (in.failure()) return *in.failure();
  std::sort(ids.begin(), ids.end());
  std::vector<storage::batch_error> duplicates;
  for (size_t i = 1; i < ids.size(); ++i) {
    if (ids[i].first != ids[i - 1].first) continue;
    ++out.error_count;
    if (duplicates.size() < max_errors)
      duplicates.push_back({std::string(errc::duplicate_custom_id),
                            "The custom_id of this line is the custom_id of an earlier line; "
                            "custom_ids are unique within a job.",
                            "custom_id", ids[i].second});
  }
  if (!duplicates.empty()) {
    out.errors.insert(out.errors.end(), duplicates.begin(), duplicates.end());
    std::sort(out.errors.begin(), out.errors.end(),
              [](const auto& a, const auto& b) { return a.line < b.line; });
    if (out.errors.size() > max_errors) out.errors.resize(max_errors);
  }
  if (out.tasks == 0) add({std::string(errc::empty_file), "The list holds no task.", "", 0});
  return out;
}

result<task_chunk> read_task_chunk(const std::string& path, int64_t offset, size_t max_tasks) {
  task_chunk out;
  runtime::line_reader in(path, static_cast<uint64_t>(offset), task_lines);
  runtime::line l;
  while (out.tasks.size() < max_tasks) {
    if (!in.next(l)) {
      out.eof = true;
      break;
    }
    if (!l.too_long && runtime::is_blank(l.text)) continue;
    auto task = parse_line(l.text, l.too_long, true);
    if (!task)
      return make_error(
          errc::invalid_task_file,
          "the task list " + path + " changed after its check: " + task.error().message);
    out.tasks.push_back(std::move(*task));
  }
  out.next_offset = static_cast<int64_t>(in.offset());
  if (!out.eof) {  // at exactly max_tasks: is anything left?
    bool more = false;
    while (!more && in.next(l)) more = l.too_long || !runtime::is_blank(l.text);
    out.eof = !more;
    if (out.eof) out.next_offset = static_cast<int64_t>(in.offset());
  }
  if (in.failure()) return *in.failure();
  return out;
}

std::vector<storage::task_record> make_task_records(const storage::job_record& job,
                                                    int64_t first_index,
                                                    std::vector<task_input>& tasks) {
  std::vector<storage::task_record> out;
  out.reserve(tasks.size());
  for (size_t i = 0; i < tasks.size(); ++i) {
    auto& in = tasks[i];
    storage::task_record t;
    const int64_t index = first_index + static_cast<int64_t>(i);
    t.id = storage::list_task_id(job.id, index);
    t.job_id = job.id;
    t.tenant = job.tenant;
    t.model = std::move(in.model);
    t.index = static_cast<int>(index);
    t.max_attempts = job.max_attempts;
    t.custom_id = std::move(in.custom_id);
    t.body = std::move(in.body);
    out.push_back(std::move(t));
  }
  return out;
}

namespace {

void fsync_dir_of(const std::string& path) {
  int dir =
      ::open(std::filesystem::path(path).parent_path().c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dir >= 0) {
    ::fsync(dir);
    ::close(dir);
  }
}

}  // namespace

status link_task_file(const std::string& from, const std::string& path) {
  std::error_code ec;
  std::filesystem::create_directories(std::filesystem::path(path).parent_path(), ec);
  if (::link(from.c_str(), path.c_str()) != 0)
    return make_error(errc::storage_error,
                      "cannot link " + from + " as " + path + ": " + std::strerror(errno));
  fsync_dir_of(path);
  return ok;
}

status write_task_file(const std::string& path, const std::vector<task_input>& tasks) {
  namespace fs = std::filesystem;
  std::error_code ec;
  fs::create_directories(fs::path(path).parent_path(), ec);
  const std::string tmp = path + ".tmp";
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd < 0)
    return make_error(errc::storage_error, "cannot create " + tmp + ": " + std::strerror(errno));
  std::string buf;
  auto flush = [&]() {
    size_t done = 0;
    while (done < buf.size()) {
      ssize_t n = ::write(fd, buf.data() + done, buf.size() - done);
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) return false;
      done += static_cast<size_t>(n);
    }
    buf.clear();
    return true;
  };
  bool good = true;
  for (const auto& t : tasks) {
    // Each kind under its own key, as a client writes the line (parse_task reads it back).
    buf += t.runtime ? R"({"input":)" : t.http ? R"({"request":)" : R"({"body":)";
    buf += t.body;
    if (!t.custom_id.empty()) buf += R"(,"custom_id":)" + json_text_of(json(t.custom_id));
    buf += "}\n";
    if (buf.size() >= write_block && !(good = flush())) break;
  }
  good = good && flush() && ::fsync(fd) == 0;
  const int saved = errno;
  ::close(fd);
  if (!good) {
    ::unlink(tmp.c_str());
    return make_error(errc::storage_error, "cannot write " + tmp + ": " + std::strerror(saved));
  }
  if (::rename(tmp.c_str(), path.c_str()) != 0)
    return make_error(errc::storage_error, "cannot rename " + tmp + ": " + std::strerror(errno));
  fsync_dir_of(path);
  return ok;
}

}  // namespace sy::actors
