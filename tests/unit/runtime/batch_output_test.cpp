// A batch's result file: it appears under its final name only when committed, a file with no
// line is never created, and a failure names what failed and leaves no temp file behind.

#include "runtime/batch_output.hpp"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "tests/support/temp_dir.hpp"

namespace sy::runtime::batch {
namespace SY_UNITY_ID {

namespace fs = std::filesystem;

std::string read(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

TEST(result_file, lines_appear_under_the_final_name_only_once_committed) {
  test::temp_dir dir;
  const std::string path = dir.sub("file-out");
  {
    result_file f(path);
    f.append(R"({"a":1})");
    f.append(R"({"b":2})");
    EXPECT_FALSE(fs::exists(path));
    ASSERT_TRUE(f.commit()) << f.failure();
    EXPECT_TRUE(f.created());
    EXPECT_FALSE(f.failed());
    EXPECT_EQ(f.lines(), 2);
    EXPECT_EQ(f.bytes(), 16);
  }
  EXPECT_EQ(read(path), "{\"a\":1}\n{\"b\":2}\n");
  EXPECT_FALSE(fs::exists(path + ".tmp"));
}

TEST(result_file, a_file_without_lines_is_not_created) {
  test::temp_dir dir;
  result_file f(dir.sub("file-err"));
  EXPECT_TRUE(f.commit());
  EXPECT_FALSE(f.created());
  EXPECT_TRUE(fs::is_empty(dir.path()));
}

// A regular file where the directory should be: creating the file fails with ENOTDIR (as root
// too, where permissions would not stop a write).
TEST(result_file, a_failure_names_the_step_and_path_and_sticks) {
  test::temp_dir dir;
  std::ofstream(dir.sub("files")) << "not a directory";
  const std::string path = dir.sub("files/file-out");
  result_file f(path);
  f.append("{}");
  EXPECT_FALSE(f.commit());
  EXPECT_TRUE(f.failed());
  EXPECT_FALSE(f.created());
  EXPECT_EQ(f.failure(), "cannot create " + path + ".tmp: Not a directory");
  f.append("{}");  // counted, not written
  EXPECT_EQ(f.lines(), 2);
  EXPECT_FALSE(f.commit());
}

TEST(result_file, a_file_that_cannot_be_renamed_leaves_no_temp_file) {
  test::temp_dir dir;
  const std::string path = dir.sub("file-out");
  fs::create_directory(path);  // a non-empty directory in the way: the rename fails
  std::ofstream(path + "/x") << "x";
  {
    result_file f(path);
    f.append("{}");
    EXPECT_FALSE(f.commit());
    EXPECT_EQ(f.failure().rfind("cannot rename " + path + ".tmp: ", 0), 0u) << f.failure();
    EXPECT_TRUE(fs::exists(path + ".tmp")) << "written and fsynced before the rename";
  }
  EXPECT_FALSE(fs::exists(path + ".tmp"));
}

// A rerun's output file starts with the previous output file's lines.
TEST(result_file, a_previous_file_is_copied_in_and_its_lines_counted) {
  test::temp_dir dir;
  const std::string previous = dir.sub("file-old");
  std::ofstream(previous, std::ios::binary) << "{\"a\":1}\n{\"b\":2}\n";
  const std::string path = dir.sub("file-new");
  {
    result_file f(path);
    f.append_file(previous);
    f.append(R"({"c":3})");
    ASSERT_TRUE(f.commit()) << f.failure();
    EXPECT_EQ(f.lines(), 3);
  }
  EXPECT_EQ(read(path), "{\"a\":1}\n{\"b\":2}\n{\"c\":3}\n");
  result_file g(dir.sub("file-other"));
  g.append_file(dir.sub("missing"));
  EXPECT_TRUE(g.failed());
  EXPECT_NE(g.failure().find("cannot open"), std::string::npos) << g.failure();
}

}  // namespace SY_UNITY_ID
}  // namespace sy::runtime::batch
