#include "runtime/es256.hpp"

#include <openssl/bio.h>
#include <openssl/bn.h>
#include <openssl/core_names.h>
#include <openssl/ec.h>
#include <openssl/evp.h>
#include <openssl/param_build.h>
#include <openssl/pem.h>

#include <array>
#include <cstring>

namespace sy::runtime {
namespace {

constexpr size_t coord_bytes = 32;  // P-256

template <class T, void (*Free)(T*)>
struct freer {
  void operator()(T* p) const { Free(p); }
};
using bio_ptr = std::unique_ptr<BIO, freer<BIO, BIO_free_all>>;
using bn_ptr = std::unique_ptr<BIGNUM, freer<BIGNUM, BN_free>>;
using md_ctx_ptr = std::unique_ptr<EVP_MD_CTX, freer<EVP_MD_CTX, EVP_MD_CTX_free>>;
using pkey_ctx_ptr = std::unique_ptr<EVP_PKEY_CTX, freer<EVP_PKEY_CTX, EVP_PKEY_CTX_free>>;
using sig_ptr = std::unique_ptr<ECDSA_SIG, freer<ECDSA_SIG, ECDSA_SIG_free>>;
using param_bld_ptr = std::unique_ptr<OSSL_PARAM_BLD, freer<OSSL_PARAM_BLD, OSSL_PARAM_BLD_free>>;
using params_ptr = std::unique_ptr<OSSL_PARAM, freer<OSSL_PARAM, OSSL_PARAM_free>>;

sy::error key_error(const std::string& what) {
  return make_error(errc::invalid_config, "ES256 key: " + what + ".");
}

sy::error token_error(const std::string& what) {
  return make_error(errc::invalid_capability_token, "The capability token " + what + ".");
}

const unsigned char* bytes(std::string_view s) {
  return reinterpret_cast<const unsigned char*>(s.data());  // NOLINT: OpenSSL takes bytes
}

/// The named EC group of `k` is P-256 (OpenSSL calls it prime256v1).
bool is_p256(EVP_PKEY* k) {
  if (EVP_PKEY_is_a(k, "EC") != 1) return false;
  std::array<char, 64> name{};
  size_t len = 0;
  if (EVP_PKEY_get_utf8_string_param(k, OSSL_PKEY_PARAM_GROUP_NAME, name.data(), name.size(),
                                     &len) != 1)
    return false;
  const std::string_view n(name.data(), len);
  return n == "prime256v1" || n == "P-256";
}

/// A coordinate of the public point as 32 big-endian bytes; empty on failure.
std::string coordinate(EVP_PKEY* k, const char* which) {
  BIGNUM* raw = nullptr;
  if (EVP_PKEY_get_bn_param(k, which, &raw) != 1) return {};
  bn_ptr bn(raw);
  std::string out(coord_bytes, '\0');
  if (BN_bn2binpad(bn.get(), reinterpret_cast<unsigned char*>(out.data()),  // NOLINT
                   static_cast<int>(coord_bytes)) != static_cast<int>(coord_bytes))
    return {};
  return out;
}

std::string sha256_raw(std::string_view data) {
  std::array<unsigned char, EVP_MAX_MD_SIZE> md{};
  unsigned int len = 0;
  if (EVP_Digest(data.data(), data.size(), md.data(), &len, EVP_sha256(), nullptr) != 1) return {};
  return {reinterpret_cast<const char*>(md.data()), len};  // NOLINT
}

}  // namespace

void es256_key::free_pkey::operator()(EVP_PKEY* k) const { EVP_PKEY_free(k); }

es256_key::es256_key(EVP_PKEY* k, bool has_private)
    : key_(k, free_pkey{}), has_private_(has_private) {
  x_ = coordinate(k, OSSL_PKEY_PARAM_EC_PUB_X);
  y_ = coordinate(k, OSSL_PKEY_PARAM_EC_PUB_Y);
  const nlohmann::json canonical = {
      {"crv", "P-256"}, {"kty", "EC"}, {"x", base64url_encode(x_)}, {"y", base64url_encode(y_)}};
  kid_ = base64url_encode(sha256_raw(canonical.dump()));  // keys sorted: RFC 7638's order
}

result<es256_key> es256_key::generate() {
  EVP_PKEY* k = EVP_EC_gen("P-256");
  if (k == nullptr) return key_error("OpenSSL could not generate a P-256 key");
  es256_key key(k, true);
  if (key.x_.empty() || key.y_.empty()) return key_error("the new key has no public point");
  return key;
}

result<es256_key> es256_key::from_pem(std::string_view pem) {
  bio_ptr bio(BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size())));
  if (!bio) return key_error("out of memory");
  EVP_PKEY* k = PEM_read_bio_PrivateKey(bio.get(), nullptr, nullptr, nullptr);
  if (k == nullptr) return key_error("not a PEM private key");
  if (!is_p256(k)) {
    EVP_PKEY_free(k);
    return key_error("the PEM key is not an EC P-256 key (ES256 needs one)");
  }
  es256_key key(k, true);
  if (key.x_.empty() || key.y_.empty()) return key_error("the PEM key has no public point");
  return key;
}

result<es256_key> es256_key::from_jwk(const nlohmann::json& jwk) {
  if (!jwk.is_object() || jwk.value("kty", "") != "EC" || jwk.value("crv", "") != "P-256")
    return key_error("the JWK is not {\"kty\":\"EC\",\"crv\":\"P-256\",...}");
  const auto x = base64url_decode(jwk.value("x", ""));
  const auto y = base64url_decode(jwk.value("y", ""));
  if (!x || !y || x->size() != coord_bytes || y->size() != coord_bytes)
    return key_error("the JWK's x and y are not 32-byte base64url coordinates");
  const std::string point = '\x04' + *x + *y;  // uncompressed SEC1 point
  param_bld_ptr bld(OSSL_PARAM_BLD_new());
  if (!bld ||
      OSSL_PARAM_BLD_push_utf8_string(bld.get(), OSSL_PKEY_PARAM_GROUP_NAME, "prime256v1", 0) !=
          1 ||
      OSSL_PARAM_BLD_push_octet_string(bld.get(), OSSL_PKEY_PARAM_PUB_KEY, point.data(),
                                       point.size()) != 1)
    return key_error("out of memory");
  params_ptr params(OSSL_PARAM_BLD_to_param(bld.get()));
  pkey_ctx_ptr ctx(EVP_PKEY_CTX_new_from_name(nullptr, "EC", nullptr));
  EVP_PKEY* k = nullptr;
  if (!params || !ctx || EVP_PKEY_fromdata_init(ctx.get()) != 1 ||
      EVP_PKEY_fromdata(ctx.get(), &k, EVP_PKEY_PUBLIC_KEY, params.get()) != 1)
    return key_error("the JWK's point is not on P-256");
  pkey_ctx_ptr check(EVP_PKEY_CTX_new_from_pkey(nullptr, k, nullptr));
  if (!check || EVP_PKEY_public_check(check.get()) != 1) {
    EVP_PKEY_free(k);
    return key_error("the JWK's point is not on P-256");
  }
  return es256_key(k, false);
}

std::string es256_key::to_pem() const {
  bio_ptr bio(BIO_new(BIO_s_mem()));
  if (!bio || !has_private_ ||
      PEM_write_bio_PrivateKey(bio.get(), key_.get(), nullptr, nullptr, 0, nullptr, nullptr) != 1)
    return {};
  char* data = nullptr;
  const long len = BIO_get_mem_data(bio.get(), &data);
  return {data, static_cast<size_t>(len)};
}

nlohmann::json es256_key::public_jwk() const {
  return {{"kty", "EC"},
          {"crv", "P-256"},
          {"x", base64url_encode(x_)},
          {"y", base64url_encode(y_)},
          {"kid", kid_},
          {"alg", "ES256"},
          {"use", "sig"}};
}

result<std::string> es256_key::sign(nlohmann::json header, const nlohmann::json& claims) const {
  if (!has_private_) return key_error("a public key cannot sign");
  header["alg"] = "ES256";
  header["kid"] = kid_;
  const std::string input = base64url_encode(header.dump()) + "." + base64url_encode(claims.dump());
  md_ctx_ptr md(EVP_MD_CTX_new());
  size_t der_len = 0;
  if (!md || EVP_DigestSignInit(md.get(), nullptr, EVP_sha256(), nullptr, key_.get()) != 1 ||
      EVP_DigestSign(md.get(), nullptr, &der_len, bytes(input), input.size()) != 1)
    return key_error("OpenSSL could not start signing");
  std::string der(der_len, '\0');
  if (EVP_DigestSign(md.get(), reinterpret_cast<unsigned char*>(der.data()),  // NOLINT
                     &der_len, bytes(input), input.size()) != 1)
    return key_error("OpenSSL could not sign");
  const unsigned char* p = bytes(der);
  sig_ptr sig(d2i_ECDSA_SIG(nullptr, &p, static_cast<long>(der_len)));
  if (!sig) return key_error("OpenSSL returned an unreadable signature");
  std::string raw(2 * coord_bytes, '\0');
  auto* out = reinterpret_cast<unsigned char*>(raw.data());  // NOLINT
  if (BN_bn2binpad(ECDSA_SIG_get0_r(sig.get()), out, coord_bytes) != int(coord_bytes) ||
      BN_bn2binpad(ECDSA_SIG_get0_s(sig.get()), out + coord_bytes, coord_bytes) != int(coord_bytes))
    return key_error("a signature component does not fit 32 bytes");
  return input + "." + base64url_encode(raw);
}

result<nlohmann::json> es256_key::verify(std::string_view token) const {
  const auto dot1 = token.find('.');
  const auto dot2 = dot1 == std::string_view::npos ? dot1 : token.find('.', dot1 + 1);
  if (dot2 == std::string_view::npos || token.find('.', dot2 + 1) != std::string_view::npos)
    return token_error("is not a compact JWS (three base64url parts)");
  const auto header_text = base64url_decode(token.substr(0, dot1));
  const auto claims_text = base64url_decode(token.substr(dot1 + 1, dot2 - dot1 - 1));
  const auto raw = base64url_decode(token.substr(dot2 + 1));
  if (!header_text || !claims_text || !raw) return token_error("is not base64url");
  const auto header = nlohmann::json::parse(*header_text, nullptr, false);
  if (!header.is_object()) return token_error("header is not a JSON object");
  if (header.value("alg", "") != "ES256") return token_error("is not signed with ES256");
  if (header.value("kid", "") != kid_) return token_error("was signed by another key");
  if (raw->size() != 2 * coord_bytes) return token_error("signature is not 64 bytes");
  sig_ptr sig(ECDSA_SIG_new());
  BIGNUM* r = BN_bin2bn(bytes(*raw), coord_bytes, nullptr);
  BIGNUM* s = BN_bin2bn(bytes(*raw) + coord_bytes, coord_bytes, nullptr);
  if (!sig || r == nullptr || s == nullptr || ECDSA_SIG_set0(sig.get(), r, s) != 1) {
    BN_free(r);
    BN_free(s);
    return token_error("signature could not be read");
  }
  unsigned char* der = nullptr;
  const int der_len = i2d_ECDSA_SIG(sig.get(), &der);
  if (der_len <= 0) return token_error("signature could not be read");
  std::unique_ptr<unsigned char, void (*)(unsigned char*)> der_owner(
      der, [](unsigned char* d) { OPENSSL_free(d); });
  const auto signed_part = token.substr(0, dot2);
  md_ctx_ptr md(EVP_MD_CTX_new());
  if (!md || EVP_DigestVerifyInit(md.get(), nullptr, EVP_sha256(), nullptr, key_.get()) != 1 ||
      EVP_DigestVerify(md.get(), der, static_cast<size_t>(der_len), bytes(signed_part),
                       signed_part.size()) != 1)
    return token_error("signature does not verify");
  auto claims = nlohmann::json::parse(*claims_text, nullptr, false);
  if (!claims.is_object()) return token_error("claims are not a JSON object");
  return claims;
}

}  // namespace sy::runtime
