#pragma once
/// The fake gateway's OpenAI-shaped answers, as pure functions of the request (no I/O), so the
/// server code in fake_gateway.cpp only decides *whether* to answer normally.

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace sy::fakes {

/// An HTTP answer before it is written: status, JSON body and extra headers.
struct fake_answer {
  int status = 200;
  std::string body;
  std::vector<std::pair<std::string, std::string>> headers;
};

/// The normal answer for `method target body`: chat.completion, embedding list or
/// text_completion; 404/405/400 with an OpenAI error body for unknown paths, wrong methods and
/// malformed JSON. `seq` makes ids unique.
fake_answer openai_answer(const std::string& method, const std::string& target,
                          const std::string& body, uint64_t seq);

/// An OpenAI error envelope with `status`; 429 carries `Retry-After: 1`.
fake_answer error_answer(int status, const std::string& message);

}  // namespace sy::fakes
