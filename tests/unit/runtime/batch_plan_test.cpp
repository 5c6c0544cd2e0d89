#include "runtime/batch_plan.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "config/limits.hpp"
#include "tests/support/temp_dir.hpp"

namespace sy::runtime::batch {
namespace SY_UNITY_ID {

namespace fs = std::filesystem;

constexpr const char* kChat = "/v1/chat/completions";

/// A chat request line; `system` empty means no system message, `extra` is added to the body.
std::string chat(const std::string& id, const std::string& model, const std::string& system = "",
                 const std::string& extra = "") {
  std::string messages = "[";
  if (!system.empty()) messages += R"({"role":"system","content":")" + system + R"("},)";
  messages += R"({"role":"user","content":"hello )" + id + R"("}])";
  return R"({"custom_id":")" + id + R"(","method":"POST","url":"/v1/chat/completions",)" +
         R"("body":{"model":")" + model + R"(","messages":)" + messages + extra + "}}";
}

class BatchPlan : public ::testing::Test {
 protected:
  std::string write_input(const std::string& text) {
    const std::string path = dir_.sub("input.jsonl");
    std::ofstream(path, std::ios::binary | std::ios::trunc) << text;
    return path;
  }
  ingest_options options(const std::string& text, const std::string& endpoint = kChat) {
    ingest_options o;
    o.input_path = write_input(text);
    o.endpoint = endpoint;
    o.work_dir = dir_.sub("work");
    return o;
  }
  ingest_result run(const ingest_options& o) {
    auto r = ingest(o);
    EXPECT_TRUE(r.ok()) << (r.ok() ? "" : r.error().message);
    return r.ok() ? std::move(r).value() : ingest_result{};
  }
  /// The single error of ingesting `text` (a valid first line, then `bad`) on `endpoint`.
  line_error only_error(const std::string& bad, const std::string& endpoint = kChat) {
    std::string good = chat("good", "m");
    if (endpoint != kChat)
      good = R"({"custom_id":"good","method":"POST","url":")" + endpoint +
             R"(","body":{"model":"m","input":"x","prompt":"x"}})";
    const ingest_result r = run(options(good + "\n" + bad + "\n", endpoint));
    EXPECT_EQ(r.errors.size(), 1u) << bad;
    return r.errors.empty() ? line_error{} : r.errors[0];
  }
  std::set<std::string> plan_files() {
    std::set<std::string> out;
    std::error_code ec;
    for (const auto& e : fs::directory_iterator(dir_.sub("work/plans"), ec)) {
      out.insert(e.path().filename().string());
    }
    return out;
  }
  std::vector<plan_entry> entries(const model_plan& m) {
    auto reader = plan_reader::open(dir_.sub("work/plans/" + m.safe_name + ".plan"));
    EXPECT_TRUE(reader.ok());
    std::vector<plan_entry> out;
    plan_entry e;
    while (reader.ok() && reader->next(e)) out.push_back(e);
    EXPECT_FALSE(reader.ok() && reader->failed());
    return out;
  }
  /// Reads every plan entry's line back and parses it: custom_id → model.
  std::map<std::string, std::string> read_back(const ingest_result& r, const std::string& input) {
    std::map<std::string, std::string> out;
    const int fd = ::open(input.c_str(), O_RDONLY);
    for (const model_plan& m : r.models) {
      for (const plan_entry& e : entries(m)) {
        auto text = read_at(fd, e.offset, e.length);
        EXPECT_TRUE(text.ok());
        if (!text.ok()) continue;
        auto line = parse_request_line(*text);
        EXPECT_TRUE(line.ok()) << *text;
        if (!line.ok()) continue;
        EXPECT_EQ(line->model, m.model);
        out[line->custom_id] = line->model;
      }
    }
    ::close(fd);
    return out;
  }

  sy::test::temp_dir dir_;
};

TEST_F(BatchPlan, ThreeModelsGiveThreePlansWithTheirCounts) {
  const std::string text = chat("a", "m-one") + "\n" + chat("b", "m/two") + "\n" +
                           chat("c", "m-one") + "\n" + chat("d", "m three") + "\n" +
                           chat("e", "m-one") + "\n";
  const ingest_result r = run(options(text));
  ASSERT_TRUE(r.errors.empty());
  EXPECT_EQ(r.line_count, 5);
  EXPECT_EQ(r.bytes, text.size());
  ASSERT_EQ(r.models.size(), 3u);
  EXPECT_EQ(r.models[0].model, "m three");
  EXPECT_EQ(r.models[0].count, 1u);
  EXPECT_EQ(r.models[1].model, "m-one");
  EXPECT_EQ(r.models[1].count, 3u);
  EXPECT_EQ(r.models[2].model, "m/two");
  EXPECT_EQ(r.models[2].safe_name, safe_model_name("m/two"));
  EXPECT_EQ(plan_files(),
            (std::set<std::string>{r.models[0].safe_name + ".plan", r.models[1].safe_name + ".plan",
                                   r.models[2].safe_name + ".plan"}));
  EXPECT_TRUE(fs::exists(dir_.sub("work/model_map.json")));
}

// A rerun plans only the lines whose custom_id is in the previous error file (whose lines name
// them; `null` names none), and still validates every line.
TEST_F(BatchPlan, ARerunPlansOnlyTheLinesOfTheErrorFile) {
  const std::string errors = dir_.sub("file-err");
  std::ofstream(errors, std::ios::binary)
      << R"({"id":"batch_req_1","custom_id":"b","response":null,"error":{"code":"x"}})"
      << "\n"
      << R"({"id":"batch_req_2","custom_id":null,"response":null,"error":{"code":"x"}})"
      << "\n"
      << R"({"id":"batch_req_3","custom_id":"e","response":{"status_code":400},"error":null})"
      << "\n";
  auto ids = result_custom_ids(errors);
  ASSERT_TRUE(ids.ok()) << ids.error().message;
  EXPECT_EQ(ids->size(), 2u);
  const std::string text = chat("a", "m-one") + "\n" + chat("b", "m-two") + "\n" +
                           chat("c", "m-one") + "\n" + chat("e", "m-one") + "\n";
  auto o = options(text);
  o.only = *ids;
  const ingest_result r = run(o);
  ASSERT_TRUE(r.errors.empty());
  EXPECT_EQ(r.line_count, 4);
  ASSERT_EQ(r.models.size(), 2u);
  EXPECT_EQ(r.models[0].model, "m-one");
  EXPECT_EQ(r.models[0].count, 1u);
  EXPECT_EQ(r.models[1].model, "m-two");
  EXPECT_EQ(r.models[1].count, 1u);
  // Still validated: a duplicate among lines not selected fails as at the first run.
  o = options(text + chat("a", "m-one") + "\n");
  o.only = *ids;
  EXPECT_EQ(run(o).errors.size(), 1u);
  EXPECT_FALSE(result_custom_ids(dir_.sub("missing")).ok());
}

TEST_F(BatchPlan, EntriesPointAtTheExactLines) {
  const std::string text = chat("a", "x", "sys") + "\n" + chat("b", "y") + "\n" +
                           chat("c", "x", "", R"(,"temperature":0.5)") + "\n";
  const ingest_options o = options(text);
  const ingest_result r = run(o);
  ASSERT_TRUE(r.errors.empty());
  EXPECT_EQ(read_back(r, o.input_path),
            (std::map<std::string, std::string>{{"a", "x"}, {"b", "y"}, {"c", "x"}}));
  auto line = parse_request_line(chat("c", "x", "", R"(,"temperature":0.5)"));
  ASSERT_TRUE(line.ok());
  EXPECT_EQ(line->body,
            R"({"model":"x","messages":[{"role":"user","content":"hello c"}],"temperature":0.5})");
}

TEST_F(BatchPlan, PlansAreSortedByPrefixHashThenOffset) {
  std::string text;
  std::vector<std::string> systems = {"alpha", "beta", "gamma"};
  for (int i = 0; i < 30; ++i) {
    text += chat("id" + std::to_string(i), "m", i % 4 == 3 ? "" : systems[i % 3]) + "\n";
  }
  const ingest_result r = run(options(text));
  ASSERT_EQ(r.models.size(), 1u);
  const std::vector<plan_entry> e = entries(r.models[0]);
  ASSERT_EQ(e.size(), 30u);
  std::set<uint32_t> hashes;
  for (size_t i = 1; i < e.size(); ++i) {
    EXPECT_TRUE(e[i - 1].prefix_hash < e[i].prefix_hash ||
                (e[i - 1].prefix_hash == e[i].prefix_hash && e[i - 1].offset < e[i].offset));
  }
  for (const plan_entry& x : e) hashes.insert(x.prefix_hash);
  EXPECT_EQ(hashes, (std::set<uint32_t>{0, fnv1a32("alpha"), fnv1a32("beta"), fnv1a32("gamma")}));
}

TEST_F(BatchPlan, PrefixHashOfDeveloperAndNonStringContent) {
  const std::string dev =
      R"({"custom_id":"a","method":"POST","url":"/v1/chat/completions","body":{"model":"m",)"
      R"("messages":[{"role":"user","content":"u"},{"role":"developer","content":"d\n"},)"
      R"({"role":"system","content":"later"}]}})";
  const std::string parts =
      R"({"custom_id":"b","method":"POST","url":"/v1/chat/completions","body":{"model":"m",)"
      R"("messages":[{"role":"system","content": [{"type":"text","text":"p"}] }]}})";
  const ingest_result r = run(options(dev + "\n" + parts + "\n"));
  ASSERT_EQ(r.models.size(), 1u);
  std::set<uint32_t> hashes;
  for (const plan_entry& x : entries(r.models[0])) hashes.insert(x.prefix_hash);
  EXPECT_EQ(hashes,
            (std::set<uint32_t>{fnv1a32("d\n"), fnv1a32(R"([{"type":"text","text":"p"}])")}));
}

TEST_F(BatchPlan, EmbeddingsHaveNoPrefixHash) {
  const std::string line =
      R"({"custom_id":"a","method":"POST","url":"/v1/embeddings","body":{"model":"e","input":"x"}})";
  const ingest_result r = run(options(line + "\n", "/v1/embeddings"));
  ASSERT_EQ(r.models.size(), 1u);
  const auto e = entries(r.models[0]);
  ASSERT_EQ(e.size(), 1u);
  EXPECT_EQ(e[0].prefix_hash, 0u);
  EXPECT_EQ(e[0].offset, 0u);
  EXPECT_EQ(e[0].length, line.size());
}

struct bad_case {
  std::string line;
  std::string code;
  std::string param;
  std::string endpoint = kChat;
};

TEST_F(BatchPlan, EveryValidationCode) {
  const std::string head = R"({"custom_id":"x","method":"POST","url":"/v1/chat/completions",)";
  const std::vector<bad_case> cases = {
      {R"({"custom_id":"x",)", "invalid_json_line", ""},
      {R"([1,2])", "invalid_json_line", ""},
      {chat("x", "m") + " {}", "invalid_json_line", ""},
      {head + R"("body":{"model":"m","messages":[],"t":tru}})", "invalid_json_line", ""},
      {head + R"("body":{"model":"m","messages":[],"t":"\q"}})", "invalid_json_line", ""},
      {R"({"method":"POST","url":"/v1/chat/completions","body":{}})", "missing_required_parameter",
       "custom_id"},
      {R"({"custom_id":"","method":"POST","url":"/v1/chat/completions","body":{}})",
       "missing_required_parameter", "custom_id"},
      {R"({"custom_id":7,"method":"POST","url":"/v1/chat/completions","body":{}})",
       "missing_required_parameter", "custom_id"},
      {R"({"custom_id":"x","url":"/v1/chat/completions","body":{}})", "missing_required_parameter",
       "method"},
      {R"({"custom_id":"x","method":"POST","body":{}})", "missing_required_parameter", "url"},
      {R"({"custom_id":"x","method":"POST","url":"/v1/chat/completions"})",
       "missing_required_parameter", "body"},
      {head + R"("body":"text"})", "missing_required_parameter", "body"},
      {R"({"custom_id":"x","method":"GET","url":"/v1/chat/completions","body":{}})",
       "invalid_request", "method"},
      {R"({"custom_id":"x","method":"POST","url":"/v1/embeddings","body":{}})", "invalid_url",
       "url"},
      {head + R"("body":{"messages":[]}})", "invalid_request", "body.model"},
      {head + R"("body":{"model":3,"messages":[]}})", "invalid_request", "body.model"},
      {head + R"("body":{"model":"m"}})", "invalid_request", "body.messages"},
      {head + R"("body":{"model":"m","messages":"hi"}})", "invalid_request", "body.messages"},
      {R"({"custom_id":"x","method":"POST","url":"/v1/embeddings","body":{"model":"m"}})",
       "invalid_request", "body.input", "/v1/embeddings"},
      {R"({"custom_id":"x","method":"POST","url":"/v1/completions","body":{"model":"m"}})",
       "invalid_request", "body.prompt", "/v1/completions"},
      {head + R"("body":{"model":"m","messages":[],"stream":true}})", "streaming_unsupported",
       "body.stream"},
      // Not a boolean: refused, not read as false.
      {head + R"("body":{"model":"m","messages":[],"stream":"true"}})", "invalid_request",
       "body.stream"},
      {chat("good", "m"), "duplicate_custom_id", "custom_id"},
      // Planned for the first value, read by the gateway as the last: refused.
      {head + R"("body":{"model":"m","messages":[],"model":"other"}})", "invalid_request",
       "body.model"},
      {head + R"("body":{"stream":false,"model":"m","messages":[],"st\u0072eam":true}})",
       "invalid_request", "body.stream"},
      {chat("x", "nope"), "model_not_found", "body.model"},
      // A top-level key twice: ingestion and dispatch would read different ones (fuzzing).
      {head + R"("body":"POST","body":{"model":"m","messages":[]}})", "invalid_request", "body"},
      {R"({"custom_id":"x","custom_id":"y","method":"POST","url":"/v1/chat/completions",)"
       R"("body":{"model":"m","messages":[]}})",
       "invalid_request", "custom_id"},
      // A key twice at any depth, named by its path; a control character in a name.
      {head + R"("body":{"model":"m","messages":[{"role":"a"},{"role":"b","role":"c"}]}})",
       "invalid_request", "body.messages[1].role"},
      {R"({"custom_id":"x\u0000","method":"POST","url":"/v1/chat/completions",)"
       R"("body":{"model":"m","messages":[]}})",
       "invalid_value", "custom_id"},
      {head + R"("body":{"model":"m\u009f","messages":[]}})", "invalid_value", "body.model"},
      // A body's stream and metadata have a job's types and limits.
      {head + R"("body":{"model":"m","messages":[],"stream":"yes"}})", "invalid_request",
       "body.stream"},
      {head + R"("body":{"model":"m","messages":[],"metadata":5}})", "invalid_metadata",
       "body.metadata"},
      {head + R"("body":{"model":"m","messages":[],"metadata":{"a":1}}})", "invalid_metadata",
       "body.metadata"},
      {head + R"("body":{"model":"m","messages":[],"metadata":{"a":")" + std::string(513, 'v') +
           R"("}}})",
       "invalid_metadata", "body.metadata"},
      {head + R"("body":{"model":"m","messages":[],"metadata":{")" + std::string(65, 'k') +
           R"(":"v"}}})",
       "invalid_metadata", "body.metadata"},
      {head + R"("body":{"model":"m","messages":[],"metadata":{"a":"1","b":"2","c":"3","d":"4",)"
              R"("e":"5","f":"6","g":"7","h":"8","i":"9","j":"10","k":"11","l":"12","m":"13",)"
              R"("n":"14","o":"15","p":"16","q":"17"}}})",
       "invalid_metadata", "body.metadata"},
  };
  for (const bad_case& c : cases) {
    ingest_options o = options("", c.endpoint);
    std::string good = chat("good", "m");
    if (c.endpoint != kChat) {
      good = R"({"custom_id":"good","method":"POST","url":")" + c.endpoint +
             R"(","body":{"model":"m","input":"x","prompt":"x"}})";
    }
    o.input_path = write_input(good + "\n" + c.line + "\n");
    o.model_known = [](std::string_view m) { return m != "nope"; };
    const ingest_result r = run(o);
    ASSERT_EQ(r.errors.size(), 1u) << c.line;
    EXPECT_EQ(r.errors[0].code, c.code) << c.line;
    EXPECT_EQ(r.errors[0].param, c.param) << c.line;
    EXPECT_EQ(r.errors[0].line, 2) << c.line;
    EXPECT_EQ(r.errors[0].message.rfind("Line 2: ", 0), 0u) << r.errors[0].message;
    EXPECT_TRUE(r.models.empty());
    EXPECT_TRUE(plan_files().empty()) << c.line;
  }
}

TEST_F(BatchPlan, LimitsHoldOnBothSidesOfTheBoundary) {
  const std::string head = R"({"custom_id":"x","method":"POST","url":"/v1/chat/completions",)";
  // The line is depth 1, its body 2, the arrays in "x" 3 and deeper.
  auto nested = [&](size_t arrays) {
    return head + R"("body":{"model":"m","messages":[],"x":)" + std::string(arrays, '[') +
           std::string(arrays, ']') + "}}";
  };
  const ingest_result at = run(options(nested(limits::json_max_depth - 2) + "\n"));
  EXPECT_TRUE(at.errors.empty()) << (at.errors.empty() ? "" : at.errors[0].message);
  const line_error over = only_error(nested(limits::json_max_depth - 1));
  EXPECT_EQ(over.code, "json_too_deep") << over.message;
  EXPECT_NE(over.message.find("128"), std::string::npos) << over.message;
  // Far past the limit: refused without recursing (200,000 levels would overflow the stack).
  EXPECT_EQ(
      only_error(head + R"("body":{"model":"m","x":)" + std::string(200'000, '[') + "}}").code,
      "json_too_deep");

  // Metadata values are counted in characters, as OpenAI counts them: 512 'é' (1,024 bytes).
  std::string e_acute;
  for (size_t i = 0; i < limits::metadata_value_max_chars; ++i) e_acute += "\xc3\xa9";
  const ingest_result accented =
      run(options(head + R"("body":{"model":"m","messages":[],"stream":null,"metadata":{"a":")" +
                  e_acute + R"("}}})" + "\n"));
  EXPECT_TRUE(accented.errors.empty())
      << (accented.errors.empty() ? "" : accented.errors[0].message);

  EXPECT_TRUE(
      run(options(chat(std::string(limits::custom_id_max_bytes, 'c'), "m") + "\n")).errors.empty());
  const line_error long_id =
      only_error(chat(std::string(limits::custom_id_max_bytes + 1, 'c'), "m"));
  EXPECT_EQ(long_id.code, "string_above_max_length");
  EXPECT_EQ(long_id.param, "custom_id");

  EXPECT_TRUE(
      run(options(chat("a", std::string(limits::model_max_bytes, '/')) + "\n")).errors.empty());
  const line_error long_model =
      only_error(chat("a", std::string(limits::model_max_bytes + 1, 'm')));
  EXPECT_EQ(long_model.code, "string_above_max_length");
  EXPECT_EQ(long_model.param, "body.model");
}

TEST_F(BatchPlan, MessagesSayWhatIsWrong) {
  EXPECT_EQ(only_error(R"({"method":"POST","url":"/v1/chat/completions","body":{}})").message,
            "Line 2: 'custom_id' is required.");
  EXPECT_EQ(only_error(R"({"custom_id":"x","method":"PUT","url":"/v1/chat/completions","body":{}})")
                .message,
            "Line 2: 'method' must be \"POST\", got \"PUT\".");
  EXPECT_TRUE(run(options(chat("x", "m", "", R"(,"stream":false)"))).errors.empty());
}

TEST_F(BatchPlan, OnlyTheFirstErrorOfALineIsReported) {
  const line_error e = only_error(R"({"url":"/v1/embeddings","body":{"stream":true}})");
  EXPECT_EQ(e.code, "missing_required_parameter");
  EXPECT_EQ(e.param, "custom_id");
}

TEST_F(BatchPlan, ErrorsBeyondMaxErrorsAreCountedNotRecorded) {
  ingest_options o = options(std::string(5, '\n') + "{\n[]\n1\n\"s\"\nnull\n");
  o.max_errors = 2;
  const ingest_result r = run(o);
  EXPECT_EQ(r.error_count, 5);
  ASSERT_EQ(r.errors.size(), 2u);
  EXPECT_EQ(r.errors[0].line, 6);
  EXPECT_EQ(r.errors[1].line, 7);
}

TEST_F(BatchPlan, TooManyRequestsStopsWithOneFileError) {
  std::string text;
  for (int i = 0; i < 10; ++i) text += chat("id" + std::to_string(i), "m") + "\n";
  ingest_options o = options(text);
  o.max_lines = 3;
  const ingest_result r = run(o);
  ASSERT_EQ(r.errors.size(), 1u);
  EXPECT_EQ(r.errors[0].code, "too_many_requests");
  EXPECT_EQ(r.errors[0].line, 0);
  EXPECT_NE(r.errors[0].message.find("3"), std::string::npos);
  EXPECT_TRUE(plan_files().empty());
}

TEST_F(BatchPlan, EmptyFileAndBlankOnlyFile) {
  for (const std::string text : {"", "\n\n  \r\n\t\n"}) {
    const ingest_result r = run(options(text));
    ASSERT_EQ(r.errors.size(), 1u);
    EXPECT_EQ(r.errors[0].code, "empty_file");
    EXPECT_EQ(r.errors[0].line, 0);
    EXPECT_EQ(r.line_count, 0);
  }
}

TEST_F(BatchPlan, CrlfBlankLinesAndNoFinalNewline) {
  const std::string text =
      chat("a", "m") + "\r\n\r\n\n" + chat("b", "m") + "\r\n   \n" + chat("c", "m");
  const ingest_options o = options(text);
  const ingest_result r = run(o);
  ASSERT_TRUE(r.errors.empty()) << r.errors[0].message;
  EXPECT_EQ(r.line_count, 3);
  ASSERT_EQ(r.models.size(), 1u);
  for (const plan_entry& e : entries(r.models[0])) EXPECT_EQ(e.length, chat("a", "m").size());
  EXPECT_EQ(read_back(r, o.input_path).size(), 3u);
  // Blank lines still count for the line numbers in errors.
  EXPECT_EQ(run(options("\r\n\n" + chat("a", "m") + "\r\n{")).errors.at(0).line, 4);
}

TEST_F(BatchPlan, LinesLongerThanTheReadBuffer) {
  const std::string big = chat("big", "m", "", R"(,"user":")" + std::string(5000, 'u') + "\"");
  const std::string big2 = chat("long2", "m", "", R"(,"user":")" + std::string(700, 'v') + "\"");
  const std::string text =
      chat("a", "m") + "\n" + big + "\n" + chat("b", "m") + "\n" + big2 + "\r\n" + chat("c", "m");
  ingest_options o = options(text);
  o.read_buffer_bytes = 256;
  const ingest_result r = run(o);
  ASSERT_TRUE(r.errors.empty()) << r.errors[0].message;
  EXPECT_EQ(r.line_count, 5);
  EXPECT_EQ(r.bytes, text.size());
  EXPECT_EQ(read_back(r, o.input_path),
            (std::map<std::string, std::string>{
                {"a", "m"}, {"big", "m"}, {"b", "m"}, {"long2", "m"}, {"c", "m"}}));
}

TEST_F(BatchPlan, LineLongerThanTheMaximumIsAnError) {
  const std::string big = chat("big", "m", "", R"(,"user":")" + std::string(5000, 'u') + "\"");
  for (size_t buffer : {size_t{256}, size_t{1} << 20}) {
    ingest_options o = options(chat("a", "m") + "\n" + big + "\n" + chat("b", "m") + "\n");
    o.read_buffer_bytes = buffer;
    o.max_line_bytes = 1000;
    const ingest_result r = run(o);
    ASSERT_EQ(r.errors.size(), 1u) << buffer;
    EXPECT_EQ(r.errors[0].code, "invalid_json_line");
    EXPECT_EQ(r.errors[0].line, 2);
    EXPECT_EQ(r.line_count, 3);
  }
}

TEST_F(BatchPlan, FailureLeavesNoPlansAndRerunsOverwrite) {
  const ingest_result ok = run(options(chat("a", "m1") + "\n" + chat("b", "m2") + "\n"));
  ASSERT_EQ(ok.models.size(), 2u);
  EXPECT_EQ(plan_files().size(), 2u);

  const ingest_result bad = run(options(chat("a", "m1") + "\n{\n"));
  EXPECT_EQ(bad.errors.size(), 1u);
  EXPECT_TRUE(plan_files().empty());
  EXPECT_FALSE(fs::exists(dir_.sub("work/model_map.json")));
  EXPECT_FALSE(load_plan(dir_.sub("work")).ok());

  const ingest_result again = run(options(chat("z", "m3") + "\n"));
  ASSERT_EQ(again.models.size(), 1u);
  EXPECT_EQ(plan_files(), (std::set<std::string>{safe_model_name("m3") + ".plan"}));
}

TEST_F(BatchPlan, LoadPlanRoundTrip) {
  const std::string text = chat("a", "m1") + "\n" + chat("b", "m2") + "\n" + chat("c", "m1");
  const ingest_result r = run(options(text));
  auto loaded = load_plan(dir_.sub("work"));
  ASSERT_TRUE(loaded.ok()) << loaded.error().message;
  EXPECT_TRUE(loaded->errors.empty());
  EXPECT_EQ(loaded->line_count, 3);
  EXPECT_EQ(loaded->bytes, text.size());
  ASSERT_EQ(loaded->models.size(), 2u);
  for (size_t i = 0; i < 2; ++i) {
    EXPECT_EQ(loaded->models[i].model, r.models[i].model);
    EXPECT_EQ(loaded->models[i].safe_name, r.models[i].safe_name);
    EXPECT_EQ(loaded->models[i].count, r.models[i].count);
  }
  std::ofstream(dir_.sub("work/model_map.json"), std::ios::trunc) << R"({"line_count":"x"})";
  auto corrupt = load_plan(dir_.sub("work"));
  ASSERT_FALSE(corrupt.ok());
  EXPECT_EQ(corrupt.error().code, "batch_plan_corrupt");
  fs::remove(dir_.sub("work/model_map.json"));
  auto missing = load_plan(dir_.sub("work"));
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.error().code, "batch_io_error");
}

TEST_F(BatchPlan, IoErrorsNameThePath) {
  ingest_options o = options("");
  o.input_path = dir_.sub("missing.jsonl");
  auto r = ingest(o);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code, "batch_io_error");
  EXPECT_NE(r.error().message.find(o.input_path), std::string::npos);
  EXPECT_NE(r.error().message.find("No such file"), std::string::npos);

  const int fd = ::open(write_input("short").c_str(), O_RDONLY);
  EXPECT_FALSE(read_at(fd, 2, 10).ok());
  EXPECT_EQ(*read_at(fd, 1, 3), "hor");
  ::close(fd);

  std::ofstream(dir_.sub("odd.plan")) << "0123456789";
  auto reader = plan_reader::open(dir_.sub("odd.plan"));
  ASSERT_FALSE(reader.ok());
  EXPECT_EQ(reader.error().code, "batch_plan_corrupt");
}

TEST(BatchPlanNames, SafeNamesAndHash) {
  EXPECT_EQ(fnv1a32(""), 0x811c9dc5u);
  EXPECT_EQ(fnv1a32("a"), 0xe40c292cu);
  EXPECT_EQ(fnv1a32("foobar"), 0xbf9cf968u);
  const std::string s = safe_model_name("org/model:v1.2_x-y");
  EXPECT_EQ(s.substr(0, s.size() - 9), "org_model_v1.2_x-y");
  EXPECT_NE(safe_model_name("a/b"), safe_model_name("a:b"));
  EXPECT_LT(safe_model_name(std::string(1000, 'q')).size(), 120u);
}

}  // namespace SY_UNITY_ID
}  // namespace sy::runtime::batch
