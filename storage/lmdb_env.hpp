#pragma once
/// The LMDB layer: one environment under `<data_dir>/lmdb`, one named database per kind of record,
/// RAII read and write transactions, and map growth. Layout and formats: docs/storage.md.
///
/// Threads: read transactions may be opened and used on any thread (MDB_NOTLS). Write transactions
/// and `grow()` belong to the storage-writer thread only. A thread must not call `grow()` while it
/// holds a transaction.

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <shared_mutex>
#include <string>
#include <string_view>
#include <vector>

#include "config/result.hpp"
#include "storage/records.hpp"

struct MDB_env;
struct MDB_txn;

namespace sy::storage {

/// The named databases. Keys and values of each are described in docs/storage.md.
enum class db {
  meta,
  jobs,
  tasks,
  idempotency,
  leases,
  outbox,
  events,        ///< job_id '/' seq(16 hex) → event_record
  webhooks,      ///< seq (8 bytes big-endian) → webhook_record
  job_index,     ///< tenant '\x1f' job_id → status (listing, newest first by ULID)
  deadlines,     ///< deadline_ms(16 hex) '/' job_id → "" (non-terminal jobs with a timeout)
  retention,     ///< delete_at_ms(16 hex) '/' job_id → "" (terminal jobs, deleted when due)
  queued,        ///< task_id → "" for every task in state `queued` (the reconcile sweeper's scan)
  files,         ///< file id → file_record (OpenAI Files API; the bytes live on disk)
  file_index,    ///< tenant '\x1f' file id → "" (listing)
  file_expiry,   ///< expires_at_ms(16 hex) '/' file id → "" (files with expires_after)
  batches,       ///< batch id → batch_record
  batch_index,   ///< tenant '\x1f' batch id → "" (listing, newest first by ULID)
  batch_active,  ///< batch id → "" for every batch not yet terminal (startup recovery)
  batch_lines,   ///< batch id '/' slot (8 bytes big-endian) → one result line
  task_custom,   ///< job id '/' custom_id → task id (task-list jobs: lookup by the client's id)
  list_live,     ///< task id → "" for every published, unfinished task of a task list
  list_ingest,   ///< job id → "" for every task list whose staged list is still being read
};
inline constexpr int db_count = 22;

/// The on-disk schema this build writes. A store written by a newer schema is refused; an older
/// one is migrated at open (docs/storage.md). 2: the outbox's compact encoding. 3: binary
/// job, task, lease and event values (records.hpp). 4: task-list jobs (their fields appended to
/// the job and task values, db::task_custom, db::list_live and db::list_ingest). 5: typed
/// outbox and webhook records (records.hpp; the previous forms are still read), so a build that
/// would skip them cannot open the store.
inline constexpr int schema_version = 5;

class environment;

/// Visitor for scans: gets each key and value (views into the map, valid only during the call);
/// returns false to stop. It must not write to the transaction being scanned.
using scan_fn = std::function<bool(std::string_view key, std::string_view value)>;

/// The read operations shared by read and write transactions, so that typed helpers
/// (`get_job`, `read_outbox`, ...) accept either.
class txn_view {
 public:
  /// The value stored under `key`, or nullopt when absent (or when the transaction failed).
  std::optional<std::string> get(db d, std::string_view key) const;
  /// Visits entries with key >= from (all when empty) in key order until fn returns false.
  void scan(db d, std::string_view from, const scan_fn& fn) const;
  /// Visits entries in reverse key order starting at the greatest key <= from (from empty: the
  /// last key) until fn returns false.
  void scan_reverse(db d, std::string_view from, const scan_fn& fn) const;
  /// False when the transaction could not be started or was poisoned by a failed write.
  bool ok() const { return txn_ != nullptr && !failure_; }
  /// Why `ok()` is false.
  const std::optional<sy::error>& failure() const { return failure_; }
  /// How many entries `d` holds in this snapshot (LMDB keeps the count: no scan).
  uint64_t entries(db d) const;

 protected:
  txn_view() = default;
  txn_view(const environment* env, MDB_txn* txn) : env_(env), txn_(txn) {}
  txn_view(txn_view&& o) noexcept;
  txn_view& operator=(txn_view&& o) noexcept;
  ~txn_view() = default;
  unsigned dbi(db d) const;

  const environment* env_ = nullptr;
  MDB_txn* txn_ = nullptr;
  std::optional<sy::error> failure_;
};

/// A short read-only snapshot. Move-only; aborted (released) in the destructor. Holds the
/// environment's resize lock shared, so keep it short and never call `grow()` while holding one.
class read_txn : public txn_view {
 public:
  read_txn(read_txn&& o) noexcept = default;
  read_txn& operator=(read_txn&& o) noexcept;
  read_txn(const read_txn&) = delete;
  read_txn& operator=(const read_txn&) = delete;
  ~read_txn();

 private:
  friend class environment;
  read_txn(const environment* env, MDB_txn* txn, std::shared_lock<std::shared_timed_mutex> lock,
           std::optional<sy::error> failure);
  void release();
  std::shared_lock<std::shared_timed_mutex> lock_;
};

/// The single write transaction (storage-writer thread only). Move-only; aborted in the destructor
/// unless committed. Reads see its own writes. A failed put or del poisons the transaction:
/// `commit()` then aborts and returns that first error (e.g. "map_full"), so a caller that
/// ignores an individual put's status still learns of the failure at commit.
class write_txn : public txn_view {
 public:
  write_txn(write_txn&& o) noexcept = default;
  write_txn& operator=(write_txn&& o) noexcept;
  write_txn(const write_txn&) = delete;
  write_txn& operator=(const write_txn&) = delete;
  ~write_txn();

  /// Stores `value` under `key` (keys must be 1..511 bytes). Error "map_full" on MDB_MAP_FULL.
  status put(db d, std::string_view key, std::string_view value);
  /// Deletes `key`; false when it was absent (or on failure, which poisons the transaction).
  bool del(db d, std::string_view key);
  /// Commits with fsync (mdb_txn_commit; the environment never uses MDB_NOSYNC).
  status commit();
  /// Discards every change; idempotent.
  void abort();

  /// A transaction nested in this one (LMDB's nested transactions): it sees this one's writes,
  /// its commit() folds its own into this one (no fsync), its abort() discards only its own.
  /// This one must not be used until the child is committed or aborted. It has its own poisoned
  /// state, so one failed write in a child leaves the parent usable.
  result<write_txn> begin_nested();

 private:
  friend class environment;
  write_txn(const environment* env, MDB_txn* txn) : txn_view(env, txn) {}
  sy::error fail(int rc, std::string_view what);
};

/// The LMDB environment. Owned by the runtime; outlives every transaction.
class environment {
 public:
  /// Opens (creating) `data_dir/lmdb`, with MDB_NOTLS (read txns are used from any thread), the
  /// named databases of `db`, and the schema-version record in `meta`: absent → written; newer
  /// than ours → error "schema_too_new" naming both versions. The map starts at the larger of
  /// `initial_map_bytes` and the size a previous `grow()` recorded.
  static result<std::unique_ptr<environment>> open(const std::string& data_dir,
                                                   int64_t initial_map_bytes);
  ~environment();
  environment(const environment&) = delete;
  environment& operator=(const environment&) = delete;

  /// A read snapshot; usable on any thread. Check `ok()` (fails only when LMDB cannot start a
  /// reader, e.g. every reader slot is taken).
  read_txn begin_read() const;
  /// The write transaction; storage-writer thread only, one at a time.
  result<write_txn> begin_write();
  /// Doubles the map size and records the new size in `meta`. Waits for open read transactions
  /// to end and holds new ones back meanwhile. The caller (writer) has no open transaction.
  status grow();
  /// The current map size in bytes.
  int64_t map_bytes() const { return map_bytes_.load(std::memory_order_relaxed); }
  /// Bytes of the map in use: the pages up to the last one written (free pages inside count).
  int64_t used_bytes() const;
  /// This store's identity: 32 random hex characters drawn when the store was made, kept in
  /// `meta` (a store made before it existed gets one at its next open). The store registry
  /// (runtime/store_registration.hpp) tells this store's own entry from another's by it.
  const std::string& store_id() const { return store_id_; }

  /// The store's pages that this process has touched stay mapped into it, and count in its RSS,
  /// though they are the kernel's page cache: without a bound, RSS grows with the store as its
  /// pages are read. Called as transactions end (readers before they release the resize lock,
  /// the writer after a commit): at most every `trim_check_ms`, it reads the process's
  /// file-backed resident size (/proc/self/statm); once that has grown by `trim_budget_bytes`
  /// since the last trim, it drops the map's pages from this process's page tables
  /// (MADV_DONTNEED on the read-only shared map: the next access maps them again from the page
  /// cache, the data is untouched). The caller holds the resize lock shared or is the writer.
  void trim_resident() const;
  static constexpr int64_t trim_check_ms = 50;
  static constexpr int64_t trim_budget_bytes = 32 << 20;

 private:
  friend class txn_view;
  environment() = default;
  status init(const std::string& path, int64_t initial_map_bytes);
  status open_databases(const std::string& path);
  status adopt_recorded_map_size();
  status set_map_size(int64_t bytes);
  status record_map_size();
  void locate_map();

  MDB_env* env_ = nullptr;
  unsigned dbis_[db_count] = {};
  std::atomic<int64_t> map_bytes_{0};
  std::string store_id_;
  /// Where the map is (found in /proc/self/maps at open and after each resize: LMDB does not
  /// tell); null when not found, and then nothing is trimmed.
  void* map_addr_ = nullptr;
  size_t map_len_ = 0;
  std::string data_file_;  ///< the map's file, <data_dir>/lmdb/data.mdb
  mutable std::atomic<int64_t> next_trim_check_ms_{0};
  mutable std::atomic<int64_t> trim_baseline_bytes_{-1};  ///< file-backed RSS after the last trim
  /// Readers hold `resize_` shared; grow() holds it exclusively. `gate_` lets grow() hold new
  /// readers back so that a steady stream of readers cannot starve it.
  mutable std::shared_timed_mutex resize_;
  mutable std::mutex gate_;
};

// --- Typed access (storage/typed_access.cpp). Values are the compact JSON of records.hpp; a value
// that does not parse reads as absent. Puts return the put's status and, on failure, also poison
// the transaction (see write_txn).

/// The job with id `id`.
std::optional<job_record> get_job(const txn_view& t, std::string_view id);
/// The task with id `id`.
std::optional<task_record> get_task(const txn_view& t, std::string_view id);
/// The lease of task `task_id` (at most one per task: the current attempt's).
std::optional<lease_record> get_lease(const txn_view& t, std::string_view task_id);
/// The key of the idempotency database: tenant + '\x1f' + key (a byte no tenant id contains).
std::string idempotency_db_key(std::string_view tenant, std::string_view key);
/// The record of `key` as sent by `tenant`.
std::optional<idempotency_record> get_idempotency(const txn_view& t, std::string_view tenant,
                                                  std::string_view key);
/// Writes the job under its id (replacing the previous version).
status put_job(write_txn& t, const job_record& r);
/// Writes the task under its id.
status put_task(write_txn& t, const task_record& r);
/// Writes the lease under its task id (replacing the previous attempt's lease).
status put_lease(write_txn& t, const lease_record& r);
/// Removes the lease of `task_id`; false when there was none.
bool del_lease(write_txn& t, std::string_view task_id);
/// Writes the idempotency record under idempotency_db_key(tenant, key).
status put_idempotency(write_txn& t, std::string_view tenant, std::string_view key,
                       const idempotency_record& r);
/// The outbox key of `seq`: 8 bytes big-endian, so key order is sequence order.
std::string outbox_key(uint64_t seq);
/// Appends `r` to the outbox with the next sequence number (stored in the record and returned).
/// Sequences never repeat, even after the outbox drains or the store reopens: the high-water mark
/// lives in `meta`. On failure the transaction is poisoned and commit() reports it.
uint64_t append_outbox(write_txn& t, outbox_record r);
/// Removes outbox record `seq` (after JetStream acked it); false when absent.
bool del_outbox(write_txn& t, uint64_t seq);
/// Up to `limit` outbox records with seq >= from_seq, in sequence order.
std::vector<outbox_record> read_outbox(const txn_view& t, uint64_t from_seq, size_t limit);
/// Every lease (a small set: one per task in flight).
std::vector<lease_record> read_leases(const txn_view& t);

/// Key of an event: job_id '/' 16 hex digits of seq, so a job's events sort in order.
std::string event_key(std::string_view job_id, uint64_t seq);
status put_event(write_txn& t, const event_record& r);
/// The job's events with seq > after_seq, in order, at most `limit`.
std::vector<event_record> read_events(const txn_view& t, std::string_view job_id,
                                      uint64_t after_seq, size_t limit = 1000);
/// Appends a webhook delivery with the next sequence number (high-water mark in `meta`).
uint64_t append_webhook(write_txn& t, webhook_record r);
status put_webhook(write_txn& t, const webhook_record& r);
std::optional<webhook_record> get_webhook(const txn_view& t, uint64_t seq);
bool del_webhook(write_txn& t, uint64_t seq);
/// Up to `limit` deliveries due at `now_ms` (next_at_ms <= now), in sequence order. With
/// `earliest`, one scan also sets it to the earliest next_at_ms of every waiting delivery.
std::vector<webhook_record> read_due_webhooks(const txn_view& t, int64_t now_ms, size_t limit,
                                              std::optional<int64_t>* earliest = nullptr);
/// Key of the listing index: tenant '\x1f' job_id.
std::string job_index_key(std::string_view tenant, std::string_view job_id);
/// Key of a time index (deadlines, retention): 16 hex digits of ms '/' job_id.
std::string time_index_key(int64_t at_ms, std::string_view job_id);
/// Up to `limit` entries (time, job id) of a time index whose time is <= now_ms, earliest first.
std::vector<std::pair<int64_t, std::string>> read_due(const txn_view& t, db index, int64_t now_ms,
                                                      size_t limit);
/// A counter in `meta` (`counter/<name>`), 0 when absent.
uint64_t get_counter(const txn_view& t, std::string_view name);
status add_counter(write_txn& t, std::string_view name, uint64_t delta);

}  // namespace sy::storage
