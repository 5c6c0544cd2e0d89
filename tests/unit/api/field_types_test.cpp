// The *Types* rule of issue 38 (docs/limits.md, "One admission path"): every field the engine
// reads — each top-level field of a job, an append, a sync call, a staged task-file line and a
// batch input line, and `model` and `stream` in a request `body` — has its documented JSON type;
// another type gets the field's documented code (else invalid_request), `param` naming the field.
// One table per surface: a field, the JSON types it takes, and the code and param any other type
// gets. Each table expands to one case per wrong type. A `null` a field takes reads as the field
// left out (OpenAI's nullable optional fields). The last tests give both line parsers (the strict
// parse of a task-file line, the simdjson walk of a batch line) the same hostile lines.

#include <fstream>
#include <string>
#include <string_view>
#include <vector>

#include <gtest/gtest.h>

#include "actors/submission.hpp"
#include "actors/task_file.hpp"
#include "api/admission.hpp"
#include "api/errors.hpp"
#include "runtime/batch_plan.hpp"
#include "tests/support/temp_dir.hpp"

namespace sy::api {
namespace SY_UNITY_ID {

using nlohmann::json;

/// One value of each JSON type: the wrong ones of a field are sent in its place.
struct sample {
  std::string_view kind;
  const char* text;
};
constexpr sample samples[] = {
    {"string", R"("s")"}, {"integer", "7"}, {"float", "2.5"},         {"bool", "true"},
    {"null", "null"},     {"array", "[1]"}, {"object", R"({"k":1})"},
};

/// A field of a surface: where it is in the base document (a JSON pointer), the JSON types it
/// takes ("number" is integer and float), and the code and param of any other type.
struct field_rule {
  const char* pointer;
  std::string_view takes;
  error_code code;
  const char* param;
};

bool takes(std::string_view takes, std::string_view kind) {
  auto has = [&](std::string_view word) {
    size_t at = takes.find(word);
    while (at != std::string_view::npos) {
      const bool start = at == 0 || takes[at - 1] == ' ';
      const bool end = at + word.size() == takes.size() || takes[at + word.size()] == ' ';
      if (start && end) return true;
      at = takes.find(word, at + 1);
    }
    return false;
  };
  if (kind == "integer" || kind == "float") return has(kind) || has("number");
  return has(kind);
}

/// `base` with the value at `pointer` replaced by `value` (JSON text).
std::string with(const json& base, const char* pointer, const char* value) {
  json j = base;
  j[json::json_pointer(pointer)] = json::parse(value);
  return j.dump();
}

/// `base` without the value at `pointer`.
std::string without(const json& base, const char* pointer) {
  json j = base;
  const json::json_pointer p(pointer);
  j[p.parent_pointer()].erase(p.back());
  return j.dump();
}

/// What a surface answered: ok, or the code and param of its error.
struct answer {
  bool ok = false;
  std::string code;
  std::string param;
  bool operator==(const answer&) const = default;
};
std::ostream& operator<<(std::ostream& os, const answer& a) {
  return os << (a.ok ? "ok" : a.code + " (" + a.param + ")");
}

template <class R>
answer answer_of(const R& r) {
  if (r.ok()) return {true, "", ""};
  return {false, r.error().code, r.error().param};
}

/// Runs every rule of `rules` against `base` through `run` (document text → answer): each wrong
/// type gets the rule's code and param, with status 400 when `http` says the code is an HTTP
/// answer; a null the field takes answers as the field left out; the base itself is accepted.
template <class Run>
void check_rules(const char* surface, const json& base, const std::vector<field_rule>& rules,
                 Run run, bool http = true) {
  ASSERT_TRUE(run(base.dump()).ok) << surface << ": the base is refused: " << run(base.dump());
  for (const field_rule& rule : rules) {
    for (const sample& s : samples) {
      const std::string doc = with(base, rule.pointer, s.text);
      const answer got = run(doc);
      if (takes(rule.takes, s.kind)) {
        if (s.kind == "null" && rule.takes.find("null") != std::string_view::npos) {
          EXPECT_EQ(got, run(without(base, rule.pointer))) << surface << ": " << doc;
        }
        continue;
      }
      const answer want{false, std::string(rule.code), rule.param};
      EXPECT_EQ(got, want) << surface << ": " << rule.pointer << " as " << s.kind << ": " << doc;
      if (http) {
        EXPECT_EQ(lookup_error(got.code).status, 400u) << got.code;
      }
    }
  }
}

admission admit_all() {
  config::settings s;
  s.max_body_bytes = 1 << 20;
  return admission(s);
}

answer job(std::string_view text) {
  static const admission admit = admit_all();
  client_request r;
  r.body = text;
  return answer_of(admit.job(r));
}

const char* const messages = R"([{"role":"user","content":"hi"}])";

json chat_body() { return {{"model", "m"}, {"messages", json::parse(messages)}}; }

TEST(field_types, a_single_job) {
  const json base = {{"endpoint", "/v1/chat/completions"}, {"body", chat_body()}};
  check_rules("job", base,
              {
                  {"/endpoint", "string", errc::invalid_endpoint, "endpoint"},
                  {"/body", "object", errc::invalid_body, "body"},
                  {"/body/model", "string", errc::missing_model, "body.model"},
                  {"/body/stream", "bool null", errc::invalid_request, "body.stream"},
                  {"/body/metadata", "object null", errc::invalid_metadata, "body.metadata"},
                  {"/metadata", "object null", errc::invalid_metadata, "metadata"},
                  {"/max_attempts", "integer null", errc::invalid_max_attempts, "max_attempts"},
                  {"/webhook_url", "string null", errc::invalid_webhook_url, "webhook_url"},
                  {"/timeout", "number null", errc::invalid_timeout, "timeout"},
                  {"/input_file_id", "string null", errc::invalid_tasks, "input_file_id"},
                  {"/open", "bool null", errc::invalid_tasks, "open"},
                  {"/task_events", "bool null", errc::invalid_tasks, "task_events"},
                  {"/runtime", "string", errc::invalid_request, "runtime"},
              },
              job);
}

/// The rules of a list's first task, the same in a job's `tasks` and in an append's.
std::vector<field_rule> task_rules() {
  return {
      {"/tasks", "array null", errc::invalid_tasks, "tasks"},
      {"/tasks/0", "object", errc::invalid_tasks, "tasks[0]"},
      {"/tasks/0/custom_id", "string null", errc::invalid_tasks, "tasks[0].custom_id"},
      {"/tasks/0/body", "object", errc::invalid_body, "tasks[0].body"},
      {"/tasks/0/body/model", "string", errc::missing_model, "tasks[0].body.model"},
      {"/tasks/0/body/stream", "bool null", errc::invalid_request, "tasks[0].body.stream"},
  };
}

TEST(field_types, a_task_list) {
  const json base = {{"endpoint", "/v1/chat/completions"},
                     {"tasks", {{{"custom_id", "a"}, {"body", chat_body()}}}},
                     {"max_inflight", 4}};
  auto rules = task_rules();
  rules.push_back({"/max_inflight", "integer null", errc::invalid_max_inflight, "max_inflight"});
  rules.push_back({"/task_events", "bool null", errc::invalid_tasks, "task_events"});
  check_rules("task list", base, rules, job);
}

TEST(field_types, an_http_task_list) {
  const json base = {
      {"endpoint", "http"},
      {"tasks", {{{"request", {{"method", "GET"}, {"url", "https://example.com/"}}}}}}};
  check_rules(
      "http list", base,
      {
          {"/tasks/0/request", "object null", errc::invalid_http_request, "tasks[0].request"},
          {"/tasks/0/request/method", "string", errc::invalid_http_request,
           "tasks[0].request.method"},
          {"/tasks/0/request/url", "string", errc::invalid_http_request, "tasks[0].request.url"},
          {"/tasks/0/request/headers", "object null", errc::invalid_http_request,
           "tasks[0].request.headers"},
      },
      job);
}

TEST(field_types, a_job_for_a_runtime) {
  const json base = {{"runtime", "thumbnails"}, {"input", {{"k", 1}}}};
  // `input` is any JSON (null too): it has no wrong type.
  check_rules("runtime job", base,
              {
                  {"/runtime", "string", errc::invalid_request, "runtime"},
                  {"/grants", "object null", errc::invalid_grants, "grants"},
                  {"/max_attempts", "integer null", errc::invalid_max_attempts, "max_attempts"},
              },
              job);
  const json list = {{"runtime", "thumbnails"}, {"tasks", {{{"custom_id", "a"}, {"input", 1}}}}};
  check_rules("runtime list", list,
              {
                  {"/tasks/0/custom_id", "string null", errc::invalid_tasks, "tasks[0].custom_id"},
              },
              job);
}

TEST(field_types, negative_zero_gets_what_zero_gets) {
  for (const char* field : {"max_attempts", "timeout", "max_inflight"}) {
    const json base = {{"endpoint", "/v1/chat/completions"}, {"tasks", {{{"body", chat_body()}}}}};
    json zero = base;
    zero[field] = 0;
    const std::string negative =
        base.dump().substr(0, base.dump().size() - 1) + ",\"" + field + "\":-0}";
    EXPECT_EQ(job(negative), job(zero.dump())) << negative;
    EXPECT_FALSE(job(negative).ok) << negative;
  }
}

TEST(field_types, an_append) {
  static const admission admit = admit_all();
  auto append = [](std::string_view text) {
    client_request r;
    r.body = text;
    return answer_of(admit.append(r, false));
  };
  const json base = {{"tasks", {{{"custom_id", "a"}, {"body", chat_body()}}}},
                     {"last_batch", false}};
  auto rules = task_rules();
  rules.push_back({"/last_batch", "bool null", errc::invalid_tasks, "last_batch"});
  check_rules("append", base, rules, append);
  // An append's task may be an http task's or a runtime's: the job's kind is checked later.
  const json http = {{"tasks", {{{"request", {{"method", "GET"}, {"url", "https://e.com/"}}}}}}};
  check_rules("http append", http,
              {{"/tasks/0/request", "object null", errc::invalid_http_request, "tasks[0].request"}},
              append);
}

TEST(field_types, a_sync_call) {
  static const admission admit = admit_all();
  auto call = [](std::string_view text) {
    client_request r;
    r.body = text;
    return answer_of(admit.sync_call("/v1/chat/completions", r));
  };
  check_rules("sync call", chat_body(),
              {
                  {"/model", "string", errc::missing_model, "model"},
                  {"/stream", "bool null", errc::invalid_request, "stream"},
                  {"/metadata", "object null", errc::invalid_metadata, "metadata"},
              },
              call);
  for (const char* text : {"[]", "1", "\"s\"", "null", "true"})
    EXPECT_EQ(call(text), (answer{false, "invalid_request", ""})) << text;
}

answer task_line(std::string_view text) { return answer_of(actors::parse_task_line(text)); }

/// A batch input line through ingestion's walk (runtime/batch_line.cpp): its error, if any.
answer batch_line(std::string_view text) {
  sy::test::temp_dir dir;
  runtime::batch::ingest_options o;
  o.input_path = dir.sub("input.jsonl");
  std::ofstream(o.input_path, std::ios::binary) << text << "\n";
  o.endpoint = "/v1/chat/completions";
  o.work_dir = dir.sub("work");
  auto r = runtime::batch::ingest(o);
  if (!r.ok()) return {false, "ingest failed: " + r.error().message, ""};
  if (r->errors.empty()) return {true, "", ""};
  return {false, r->errors[0].code, r->errors[0].param};
}

TEST(field_types, a_task_file_line) {
  const json base = {{"custom_id", "a"}, {"body", chat_body()}};
  const std::vector<field_rule> rules = {
      {"/custom_id", "string null", errc::invalid_tasks, "custom_id"},
      {"/body", "object", errc::invalid_body, "body"},
      {"/body/model", "string", errc::missing_model, "body.model"},
      {"/body/stream", "bool null", errc::invalid_request, "body.stream"},
      {"/body/metadata", "object null", errc::invalid_metadata, "body.metadata"},
  };
  check_rules("task-file line", base, rules, task_line, false);
  const json http = {{"request", {{"method", "GET"}, {"url", "https://example.com/"}}}};
  check_rules("http task-file line", http,
              {
                  {"/request/method", "string", errc::invalid_http_request, "request.method"},
                  {"/request/url", "string", errc::invalid_http_request, "request.url"},
              },
              task_line, false);
  for (const char* text : {"[]", "1", "\"s\"", "null", "true"})
    EXPECT_EQ(task_line(text), (answer{false, "invalid_json_line", ""})) << text;
}

TEST(field_types, a_staged_file_reports_each_bad_line_as_an_entry) {
  // The file as the ingest actor checks it: an entry {code, line, param, message} per bad line,
  // blank lines counted; the line rules above give the code and param.
  sy::test::temp_dir dir;
  const std::string path = dir.sub("tasks.jsonl");
  std::ofstream(path, std::ios::binary) << R"({"custom_id":"a","body":{"model":"m"}}

{"custom_id":7,"body":{"model":"m"}}
{"body":{"model":"m","stream":"no"}}
{"body":[]}
{"body":{"model":"m"},"body":{"model":"n"}}
{"body":{"model":"m","temperature":1e999999}}
)";
  auto check = actors::check_task_file(path, 100, [](actors::task_input&) { return status(ok); });
  ASSERT_TRUE(check.ok()) << check.error().message;
  struct entry {
    const char* code;
    const char* param;
    int64_t line;
  };
  const entry want[] = {{"invalid_tasks", "custom_id", 3},
                        {"invalid_request", "body.stream", 4},
                        {"invalid_body", "body", 5},
                        {"invalid_request", "body", 6},
                        {"invalid_json_line", "", 7}};
  ASSERT_EQ(check->errors.size(), std::size(want));
  for (size_t i = 0; i < std::size(want); ++i) {
    EXPECT_EQ(check->errors[i].code, want[i].code) << i;
    EXPECT_EQ(check->errors[i].param, want[i].param) << i;
    EXPECT_EQ(check->errors[i].line, want[i].line) << i;
    EXPECT_FALSE(check->errors[i].message.empty()) << i;
  }
}

TEST(field_types, a_batch_input_line) {
  const json base = {{"custom_id", "a"},
                     {"method", "POST"},
                     {"url", "/v1/chat/completions"},
                     {"body", chat_body()}};
  check_rules("batch line", base,
              {
                  {"/custom_id", "string", errc::missing_required_parameter, "custom_id"},
                  {"/method", "string", errc::missing_required_parameter, "method"},
                  {"/url", "string", errc::missing_required_parameter, "url"},
                  {"/body", "object", errc::missing_required_parameter, "body"},
                  {"/body/model", "string", errc::invalid_request, "body.model"},
                  {"/body/messages", "array", errc::invalid_request, "body.messages"},
                  {"/body/stream", "bool null", errc::invalid_request, "body.stream"},
              },
              batch_line, false);
  for (const char* text : {"[]", "1", "\"s\"", "null", "true"})
    EXPECT_EQ(batch_line(text), (answer{false, "invalid_json_line", ""})) << text;
}

/// A hostile line, as the same content in each format: `id` and `body` are JSON text (raw bytes,
/// so that what no JSON library would write can be sent); both parsers give `code` and `param`
/// (ok: empty code).
struct hostile_row {
  const char* what;
  std::string id;
  std::string body;
  const char* code;
  const char* param;
};

std::string nested(size_t levels) {
  return R"({"model":"m","messages":[],"x":)" + std::string(levels, '[') +
         std::string(levels, ']') + "}";
}

TEST(field_types, both_line_parsers_judge_a_hostile_line_alike) {
  const std::string chat = std::string(R"({"model":"m","messages":)") + messages;
  const std::vector<hostile_row> rows = {
      {"nested past json_max_depth", R"("a")", nested(200), "json_too_deep", ""},
      {"nested 200,000 deep", R"("a")", nested(200'000), "json_too_deep", ""},
      {"a key twice, deep", R"("a")",
       R"({"model":"m","messages":[{"role":"user","content":"hi","role":"x"}]})", "invalid_request",
       "body.messages[0].role"},
      {"a top-level key twice", R"("a","custom_id":"b")", chat + "}", "invalid_request",
       "custom_id"},
      {"NUL in custom_id", R"("a\u0000b")", chat + "}", "invalid_value", "custom_id"},
      {"a C1 control in body.model", R"("a")", R"({"model":"m\u0085","messages":[]})",
       "invalid_value", "body.model"},
      {"1e999999", R"("a")", chat + R"(,"temperature":1e999999})", "invalid_json_line", ""},
      {"-1e999999", R"("a")", chat + R"(,"temperature":-1e999999})", "invalid_json_line", ""},
      {"invalid UTF-8", R"("a")", chat + ",\"user\":\"\xff\xfe\"}", "invalid_json_line", ""},
      {"invalid UTF-8 in custom_id", "\"a\xc3\"", chat + "}", "invalid_json_line", ""},
      {"a raw control character", R"("a")", chat + ",\"user\":\"a\tb\"}", "invalid_json_line", ""},
      {"a raw NUL", R"("a")", chat + std::string(",\"user\":\"a\0b\"}", 14), "invalid_json_line",
       ""},
      {"a lone surrogate", R"("a")", chat + R"(,"user":"\ud800"})", "invalid_json_line", ""},
      {"-0", R"("a")", chat + R"(,"temperature":-0,"n":-0.0})", "", ""},
      {"NUL escaped in a body string", R"("a")", chat + R"(,"user":"a\u0000b"})", "", ""},
  };
  for (const hostile_row& row : rows) {
    const std::string task = R"({"custom_id":)" + row.id + R"(,"body":)" + row.body + "}";
    const std::string batch = R"({"custom_id":)" + row.id +
                              R"(,"method":"POST","url":"/v1/chat/completions","body":)" +
                              row.body + "}";
    const answer want = *row.code ? answer{false, row.code, row.param} : answer{true, "", ""};
    EXPECT_EQ(task_line(task), want) << "task-file line, " << row.what;
    EXPECT_EQ(batch_line(batch), want) << "batch line, " << row.what;
  }
}

}  // namespace SY_UNITY_ID
}  // namespace sy::api
