#include "actors/batch_response.hpp"

#include <simdjson.h>

#include "runtime/json_text.hpp"
#include "storage/batch_records.hpp"

namespace sy::actors {
namespace {

/// One response's usage, read straight from simdjson's DOM (no JSON tree of our own per line).
/// Chat and completions report prompt/completion tokens, embeddings prompt tokens only, the
/// Responses API input/output tokens; a batch names them input/output as OpenAI's batch usage
/// does. An absent count, or one that is not an integer, is 0.
storage::token_usage usage_of(simdjson::dom::element u) {
  auto count = [u](const char* parent, const char* key) -> int64_t {
    simdjson::dom::element o = u;
    if (parent != nullptr && u[parent].get(o) != simdjson::SUCCESS) return 0;
    int64_t v = 0;
    return o.is_object() && o[key].get_int64().get(v) == simdjson::SUCCESS ? v : 0;
  };
  storage::token_usage t;
  t.input = count(nullptr, "prompt_tokens") + count(nullptr, "input_tokens");
  t.output = count(nullptr, "completion_tokens") + count(nullptr, "output_tokens");
  t.total = count(nullptr, "total_tokens");
  if (t.total == 0) t.total = t.input + t.output;
  t.cached = count("prompt_tokens_details", "cached_tokens") +
             count("input_tokens_details", "cached_tokens");
  t.reasoning = count("completion_tokens_details", "reasoning_tokens") +
                count("output_tokens_details", "reasoning_tokens");
  return t;
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
  runtime::append_json_string(t, custom_id);
  t += R"(,"response":{"status_code":)";
  t += std::to_string(out.status_code);
  t += R"(,"request_id":)";
  runtime::append_json_string(t, request_id);
  t += R"(,"body":)";
  if (is_json) {
    // One line per result: a body that spans lines is minified.
    if (out.body.find('\n') == std::string::npos && out.body.find('\r') == std::string::npos)
      t += out.body;
    else
      t += simdjson::minify(doc);
  } else {
    runtime::append_json_string(t, out.body);
  }
  t += R"(},"error":null})";
  return line;
}

}  // namespace sy::actors
