#include "api/router.hpp"

#include <algorithm>

namespace sy::api {
namespace {

std::vector<std::string> split_path(std::string_view path) {
  std::vector<std::string> out;
  size_t pos = 0;
  if (!path.empty() && path.front() == '/') pos = 1;
  while (pos <= path.size()) {
    size_t next = path.find('/', pos);
    if (next == std::string_view::npos) next = path.size();
    out.emplace_back(path.substr(pos, next - pos));
    pos = next + 1;
  }
  return out;
}

bool is_capture(const std::string& segment) {
  return segment.size() > 2 && segment.front() == '{' && segment.back() == '}';
}

/// Whether `path` fits `pattern`; fills `params` with the captures when it does.
bool fits(const std::vector<std::string>& pattern, const std::vector<std::string>& path,
          std::vector<std::string>& params) {
  if (pattern.size() != path.size()) return false;
  std::vector<std::string> captured;
  for (size_t i = 0; i < pattern.size(); ++i) {
    if (is_capture(pattern[i])) {
      if (path[i].empty()) return false;
      captured.push_back(path[i]);
    } else if (pattern[i] != path[i]) {
      return false;
    }
  }
  params = std::move(captured);
  return true;
}

}  // namespace

void router::add(boost::beast::http::verb method, std::string_view pattern, int route) {
  entries_.push_back(entry{method, split_path(pattern), route, std::string(pattern)});
}

std::vector<std::string> router::listing() const {
  std::vector<std::string> out;
  out.reserve(entries_.size());
  for (const auto& e : entries_) {
    std::string line(boost::beast::http::to_string(e.method));
    line.append(" ").append(e.pattern);
    out.push_back(std::move(line));
  }
  return out;
}

route_match router::match(boost::beast::http::verb method, std::string_view target) const {
  std::string_view path = target.substr(0, target.find('?'));
  auto segments = split_path(path);
  route_match m;
  std::vector<std::string> allowed;
  for (const auto& e : entries_) {
    std::vector<std::string> params;
    if (!fits(e.segments, segments, params)) continue;
    if (e.method == method) {
      m.outcome = route_match::kind::found;
      m.route = e.route;
      m.pattern = e.pattern;
      m.params = std::move(params);
      return m;
    }
    std::string name(boost::beast::http::to_string(e.method));
    if (std::find(allowed.begin(), allowed.end(), name) == allowed.end()) allowed.push_back(name);
  }
  if (allowed.empty()) return m;
  m.outcome = route_match::kind::method_not_allowed;
  for (const auto& name : allowed) m.allow += (m.allow.empty() ? "" : ", ") + name;
  return m;
}

}  // namespace sy::api
