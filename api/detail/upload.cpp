#include "api/detail/upload.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <charconv>
#include <cstring>
#include <random>

#include "config/client_text.hpp"
#include "config/limits.hpp"
#include "runtime/json_text.hpp"

namespace sy::api::detail {
namespace {

constexpr size_t max_field_bytes = limits::upload_field_max_bytes;
constexpr int64_t min_expiry_s = 3'600;      // OpenAI: 1 hour ..
constexpr int64_t max_expiry_s = 2'592'000;  // .. 30 days

std::string random_hex(size_t n) {
  static thread_local std::mt19937_64 rng{std::random_device{}()};
  static constexpr char hex[] = "0123456789abcdef";
  std::string out;
  while (out.size() < n) {
    auto v = rng();
    for (int i = 0; i < 16 && out.size() < n; ++i, v >>= 4) out.push_back(hex[v & 0xf]);
  }
  return out;
}

sy::error disk_error(const std::string& what, const std::string& path) {
  return make_error(errc::storage_unavailable,
                    "Cannot " + what + " " + path + ": " + std::strerror(errno) + ".");
}

}  // namespace

bool is_file_purpose(std::string_view p) {
  static constexpr std::array<std::string_view, 7> purposes = {
      "batch", "tasks", "assistants", "fine-tune", "vision", "user_data", "evals"};
  for (auto q : purposes)
    if (q == p) return true;
  return false;
}

upload::upload(std::string tenant, std::string_view boundary, int64_t max_bytes,
               int64_t max_task_bytes)
    : tenant_(std::move(tenant)),
      max_bytes_(max_bytes),
      max_task_bytes_(max_task_bytes),
      parser_(boundary,
              multipart_parser::handlers{[this](const multipart_part& p) { return on_part(p); },
                                         [this](std::string_view b) { return on_data(b); },
                                         [this] { return on_part_end(); }}) {}

result<std::unique_ptr<upload>> upload::start(std::string tenant, std::string_view boundary,
                                              const std::string& dir, int64_t max_bytes,
                                              int64_t max_task_bytes) {
  std::unique_ptr<upload> u{new upload(std::move(tenant), boundary, max_bytes, max_task_bytes)};
  u->path_ = dir + "/upload-" + random_hex(24) + ".part";
  u->fd_ = ::open(u->path_.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (u->fd_ < 0) return disk_error("create", u->path_);
  return u;
}

upload::~upload() {
  if (fd_ >= 0) ::close(fd_);
  if (!adopted_ && !path_.empty()) ::unlink(path_.c_str());
}

status upload::feed(std::string_view bytes) { return parser_.feed(bytes); }

status upload::on_part(const multipart_part& p) {
  if (p.name == "file" && p.filename) {
    if (have_file_)
      return make_error(errc::invalid_file, "The upload has more than one 'file' part.", "file");
    // The filename is shown, listed and logged: valid UTF-8 without control characters.
    if (!runtime::utf8_length(*p.filename) || has_control_character(*p.filename))
      return make_error(errc::invalid_file,
                        "The file's name must be UTF-8 text without control characters.", "file");
    have_file_ = true;
    filename_ = *p.filename;
    sink_ = sink::file;
    return ok;
  }
  if (p.name == "file")
    return make_error(errc::invalid_file, "The 'file' part must carry a filename.", "file");
  const bool known = p.name == "purpose" || p.name == "expires_after[anchor]" ||
                     p.name == "expires_after[seconds]";
  if (known && p.filename)
    return make_error(errc::invalid_file,
                      "The '" + p.name + "' field was sent as a file part; send it as a field.",
                      p.name);
  if (known && !fields_seen_.insert(p.name).second)
    return make_error(errc::invalid_file, "The upload has more than one '" + p.name + "' part.",
                      p.name);
  field_name_ = p.name;
  field_value_.clear();
  sink_ = known ? sink::field : sink::skip;  // unknown fields are ignored, like OpenAI's
  return ok;
}

status upload::on_data(std::string_view b) {
  switch (sink_) {
    case sink::file: {
      bytes_ += static_cast<int64_t>(b.size());
      if (bytes_ > limit()) return too_large(limit());
      while (!b.empty()) {
        ssize_t n = ::write(fd_, b.data(), b.size());
        if (n < 0) {
          if (errno == EINTR) continue;
          return disk_error("write", path_);
        }
        b.remove_prefix(static_cast<size_t>(n));
      }
      return ok;
    }
    case sink::field:
      if (field_value_.size() + b.size() > max_field_bytes)
        return make_error(errc::invalid_value, "The form field '" + field_name_ + "' is too long.",
                          field_name_);
      field_value_.append(b);
      return ok;
    case sink::none:
    case sink::skip:
      return ok;
  }
  return ok;
}

int64_t upload::limit() const {
  if (!purpose_) return std::max(max_bytes_, max_task_bytes_);
  return *purpose_ == "tasks" ? max_task_bytes_ : max_bytes_;
}

sy::error upload::too_large(int64_t limit) const {
  const bool tasks = purpose_ && *purpose_ == "tasks";
  return make_error(errc::file_too_large,
                    "The file is larger than the limit of " + std::to_string(limit) + " bytes (" +
                        (tasks ? "max_task_file_bytes" : "files_max_bytes") + ").",
                    "file");
}

status upload::on_part_end() {
  if (sink_ == sink::field) {
    if (field_name_ == "purpose") purpose_ = field_value_;
    if (field_name_ == "expires_after[anchor]") anchor_ = field_value_;
    if (field_name_ == "expires_after[seconds]") seconds_ = field_value_;
  }
  sink_ = sink::none;
  return ok;
}

result<storage::file_record> upload::finish() {
  if (!parser_.done())
    return make_error(errc::invalid_file,
                      "The multipart/form-data body ended before its closing boundary.");
  if (!purpose_)
    return make_error(errc::missing_required_parameter, "The 'purpose' field is required.",
                      "purpose");
  if (!have_file_)
    return make_error(errc::missing_required_parameter, "The 'file' part is required.", "file");
  if (bytes_ > limit()) return too_large(limit());  // the purpose came after the file
  if (!is_file_purpose(*purpose_))
    return make_error(errc::invalid_value,
                      "'" + quote_client(*purpose_) +
                          "' is not a supported purpose; use one of batch, tasks, assistants, "
                          "fine-tune, vision, user_data, evals.",
                      "purpose");
  if ((*purpose_ == "batch" || *purpose_ == "tasks") &&
      (filename_.size() < 6 || filename_.compare(filename_.size() - 6, 6, ".jsonl") != 0))
    return make_error(errc::invalid_file,
                      "A file for purpose '" + *purpose_ + "' must be a .jsonl file; got '" +
                          quote_client(filename_) + "'.",
                      "file");
  if (anchor_ || seconds_) {
    if (!anchor_ || *anchor_ != "created_at")
      return make_error(errc::invalid_value, "expires_after[anchor] must be 'created_at'.",
                        "expires_after[anchor]");
    int64_t s = 0;
    const std::string& text = seconds_ ? *seconds_ : std::string();
    auto [p, ec] = std::from_chars(text.data(), text.data() + text.size(), s);
    if (ec != std::errc{} || p != text.data() + text.size() || s < min_expiry_s || s > max_expiry_s)
      return make_error(errc::invalid_value,
                        "expires_after[seconds] must be an integer from 3600 to 2592000.",
                        "expires_after[seconds]");
    expires_after_ = s;
  }
  if (::fsync(fd_) != 0) return disk_error("fsync", path_);
  ::close(fd_);
  fd_ = -1;
  storage::file_record f;
  f.tenant = tenant_;
  f.filename = filename_;
  f.purpose = *purpose_;
  f.bytes = bytes_;
  return f;
}

std::string upload::adopt() {
  adopted_ = true;
  return path_;
}

}  // namespace sy::api::detail
