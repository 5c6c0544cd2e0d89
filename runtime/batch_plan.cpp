// The ingestion scan: one streaming pass over the input, line by line, into per-model plans.
#include "runtime/batch_plan.hpp"

#include <algorithm>
#include <cstdio>
#include <map>

#include "runtime/detail/batch_files.hpp"
#include "runtime/detail/batch_line.hpp"
#include "runtime/failpoint.hpp"
#include "runtime/fnv.hpp"
#include "runtime/line_reader.hpp"

namespace sy::runtime::batch {

namespace od = simdjson::ondemand;

namespace {

static_assert(runtime::line_padding >= simdjson::SIMDJSON_PADDING);
constexpr size_t kMaxSafeStem = 100;
// Lines above this size are parsed with a parser of their own, so that the buffers simdjson sizes
// to its largest document are released after the line instead of kept for the whole scan.
constexpr size_t kOwnParserLine = size_t{1} << 20;

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

/// The scan's state across lines.
class scan {
 public:
  explicit scan(const ingest_options& o) : o_(o), kind_(detail::classify_endpoint(o.endpoint)) {}

  /// false: stop scanning (too many requests).
  bool line(const runtime::line& l) {
    ++line_no_;
    if (!l.too_long && runtime::is_blank(l.text)) return true;
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
    if (l.text.size() > kOwnParserLine) {
      od::parser own;
      check(own, l);
    } else {
      check(parser_, l);
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
  void check(od::parser& parser, const runtime::line& l) {
    detail::line_facts facts;
    auto err = detail::check_line(parser, l.text.data(), l.text.size(), l.capacity, o_.endpoint,
                                  kind_, line_no_, facts);
    // Every well-formed custom_id joins the set, so that a later line repeating the id of an
    // invalid line is still reported.
    const bool fresh = facts.custom_id.empty() || ids_.insert(fnv1a64(facts.custom_id));
    if (err) return record(std::move(*err));
    if (!fresh) {
      return record(detail::make_line_error(
          line_no_, errc::duplicate_custom_id, "custom_id",
          "'custom_id' \"" + std::string(facts.custom_id) + "\" is used by an earlier line."));
    }
    if (o_.only && !std::binary_search(o_.only->begin(), o_.only->end(), fnv1a64(facts.custom_id)))
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
          plan_entry{l.offset, static_cast<uint32_t>(l.text.size()), facts.prefix_hash});
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
  runtime::line_reader reader(path, 0, {size_t{1} << 20, UINT32_MAX, errc::batch_io_error});
  od::parser parser;
  std::vector<uint64_t> out;
  runtime::line l;
  while (reader.next(l)) {
    if (l.too_long) continue;
    auto doc = parser.iterate(l.text.data(), l.text.size(), l.capacity);
    std::string_view id;
    if (doc.error() || doc.find_field_unordered("custom_id").get_string().get(id) || id.empty())
      continue;
    out.push_back(fnv1a64(id));
  }
  if (reader.failure()) return *reader.failure();
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

sy::result<ingest_result> ingest(const ingest_options& o) {
  if (auto s = detail::reset_outputs(o.work_dir); !s) return s.error();
  runtime::line_reader reader(
      o.input_path, 0,
      {o.read_buffer_bytes, std::min<size_t>(o.max_line_bytes, UINT32_MAX), errc::batch_io_error});
  scan s(o);
  runtime::line l;
  while (reader.next(l) && s.line(l)) {
  }
  if (reader.failure()) return *reader.failure();
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
