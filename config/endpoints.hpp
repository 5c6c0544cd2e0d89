#pragma once
/// THE inference endpoints Switchyard runs, declared once: jobs (`endpoint`), the synchronous
/// routes, batches (`endpoint` and each line's `url`) and the batch line checks all read this
/// list, so an endpoint is added (or its required field changed) in one place.

#include <array>
#include <optional>
#include <string>
#include <string_view>

namespace sy::endpoints {

enum class kind { chat, embeddings, completions };

struct info {
  kind what;
  std::string_view path;            ///< e.g. "/v1/chat/completions"
  std::string_view required_field;  ///< the body field the OpenAI endpoint requires
};

inline constexpr std::array<info, 3> all = {{
    {kind::chat, "/v1/chat/completions", "messages"},
    {kind::embeddings, "/v1/embeddings", "input"},
    {kind::completions, "/v1/completions", "prompt"},
}};

/// The endpoint served at `path`, if any.
inline std::optional<info> find(std::string_view path) {
  for (const auto& e : all)
    if (e.path == path) return e;
  return std::nullopt;
}

/// "/v1/chat/completions, /v1/embeddings, /v1/completions": for error messages.
inline std::string list() {
  std::string out;
  for (const auto& e : all) {
    if (!out.empty()) out += ", ";
    out += e.path;
  }
  return out;
}

}  // namespace sy::endpoints
