#pragma once
/// One store per set of streams, until the cluster exists. Each engine keeps its jobs in its own
/// LMDB store; a task message names a task only that store knows, and an engine that fetches a
/// task it does not know acks it as stale. Two engines with different data dirs on the same
/// streams would therefore drop each other's tasks. So an engine registers its store in the
/// JetStream key-value bucket `<stream_prefix>_REGISTRY` (key `store`) and renews the entry
/// every third of its lease; another store's engine finds the entry and refuses to run on those
/// streams, unless the entry stops changing for a whole lease (its engine died), when it takes
/// the streams over. docs/jetstream.md, "Several engines".
///
/// Not thread-safe: one thread claims and renews (the JetStream layout keeper; main at start).

#include <cstdint>
#include <string>

#include "config/result.hpp"
#include "runtime/jetstream.hpp"

namespace sy::runtime {

/// Who holds the streams: written as JSON into the registry entry.
struct store_identity {
  std::string store_id;  ///< the LMDB store's id (storage::environment::store_id())
  std::string host;      ///< host name of the engine's machine
  int64_t pid = 0;
  std::string data_dir;       ///< absolute
  int64_t lease_ms = 10'000;  ///< renewed every lease_ms / 3; lapsed after lease_ms unchanged
};

class store_registration {
 public:
  /// `js` must outlive the registration.
  store_registration(js_client& js, store_identity me);

  /// What a claim or a renewal found.
  enum class state {
    held,         ///< the entry is ours (created, taken over from our own store, or renewed)
    waiting,      ///< another store's entry, unchanged so far: claim again until its lease lapses
    conflict,     ///< another store's engine renewed its entry: it is alive (see conflict())
    unavailable,  ///< NATS or JetStream failed (see last_error()); try again later
  };

  /// One step of claiming the streams; `now_ms` is a steady clock's. Call again (every few
  /// hundred ms) while it answers `waiting` or `unavailable`.
  state try_claim(int64_t now_ms);
  /// Renews a held entry: `held`, `conflict` (another store took it over: this engine must stop
  /// using the streams) or `unavailable`.
  state renew();
  /// Deletes the entry when it is still ours (a clean stop hands the streams over at once).
  /// Without a NATS connection it only forgets the entry (a stop must not wait for requests
  /// that cannot be answered); the next engine of this store takes it at once anyway.
  void release();

  /// Why the last claim or renewal answered `conflict`: who holds the streams and what to do.
  const std::string& conflict() const { return conflict_; }
  const std::string& last_error() const { return last_error_; }
  /// The other store's entry, as JSON text, while claim() waits for its lease to lapse.
  const std::string& other() const { return other_; }
  int64_t renew_every_ms() const { return me_.lease_ms / 3; }
  int64_t lease_ms() const { return me_.lease_ms; }
  bool held() const { return revision_ != 0; }

  /// The entry's bucket and key, for tests and docs.
  std::string bucket() const;
  static constexpr const char* key = "store";

 private:
  state unavailable(const sy::error& e);
  /// Holds the entry at `revision` (a create's or an update's answer), or reports its failure.
  state hold(const result<uint64_t>& revision);
  /// Whether `entry` (JSON) is this store's.
  bool ours(const std::string& entry) const;
  state conflict_with(const std::string& entry);

  js_client& js_;
  store_identity me_;
  std::string value_;      ///< our entry, JSON
  uint64_t revision_ = 0;  ///< of our entry while held
  // Another store's entry being watched: its revision, since when (steady ms), its lease.
  uint64_t watched_revision_ = 0;
  int64_t watched_since_ms_ = 0;
  std::string other_;
  std::string conflict_;
  std::string last_error_;
};

}  // namespace sy::runtime
