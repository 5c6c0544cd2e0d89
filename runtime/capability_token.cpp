#include "runtime/capability_token.hpp"

namespace sy::runtime {
namespace {

sy::error refuse(const std::string& why) {
  return make_error(errc::invalid_capability_token, "The capability token " + why + ".");
}

template <class T>
bool field(const nlohmann::json& j, const char* name, T& out) {
  if (!j.contains(name)) return false;
  const auto& v = j[name];
  if constexpr (std::is_same_v<T, std::string>) {
    if (!v.is_string()) return false;
  } else {
    if (!v.is_number_integer()) return false;
  }
  out = v.get<T>();
  return true;
}

}  // namespace

nlohmann::json claims_json(const capability_claims& c) {
  return {{"iss", c.iss},
          {"aud", c.aud},
          {"sub", "task:" + c.task_id},
          {"iat", c.iat_s},
          {"nbf", c.nbf_s},
          {"exp", c.exp_s},
          {"jti", c.jti},
          {"tenant", c.tenant},
          {"job_id", c.job_id},
          {"task_id", c.task_id},
          {"attempt", c.attempt},
          {"runtime", c.runtime},
          {"lease", c.lease},
          {"grants", config::s3_grants_json(c.grants)}};
}

result<std::string> mint_token(const key_ring& ring, const capability_claims& c, int64_t now_ms) {
  return ring.signer(now_ms).sign({{"typ", "JWT"}}, claims_json(c));
}

result<capability_claims> check_token(std::string_view token, const key_ring& ring,
                                      const token_expectations& e) {
  // The kid names the key; only a key the ring still publishes may have signed it.
  const auto dot = token.find('.');
  if (dot == std::string_view::npos) return refuse("is not a compact JWS");
  const auto header_text = base64url_decode(token.substr(0, dot));
  if (!header_text) return refuse("is not base64url");
  const auto header = nlohmann::json::parse(*header_text, nullptr, false);
  if (!header.is_object() || !header.contains("kid") || !header["kid"].is_string())
    return refuse("has no kid");
  const auto* key = ring.find(header["kid"].get<std::string>(), e.now_ms);
  if (key == nullptr) return refuse("was signed by a key that is not published");
  auto verified = key->verify(token);
  if (!verified) return verified.error();
  const auto& j = *verified;
  capability_claims c;
  std::string sub;
  if (!field(j, "iss", c.iss) || !field(j, "aud", c.aud) || !field(j, "sub", sub) ||
      !field(j, "iat", c.iat_s) || !field(j, "nbf", c.nbf_s) || !field(j, "exp", c.exp_s) ||
      !field(j, "jti", c.jti) || !field(j, "tenant", c.tenant) || !field(j, "job_id", c.job_id) ||
      !field(j, "task_id", c.task_id) || !field(j, "attempt", c.attempt) ||
      !field(j, "runtime", c.runtime) || !field(j, "lease", c.lease))
    return refuse("lacks a claim or has one of the wrong type");
  if (c.iss != e.iss) return refuse("was issued by '" + c.iss + "', not '" + e.iss + "'");
  if (c.aud != e.aud) return refuse("is for audience '" + c.aud + "', not '" + e.aud + "'");
  if (sub != "task:" + c.task_id) return refuse("has a sub that does not name its task_id");
  const int64_t now_s = e.now_ms / 1000;
  if (now_s + e.skew_s < c.nbf_s) return refuse("is not valid yet");
  if (now_s >= c.exp_s + e.skew_s) return refuse("has expired");
  if (j.contains("grants")) {
    auto grants = config::parse_s3_grants(j["grants"]);
    if (!grants) return refuse("has grants that are not canonical s3:// prefixes");
    c.grants = std::move(*grants);
  }
  return c;
}

}  // namespace sy::runtime
