#include <array>
#include <cerrno>
#include <utility>

#include "storage/detail/lmdb_util.hpp"
#include "storage/lmdb_env.hpp"

namespace sy::storage {
namespace detail {

std::string_view db_name(db d) {
  static constexpr std::array<std::string_view, db_count> names{
      "meta",        "jobs",        "tasks",       "idempotency", "leases",      "outbox",
      "events",      "webhooks",    "job_index",   "deadlines",   "retention",   "queued",
      "files",       "file_index",  "file_expiry", "batches",     "batch_index", "batch_active",
      "batch_lines", "task_custom", "list_live",   "list_ingest"};
  return names[static_cast<size_t>(d)];
}

sy::error lmdb_error(int rc, std::string_view what) {
  std::string message = "LMDB: " + std::string(what) + " failed: " + mdb_strerror(rc);
  // Errors about this write's own key or value, not about the store: LMDB returns them before
  // touching any page, and they would fail again however often the write were retried.
  const bool own_value = rc == MDB_BAD_VALSIZE || rc == MDB_KEYEXIST || rc == EINVAL;
  return make_error(rc == MDB_MAP_FULL ? errc::map_full
                    : own_value        ? errc::value_rejected
                                       : errc::storage_error,
                    std::move(message));
}

}  // namespace detail

namespace {

/// Closes a cursor on every path out of a scan.
struct cursor_guard {
  MDB_cursor* cursor = nullptr;
  ~cursor_guard() {
    if (cursor != nullptr) mdb_cursor_close(cursor);
  }
};

}  // namespace

using detail::to_val;
using detail::to_view;

txn_view::txn_view(txn_view&& o) noexcept
    : env_(o.env_), txn_(std::exchange(o.txn_, nullptr)), failure_(std::move(o.failure_)) {}

txn_view& txn_view::operator=(txn_view&& o) noexcept {
  env_ = o.env_;
  txn_ = std::exchange(o.txn_, nullptr);
  failure_ = std::move(o.failure_);
  return *this;
}

unsigned txn_view::dbi(db d) const { return env_->dbis_[static_cast<size_t>(d)]; }

uint64_t txn_view::entries(db d) const {
  MDB_stat st{};
  if (txn_ == nullptr || mdb_stat(txn_, dbi(d), &st) != MDB_SUCCESS) return 0;
  return st.ms_entries;
}

std::optional<std::string> txn_view::get(db d, std::string_view key) const {
  if (txn_ == nullptr || key.empty()) return std::nullopt;
  MDB_val k = to_val(key);
  MDB_val v;
  if (mdb_get(txn_, dbi(d), &k, &v) != MDB_SUCCESS) return std::nullopt;
  return std::string(to_view(v));
}

void txn_view::scan(db d, std::string_view from, const scan_fn& fn) const {
  cursor_guard c;
  if (txn_ == nullptr || mdb_cursor_open(txn_, dbi(d), &c.cursor) != MDB_SUCCESS) return;
  MDB_val k = to_val(from);
  MDB_val v;
  int rc = mdb_cursor_get(c.cursor, &k, &v, from.empty() ? MDB_FIRST : MDB_SET_RANGE);
  while (rc == MDB_SUCCESS && fn(to_view(k), to_view(v))) {
    rc = mdb_cursor_get(c.cursor, &k, &v, MDB_NEXT);
  }
}

void txn_view::scan_reverse(db d, std::string_view from, const scan_fn& fn) const {
  cursor_guard c;
  if (txn_ == nullptr || mdb_cursor_open(txn_, dbi(d), &c.cursor) != MDB_SUCCESS) return;
  MDB_val k = to_val(from);
  MDB_val v;
  int rc = MDB_NOTFOUND;
  if (!from.empty()) {
    // SET_RANGE finds the least key >= from; when it is not `from` itself, the one before it is
    // the greatest key < from. When no key is >= from, the last key is the start.
    rc = mdb_cursor_get(c.cursor, &k, &v, MDB_SET_RANGE);
    if (rc == MDB_SUCCESS && to_view(k) != from) {
      rc = mdb_cursor_get(c.cursor, &k, &v, MDB_PREV);
    } else if (rc == MDB_NOTFOUND) {
      rc = mdb_cursor_get(c.cursor, &k, &v, MDB_LAST);
    }
  } else {
    rc = mdb_cursor_get(c.cursor, &k, &v, MDB_LAST);
  }
  while (rc == MDB_SUCCESS && fn(to_view(k), to_view(v))) {
    rc = mdb_cursor_get(c.cursor, &k, &v, MDB_PREV);
  }
}

read_txn::read_txn(const environment* env, MDB_txn* txn,
                   std::shared_lock<std::shared_timed_mutex> lock, std::optional<sy::error> f)
    : txn_view(env, txn), lock_(std::move(lock)) {
  failure_ = std::move(f);
}

read_txn& read_txn::operator=(read_txn&& o) noexcept {
  if (this != &o) {
    release();
    // The lock before the base part, so that nothing of `o` is read after it was moved from.
    lock_ = std::move(o.lock_);
    txn_view::operator=(std::move(o));
  }
  return *this;
}

read_txn::~read_txn() { release(); }

void read_txn::release() {
  // The snapshot ends before the resize lock is released, so grow() never sees a live reader.
  if (txn_ != nullptr) {
    mdb_txn_abort(std::exchange(txn_, nullptr));
    env_->trim_resident();  // under the resize lock: the map stays where it is meanwhile
  }
  if (lock_.owns_lock()) lock_.unlock();
}

write_txn& write_txn::operator=(write_txn&& o) noexcept {
  if (this != &o) {
    abort();
    txn_view::operator=(std::move(o));
  }
  return *this;
}

write_txn::~write_txn() { abort(); }

sy::error write_txn::fail(int rc, std::string_view what) {
  auto e = detail::lmdb_error(rc, what);
  if (!failure_) failure_ = e;
  return e;
}

status write_txn::put(db d, std::string_view key, std::string_view value) {
  if (txn_ == nullptr) return make_error(errc::storage_error, "put on a finished transaction");
  if (failure_) return *failure_;
  MDB_val k = to_val(key);
  MDB_val v = to_val(value);
  int rc = mdb_put(txn_, dbi(d), &k, &v, 0);
  if (rc != MDB_SUCCESS) return fail(rc, "put into '" + std::string(detail::db_name(d)) + "'");
  return sy::ok;
}

bool write_txn::del(db d, std::string_view key) {
  if (txn_ == nullptr || failure_ || key.empty()) return false;
  MDB_val k = to_val(key);
  int rc = mdb_del(txn_, dbi(d), &k, nullptr);
  if (rc == MDB_NOTFOUND) return false;
  if (rc != MDB_SUCCESS) fail(rc, "delete from '" + std::string(detail::db_name(d)) + "'");
  return rc == MDB_SUCCESS;
}

status write_txn::commit() {
  if (txn_ == nullptr) return make_error(errc::storage_error, "commit of a finished transaction");
  if (failure_) {
    abort();
    return *failure_;
  }
  // mdb_txn_commit frees the transaction whether or not it succeeds.
  int rc = mdb_txn_commit(std::exchange(txn_, nullptr));
  if (rc != MDB_SUCCESS) return detail::lmdb_error(rc, "commit");
  env_->trim_resident();
  return sy::ok;
}

result<write_txn> write_txn::begin_nested() {
  if (txn_ == nullptr) return make_error(errc::storage_error, "nesting in a finished transaction");
  if (failure_) return *failure_;
  MDB_txn* child = nullptr;
  if (int rc = mdb_txn_begin(mdb_txn_env(txn_), txn_, 0, &child); rc != MDB_SUCCESS)
    return detail::lmdb_error(rc, "begin a nested transaction");
  return write_txn(env_, child);
}

void write_txn::abort() {
  if (txn_ != nullptr) mdb_txn_abort(std::exchange(txn_, nullptr));
}

}  // namespace sy::storage
