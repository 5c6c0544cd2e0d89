/// fuzz_batch_line: lines of an uploaded batch input file as ingestion (runtime/batch_plan.cpp)
/// checks them with runtime::batch::detail::check_line, for each endpoint kind, and a line it
/// accepts as dispatch reads it again with runtime::batch::parse_request_line.
///
/// Input: byte 0 picks the batch's endpoint (chat, embeddings, completions, or one that is none
/// of those); the rest is the file, split into lines at '\n' as ingestion splits it (a trailing
/// '\r' is dropped, blank lines are skipped). One parser serves every line, as in a scan.

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "runtime/batch_plan.hpp"
#include "runtime/detail/batch_line.hpp"
#include "tests/fuzz/fuzz_support.hpp"

namespace {

namespace batch = sy::runtime::batch;
using sy::fuzz::check;

constexpr std::string_view endpoints[] = {"/v1/chat/completions", "/v1/embeddings",
                                          "/v1/completions", "/v1/responses"};

bool is_blank(std::string_view s) { return s.find_first_not_of(" \t\r") == std::string_view::npos; }

/// A line check_line accepted must be readable at dispatch, with the same custom_id and model,
/// and its body must be a JSON object the gateway can be sent.
void check_dispatch(std::string_view text, const std::string& custom_id, const std::string& model) {
  auto parsed = batch::parse_request_line(text);
  if (!parsed)
    sy::fuzz::fail("an accepted line fails parse_request_line: " + parsed.error().message);
  check(parsed->custom_id == custom_id, "custom_id differs between ingestion and dispatch");
  check(parsed->model == model, "model differs between ingestion and dispatch");
  auto body = nlohmann::json::parse(parsed->body, nullptr, /*allow_exceptions=*/false);
  check(body.is_object(), "an accepted line's raw body is not a JSON object");
}

void check_line(simdjson::ondemand::parser& parser, std::string_view text,
                std::string_view endpoint, int64_t line_no) {
  // The bytes sit in a buffer with exactly simdjson's padding after them, so ASan reports any
  // read past the capacity the caller declares.
  std::vector<char> buf(text.size() + simdjson::SIMDJSON_PADDING, '\0');
  std::copy(text.begin(), text.end(), buf.begin());
  batch::detail::line_facts facts;
  auto err = batch::detail::check_line(parser, buf.data(), text.size(), buf.size(), endpoint,
                                       batch::detail::classify_endpoint(endpoint), line_no, facts);
  if (err) {
    check(!err->code.empty(), "a line error without a code");
    check(err->line == line_no, "a line error names another line");
    check(err->message.rfind("Line " + std::to_string(line_no) + ": ", 0) == 0,
          "a line error's message does not start with its line number");
    return;
  }
  check(!facts.custom_id.empty() && !facts.model.empty(), "accepted without custom_id or model");
  // The facts point into the parser's buffers: copy them before the next parse.
  check_dispatch(text, std::string(facts.custom_id), std::string(facts.model));
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  static simdjson::ondemand::parser parser;
  const std::string_view endpoint = endpoints[data[0] % std::size(endpoints)];
  std::string_view file = sy::fuzz::as_text(data + 1, size - 1);
  int64_t line_no = 0;
  while (!file.empty()) {
    size_t nl = file.find('\n');
    std::string_view text = file.substr(0, nl);
    file.remove_prefix(nl == std::string_view::npos ? file.size() : nl + 1);
    ++line_no;
    if (!text.empty() && text.back() == '\r') text.remove_suffix(1);
    if (is_blank(text)) continue;
    check_line(parser, text, endpoint, line_no);
  }
  return 0;
}
