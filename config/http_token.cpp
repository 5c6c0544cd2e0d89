#include "config/http_token.hpp"

#include <algorithm>
#include <cctype>

#include "config/detail/text.hpp"

namespace sy::config {

bool is_header_name(std::string_view name) {
  constexpr std::string_view extra = "!#$%&'*+-.^_`|~";
  return !name.empty() && std::all_of(name.begin(), name.end(), [&](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || extra.find(c) != std::string_view::npos;
  });
}

std::string header_key(std::string_view name) {
  std::string out(name);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

size_t header_value_control(std::string_view value) { return detail::find_control(value); }

}  // namespace sy::config
