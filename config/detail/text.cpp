#include "config/detail/text.hpp"

#include <algorithm>
#include <charconv>
#include <fstream>
#include <sstream>
#include <vector>

namespace sy::config::detail {

std::string_view trim(std::string_view text) {
  constexpr std::string_view space = " \t\r\n";
  auto first = text.find_first_not_of(space);
  if (first == std::string_view::npos) return {};
  auto last = text.find_last_not_of(space);
  return text.substr(first, last - first + 1);
}

result<std::string> read_file(const std::string& path, std::string_view what) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    return make_error(errc::invalid_config,
                      std::string(what) + ": cannot read file " + detail::quoted(path),
                      std::string(what));
  }
  std::ostringstream content;
  content << in.rdbuf();
  if (in.bad()) {
    return make_error(errc::invalid_config,
                      std::string(what) + ": error reading file " + detail::quoted(path),
                      std::string(what));
  }
  return content.str();
}

bool parse_int64(std::string_view text, int64_t& out) {
  if (text.empty()) return false;
  const char* end = text.data() + text.size();
  auto [ptr, ec] = std::from_chars(text.data(), end, out);
  return ec == std::errc{} && ptr == end;
}

size_t edit_distance(std::string_view a, std::string_view b) {
  std::vector<size_t> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diagonal = row[0];
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      size_t above = row[j];
      size_t substitute = diagonal + (a[i - 1] == b[j - 1] ? 0 : 1);
      row[j] = std::min({above + 1, row[j - 1] + 1, substitute});
      diagonal = above;
    }
  }
  return row[b.size()];
}

size_t find_control(std::string_view text) {
  auto it = std::find_if(text.begin(), text.end(),
                         [](char c) { return static_cast<unsigned char>(c) < 0x20 || c == 0x7f; });
  return it == text.end() ? std::string_view::npos : static_cast<size_t>(it - text.begin());
}

std::string quoted(std::string_view text) {
  // Built with reserve/append: GCC 12 at -O3 reports a false -Wrestrict on "'" + string.
  std::string out;
  out.reserve(text.size() + 2);
  out.push_back('\'');
  out.append(text);
  out.push_back('\'');
  return out;
}

}  // namespace sy::config::detail
