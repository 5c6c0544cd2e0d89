// The one line reader: lines across block boundaries (in the block, gathered apart, too long), a
// last line without "\n", CRLF, a start offset, an empty or missing file; each line's offset,
// the offset after it and the padding after its text.

#include "runtime/line_reader.hpp"

#include <gtest/gtest.h>

#include <fstream>
#include <random>
#include <vector>

#include "tests/support/temp_dir.hpp"

namespace sy::runtime {
namespace SY_UNITY_ID {

struct seen_line {
  uint64_t offset;
  std::string text;
  bool too_long;
  uint64_t after;  ///< the reader's offset() after it
  bool operator==(const seen_line&) const = default;
};

class LineReader : public ::testing::Test {
 protected:
  std::string write(const std::string& content) {
    const std::string path = dir_.sub("lines.jsonl");
    std::ofstream(path, std::ios::binary) << content;
    return path;
  }

  static std::vector<seen_line> read_all(const std::string& path, uint64_t from,
                                         line_reader_options o) {
    line_reader in(path, from, o);
    std::vector<seen_line> out;
    line l;
    while (in.next(l)) {
      if (!l.too_long) {  // the padding is there, and readable (ASan would tell)
        EXPECT_GE(l.capacity, l.text.size() + line_padding);
        volatile char last = l.text.data()[l.capacity - 1];
        (void)last;
      }
      out.push_back({l.offset, std::string(l.text), l.too_long, in.offset()});
    }
    EXPECT_FALSE(in.failure()) << in.failure()->message;
    return out;
  }

  test::temp_dir dir_;
};

TEST_F(LineReader, SplitsLinesAsTheFileHasThem) {
  // Random lines around a 64-byte block and a 150-byte maximum: in the block, straddling two
  // blocks, gathered apart, too long; blank, CRLF, and the last one without "\n".
  std::mt19937 rng(11);
  std::string content;
  std::vector<seen_line> want;
  for (int i = 0; i < 400; ++i) {
    const size_t n = rng() % 4 == 0 ? rng() % 400 : rng() % 70;
    std::string raw(n, static_cast<char>('a' + i % 26));
    if (n > 0 && rng() % 3 == 0) raw.back() = '\r';
    const uint64_t at = content.size();
    content += raw;
    const bool last = i == 399;
    if (!last) content += '\n';
    const bool too_long = raw.size() > 150;
    std::string text = too_long ? "" : raw;
    if (!text.empty() && text.back() == '\r') text.pop_back();
    want.push_back({at, text, too_long, content.size()});
  }
  const auto path = write(content);
  EXPECT_EQ(read_all(path, 0, {64, 150}), want);
  // A start offset: the lines from there on.
  EXPECT_EQ(read_all(path, want[200].offset, {64, 150}),
            std::vector<seen_line>(want.begin() + 200, want.end()));
  // Large blocks and no tight maximum: every line whole, none too long.
  for (auto& w : want) {
    if (w.too_long) w.too_long = false, w.text = content.substr(w.offset, w.after - w.offset);
    if (w.text.ends_with('\n')) w.text.pop_back();
    if (w.text.ends_with('\r')) w.text.pop_back();
  }
  EXPECT_EQ(read_all(path, 0, {}), want);
}

TEST_F(LineReader, CrlfBlankAndLongLines) {
  const std::string big(3 << 20, 'x');
  const auto path = write("one\n\r\ntwo\r\n" + big + "\nlast");
  const std::vector<seen_line> want{{0, "one", false, 4},
                                    {4, "", false, 6},
                                    {6, "two", false, 11},
                                    {11, big, false, 12 + big.size()},
                                    {12 + big.size(), "last", false, 16 + big.size()}};
  EXPECT_EQ(read_all(path, 0, {}), want);
  auto capped = want;
  capped[3].text.clear();
  capped[3].too_long = true;
  EXPECT_EQ(read_all(path, 0, {.max_line_bytes = 1 << 20}), capped) << "gathered, then cut";
  EXPECT_EQ(read_all(path, 0, {.block_bytes = 4 << 20, .max_line_bytes = 1 << 20}), capped)
      << "in the block";
  EXPECT_TRUE(is_blank(""));
  EXPECT_TRUE(is_blank(" \t\r"));
  EXPECT_FALSE(is_blank(" {"));
}

TEST_F(LineReader, AnEmptyFileHasNoLineAndAMissingOneIsAnError) {
  EXPECT_TRUE(read_all(write(""), 0, {}).empty());
  EXPECT_EQ(read_all(write("\n"), 0, {}), (std::vector<seen_line>{{0, "", false, 1}}));
  line_reader in(dir_.sub("none"), 0, {.io_error = errc::batch_io_error});
  line l;
  EXPECT_FALSE(in.next(l));
  ASSERT_TRUE(in.failure());
  EXPECT_EQ(in.failure()->code, "batch_io_error");
  EXPECT_NE(in.failure()->message.find("cannot open"), std::string::npos);
}

}  // namespace SY_UNITY_ID
}  // namespace sy::runtime
