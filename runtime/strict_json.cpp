#include "runtime/strict_json.hpp"

#include <string>
#include <vector>

#include "config/client_text.hpp"
#include "config/limits.hpp"
#include "runtime/json_text.hpp"

namespace sy::runtime {
namespace {

using nlohmann::json;

/// nlohmann's message without its "[json.exception.parse_error.101] " prefix.
std::string strip_prefix(const std::string& what) {
  auto close = what.find("] ");
  return close == std::string::npos ? what : what.substr(close + 2);
}

/// Builds the document from nlohmann's SAX events (nlohmann's parser is iterative, and so is
/// this: a stack of the open containers), refusing a key that its object already holds.
/// The pointers on the stack stay valid: a container gets no new member while a child of it
/// is open, and an object's members (std::map) never move.
// clang-tidy 14 sees a throw in nlohmann::json's constructors (its invariant check) below the
// implicitly noexcept special members; that check is an assert, not a throw.
// NOLINTNEXTLINE(bugprone-exception-escape)
class strict_builder final : public nlohmann::json_sax<json> {
 public:
  json root;
  std::string duplicate_path;  ///< set when a key came twice
  size_t error_position = 0;
  std::string error_what;  ///< set on a syntax error

  bool null() override { return put(json(nullptr)); }
  bool boolean(bool v) override { return put(json(v)); }
  bool number_integer(number_integer_t v) override { return put(json(v)); }
  bool number_unsigned(number_unsigned_t v) override { return put(json(v)); }
  bool number_float(number_float_t v, const string_t&) override {
    return put(json(v == 0 ? 0.0 : v));  // -0.0 is 0.0
  }
  bool string(string_t& v) override { return put(json(std::move(v))); }
  bool binary(binary_t&) override { return false; }  // JSON text has no binary values
  bool start_object(std::size_t) override { return open(json::object()); }
  bool key(string_t& k) override {
    auto& top = open_.back();
    if (top.value->contains(k)) {
      duplicate_path = path() + (open_.size() > 1 ? "." : "") + k;
      return false;
    }
    top.key = std::move(k);
    return true;
  }
  bool end_object() override { return close(); }
  bool start_array(std::size_t) override { return open(json::array()); }
  bool end_array() override { return close(); }
  bool parse_error(std::size_t pos, const std::string&,
                   const nlohmann::detail::exception& ex) override {
    error_position = pos;
    error_what = strip_prefix(ex.what());
    return false;
  }

 private:
  struct frame {
    json* value;
    std::string key;  ///< an object's member being read
  };
  std::vector<frame> open_;

  /// Where the next value goes: the root, the open array's end, or the open object's key.
  json* place(json&& v) {
    if (open_.empty()) {
      root = std::move(v);
      return &root;
    }
    auto& top = open_.back();
    if (top.value->is_array()) {
      top.value->push_back(std::move(v));
      return &top.value->back();
    }
    json& slot = (*top.value)[top.key];
    slot = std::move(v);
    return &slot;
  }
  bool put(json&& v) {
    place(std::move(v));
    return true;
  }
  bool open(json&& empty) {
    open_.push_back({place(std::move(empty)), {}});
    return true;
  }
  bool close() {
    open_.pop_back();
    return true;
  }
  /// The path of the open object, for `param`: members by name, elements by index (the
  /// element being read is the array's last one).
  std::string path() const {
    std::string out;
    for (size_t i = 0; i + 1 < open_.size(); ++i) {
      const auto& f = open_[i];
      if (f.value->is_array()) {
        out += "[" + std::to_string(f.value->size() - 1) + "]";
      } else {
        if (!out.empty()) out += '.';
        out += f.key;
      }
    }
    return out;
  }
};

}  // namespace

result<json> parse_strict_json(std::string_view text, std::string_view what) {
  // Before parsing: copying, dumping and hashing a document recurse once per level, so a deep
  // enough document would overflow a thread's stack wherever it went next.
  if (!json_depth_within(text, limits::json_max_depth))
    return make_error(errc::json_too_deep,
                      "The JSON text nests objects and arrays more than " +
                          std::to_string(limits::json_max_depth) +
                          " levels deep (json_max_depth, see docs/limits.md).");
  strict_builder b;
  if (json::sax_parse(text.begin(), text.end(), &b)) return std::move(b.root);
  if (!b.duplicate_path.empty())
    return make_error(errc::invalid_request,
                      "The JSON text names '" + quote_client(b.duplicate_path) +
                          "' twice; each key may appear once in an object.",
                      b.duplicate_path);
  return make_error(errc::invalid_json, "We could not parse " + std::string(what) + ": " +
                                            b.error_what + " (byte " +
                                            std::to_string(b.error_position) + ").");
}

}  // namespace sy::runtime
