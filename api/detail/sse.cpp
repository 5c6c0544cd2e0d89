#include "api/detail/sse.hpp"

#include <limits>

namespace sy::api::detail {

std::string sse_event(uint64_t seq, std::string_view event, std::string_view data) {
  std::string out = "id: " + std::to_string(seq) + "\nevent: " + std::string(event) + "\n";
  size_t pos = 0;
  for (;;) {
    size_t nl = data.find_first_of("\r\n", pos);
    out += "data: ";
    out += data.substr(pos, nl == std::string_view::npos ? std::string_view::npos : nl - pos);
    out += '\n';
    if (nl == std::string_view::npos) break;
    pos = nl + (data[nl] == '\r' && nl + 1 < data.size() && data[nl + 1] == '\n' ? 2 : 1);
  }
  out += '\n';
  return out;
}

std::optional<uint64_t> parse_last_event_id(std::string_view header) {
  while (!header.empty() && (header.front() == ' ' || header.front() == '\t'))
    header.remove_prefix(1);
  while (!header.empty() && (header.back() == ' ' || header.back() == '\t'))
    header.remove_suffix(1);
  if (header.empty()) return 0;
  if (header.size() > 20) return std::nullopt;
  uint64_t n = 0;
  constexpr uint64_t max = std::numeric_limits<uint64_t>::max();
  for (char c : header) {
    if (c < '0' || c > '9') return std::nullopt;
    uint64_t d = static_cast<uint64_t>(c - '0');
    if (n > (max - d) / 10) return std::nullopt;
    n = n * 10 + d;
  }
  return n;
}

}  // namespace sy::api::detail
