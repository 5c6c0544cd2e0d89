#include "runtime/sts.hpp"

namespace sy::runtime {
namespace {

/// The text of the first `<tag>…</tag>` inside `xml`, entities decoded; empty when absent.
std::string element(std::string_view xml, std::string_view tag) {
  const std::string open = "<" + std::string(tag) + ">";
  const std::string close = "</" + std::string(tag) + ">";
  const auto from = xml.find(open);
  if (from == std::string_view::npos) return {};
  const auto start = from + open.size();
  const auto end = xml.find(close, start);
  if (end == std::string_view::npos) return {};
  const auto raw = xml.substr(start, end - start);
  std::string out;
  for (size_t i = 0; i < raw.size(); ++i) {
    if (raw[i] != '&') {
      out.push_back(raw[i]);
      continue;
    }
    static constexpr std::pair<std::string_view, char> entities[] = {
        {"&amp;", '&'}, {"&lt;", '<'}, {"&gt;", '>'}, {"&quot;", '"'}, {"&apos;", '\''}};
    bool done = false;
    for (const auto& [name, c] : entities) {
      if (raw.substr(i, name.size()) == name) {
        out.push_back(c);
        i += name.size() - 1;
        done = true;
        break;
      }
    }
    if (!done) out.push_back('&');
  }
  return out;
}

}  // namespace

signed_http_request assume_role_request(const sts_target& t, const assume_role_params& p,
                                        int64_t unix_seconds) {
  const std::pair<std::string_view, std::string> fields[] = {
      {"Action", "AssumeRole"},
      {"DurationSeconds", std::to_string(p.duration_s)},
      {"Policy", p.policy},
      {"RoleArn", t.role_arn},
      {"RoleSessionName", p.session_name},
      {"Version", "2011-06-15"}};
  std::string body;
  for (const auto& [k, v] : fields)
    body.append(body.empty() ? "" : "&").append(k).append("=").append(sigv4_uri_encode(v));
  sigv4_request r{
      "POST",
      "/",
      {},
      {{"Host", t.host}, {"Content-Type", "application/x-www-form-urlencoded; charset=utf-8"}},
      body};
  auto s = sigv4_sign(r, t.minter, {t.region, "sts", unix_seconds, false});
  signed_http_request out{"POST", "/", r.headers, std::move(r.body)};
  out.headers.insert(out.headers.end(), s.headers.begin(), s.headers.end());
  return out;
}

result<minted_credentials> parse_assume_role_response(int status, std::string_view body) {
  if (status != 200) {
    const auto code = element(body, "Code");
    return make_error(errc::credentials_unavailable, "STS refused AssumeRole: HTTP " +
                                                         std::to_string(status) +
                                                         (code.empty() ? "" : " " + code) + ".");
  }
  const auto creds = element(body, "Credentials");
  minted_credentials out{{element(creds, "AccessKeyId"), element(creds, "SecretAccessKey"),
                          element(creds, "SessionToken")},
                         element(creds, "Expiration")};
  if (out.credentials.access_key_id.empty() || out.credentials.secret_access_key.empty() ||
      out.credentials.session_token.empty() || out.expiration.empty())
    return make_error(errc::credentials_unavailable,
                      "STS answered AssumeRole without complete credentials.");
  return out;
}

}  // namespace sy::runtime
