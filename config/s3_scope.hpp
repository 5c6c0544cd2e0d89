#pragma once
/// Storage grants of external-worker tasks (issue 19; seed 003, "Scope derivation and
/// canonicalization"): canonical `s3://bucket/prefix/` strings, the check that a grant lies
/// within what a tenant may use, and the STS session policy derived from a task's grants. Pure:
/// no I/O, so the minting actor, the submission check and the fuzz harnesses share it.
///
/// Deny by default. A prefix is accepted only when it is already canonical — nothing is
/// rewritten into shape, so what a client sent and what the policy grants are the same string:
/// - scheme exactly `s3` (lowercase) followed by `://`;
/// - a bucket name as S3 defines it: 3–63 characters of `a-z 0-9 . -`, starting and ending with
///   a letter or digit, no `..`, not shaped like an IPv4 address;
/// - a non-empty key prefix that ends with `/` (a directory: it grants `prefix*` and nothing
///   that merely starts with the same letters) and does not start with `/`;
/// - key characters only from S3's "safe" set (`A-Z a-z 0-9 ! - _ . ' ( )` and `/`): so no
///   `*` or `?` (wildcards), no `%` (so no percent-encoded `..`), no spaces or controls;
/// - no empty segment (`//`), no `.` or `..` segment, and no `..` anywhere.

#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "config/result.hpp"

namespace sy::config {

/// One canonical grant: `s3://<bucket>/<prefix>` with `prefix` ending in '/'.
struct s3_prefix {
  std::string bucket;
  std::string prefix;
  std::string uri() const { return "s3://" + bucket + "/" + prefix; }
  bool operator==(const s3_prefix&) const = default;
};

/// `uri` as a canonical prefix, or `invalid_grants` saying which rule it breaks.
result<s3_prefix> parse_s3_prefix(std::string_view uri);

/// True when everything `inner` grants is inside `outer` (same bucket, `outer.prefix` a
/// directory prefix of `inner.prefix`).
bool s3_within(const s3_prefix& inner, const s3_prefix& outer);

/// A task's grants, by kind.
struct s3_grants {
  std::vector<s3_prefix> read;     ///< GetObject
  std::vector<s3_prefix> write;    ///< PutObject
  std::vector<s3_prefix> scratch;  ///< GetObject, PutObject, DeleteObject
  bool empty() const { return read.empty() && write.empty() && scratch.empty(); }
  bool operator==(const s3_grants&) const = default;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, s3_prefix& x) {
  return f(x.bucket, x.prefix);
}
template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, s3_grants& x) {
  return f(x.read, x.write, x.scratch);
}

/// Most prefixes of one kind in a submission's grants.
inline constexpr size_t max_grants_per_kind = 32;

/// A submission's `grants` object: only the keys `read`, `write`, `scratch`, each an array of
/// at most max_grants_per_kind canonical prefix strings. Errors: invalid_grants, naming the
/// offending entry as `param` (`grants.read[0]`).
result<s3_grants> parse_s3_grants(const nlohmann::json& j);

/// `{"read": [uris], "write": [...], "scratch": [...]}`: the shape parse_s3_grants reads.
nlohmann::json s3_grants_json(const s3_grants& g);

/// The first grant of `g` that lies within none of `allowed`, as its URI; empty when all do.
std::string s3_grant_outside(const s3_grants& g, const std::vector<s3_prefix>& allowed);

/// The session policy for `g`: object-level actions on `arn:aws:s3:::<bucket>/<prefix>*` per
/// kind, and `s3:ListBucket` on each bucket only with a `StringLike` `s3:prefix` condition
/// listing that bucket's granted prefixes. Statements and resources in a stable order (sorted,
/// duplicates removed), so equal grants give byte-equal policies.
nlohmann::json s3_session_policy(const s3_grants& g);

}  // namespace sy::config
