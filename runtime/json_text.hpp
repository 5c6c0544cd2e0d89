#pragma once
/// Compact JSON text written straight into a string, for the hot paths that used to build an
/// nlohmann DOM only to dump it at once (a submission's 202, an event's payload): no node per
/// value, no map per object. Keys come in the order written (a DOM sorts them). Strings are
/// escaped exactly as `nlohmann::json::dump(-1, ' ', false, error_handler_t::replace)` does —
/// UTF-8 kept, invalid bytes replaced by U+FFFD — which tests/unit/runtime/json_text_test.cpp
/// checks byte for byte.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

namespace sy::runtime {

class json_text {
 public:
  json_text& begin_object() { return open('{'); }
  json_text& end_object() { return close('}'); }
  json_text& begin_array() { return open('['); }
  json_text& end_array() { return close(']'); }

  /// `"name":` — the next call writes its value.
  json_text& key(std::string_view name);

  json_text& string(std::string_view v);
  json_text& number(int64_t v);
  json_text& boolean(bool v);
  json_text& null();
  /// A value that is already JSON text (the caller vouches for it).
  json_text& raw(std::string_view json);
  json_text& value(const nlohmann::json& v);
  /// `text` itself when it parses as JSON (compacted), else `text` as a string: how a gateway's
  /// response body is shown.
  json_text& json_or_string(std::string_view text);

  /// `key(name)` then the value; a string_view/`const char*` writes a string.
  json_text& field(std::string_view name, std::string_view v) { return key(name).string(v); }
  json_text& field(std::string_view name, const char* v) { return key(name).string(v); }
  json_text& field(std::string_view name, int64_t v) { return key(name).number(v); }
  json_text& field(std::string_view name, int v) { return key(name).number(v); }
  json_text& field(std::string_view name, uint64_t v) {
    return key(name).number(static_cast<int64_t>(v));
  }

  const std::string& str() const { return out_; }
  std::string take() { return std::move(out_); }

 private:
  json_text& open(char c);
  json_text& close(char c);
  void separate();  ///< a comma unless the value opens a container or follows its key

  std::string out_;
};

/// `s` as a JSON string (quoted, escaped), appended to `out`.
void append_json_string(std::string& out, std::string_view s);

/// True when no object or array in `text` is nested deeper than `max_depth` (a top-level object
/// is depth 1). A single pass over the bytes, no recursion and no allocation: it runs before a
/// client's text is parsed, so that nothing later (a copy, a dump, a hash) recurses without a
/// bound. Text that is not JSON is still scanned (brackets inside strings do not count); the
/// parser reports what else is wrong with it.
bool json_depth_within(std::string_view text, int max_depth);

/// The number of code points in `s` when it is valid UTF-8 (shortest forms, no surrogates, at
/// most U+10FFFF: the sequences append_json_string keeps), else nothing.
std::optional<size_t> utf8_length(std::string_view s);

}  // namespace sy::runtime
