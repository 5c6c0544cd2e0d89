// The staged task list's checking pass (actors/task_file.hpp): what it counts, and that a
// shutdown stops it between lines.

#include <gtest/gtest.h>

#include <atomic>
#include <fstream>

#include "actors/task_file.hpp"
#include "tests/support/temp_dir.hpp"

namespace sy::test {
namespace SY_UNITY_ID {

std::string write_tasks(const std::string& dir, int n) {
  const std::string path = dir + "/tasks.jsonl";
  std::ofstream out(path);
  for (int i = 0; i < n; ++i)
    out << R"({"body":{"model":"m","messages":[{"role":"user","content":"t"}]}})" << '\n';
  return path;
}

status any_task(actors::task_input&) { return ok; }

TEST(task_file, the_check_counts_every_task_and_model) {
  temp_dir dir;
  auto checked = actors::check_task_file(write_tasks(dir.path(), 3), 10, any_task);
  ASSERT_TRUE(checked) << checked.error().message;
  EXPECT_EQ(checked->tasks, 3);
  EXPECT_EQ(checked->error_count, 0);
  EXPECT_EQ(checked->models, std::vector<std::string>{"m"});
}

TEST(task_file, a_line_error_never_holds_the_line_whole) {
  temp_dir dir;
  const std::string path = dir.path() + "/tasks.jsonl";
  const std::string key(900'000, 'k');  // an unknown key, named by its check in full
  std::ofstream(path) << R"({"body":{"model":"m"},")" << key << "\":1}\n";
  auto checked = actors::check_task_file(path, 10, any_task);
  ASSERT_TRUE(checked) << checked.error().message;
  ASSERT_EQ(checked->errors.size(), 1u);
  const auto& e = checked->errors[0];
  EXPECT_EQ(e.code, "unknown_parameter");
  EXPECT_EQ(e.line, 1);
  EXPECT_LE(e.param.size(), 300u) << "the param names the key whole";
  EXPECT_LE(e.message.size(), 1100u) << "the message quotes the key whole";
  EXPECT_EQ(e.param.rfind("kkk", 0), 0u);
}

TEST(task_file, a_shutdown_stops_the_check_between_lines) {
  temp_dir dir;
  const auto path = write_tasks(dir.path(), 3);
  std::atomic<bool> stop{false};
  int seen = 0;
  auto stop_after_first = [&](actors::task_input&) -> status {
    if (++seen == 1) stop = true;
    return ok;
  };
  auto checked = actors::check_task_file(path, 10, stop_after_first, 100, &stop);
  ASSERT_FALSE(checked);
  EXPECT_EQ(checked.error().code, "shutting_down");
  EXPECT_EQ(seen, 1);
}

TEST(task_file, a_line_over_64_mib_is_an_invalid_json_line_and_the_next_line_counts) {
  temp_dir dir;
  const std::string path = dir.path() + "/tasks.jsonl";
  {
    std::ofstream out(path, std::ios::binary);
    const std::string head = R"({"body":{"model":"m","x":")";
    const std::string tail = "\"}}";
    // One byte over 64 MiB, not counting its newline.
    out << head << std::string((size_t{64} << 20) + 1 - head.size() - tail.size(), 'a') << tail
        << '\n';
    out << R"({"body":{"model":"m","messages":[]}})" << '\n';
  }
  auto checked = actors::check_task_file(path, 10, any_task);
  ASSERT_TRUE(checked) << checked.error().message;
  EXPECT_EQ(checked->tasks, 2);  // every task line, good or bad
  ASSERT_EQ(checked->error_count, 1);
  EXPECT_EQ(checked->errors[0].code, "invalid_json_line");
  EXPECT_EQ(checked->errors[0].line, 1);
}

}  // namespace SY_UNITY_ID
}  // namespace sy::test
