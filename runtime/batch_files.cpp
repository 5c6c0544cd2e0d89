// The files of a batch's work directory: plan files, model_map.json, and reading them back.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <nlohmann/json.hpp>

#include <cerrno>
#include <cstring>
#include <filesystem>

#include "runtime/detail/batch_files.hpp"
#include "runtime/failpoint.hpp"

namespace sy::runtime::batch {

namespace fs = std::filesystem;

namespace {

constexpr size_t kEntryBytes = 16;
constexpr size_t kIoBufferBytes = size_t{64} * 1024;
constexpr size_t kMaxModelMapBytes = 64 << 20;

void store_le(unsigned char* p, uint64_t v, int bytes) {
  for (int i = 0; i < bytes; ++i) p[i] = static_cast<unsigned char>(v >> (8 * i));
}

uint64_t load_le(const unsigned char* p, int bytes) {
  uint64_t v = 0;
  for (int i = 0; i < bytes; ++i) v |= uint64_t{p[i]} << (8 * i);
  return v;
}

sy::error corrupt(const std::string& path, std::string_view why) {
  return sy::make_error(errc::batch_plan_corrupt,
                        "The batch plan " + path + " is corrupt: " + std::string(why) + ".");
}

sy::status write_all(int fd, const char* data, size_t size, const std::string& path) {
  if (!detail::write_fully(fd, std::string_view(data, size)))
    return detail::io_error("cannot write", path, errno);
  return sy::ok;
}

sy::status fsync_dir(const std::string& dir) {
  detail::unique_fd fd(::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (fd.get() < 0) return detail::io_error("cannot open directory", dir, errno);
  if (::fsync(fd.get()) != 0) return detail::io_error("cannot fsync directory", dir, errno);
  return sy::ok;
}

/// Creates `path`.tmp, lets `fill` write to it, fsyncs, closes and renames it to `path`.
/// `before_rename` names the failpoint (runtime/failpoint.hpp) between the fsync and the rename.
template <class Fill>
sy::status write_atomically(const std::string& path, Fill fill,
                            std::string_view before_rename = {}) {
  const std::string tmp = path + ".tmp";
  detail::unique_fd fd(::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644));
  if (fd.get() < 0) return detail::io_error("cannot create", tmp, errno);
  if (auto s = fill(fd.get(), tmp); !s) return s;
  if (::fsync(fd.get()) != 0) return detail::io_error("cannot fsync", tmp, errno);
  if (::close(fd.release()) != 0) return detail::io_error("cannot close", tmp, errno);
  if (!before_rename.empty()) failpoint(before_rename);
  if (::rename(tmp.c_str(), path.c_str()) != 0)
    return detail::io_error("cannot rename", tmp, errno);
  return sy::ok;
}

sy::result<std::string> read_small_file(const std::string& path) {
  detail::unique_fd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (fd.get() < 0) return detail::io_error("cannot open", path, errno);
  std::string text;
  char chunk[kIoBufferBytes];
  for (;;) {
    const ssize_t n = ::read(fd.get(), chunk, sizeof chunk);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return detail::io_error("cannot read", path, errno);
    if (n == 0) return text;
    text.append(chunk, static_cast<size_t>(n));
    if (text.size() > kMaxModelMapBytes) return corrupt(path, "it is too large");
  }
}

}  // namespace

namespace detail {

unique_fd& unique_fd::operator=(unique_fd&& o) noexcept {
  if (this != &o) {
    if (fd_ >= 0) ::close(fd_);
    fd_ = o.release();
  }
  return *this;
}

unique_fd::~unique_fd() {
  if (fd_ >= 0) ::close(fd_);
}

bool write_fully(int fd, std::string_view data) {
  while (!data.empty()) {
    const ssize_t n = ::write(fd, data.data(), data.size());
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return false;
    data.remove_prefix(static_cast<size_t>(n));
  }
  return true;
}

sy::error io_error(std::string_view what, const std::string& path, int err) {
  return sy::make_error(errc::batch_io_error, "Batch ingestion " + std::string(what) + " " + path +
                                                  ": " + std::strerror(err) + ".");
}

std::string plans_dir(const std::string& work_dir) { return work_dir + "/plans"; }
std::string model_map_path(const std::string& work_dir) { return work_dir + "/model_map.json"; }

sy::status reset_outputs(const std::string& work_dir) {
  const std::string dir = plans_dir(work_dir);
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) return io_error("cannot create directory", dir, ec.value());
  const std::string map = model_map_path(work_dir);
  if (::unlink(map.c_str()) != 0 && errno != ENOENT) return io_error("cannot remove", map, errno);
  if (auto s = fsync_dir(work_dir); !s) return s;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    const std::string name = it->path().filename().string();
    const bool plan = name.ends_with(".plan") || name.ends_with(".plan.tmp");
    if (plan && ::unlink(it->path().c_str()) != 0 && errno != ENOENT) {
      return io_error("cannot remove", it->path().string(), errno);
    }
  }
  if (ec) return io_error("cannot list", dir, ec.value());
  return sy::ok;
}

sy::status write_plan_file(const std::string& path, const std::vector<plan_entry>& entries) {
  auto fill = [&](int fd, const std::string& tmp) -> sy::status {
    std::vector<unsigned char> buf(kIoBufferBytes);
    size_t used = 0;
    for (const plan_entry& e : entries) {
      if (used == buf.size()) {
        if (auto s = write_all(fd, reinterpret_cast<char*>(buf.data()), used, tmp); !s) return s;
        used = 0;
      }
      store_le(&buf[used], e.offset, 8);
      store_le(&buf[used + 8], e.length, 4);
      store_le(&buf[used + 12], e.prefix_hash, 4);
      used += kEntryBytes;
    }
    return write_all(fd, reinterpret_cast<char*>(buf.data()), used, tmp);
  };
  return write_atomically(path, fill, "batch_ingest_plan_tmp");
}

sy::status write_model_map(const std::string& work_dir, const ingest_result& r) {
  if (auto s = fsync_dir(plans_dir(work_dir)); !s) return s;
  nlohmann::json map = {{"model_to_safe", nlohmann::json::object()},
                        {"safe_to_model", nlohmann::json::object()},
                        {"line_count", r.line_count},
                        {"bytes", r.bytes},
                        {"counts", nlohmann::json::object()}};
  for (const model_plan& m : r.models) {
    map["model_to_safe"][m.model] = m.safe_name;
    map["safe_to_model"][m.safe_name] = m.model;
    map["counts"][m.safe_name] = m.count;
  }
  const std::string text = map.dump();
  auto s = write_atomically(model_map_path(work_dir), [&](int fd, const std::string& tmp) {
    return write_all(fd, text.data(), text.size(), tmp);
  });
  if (!s) return s;
  return fsync_dir(work_dir);
}

}  // namespace detail

sy::result<ingest_result> load_plan(const std::string& work_dir) {
  const std::string path = detail::model_map_path(work_dir);
  auto text = read_small_file(path);
  if (!text) return text.error();
  // nlohmann throws on type mismatches; check every type first and parse without exceptions.
  const nlohmann::json map = nlohmann::json::parse(*text, nullptr, false);
  if (map.is_discarded() || !map.is_object()) return corrupt(path, "it is not a JSON object");
  for (const char* key : {"model_to_safe", "safe_to_model", "counts"}) {
    if (!map.contains(key) || !map[key].is_object()) {
      return corrupt(path, std::string("'") + key + "' is not an object");
    }
  }
  for (const char* key : {"line_count", "bytes"}) {
    if (!map.contains(key) || !map[key].is_number_unsigned()) {
      return corrupt(path, std::string("'") + key + "' is not a count");
    }
  }
  ingest_result r;
  r.line_count = map["line_count"].get<int64_t>();
  r.bytes = map["bytes"].get<uint64_t>();
  const nlohmann::json& counts = map["counts"];
  for (const auto& [model, safe] : map["model_to_safe"].items()) {
    if (!safe.is_string()) return corrupt(path, "a safe name is not a string");
    const std::string safe_name = safe.get<std::string>();
    if (!counts.contains(safe_name) || !counts[safe_name].is_number_unsigned()) {
      return corrupt(path, "no count for " + safe_name);
    }
    r.models.push_back(model_plan{model, safe_name, counts[safe_name].get<uint64_t>()});
  }
  for (const model_plan& m : r.models) {
    const std::string plan = detail::plans_dir(work_dir) + "/" + m.safe_name + ".plan";
    struct stat st {};
    if (::stat(plan.c_str(), &st) != 0) return detail::io_error("cannot stat", plan, errno);
    if (static_cast<uint64_t>(st.st_size) != m.count * kEntryBytes) {
      return corrupt(plan, "its size does not match the count in model_map.json");
    }
  }
  // nlohmann's objects iterate in key order, so models are already sorted by name.
  return r;
}

sy::result<plan_reader> plan_reader::open(const std::string& path) {
  detail::unique_fd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (fd.get() < 0) return detail::io_error("cannot open", path, errno);
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0) return detail::io_error("cannot stat", path, errno);
  const auto size = static_cast<uint64_t>(st.st_size);
  if (size % kEntryBytes != 0) return corrupt(path, "its size is not a multiple of 16 bytes");
  return plan_reader(fd.release(), size / kEntryBytes);
}

plan_reader::plan_reader(int fd, uint64_t size) : fd_(fd), size_(size), buf_(kIoBufferBytes) {}

plan_reader::plan_reader(plan_reader&& o) noexcept
    : fd_(std::exchange(o.fd_, -1)),
      size_(o.size_),
      buf_(std::move(o.buf_)),
      pos_(o.pos_),
      end_(o.end_),
      failed_(o.failed_) {}

plan_reader& plan_reader::operator=(plan_reader&& o) noexcept {
  if (this != &o) {
    if (fd_ >= 0) ::close(fd_);
    fd_ = std::exchange(o.fd_, -1);
    size_ = o.size_;
    buf_ = std::move(o.buf_);
    pos_ = o.pos_;
    end_ = o.end_;
    failed_ = o.failed_;
  }
  return *this;
}

plan_reader::~plan_reader() {
  if (fd_ >= 0) ::close(fd_);
}

bool plan_reader::next(plan_entry& e) {
  if (failed_ || fd_ < 0) return false;
  while (end_ - pos_ < kEntryBytes) {
    // Keep the partial entry and refill behind it (reads may end anywhere).
    std::memmove(buf_.data(), buf_.data() + pos_, end_ - pos_);
    end_ -= pos_;
    pos_ = 0;
    const ssize_t n = ::read(fd_, buf_.data() + end_, buf_.size() - end_);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 || (n == 0 && end_ != 0)) failed_ = true;
    if (n <= 0) return false;
    end_ += static_cast<size_t>(n);
  }
  const unsigned char* p = buf_.data() + pos_;
  e.offset = load_le(p, 8);
  e.length = static_cast<uint32_t>(load_le(p + 8, 4));
  e.prefix_hash = static_cast<uint32_t>(load_le(p + 12, 4));
  pos_ += kEntryBytes;
  return true;
}

sy::result<std::string> read_at(int fd, uint64_t offset, uint32_t length) {
  std::string out(length, '\0');
  size_t done = 0;
  while (done < length) {
    const ssize_t n =
        ::pread(fd, out.data() + done, length - done, static_cast<off_t>(offset + done));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return detail::io_error("cannot read", "fd " + std::to_string(fd), errno);
    if (n == 0) {
      return sy::make_error(errc::batch_io_error, "Batch input fd " + std::to_string(fd) +
                                                      " ends before offset " +
                                                      std::to_string(offset + length) + ".");
    }
    done += static_cast<size_t>(n);
  }
  return out;
}

}  // namespace sy::runtime::batch
