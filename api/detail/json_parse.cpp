#include "api/detail/json_parse.hpp"

#include <string>

#include "config/limits.hpp"
#include "storage/json_text.hpp"

namespace sy::api::detail {
namespace {

using nlohmann::json;

/// A SAX consumer that accepts everything and only remembers the first parse error. It runs
/// only after a failed parse, to describe the failure without using exceptions.
struct error_locator final : nlohmann::json_sax<json> {
  size_t position = 0;
  std::string what;

  bool null() override { return true; }
  bool boolean(bool) override { return true; }
  bool number_integer(number_integer_t) override { return true; }
  bool number_unsigned(number_unsigned_t) override { return true; }
  bool number_float(number_float_t, const string_t&) override { return true; }
  bool string(string_t&) override { return true; }
  bool binary(binary_t&) override { return true; }
  bool start_object(std::size_t) override { return true; }
  bool key(string_t&) override { return true; }
  bool end_object() override { return true; }
  bool start_array(std::size_t) override { return true; }
  bool end_array() override { return true; }
  bool parse_error(std::size_t pos, const std::string&,
                   const nlohmann::detail::exception& ex) override {
    position = pos;
    what = ex.what();
    return false;
  }
};

/// nlohmann's message without its "[json.exception.parse_error.101] " prefix.
std::string strip_prefix(const std::string& what) {
  auto close = what.find("] ");
  return close == std::string::npos ? what : what.substr(close + 2);
}

}  // namespace

result<json> parse_json_body(std::string_view text) {
  // Before parsing: nlohmann parses iteratively, but copying, dumping and hashing a document
  // recurse once per level, so a deep enough document would overflow a thread's stack.
  if (!storage::json_depth_within(text, limits::json_max_depth))
    return make_error(errc::json_too_deep,
                      "The JSON body nests objects and arrays more than " +
                          std::to_string(limits::json_max_depth) +
                          " levels deep (json_max_depth, see docs/limits.md).");
  json doc = json::parse(text.begin(), text.end(), nullptr, /*allow_exceptions=*/false);
  if (!doc.is_discarded()) return doc;
  error_locator locator;
  json::sax_parse(text.begin(), text.end(), &locator);
  std::string message =
      "We could not parse the JSON body of your request: " + strip_prefix(locator.what) +
      " (byte " + std::to_string(locator.position) + ").";
  return make_error(errc::invalid_json, std::move(message));
}

}  // namespace sy::api::detail
