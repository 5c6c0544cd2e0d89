#include "runtime/store_registration.hpp"

#include <algorithm>
#include <chrono>

#include <nlohmann/json.hpp>

#include "runtime/log.hpp"

namespace sy::runtime {
namespace {

constexpr int64_t min_lease_ms = 1'000;
constexpr int64_t max_lease_ms = 3'600'000;

nlohmann::json parse_entry(const std::string& text) {
  auto j = nlohmann::json::parse(text, nullptr, false);
  return j.is_object() ? j : nlohmann::json::object();
}

std::string text_field(const nlohmann::json& j, const char* name) {
  auto it = j.find(name);
  return it != j.end() && it->is_string() ? it->get<std::string>() : std::string{};
}

}  // namespace

store_registration::store_registration(js_client& js, store_identity me)
    : js_(js), me_(std::move(me)) {
  const auto now = std::chrono::system_clock::now().time_since_epoch();
  value_ = nlohmann::json{{"store_id", me_.store_id},
                          {"host", me_.host},
                          {"pid", me_.pid},
                          {"data_dir", me_.data_dir},
                          {"lease_ms", me_.lease_ms},
                          {"registered_at_ms",
                           std::chrono::duration_cast<std::chrono::milliseconds>(now).count()}}
               .dump();
}

std::string store_registration::bucket() const { return js_.layout().stream_prefix + "_REGISTRY"; }

store_registration::state store_registration::unavailable(const sy::error& e) {
  last_error_ = e.message;
  return state::unavailable;
}

store_registration::state store_registration::hold(const result<uint64_t>& revision) {
  if (!revision) return unavailable(revision.error());
  revision_ = *revision;
  watched_revision_ = 0;
  return state::held;
}

bool store_registration::ours(const std::string& entry) const {
  return text_field(parse_entry(entry), "store_id") == me_.store_id;
}

store_registration::state store_registration::conflict_with(const std::string& entry) {
  const auto other = parse_entry(entry);
  const std::string& prefix = js_.layout().stream_prefix;
  conflict_ =
      "the streams " + prefix + "_* of this NATS server are used by another engine's store (host " +
      text_field(other, "host") + ", pid " + other.value("pid", nlohmann::json(0)).dump() +
      ", data dir " + text_field(other, "data_dir") + ", store " + text_field(other, "store_id") +
      "), which keeps renewing its registration in the key-value bucket " + bucket() +
      ". Two stores on the same streams would drop each other's tasks. Give this engine its own "
      "stream_prefix and subject_prefix (or its own NATS server), or stop the other engine: an "
      "engine that stops renewing for its lease (" +
      other.value("lease_ms", nlohmann::json(0)).dump() +
      " ms) is taken over. docs/jetstream.md, \"Several engines\".";
  revision_ = 0;
  return state::conflict;
}

store_registration::state store_registration::try_claim(int64_t now_ms) {
  if (auto st = js_.ensure_kv_bucket(bucket()); !st) return unavailable(st.error());
  auto got = js_.kv_get(bucket(), key);
  if (!got) return unavailable(got.error());
  if (!got->has_value()) {
    // Absent. If another engine creates it first, this fails and the next claim sees whose it is.
    return hold(js_.kv_create(bucket(), key, value_));
  }
  const kv_entry& entry = **got;
  if (ours(entry.value)) {
    // Our own store's entry: this engine's earlier run (it stopped, or was killed). The data
    // dir's lock file keeps two live processes off one store, so it is ours to renew.
    return hold(js_.kv_update(bucket(), key, value_, entry.revision));
  }
  if (watched_revision_ == 0) {
    watched_revision_ = entry.revision;
    watched_since_ms_ = now_ms;
    other_ = entry.value;
    return state::waiting;
  }
  if (entry.revision != watched_revision_) return conflict_with(entry.value);
  const int64_t lease = std::clamp<int64_t>(
      parse_entry(entry.value).value("lease_ms", nlohmann::json(max_lease_ms)).get<int64_t>(),
      min_lease_ms, max_lease_ms);
  if (now_ms - watched_since_ms_ < lease) return state::waiting;
  // Unchanged for a whole lease: its engine is gone. The update fails if it renewed just now.
  const state st = hold(js_.kv_update(bucket(), key, value_, entry.revision));
  if (st == state::held)
    log::warn("registry", "took the streams over from a store whose engine stopped renewing",
              {{"bucket", bucket()}, {"previous", parse_entry(entry.value)}});
  return st;
}

store_registration::state store_registration::renew() {
  if (!held()) return unavailable(make_error(errc::nats_error, "the registration is not held"));
  auto revision = js_.kv_update(bucket(), key, value_, revision_);
  if (revision) {
    revision_ = *revision;
    return state::held;
  }
  // Refused or failed: read what is there now.
  auto got = js_.kv_get(bucket(), key);
  if (!got) return unavailable(revision.error());
  if (!got->has_value()) {
    // Gone (the server lost its store, or someone deleted it): register again.
    return hold(js_.kv_create(bucket(), key, value_));
  }
  if (ours((*got)->value)) {
    revision_ = (*got)->revision;  // our own update landed, its answer was lost
    return state::held;
  }
  return conflict_with((*got)->value);
}

void store_registration::release() {
  if (!held()) return;
  revision_ = 0;
  // Without a connection each request below would wait out JetStream's 5 s request timeout
  // (nats.c buffers it for a reconnect that a stopping engine does not wait for); the next
  // engine then waits for the lease instead.
  if (!js_.connected()) return;
  auto got = js_.kv_get(bucket(), key);
  if (!got || !got->has_value()) return;
  if (!ours((*got)->value)) return;
  if (auto st = js_.kv_delete(bucket(), key); !st) {
    log::warn("registry", "cannot remove the registration; the next engine waits for its lease",
              {{"error", st.error().message}});
  }
}

}  // namespace sy::runtime
