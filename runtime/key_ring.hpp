#pragma once
/// The signing keys of task capability tokens (issue 19 item 5), owned by the credential minter.
///
/// Each key is a file `<dir>/<activate_at_ms>-<kid>.pem` (PKCS#8, mode 0600, written to a temp
/// file, fsynced and renamed). The key that signs at `now` is the one with the greatest
/// `activate_at <= now`. A key is published (in the JWKS) from the moment its file exists —
/// rotation writes the new key with `activate_at = now + publish_lead_ms`, so verifiers can see it
/// before it signs anything — until every token it can have signed has expired: until its
/// successor's `activate_at + max_token_ttl_ms`. Then `prune` deletes its file. Keys live in files,
/// so tokens signed before a restart verify after it. With `pem_file` set, that one key signs and
/// nothing rotates (an operator-managed key).

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "config/result.hpp"
#include "runtime/es256.hpp"

namespace sy::runtime {

class key_ring {
 public:
  struct options {
    std::string dir;               ///< e.g. <data_dir>/signing-keys
    std::string pem_file;          ///< an operator's key instead of the dir's keys
    int64_t publish_lead_ms = 0;   ///< a rotated key is published this long before it signs
    int64_t max_token_ttl_ms = 0;  ///< the longest a token lives (its lease and skew)
  };

  /// Loads the keys; with none in `dir`, makes the first one (active at once).
  static result<key_ring> open(options o, int64_t now_ms);
  /// Adds a new key, active at `now + publish_lead_ms`. Refused with `pem_file`.
  status rotate(int64_t now_ms);
  /// The key that signs at `now`.
  const es256_key& signer(int64_t now_ms) const;
  /// The published key with this kid at `now`, or null (unknown, or no longer published).
  const es256_key* find(std::string_view kid, int64_t now_ms) const;
  /// `{"keys": [...]}`: every key published at `now`, newest first.
  nlohmann::json jwks(int64_t now_ms) const;
  /// Deletes the files of keys no longer published at `now`; how many.
  size_t prune(int64_t now_ms);
  size_t size() const { return keys_.size(); }

 private:
  struct entry {
    int64_t activate_at = 0;
    es256_key key;
    std::string path;
  };
  key_ring(options o, std::vector<entry> keys) : opts_(std::move(o)), keys_(std::move(keys)) {}
  bool published(size_t i, int64_t now_ms) const;
  result<entry> make_key(int64_t activate_at);

  options opts_;
  std::vector<entry> keys_;  ///< by activate_at, oldest first; never empty
};

}  // namespace sy::runtime
