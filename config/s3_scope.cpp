#include "config/s3_scope.hpp"

#include <algorithm>
#include <map>
#include <set>

namespace sy::config {
namespace {

bool lower_or_digit(char c) { return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9'); }

/// S3's "safe" key characters (and the separator), without the wildcards.
bool safe_key_char(char c) {
  if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9')) return true;
  return c == '!' || c == '-' || c == '_' || c == '.' || c == '\'' || c == '(' || c == ')' ||
         c == '/';
}

/// Four dot-separated groups of digits: S3 refuses such bucket names, and so do we.
bool looks_like_ipv4(std::string_view b) {
  int dots = 0;
  for (char c : b) {
    if (c == '.') {
      ++dots;
    } else if (c < '0' || c > '9') {
      return false;
    }
  }
  return dots == 3;
}

sy::error refuse(std::string_view uri, const std::string& why) {
  return make_error(errc::invalid_grants, "'" + std::string(uri) + "' is not a canonical " +
                                              "s3://bucket/prefix/ grant: " + why + ".");
}

std::string bucket_problem(std::string_view b) {
  if (b.empty()) return "the bucket is empty";
  if (b.size() < 3 || b.size() > 63) return "a bucket name has 3 to 63 characters";
  if (!std::all_of(b.begin(), b.end(),
                   [](char c) { return lower_or_digit(c) || c == '.' || c == '-'; }))
    return "a bucket name has only lowercase letters, digits, '.' and '-'";
  if (!lower_or_digit(b.front()) || !lower_or_digit(b.back()))
    return "a bucket name starts and ends with a letter or digit";
  if (b.find("..") != std::string_view::npos) return "a bucket name has no '..'";
  if (looks_like_ipv4(b)) return "a bucket name is not an IP address";
  return {};
}

std::string prefix_problem(std::string_view p) {
  if (p.empty()) return "the prefix is empty (a grant names a directory, never a whole bucket)";
  for (char c : p) {
    if (c == '*' || c == '?') return "wildcards ('*', '?') are not allowed";
    if (c == '%') return "percent-encoding is not allowed";
    if (!safe_key_char(c)) return "the prefix has a character outside S3's safe set";
  }
  if (p.back() != '/') return "the prefix does not end with '/' (it must name a directory)";
  if (p.front() == '/') return "the prefix starts with '/'";
  if (p.find("..") != std::string_view::npos) return "the prefix contains '..'";
  if (p.find("//") != std::string_view::npos) return "the prefix has an empty segment ('//')";
  // Every segment is followed by '/', so "./" at the start or "/./" inside is a '.' segment.
  if (p.substr(0, 2) == "./" || p.find("/./") != std::string_view::npos)
    return "the prefix has a '.' segment";
  return {};
}

std::string arn(const s3_prefix& p) { return "arn:aws:s3:::" + p.bucket + "/" + p.prefix + "*"; }

nlohmann::json statement(const std::vector<std::string>& actions,
                         const std::set<std::string>& res) {
  return {{"Effect", "Allow"},
          {"Action", actions},
          {"Resource", std::vector<std::string>(res.begin(), res.end())}};
}

}  // namespace

result<s3_prefix> parse_s3_prefix(std::string_view uri) {
  constexpr std::string_view scheme = "s3://";
  if (uri.substr(0, scheme.size()) != scheme) return refuse(uri, "the scheme must be 's3://'");
  const auto rest = uri.substr(scheme.size());
  const auto slash = rest.find('/');
  const auto bucket = rest.substr(0, slash);
  if (auto why = bucket_problem(bucket); !why.empty()) return refuse(uri, why);
  const auto prefix = slash == std::string_view::npos ? std::string_view{} : rest.substr(slash + 1);
  if (auto why = prefix_problem(prefix); !why.empty()) return refuse(uri, why);
  return s3_prefix{std::string(bucket), std::string(prefix)};
}

bool s3_within(const s3_prefix& inner, const s3_prefix& outer) {
  return inner.bucket == outer.bucket && inner.prefix.size() >= outer.prefix.size() &&
         inner.prefix.compare(0, outer.prefix.size(), outer.prefix) == 0;
}

nlohmann::json s3_session_policy(const s3_grants& g) {
  auto arns = [](const std::vector<s3_prefix>& ps) {
    std::set<std::string> out;
    for (const auto& p : ps) out.insert(arn(p));
    return out;
  };
  nlohmann::json statements = nlohmann::json::array();
  if (!g.read.empty()) statements.push_back(statement({"s3:GetObject"}, arns(g.read)));
  if (!g.write.empty()) statements.push_back(statement({"s3:PutObject"}, arns(g.write)));
  if (!g.scratch.empty())
    statements.push_back(
        statement({"s3:GetObject", "s3:PutObject", "s3:DeleteObject"}, arns(g.scratch)));
  std::map<std::string, std::set<std::string>> listable;  // bucket → its granted prefixes
  for (const auto* kind : {&g.read, &g.write, &g.scratch})
    for (const auto& p : *kind) listable[p.bucket].insert(p.prefix + "*");
  for (const auto& [bucket, prefixes] : listable) {
    statements.push_back(
        {{"Effect", "Allow"},
         {"Action", {"s3:ListBucket"}},
         {"Resource", {"arn:aws:s3:::" + bucket}},
         {"Condition",
          {{"StringLike",
            {{"s3:prefix", std::vector<std::string>(prefixes.begin(), prefixes.end())}}}}}});
  }
  return {{"Version", "2012-10-17"}, {"Statement", statements}};
}

result<s3_grants> parse_s3_grants(const nlohmann::json& j) {
  if (!j.is_object())
    return make_error(errc::invalid_grants,
                      "'grants' must be an object {read, write, scratch} of s3:// prefix lists.",
                      "grants");
  s3_grants out;
  for (const auto& [kind, list] : j.items()) {
    auto* into = kind == "read"      ? &out.read
                 : kind == "write"   ? &out.write
                 : kind == "scratch" ? &out.scratch
                                     : nullptr;
    const std::string param = "grants." + kind;
    if (into == nullptr)
      return make_error(errc::invalid_grants,
                        "'" + param + "' is not a kind of grant (read, write, scratch).", param);
    if (!list.is_array() || list.size() > max_grants_per_kind)
      return make_error(errc::invalid_grants,
                        "'" + param + "' must be an array of at most " +
                            std::to_string(max_grants_per_kind) + " s3:// prefixes.",
                        param);
    for (size_t i = 0; i < list.size(); ++i) {
      const std::string at = param + "[" + std::to_string(i) + "]";
      if (!list[i].is_string())
        return make_error(errc::invalid_grants, "'" + at + "' must be a string.", at);
      auto p = parse_s3_prefix(list[i].get_ref<const std::string&>());
      if (!p) return make_error(errc::invalid_grants, p.error().message, at);
      into->push_back(std::move(*p));
    }
  }
  return out;
}

nlohmann::json s3_grants_json(const s3_grants& g) {
  auto uris = [](const std::vector<s3_prefix>& ps) {
    nlohmann::json out = nlohmann::json::array();
    for (const auto& p : ps) out.push_back(p.uri());
    return out;
  };
  return {{"read", uris(g.read)}, {"write", uris(g.write)}, {"scratch", uris(g.scratch)}};
}

std::string s3_grant_outside(const s3_grants& g, const std::vector<s3_prefix>& allowed) {
  for (const auto* kind : {&g.read, &g.write, &g.scratch})
    for (const auto& p : *kind)
      if (std::none_of(allowed.begin(), allowed.end(),
                       [&](const s3_prefix& a) { return s3_within(p, a); }))
        return p.uri();
  return {};
}

}  // namespace sy::config
