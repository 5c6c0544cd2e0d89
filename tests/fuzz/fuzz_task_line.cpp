/// fuzz_task_line: the lines of a staged task file (purpose `tasks`, docs/task-lists.md) as the
/// check of a staged list reads them (actors/task_file.cpp): each line through
/// actors::parse_task_line, the parser of every client's JSON then a task's rules.
///
/// Input: the file, split into lines at '\n' (blank lines are skipped, as the check skips them).

#include <cstddef>
#include <cstdint>
#include <string_view>

#include "actors/submission.hpp"
#include "api/errors.hpp"
#include "config/client_text.hpp"
#include "config/limits.hpp"
#include "tests/fuzz/fuzz_support.hpp"

namespace {

using sy::fuzz::check;

bool known_code(const std::string& code) {
  if (sy::api::lookup_error(code).code == code) return true;
  for (const auto& row : sy::api::all_result_errors())
    if (row.code == code) return true;
  return false;
}

bool is_blank(std::string_view s) { return s.find_first_not_of(" \t\r") == std::string_view::npos; }

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view rest = sy::fuzz::as_text(data, size);
  while (!rest.empty()) {
    size_t nl = rest.find('\n');
    std::string_view line = rest.substr(0, nl);
    rest.remove_prefix(nl == std::string_view::npos ? rest.size() : nl + 1);
    if (is_blank(line)) continue;
    auto task = sy::actors::parse_task_line(line);
    if (!task) {
      // A line's error is written to the job's `errors` (docs/task-lists.md): a code of the API's
      // table or of the codes jobs and batches carry, never a bare invalid_json.
      const auto& code = task.error().code;
      check(code != "invalid_json", "a line's syntax error is not invalid_json_line");
      check(known_code(code), "a line's error code is in neither table: " + code);
      continue;
    }
    check(task->custom_id.size() <= sy::limits::custom_id_max_bytes, "custom_id over 512 bytes");
    check(!sy::has_control_character(task->custom_id), "a custom_id with a control character");
    check(!nlohmann::json::parse(task->body, nullptr, false).is_discarded(),
          "an admitted task's body text does not parse");
  }
  return 0;
}
