#include "config/sha256.hpp"

#include <array>
#include <cstdlib>

#include <openssl/crypto.h>
#include <openssl/evp.h>

namespace sy::config {

std::string sha256_hex(std::string_view data) {
  std::array<unsigned char, EVP_MAX_MD_SIZE> digest{};
  unsigned int length = 0;
  // EVP_Digest only fails on allocation failure or a broken OpenSSL install; both are fatal
  // for a server whose authentication depends on it, so we abort rather than return garbage.
  if (EVP_Digest(data.data(), data.size(), digest.data(), &length, EVP_sha256(), nullptr) != 1) {
    std::abort();
  }
  static constexpr char hex[] = "0123456789abcdef";
  std::string out;
  out.reserve(size_t{length} * 2);
  for (unsigned int i = 0; i < length; ++i) {
    out.push_back(hex[digest[i] >> 4]);
    out.push_back(hex[digest[i] & 0x0f]);
  }
  return out;
}

bool constant_time_equal(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  if (a.empty()) return true;
  return CRYPTO_memcmp(a.data(), b.data(), a.size()) == 0;
}

}  // namespace sy::config
