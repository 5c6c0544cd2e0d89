// The ingestion scan: one streaming pass over the input, line by line, into per-model plans.
#include "runtime/batch_plan.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <map>
#include <memory>

#include "runtime/detail/batch_files.hpp"
#include "runtime/detail/batch_line.hpp"
#include "runtime/failpoint.hpp"

namespace sy::runtime::batch {

namespace od = simdjson::ondemand;

namespace {

constexpr size_t kPadding = simdjson::SIMDJSON_PADDING;
constexpr size_t kMinReadBuffer = 64;
constexpr size_t kMaxSafeStem = 100;
// Lines above this size are parsed with a parser of their own, so that the buffers simdjson sizes
// to its largest document are released after the line instead of kept for the whole scan.
constexpr size_t kOwnParserLine = size_t{1} << 20;

/// One line of the input, without its '\n'. At least kPadding readable bytes follow `data + size`
/// (simdjson reads ahead).
struct raw_line {
  const char* data = nullptr;
  size_t size = 0;
  size_t capacity = 0;  ///< readable bytes from data
  uint64_t offset = 0;  ///< of the line's first byte in the file
  bool too_long = false;
};

/// Splits a file into lines with one fixed buffer. A line that does not fit in the buffer is
/// gathered in `long_`, up to max_line_bytes (beyond that only its length is counted).
class line_reader {
 public:
  line_reader(int fd, std::string path, size_t buffer_bytes, size_t max_line_bytes)
      : fd_(fd),
        path_(std::move(path)),
        cap_(std::max(buffer_bytes, kMinReadBuffer)),
        max_line_(max_line_bytes),
        buf_(new char[cap_ + kPadding]()) {}

  /// true and `out` set: a line; false: the end of the input. `out` is valid until the next call.
  sy::result<bool> next(raw_line& out) {
    if (long_.capacity() > cap_) std::string().swap(long_);
    for (;;) {
      if (const void* nl = std::memchr(buf_.get() + begin_, '\n', end_ - begin_)) {
        const size_t len = static_cast<const char*>(nl) - (buf_.get() + begin_);
        out = in_buffer(len);
        begin_ += len + 1;
        return true;
      }
      if (eof_) {
        if (begin_ == end_) return false;
        out = in_buffer(end_ - begin_);
        begin_ = end_;
        return true;
      }
      if (begin_ == 0 && end_ == cap_) return read_long_line(out);
      std::memmove(buf_.get(), buf_.get() + begin_, end_ - begin_);
      base_ += begin_;
      end_ -= begin_;
      begin_ = 0;
      if (auto s = fill(); !s) return s.error();
    }
  }

  uint64_t bytes_read() const { return bytes_; }

 private:
  raw_line in_buffer(size_t len) const {
    return raw_line{buf_.get() + begin_, len, cap_ + kPadding - begin_, base_ + begin_,
                    len > max_line_};
  }

  /// Reads more after end_; sets eof_ when there is no more.
  sy::status fill() {
    for (;;) {
      const ssize_t n = ::read(fd_, buf_.get() + end_, cap_ - end_);
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) return detail::io_error("cannot read", path_, errno);
      if (n == 0) eof_ = true;
      end_ += static_cast<size_t>(n);
      bytes_ += static_cast<uint64_t>(n);
      return sy::ok;
    }
  }

  void append(const char* data, size_t n, uint64_t& total) {
    const size_t room = max_line_ + 1 > long_.size() ? max_line_ + 1 - long_.size() : 0;
    long_.append(data, std::min(n, room));
    total += n;
  }

  /// The buffer holds the start of a line and no '\n': gather the line in long_.
  sy::result<bool> read_long_line(raw_line& out) {
    const uint64_t offset = base_;
    uint64_t total = 0;
    long_.clear();
    append(buf_.get(), end_, total);
    for (;;) {
      base_ = offset + total;
      begin_ = end_ = 0;
      if (auto s = fill(); !s) return s.error();
      if (eof_) break;
      if (const void* nl = std::memchr(buf_.get(), '\n', end_)) {
        const size_t len = static_cast<const char*>(nl) - buf_.get();
        append(buf_.get(), len, total);
        begin_ = len + 1;
        break;
      }
      append(buf_.get(), end_, total);
    }
    const size_t size = long_.size();
    long_.append(kPadding, '\0');
    out = raw_line{long_.data(), size, long_.size(), offset, total > max_line_};
    return true;
  }

  int fd_;
  std::string path_;
  size_t cap_;
  size_t max_line_;
  std::unique_ptr<char[]> buf_;  ///< cap_ bytes of data, then kPadding bytes simdjson may read
  size_t begin_ = 0;             ///< first unconsumed byte in buf_
  size_t end_ = 0;               ///< bytes of buf_ filled
  uint64_t base_ = 0;            ///< file offset of buf_[0]
  uint64_t bytes_ = 0;
  bool eof_ = false;
  std::string long_;
};

/// An open-addressing set of 64-bit hashes, at most half full: about 16 bytes per entry, where
/// std::unordered_set would take 40 or more. 0 marks a free slot, so the hash 0 is stored as 1.
class hash_set {
 public:
  /// false when `h` was already present.
  bool insert(uint64_t h) {
    if (h == 0) h = 1;
    if ((size_ + 1) * 2 > slots_.size()) grow();
    if (!place(slots_, h)) return false;
    ++size_;
    return true;
  }

 private:
  static bool place(std::vector<uint64_t>& slots, uint64_t h) {
    const size_t mask = slots.size() - 1;
    for (size_t i = ((h * 0x9E3779B97F4A7C15ull) >> 20) & mask;; i = (i + 1) & mask) {
      if (slots[i] == h) return false;
      if (slots[i] == 0) {
        slots[i] = h;
        return true;
      }
    }
  }
  void grow() {
    std::vector<uint64_t> bigger(std::max<size_t>(slots_.size() * 2, 1024));
    for (uint64_t h : slots_) {
      if (h != 0) place(bigger, h);
    }
    slots_.swap(bigger);
  }
  std::vector<uint64_t> slots_;
  size_t size_ = 0;
};

bool is_blank(std::string_view s) { return s.find_first_not_of(" \t\r") == std::string_view::npos; }

/// The scan's state across lines.
class scan {
 public:
  explicit scan(const ingest_options& o) : o_(o), kind_(detail::classify_endpoint(o.endpoint)) {}

  /// false: stop scanning (too many requests).
  bool line(raw_line l) {
    ++line_no_;
    std::string_view text(l.data, l.size);
    if (!l.too_long && !text.empty() && text.back() == '\r') text.remove_suffix(1);
    if (!l.too_long && is_blank(text)) return true;
    if (++result_.line_count > o_.max_lines) {
      record(line_error{errc::too_many_requests, 0, "",
                        "The batch input file has more than the maximum of " +
                            std::to_string(o_.max_lines) + " requests."});
      return false;
    }
    if (l.too_long) {
      record(detail::make_line_error(line_no_, errc::invalid_json_line, "",
                                     "the line is longer than the maximum of " +
                                         std::to_string(o_.max_line_bytes) + " bytes."));
      return true;
    }
    if (text.size() > kOwnParserLine) {
      od::parser own;
      check(own, text, l);
    } else {
      check(parser_, text, l);
    }
    return true;
  }

  ingest_result finish(uint64_t bytes) && {
    result_.bytes = bytes;
    if (result_.error_count == 0 && result_.line_count == 0) {
      record(line_error{errc::empty_file, 0, "", "The batch input file has no requests."});
    }
    return std::move(result_);
  }

  /// Valid lines by model; meaningful only when there were no errors.
  std::map<std::string, std::vector<plan_entry>, std::less<>>& plans() { return plans_; }

 private:
  void check(od::parser& parser, std::string_view text, const raw_line& l) {
    detail::line_facts facts;
    auto err = detail::check_line(parser, text.data(), text.size(), l.capacity, o_.endpoint, kind_,
                                  line_no_, facts);
    // Every well-formed custom_id joins the set, so that a later line repeating the id of an
    // invalid line is still reported.
    const bool fresh = facts.custom_id.empty() || ids_.insert(detail::fnv1a64(facts.custom_id));
    if (err) return record(std::move(*err));
    if (!fresh) {
      return record(detail::make_line_error(
          line_no_, errc::duplicate_custom_id, "custom_id",
          "'custom_id' \"" + std::string(facts.custom_id) + "\" is used by an earlier line."));
    }
    if (o_.only &&
        !std::binary_search(o_.only->begin(), o_.only->end(), detail::fnv1a64(facts.custom_id)))
      return;  // a rerun: this line has its result from an earlier run
    auto plan = plans_.find(facts.model);
    if (plan == plans_.end()) {
      if (o_.model_known && !o_.model_known(facts.model)) {
        return record(detail::make_line_error(
            line_no_, errc::model_not_found, "body.model",
            "the model \"" + std::string(facts.model) + "\" does not exist."));
      }
      plan = plans_.emplace(std::string(facts.model), std::vector<plan_entry>{}).first;
    }
    // After an error the plans are never written, so stop growing them.
    if (result_.error_count == 0) {
      plan->second.push_back(
          plan_entry{l.offset, static_cast<uint32_t>(text.size()), facts.prefix_hash});
    }
  }

  void record(line_error e) {
    ++result_.error_count;
    if (result_.errors.size() < o_.max_errors) result_.errors.push_back(std::move(e));
  }

  const ingest_options& o_;
  detail::endpoint_kind kind_;
  od::parser parser_;
  hash_set ids_;
  std::map<std::string, std::vector<plan_entry>, std::less<>> plans_;
  ingest_result result_;
  int64_t line_no_ = 0;
};

sy::status write_plans(const ingest_options& o, scan& s, ingest_result& r) {
  for (auto& [model, entries] : s.plans()) {
    std::sort(entries.begin(), entries.end(), [](const plan_entry& a, const plan_entry& b) {
      return a.prefix_hash != b.prefix_hash ? a.prefix_hash < b.prefix_hash : a.offset < b.offset;
    });
    model_plan m{model, safe_model_name(model), entries.size()};
    auto st = detail::write_plan_file(detail::plans_dir(o.work_dir) + "/" + m.safe_name + ".plan",
                                      entries);
    if (!st) return st;
    // A crash here leaves some plans renamed into place and no model_map.json: the restart
    // must not take them for a complete ingest.
    failpoint("batch_ingest_plan_renamed");
    std::vector<plan_entry>().swap(entries);
    r.models.push_back(std::move(m));
  }
  return detail::write_model_map(o.work_dir, r);
}

}  // namespace

std::string safe_model_name(std::string_view model) {
  std::string out;
  for (char c : model.substr(0, kMaxSafeStem)) {
    const bool keep = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
                      c == '.' || c == '_' || c == '-';
    out += keep ? c : '_';
  }
  char hex[10];
  std::snprintf(hex, sizeof hex, "-%08x", static_cast<unsigned>(fnv1a32(model)));
  return out + hex;
}

sy::result<std::vector<uint64_t>> result_custom_ids(const std::string& path) {
  detail::unique_fd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (fd.get() < 0) return detail::io_error("cannot open", path, errno);
  ::posix_fadvise(fd.get(), 0, 0, POSIX_FADV_SEQUENTIAL);
  line_reader reader(fd.get(), path, size_t{1} << 20, UINT32_MAX);
  od::parser parser;
  std::vector<uint64_t> out;
  raw_line l;
  for (;;) {
    auto more = reader.next(l);
    if (!more) return more.error();
    if (!*more) break;
    if (l.too_long) continue;
    auto doc = parser.iterate(l.data, l.size, l.capacity);
    std::string_view id;
    if (doc.error() || doc.find_field_unordered("custom_id").get_string().get(id) || id.empty())
      continue;
    out.push_back(detail::fnv1a64(id));
  }
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

sy::result<ingest_result> ingest(const ingest_options& o) {
  if (auto s = detail::reset_outputs(o.work_dir); !s) return s.error();
  detail::unique_fd fd(::open(o.input_path.c_str(), O_RDONLY | O_CLOEXEC));
  if (fd.get() < 0) return detail::io_error("cannot open", o.input_path, errno);
  ::posix_fadvise(fd.get(), 0, 0, POSIX_FADV_SEQUENTIAL);

  line_reader reader(fd.get(), o.input_path, o.read_buffer_bytes,
                     std::min<size_t>(o.max_line_bytes, UINT32_MAX));
  scan s(o);
  raw_line l;
  for (;;) {
    auto more = reader.next(l);
    if (!more) return more.error();
    if (!*more || !s.line(l)) break;
  }
  ingest_result r = std::move(s).finish(reader.bytes_read());
  if (r.error_count > 0) return r;
  if (auto st = write_plans(o, s, r); !st) {
    // Best effort: leave no partial plans behind (a re-run resets them anyway).
    (void)detail::reset_outputs(o.work_dir);
    return st.error();
  }
  return r;
}

}  // namespace sy::runtime::batch
