#include "runtime/key_ring.hpp"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "runtime/log.hpp"
#include "runtime/private_file.hpp"

namespace sy::runtime {
namespace {

namespace fs = std::filesystem;

sy::error ring_error(const std::string& what) {
  return make_error(errc::invalid_config, "signing keys: " + what);
}

result<std::string> read_text(const std::string& path) {
  std::ifstream in(path);
  if (!in) return ring_error("cannot read " + path + ": " + std::strerror(errno));
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

/// Writes `text` to `path` with mode 0600, whole or not at all.
status write_private(const std::string& path, const std::string& text) {
  if (auto failed = write_private_file(path, text); !failed.empty()) return ring_error(failed);
  return ok;
}

/// `<activate_at_ms>-<kid>.pem` → activate_at; -1 for any other name.
int64_t activation_of(const std::string& name) {
  const auto dash = name.find('-');
  if (dash == 0 || dash == std::string::npos || name.size() < 4 ||
      name.compare(name.size() - 4, 4, ".pem") != 0)
    return -1;
  int64_t v = 0;
  for (size_t i = 0; i < dash; ++i) {
    if (name[i] < '0' || name[i] > '9' || v > (INT64_MAX - 9) / 10) return -1;
    v = v * 10 + (name[i] - '0');
  }
  return v;
}

}  // namespace

result<key_ring::entry> key_ring::make_key(int64_t activate_at) {
  auto key = es256_key::generate();
  if (!key) return key.error();
  const std::string path =
      (fs::path(opts_.dir) / (std::to_string(activate_at) + "-" + key->kid() + ".pem")).string();
  if (auto st = write_private(path, key->to_pem()); !st) return st.error();
  log::info("keys", "made a signing key",
            {{"kid", key->kid()}, {"activate_at_ms", activate_at}, {"path", path}});
  return entry{activate_at, std::move(*key), path};
}

result<key_ring> key_ring::open(options o, int64_t now_ms) {
  std::vector<entry> keys;
  if (!o.pem_file.empty()) {
    auto text = read_text(o.pem_file);
    if (!text) return text.error();
    auto key = es256_key::from_pem(*text);
    if (!key) return key.error();
    keys.push_back({0, std::move(*key), o.pem_file});
    return key_ring(std::move(o), std::move(keys));
  }
  std::error_code ec;
  fs::create_directories(o.dir, ec);
  if (ec) return ring_error("cannot create " + o.dir + ": " + ec.message());
  fs::permissions(o.dir, fs::perms::owner_all, fs::perm_options::replace, ec);
  for (const auto& f : fs::directory_iterator(o.dir, ec)) {
    const auto name = f.path().filename().string();
    const int64_t at = activation_of(name);
    if (at < 0) continue;  // temp files of an interrupted write, anything else
    auto text = read_text(f.path().string());
    if (!text) return text.error();
    auto key = es256_key::from_pem(*text);
    if (!key) return ring_error(f.path().string() + ": " + key.error().message);
    keys.push_back({at, std::move(*key), f.path().string()});
  }
  if (ec) return ring_error("cannot list " + o.dir + ": " + ec.message());
  std::sort(keys.begin(), keys.end(),
            [](const entry& a, const entry& b) { return a.activate_at < b.activate_at; });
  key_ring ring(std::move(o), std::move(keys));
  if (ring.keys_.empty() || ring.keys_.front().activate_at > now_ms) {
    auto first = ring.make_key(now_ms);  // nothing signs yet: active at once
    if (!first) return first.error();
    ring.keys_.insert(ring.keys_.begin(), std::move(*first));
  }
  return ring;
}

status key_ring::rotate(int64_t now_ms) {
  if (!opts_.pem_file.empty())
    return ring_error("the key comes from " + opts_.pem_file + "; it is rotated by replacing it");
  auto next = make_key(std::max(now_ms, keys_.back().activate_at) + opts_.publish_lead_ms);
  if (!next) return next.error();
  keys_.push_back(std::move(*next));
  return ok;
}

const es256_key& key_ring::signer(int64_t now_ms) const {
  size_t i = 0;
  while (i + 1 < keys_.size() && keys_[i + 1].activate_at <= now_ms) ++i;
  return keys_[i].key;
}

bool key_ring::published(size_t i, int64_t now_ms) const {
  return i + 1 >= keys_.size() || now_ms < keys_[i + 1].activate_at + opts_.max_token_ttl_ms;
}

const es256_key* key_ring::find(std::string_view kid, int64_t now_ms) const {
  for (size_t i = 0; i < keys_.size(); ++i)
    if (keys_[i].key.kid() == kid && published(i, now_ms)) return &keys_[i].key;
  return nullptr;
}

nlohmann::json key_ring::jwks(int64_t now_ms) const {
  nlohmann::json keys = nlohmann::json::array();
  for (size_t i = keys_.size(); i-- > 0;)
    if (published(i, now_ms)) keys.push_back(keys_[i].key.public_jwk());
  return {{"keys", keys}};
}

size_t key_ring::prune(int64_t now_ms) {
  size_t gone = 0;
  while (keys_.size() > 1 && !published(0, now_ms)) {
    std::error_code ec;
    fs::remove(keys_.front().path, ec);
    log::info("keys", "retired a signing key", {{"kid", keys_.front().key.kid()}});
    keys_.erase(keys_.begin());
    ++gone;
  }
  return gone;
}

}  // namespace sy::runtime
