#pragma once
/// The one reader of line-oriented files (JSONL): a staged task list (actors/task_file.cpp), a
/// batch's input file at ingestion (runtime/batch_plan.cpp) and a batch's input, output and error
/// files read as tasks (actors/engine_batch_tasks.cpp).
///
/// Reads a file from a byte offset in large blocks and yields each line with its offset, without
/// its "\n" and a '\r' before it; a last line without "\n" counts, an empty file has no line. A
/// line that fits in the block is handed out where it lies (no copy); a longer one is gathered
/// apart up to `max_line_bytes`, and one longer than that is reported `too_long` (its text empty)
/// and skipped past. Every line's text is followed by at least `line_padding` readable bytes
/// (simdjson's SIMDJSON_PADDING: its parser reads past a document's end), so a line can be parsed
/// in place.
///
/// Memory: the block plus `line_padding`, and the longest gathered line (at most max_line_bytes +
/// 1 + line_padding; released at the next line once larger than the block).
/// Threading: none of its own; one thread uses a reader. Blocking reads.

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "config/result.hpp"

namespace sy::runtime {

/// Readable bytes after every line's text (at least simdjson::SIMDJSON_PADDING; batch_plan.cpp
/// checks).
inline constexpr size_t line_padding = 64;

/// Whether a line holds only spaces, tabs and '\r': a blank line is neither a task nor a request,
/// though it keeps its number.
constexpr bool is_blank(std::string_view line) noexcept {
  return line.find_first_not_of(" \t\r") == std::string_view::npos;
}

/// One line of a file, valid until the reader's next call.
struct line {
  std::string_view text;  ///< without "\n" or "\r\n"; empty when too_long
  uint64_t offset = 0;    ///< of its first byte in the file
  size_t capacity = 0;    ///< readable bytes from text.data(): at least text.size() + line_padding
                          ///< (0 when too_long)
  bool too_long = false;  ///< longer than max_line_bytes (a '\r' before the "\n" included)
};

struct line_reader_options {
  size_t block_bytes = size_t{1} << 20;           ///< the read block (at least 64 bytes)
  size_t max_line_bytes = size_t{64} << 20;       ///< a longer line is too_long
  sy::error_code io_error = errc::storage_error;  ///< the code of a failure to open or read
};

class line_reader {
 public:
  /// Reads `path` from byte `from` (a line's start). A failure to open it is seen at next().
  line_reader(const std::string& path, uint64_t from = 0, line_reader_options o = {});
  ~line_reader();
  line_reader(const line_reader&) = delete;
  line_reader& operator=(const line_reader&) = delete;

  /// true and `out` set: the next line; false: the end of the file, or a failure (failure()).
  bool next(line& out) {
    if (long_.capacity() > cap_) std::string().swap(long_);
    // The hot path (a batch's validation): the next '\n' is in the block.
    if (const void* nl = std::memchr(buf_.get() + begin_, '\n', end_ - begin_)) {
      take(static_cast<size_t>(static_cast<const char*>(nl) - (buf_.get() + begin_)), 1, out);
      return true;
    }
    return next_slow(out);
  }

  /// Why next() returned false before the end: the file could not be opened, positioned or read
  /// (code `io_error`, "cannot open <path>: <why>"). Nothing at the end of the file.
  const std::optional<sy::error>& failure() const { return failure_; }
  /// The offset just past the last line returned (its "\n" included).
  uint64_t offset() const { return offset_; }
  /// Bytes read from the file so far.
  uint64_t bytes_read() const { return bytes_; }

 private:
  /// Hands out the `n` bytes at begin_ and steps past them and a terminator of `term` bytes.
  void take(size_t n, size_t term, line& out) {
    const char* p = buf_.get() + begin_;
    out = line{{}, base_ + begin_, 0, n > max_line_};
    if (!out.too_long) {
      out.text = trim(p, n);
      out.capacity = cap_ + line_padding - begin_;
    }
    begin_ += n + term;
    offset_ = base_ + begin_;
  }
  static std::string_view trim(const char* p, size_t n) {
    return std::string_view(p, n > 0 && p[n - 1] == '\r' ? n - 1 : n);
  }
  // false: failed (failure_ says why).
  bool next_slow(line& out);
  bool gather(line& out);
  bool fill();
  bool fail(const char* what, int err);

  std::string path_;
  int fd_ = -1;
  std::optional<sy::error> failure_;
  size_t cap_;
  size_t max_line_;
  sy::error_code io_error_;
  std::unique_ptr<char[]> buf_;  ///< cap_ bytes of data, then line_padding bytes
  size_t begin_ = 0;             ///< first unconsumed byte in buf_
  size_t end_ = 0;               ///< bytes of buf_ filled
  uint64_t base_ = 0;            ///< file offset of buf_[0]
  uint64_t offset_ = 0;
  uint64_t bytes_ = 0;
  bool eof_ = false;
  std::string long_;  ///< a line gathered apart, then line_padding bytes
};

}  // namespace sy::runtime
