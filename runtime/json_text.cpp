#include "runtime/json_text.hpp"

#include <charconv>

#include "config/limits.hpp"

namespace sy::runtime {
namespace {

constexpr std::string_view replacement = "\xEF\xBF\xBD";  // U+FFFD

/// Length of the valid UTF-8 sequence that starts at `s[i]` (a byte ≥ 0x80), or 0 when it is
/// not one; then `*bad` is how many bytes the replacement character stands for (the byte that
/// broke the sequence is read again as the start of the next one, as nlohmann does).
size_t utf8_sequence(std::string_view s, size_t i, size_t* bad) {
  const auto b0 = static_cast<unsigned char>(s[i]);
  size_t n = 0;
  unsigned char lo = 0x80, hi = 0xBF;  // the second byte's range
  if (b0 >= 0xC2 && b0 <= 0xDF) {
    n = 2;
  } else if (b0 >= 0xE0 && b0 <= 0xEF) {
    n = 3;
    if (b0 == 0xE0) lo = 0xA0;  // overlong
    if (b0 == 0xED) hi = 0x9F;  // surrogates
  } else if (b0 >= 0xF0 && b0 <= 0xF4) {
    n = 4;
    if (b0 == 0xF0) lo = 0x90;  // overlong
    if (b0 == 0xF4) hi = 0x8F;  // above U+10FFFF
  } else {
    *bad = 1;
    return 0;
  }
  for (size_t k = 1; k < n; ++k) {
    if (i + k >= s.size()) {
      *bad = k;
      return 0;
    }
    const auto b = static_cast<unsigned char>(s[i + k]);
    const bool ok = k == 1 ? (b >= lo && b <= hi) : (b >= 0x80 && b <= 0xBF);
    if (!ok) {
      *bad = k;
      return 0;
    }
  }
  return n;
}

}  // namespace

std::optional<size_t> utf8_length(std::string_view s) {
  size_t count = 0;
  for (size_t i = 0; i < s.size(); ++count) {
    if (static_cast<unsigned char>(s[i]) < 0x80) {
      ++i;
      continue;
    }
    size_t bad = 0;
    const size_t n = utf8_sequence(s, i, &bad);
    if (n == 0) return std::nullopt;
    i += n;
  }
  return count;
}

void append_json_string(std::string& out, std::string_view s) {
  static constexpr char hex[] = "0123456789abcdef";
  out.reserve(out.size() + s.size() + 2);
  out.push_back('"');
  size_t plain = 0;  // start of the bytes not yet copied
  size_t i = 0;
  while (i < s.size()) {
    const auto c = static_cast<unsigned char>(s[i]);
    if (c >= 0x20 && c < 0x80 && c != '"' && c != '\\') {
      ++i;
      continue;
    }
    if (c >= 0x80) {
      size_t bad = 0;
      if (size_t n = utf8_sequence(s, i, &bad)) {
        i += n;
        continue;
      }
      out.append(s.substr(plain, i - plain));
      out.append(replacement);
      i += bad;
      plain = i;
      continue;
    }
    out.append(s.substr(plain, i - plain));
    switch (c) {
      case '"':
        out.append("\\\"");
        break;
      case '\\':
        out.append("\\\\");
        break;
      case '\b':
        out.append("\\b");
        break;
      case '\t':
        out.append("\\t");
        break;
      case '\n':
        out.append("\\n");
        break;
      case '\f':
        out.append("\\f");
        break;
      case '\r':
        out.append("\\r");
        break;
      default: {
        const char u[] = {'\\', 'u', '0', '0', hex[c >> 4], hex[c & 0xF]};
        out.append(u, sizeof u);
      }
    }
    plain = ++i;
  }
  out.append(s.substr(plain));
  out.push_back('"');
}

void json_text::separate() {
  if (out_.empty()) return;
  const char last = out_.back();
  if (last != '{' && last != '[' && last != ':') out_.push_back(',');
}

json_text& json_text::open(char c) {
  separate();
  out_.push_back(c);
  return *this;
}

json_text& json_text::close(char c) {
  out_.push_back(c);
  return *this;
}

json_text& json_text::key(std::string_view name) {
  separate();
  append_json_string(out_, name);
  out_.push_back(':');
  return *this;
}

json_text& json_text::string(std::string_view v) {
  separate();
  append_json_string(out_, v);
  return *this;
}

json_text& json_text::number(int64_t v) {
  separate();
  char buf[24];
  auto r = std::to_chars(buf, buf + sizeof buf, v);
  out_.append(buf, r.ptr);
  return *this;
}

json_text& json_text::boolean(bool v) { return raw(v ? "true" : "false"); }

json_text& json_text::null() { return raw("null"); }

json_text& json_text::raw(std::string_view json) {
  separate();
  out_.append(json);
  return *this;
}

json_text& json_text::value(const nlohmann::json& v) {
  return raw(v.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
}

bool json_depth_within(std::string_view text, int max_depth) {
  int depth = 0;
  bool in_string = false;
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (in_string) {
      if (c == '\\') {
        ++i;  // the escaped character cannot end the string
      } else if (c == '"') {
        in_string = false;
      }
    } else if (c == '"') {
      in_string = true;
    } else if (c == '{' || c == '[') {
      if (++depth > max_depth) return false;
    } else if ((c == '}' || c == ']') && depth > 0) {
      --depth;
    }
  }
  return true;
}

json_text& json_text::json_or_string(std::string_view text) {
  // A gateway's (or later a worker's) answer is not ours either: text nested deeper than a
  // client may send is shown as a string instead of being parsed and rendered recursively.
  if (!json_depth_within(text, limits::json_max_depth)) return string(text);
  auto parsed = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  return parsed.is_discarded() ? string(text) : value(parsed);
}

}  // namespace sy::runtime
