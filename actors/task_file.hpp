#pragma once
/// Staged task lists (docs/task-lists.md): a JSONL file, one task `{"custom_id"?, "body"}` per
/// line, read in one checking pass and then in chunks by the list's ingest actor. Lines end with
/// `\n` (`\r\n` is taken; a last line without one counts); blank lines are skipped but keep their
/// numbers. Blocking file I/O: call from the ingest actor's own thread.

#include <atomic>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "actors/job_service.hpp"
#include "config/result.hpp"
#include "storage/batch_records.hpp"

namespace sy::actors {

/// What the checking pass found.
struct task_file_check {
  int64_t tasks = 0;                         ///< task lines
  std::vector<storage::batch_error> errors;  ///< the first `max_errors` bad lines, by line
  int64_t error_count = 0;                   ///< every bad line
  std::vector<std::string> models;           ///< distinct models, in order of first use
};

/// One pass over the file: every line checked as an inline task is (actors/submission.hpp,
/// parse_task), `custom_id`s unique across the file (compared by 64-bit hash: only a collision
/// gives a false duplicate), at most `max_tasks` tasks (then `too_many_tasks` on line 0 and the
/// pass stops), none (`empty_file` on line 0). `task_ok` judges each parsed task as its job
/// needs (its kind, its model served, an http task's URL); its error is its line's. Memory: one
/// line at a time, plus 16 bytes per task with a custom_id. Errors (the pass could not run):
/// storage_error; shutting_down when `stop` became true (checked before each line).
result<task_file_check> check_task_file(const std::string& path, int64_t max_tasks,
                                        const std::function<status(task_input&)>& task_ok,
                                        size_t max_errors = 100,
                                        const std::atomic<bool>* stop = nullptr);

/// The next tasks of a checked file, from byte `offset`.
struct task_chunk {
  std::vector<task_input> tasks;
  int64_t next_offset = 0;  ///< where the next chunk starts
  bool eof = false;         ///< no task after these
};
/// Reads up to `max_tasks` tasks from `offset`. Errors: storage_error (unreadable), and
/// invalid_task_file for a line that no longer parses (the file changed after its check).
result<task_chunk> read_task_chunk(const std::string& path, int64_t offset, size_t max_tasks);

/// The records of `tasks` as tasks first_index.. of `job` (ids, indexes, bodies as JSON text);
/// the inputs' custom_ids are moved out.
std::vector<storage::task_record> make_task_records(const storage::job_record& job,
                                                    int64_t first_index,
                                                    std::vector<task_input>& tasks);

/// Writes `tasks` as a staged list at `path` (created; written to `<path>.tmp`, fsync'd,
/// renamed, the directory fsync'd), for an inline list too large to commit at once.
status write_task_file(const std::string& path, const std::vector<task_input>& tasks);
/// Links uploaded file `from` as the staged list at `path` (a hard link: a later DELETE of the
/// file leaves the list whole; the directory is fsync'd).
status link_task_file(const std::string& from, const std::string& path);

}  // namespace sy::actors
