#include "api/detail/query.hpp"

namespace sy::api::detail {
namespace {

int hex_digit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

std::optional<std::string> percent_decode(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '+') {
      out += ' ';
    } else if (s[i] == '%') {
      if (i + 2 >= s.size()) return std::nullopt;
      int hi = hex_digit(s[i + 1]);
      int lo = hex_digit(s[i + 2]);
      if (hi < 0 || lo < 0) return std::nullopt;
      out += static_cast<char>(hi * 16 + lo);
      i += 2;
    } else {
      out += s[i];
    }
  }
  return out;
}

sy::error invalid(std::string param, std::string message) {
  return make_error(errc::invalid_value, std::move(message), std::move(param));
}

}  // namespace

result<std::vector<query_param>> parse_query(std::string_view target) {
  std::vector<query_param> out;
  size_t q = target.find('?');
  if (q == std::string_view::npos) return out;
  std::string_view rest = target.substr(q + 1);
  rest = rest.substr(0, rest.find('#'));
  while (!rest.empty()) {
    size_t amp = rest.find('&');
    std::string_view pair = rest.substr(0, amp);
    rest = amp == std::string_view::npos ? std::string_view() : rest.substr(amp + 1);
    if (pair.empty()) continue;
    size_t eq = pair.find('=');
    auto name = percent_decode(pair.substr(0, eq));
    if (!name) return invalid("query", "The query string has a malformed percent-escape.");
    auto value = percent_decode(eq == std::string_view::npos ? "" : pair.substr(eq + 1));
    if (!value)
      return invalid(*name, "Query parameter '" + *name + "' has a malformed percent-escape.");
    out.push_back({std::move(*name), std::move(*value)});
  }
  return out;
}

std::optional<std::string> query_value(const std::vector<query_param>& params,
                                       std::string_view name) {
  std::optional<std::string> found;
  for (const auto& p : params)
    if (p.name == name) found = p.value;
  return found;
}

result<list_params> parse_list_params(std::string_view target) {
  auto params = parse_query(target);
  if (!params) return params.error();
  list_params out;
  if (auto s = query_value(*params, "status")) {
    out.status = storage::job_status_from(*s);
    if (!out.status)
      return invalid("status",
                     "'status' must be one of queued, ingesting, in_progress, cancelling, "
                     "completed, failed, cancelled, expired; got '" +
                         *s + "'.");
  }
  if (auto k = query_value(*params, "kind")) {
    out.kind = storage::job_kind_from(*k);
    if (!out.kind)
      return invalid("kind", "'kind' must be one of single, list, batch; got '" + *k + "'.");
  }
  if (auto l = query_value(*params, "limit")) {
    bool digits = !l->empty() && l->size() <= 3;
    for (char c : *l) digits = digits && c >= '0' && c <= '9';
    int n = digits ? std::stoi(*l) : 0;
    if (n < 1 || n > list_max_limit)
      return invalid("limit", "'limit' must be an integer from 1 to 100; got '" + *l + "'.");
    out.limit = n;
  }
  if (auto a = query_value(*params, "after")) out.after = std::move(*a);
  return out;
}

}  // namespace sy::api::detail
