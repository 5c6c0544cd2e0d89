#include "actors/batch_response.hpp"

#include <simdjson.h>

#include "storage/batch_records.hpp"
#include "storage/json_text.hpp"

namespace sy::actors {
namespace {

/// One response's usage, read straight from simdjson's DOM (no JSON tree of our own per line).
storage::token_usage usage_of(simdjson::dom::element u) {
  return storage::read_usage([u](const char* parent, const char* key) -> int64_t {
    simdjson::dom::element o = u;
    if (parent != nullptr && u[parent].get(o) != simdjson::SUCCESS) return 0;
    int64_t v = 0;
    return o.is_object() && o[key].get_int64().get(v) == simdjson::SUCCESS ? v : 0;
  });
}

}  // namespace

storage::batch_line response_line(uint64_t slot, const std::string& id,
                                  const std::string& custom_id,
                                  const runtime::gateway_outcome& out) {
  thread_local simdjson::dom::parser parser;
  storage::batch_line line;
  line.slot = slot;
  line.ok = out.status_code >= 200 && out.status_code < 300;
  simdjson::dom::element doc;
  bool is_json = parser.parse(out.body).get(doc) == simdjson::SUCCESS;
  if (line.ok && is_json && doc.is_object()) {
    simdjson::dom::element usage;
    if (doc["usage"].get(usage) == simdjson::SUCCESS && usage.is_object())
      line.usage = usage_of(usage);
  }
  const std::string& request_id = out.request_id.empty() ? id : out.request_id;
  std::string& t = line.text;
  t.reserve(out.body.size() + custom_id.size() + 160);
  t += R"({"id":")";
  t += id;
  t += R"(","custom_id":)";
  storage::append_json_string(t, custom_id);
  t += R"(,"response":{"status_code":)";
  t += std::to_string(out.status_code);
  t += R"(,"request_id":)";
  storage::append_json_string(t, request_id);
  t += R"(,"body":)";
  if (is_json) {
    // One line per result: a body that spans lines is minified.
    if (out.body.find('\n') == std::string::npos && out.body.find('\r') == std::string::npos)
      t += out.body;
    else
      t += simdjson::minify(doc);
  } else {
    storage::append_json_string(t, out.body);
  }
  t += R"(},"error":null})";
  return line;
}

}  // namespace sy::actors
