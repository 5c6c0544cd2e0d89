#include "tests/fakes/fake_responses.hpp"

#include <chrono>
#include <nlohmann/json.hpp>
#include <sstream>

namespace sy::fakes {
namespace {

using json = nlohmann::json;

bool ends_with(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() &&
         s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

std::string dump(const json& j) { return j.dump(-1, ' ', false, json::error_handler_t::replace); }

int64_t count_words(const std::string& text) {
  std::istringstream in(text);
  int64_t n = 0;
  for (std::string w; in >> w;) ++n;
  return n;
}

/// Unix seconds for `created`. The fake is test tooling outside the engine, so it may read the
/// system clock directly.
int64_t unix_seconds() {
  using namespace std::chrono;
  return duration_cast<seconds>(system_clock::now().time_since_epoch()).count();
}

std::string string_field(const json& j, const char* key, const std::string& fallback) {
  auto it = j.find(key);
  return it != j.end() && it->is_string() ? it->get<std::string>() : fallback;
}

/// A message's text: a plain string, or the text parts of a content array.
std::string content_text(const json& message) {
  auto it = message.find("content");
  if (it == message.end()) return {};
  if (it->is_string()) return it->get<std::string>();
  std::string out;
  if (it->is_array()) {
    for (const auto& part : *it) {
      if (part.is_object()) out += string_field(part, "text", "");
    }
  }
  return out;
}

json usage(int64_t prompt, int64_t completion) {
  return {{"prompt_tokens", prompt},
          {"completion_tokens", completion},
          {"total_tokens", prompt + completion}};
}

fake_answer chat_completion(const json& req, uint64_t seq) {
  std::string last_user;
  int64_t prompt_tokens = 0;
  auto messages = req.find("messages");
  if (messages == req.end() || !messages->is_array()) {
    return error_answer(400, "'messages' is a required property");
  }
  for (const auto& m : *messages) {
    if (!m.is_object()) continue;
    const std::string text = content_text(m);
    prompt_tokens += count_words(text);
    if (string_field(m, "role", "") == "user") last_user = text;
  }
  const std::string content = "echo: " + last_user;
  json choice = {{"index", 0},
                 {"message", {{"role", "assistant"}, {"content", content}}},
                 {"logprobs", nullptr},
                 {"finish_reason", "stop"}};
  json out = {{"id", "chatcmpl-fake" + std::to_string(seq)},
              {"object", "chat.completion"},
              {"created", unix_seconds()},
              {"model", string_field(req, "model", "fake-model")},
              {"choices", json::array({choice})},
              {"usage", usage(prompt_tokens, count_words(content))}};
  return {200, dump(out), {}};
}

/// A small deterministic vector derived from the input text.
json embedding_of(const std::string& text) {
  json v = json::array();
  uint64_t h = std::hash<std::string>{}(text);
  for (int i = 0; i < 8; ++i) {
    h = h * 6364136223846793005ULL + 1442695040888963407ULL;
    v.push_back(static_cast<double>(static_cast<int64_t>(h >> 40) % 2000 - 1000) / 1000.0);
  }
  return v;
}

fake_answer embeddings(const json& req) {
  std::vector<std::string> inputs;
  auto input = req.find("input");
  if (input != req.end() && input->is_string()) inputs.push_back(input->get<std::string>());
  if (input != req.end() && input->is_array()) {
    for (const auto& i : *input) inputs.push_back(i.is_string() ? i.get<std::string>() : i.dump());
  }
  if (inputs.empty()) return error_answer(400, "'input' is a required property");
  json data = json::array();
  int64_t tokens = 0;
  for (size_t i = 0; i < inputs.size(); ++i) {
    data.push_back({{"object", "embedding"}, {"index", i}, {"embedding", embedding_of(inputs[i])}});
    tokens += count_words(inputs[i]);
  }
  json out = {{"object", "list"},
              {"data", data},
              {"model", string_field(req, "model", "fake-embedding")},
              {"usage", {{"prompt_tokens", tokens}, {"total_tokens", tokens}}}};
  return {200, dump(out), {}};
}

fake_answer text_completion(const json& req, uint64_t seq) {
  const std::string prompt = string_field(req, "prompt", "");
  const std::string text = "echo: " + prompt;
  json choice = {{"text", text}, {"index", 0}, {"logprobs", nullptr}, {"finish_reason", "stop"}};
  json out = {{"id", "cmpl-fake" + std::to_string(seq)},
              {"object", "text_completion"},
              {"created", unix_seconds()},
              {"model", string_field(req, "model", "fake-model")},
              {"choices", json::array({choice})},
              {"usage", usage(count_words(prompt), count_words(text))}};
  return {200, dump(out), {}};
}

}  // namespace

fake_answer error_answer(int status, const std::string& message) {
  std::string type = "server_error";
  json code = nullptr;
  if (status == 429) {
    type = "rate_limit_exceeded";
    code = "rate_limit_exceeded";
  } else if (status >= 400 && status < 500) {
    type = "invalid_request_error";
  }
  json out = {
      {"error", {{"message", message}, {"type", type}, {"param", nullptr}, {"code", code}}}};
  fake_answer a{status, dump(out), {}};
  if (status == 429) a.headers.emplace_back("Retry-After", "1");
  return a;
}

fake_answer openai_answer(const std::string& method, const std::string& target,
                          const std::string& body, uint64_t seq) {
  const bool chat = ends_with(target, "/v1/chat/completions");
  const bool embed = ends_with(target, "/v1/embeddings");
  const bool complete = ends_with(target, "/v1/completions") && !chat;
  if (!chat && !embed && !complete) return error_answer(404, "Unknown path " + target);
  if (method != "POST") return error_answer(405, "Method " + method + " not allowed");
  const json req = json::parse(body, nullptr, false);
  if (req.is_discarded() || !req.is_object()) {
    return error_answer(400, "The request body is not a JSON object");
  }
  if (chat) return chat_completion(req, seq);
  if (embed) return embeddings(req);
  return text_completion(req, seq);
}

}  // namespace sy::fakes
