#pragma once
/// ES256 (ECDSA P-256 with SHA-256) JSON Web Signatures in compact form, on OpenSSL 3's EVP API
/// only (no deprecated EC_KEY calls): the signing half of the per-attempt capability tokens
/// (issue 19; seed 003, "Task capability token issuance"). The credential minter owns the keys;
/// this file is the pure crypto under it.
///
/// JWS details (RFC 7515/7518): the signature is the raw 64-byte r‖s, not OpenSSL's DER; the
/// protected header is `{"alg":"ES256","kid":…,"typ":…}`; a `kid` is the key's RFC 7638 JWK
/// thumbprint (base64url SHA-256 of `{"crv","kty","x","y"}` in that order), so it is derived
/// from the key and the same after a restart.

#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "config/result.hpp"
#include "runtime/base64.hpp"  // base64url_*, which JWS uses

using EVP_PKEY = struct evp_pkey_st;

namespace sy::runtime {

/// A P-256 key pair (or only its public half, when loaded from a JWK).
class es256_key {
 public:
  /// A fresh key pair from OpenSSL's CSPRNG.
  static result<es256_key> generate();
  /// The private key in a PKCS#8 PEM (as `to_pem` writes it).
  static result<es256_key> from_pem(std::string_view pem);
  /// A public key from its JWK (`kty` EC, `crv` P-256, `x`, `y`); a verifier's view.
  static result<es256_key> from_jwk(const nlohmann::json& jwk);

  /// The private key as PKCS#8 PEM (kept under the data dir, mode 0600, by the minter).
  std::string to_pem() const;
  /// The public JWK: {"kty":"EC","crv":"P-256","x","y","kid","alg":"ES256","use":"sig"}.
  nlohmann::json public_jwk() const;
  /// The RFC 7638 thumbprint.
  const std::string& kid() const { return kid_; }
  bool has_private() const { return has_private_; }

  /// `header` (alg and kid are set here; `typ` and the rest as given) and `claims` signed:
  /// `b64(header).b64(claims).b64(r‖s)`. Needs the private half.
  result<std::string> sign(nlohmann::json header, const nlohmann::json& claims) const;
  /// Checks a compact JWS against this key: three parts, a header with `alg` exactly ES256 (no
  /// `none`, no other algorithm) and this key's `kid`, a 64-byte signature that verifies. The
  /// claims when it does; `invalid_token` saying what failed otherwise. Times are not checked
  /// here: the caller checks `exp`/`nbf` against its clock.
  result<nlohmann::json> verify(std::string_view token) const;

 private:
  struct free_pkey {
    void operator()(EVP_PKEY* k) const;
  };
  explicit es256_key(EVP_PKEY* k, bool has_private);
  std::shared_ptr<EVP_PKEY> key_;
  std::string x_;  ///< the public point's coordinates, 32 bytes each, big-endian
  std::string y_;
  std::string kid_;
  bool has_private_ = false;
};

}  // namespace sy::runtime
