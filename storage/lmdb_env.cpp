#include "storage/lmdb_env.hpp"

#include <sys/mman.h>
#include <unistd.h>

#include <charconv>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <random>
#include <thread>

#include "storage/detail/lmdb_util.hpp"

namespace sy::storage {
namespace {

using detail::lmdb_error;

constexpr std::string_view schema_key = "schema_version";
constexpr std::string_view map_bytes_key = "map_bytes";
constexpr std::string_view store_id_key = "store_id";
/// Enough reader slots for every thread of the process to hold a few snapshots at once.
constexpr unsigned max_readers = 1024;

std::optional<int64_t> parse_int(std::string_view s) {
  int64_t v = 0;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc{} || end != s.data() + s.size()) return std::nullopt;
  return v;
}

/// 128 random bits as 32 lowercase hex characters.
std::string new_store_id() {
  std::random_device rd;
  std::string out;
  constexpr char hex[] = "0123456789abcdef";
  for (int i = 0; i < 4; ++i) {
    uint32_t word = rd();
    for (int j = 0; j < 8; ++j, word >>= 4) out.push_back(hex[word & 0xf]);
  }
  return out;
}

/// The process's file-backed resident bytes (the third field of /proc/self/statm: resident
/// pages shared with a file), or -1 when it cannot be read.
int64_t file_resident_bytes() {
  std::FILE* f = std::fopen("/proc/self/statm", "re");
  if (f == nullptr) return -1;
  long long size = 0;
  long long resident = 0;
  long long shared = -1;
  const int n = std::fscanf(f, "%lld %lld %lld", &size, &resident, &shared);
  std::fclose(f);
  if (n != 3 || shared < 0) return -1;
  return static_cast<int64_t>(shared) * sysconf(_SC_PAGESIZE);
}

/// The start and length of the mapping of `file` in /proc/self/maps (its first one).
std::pair<void*, size_t> find_mapping(const std::string& file) {
  std::FILE* f = std::fopen("/proc/self/maps", "re");
  if (f == nullptr) return {nullptr, 0};
  std::pair<void*, size_t> found{nullptr, 0};
  char line[4096];
  while (std::fgets(line, sizeof line, f) != nullptr) {
    std::string_view l(line);
    while (!l.empty() && l.back() == '\n') l.remove_suffix(1);
    if (l.size() < file.size() || l.substr(l.size() - file.size()) != file) continue;
    unsigned long long from = 0;
    unsigned long long to = 0;
    if (std::sscanf(line, "%llx-%llx", &from, &to) != 2 || to <= from) continue;
    found = {reinterpret_cast<void*>(from), static_cast<size_t>(to - from)};  // NOLINT
    break;
  }
  std::fclose(f);
  return found;
}

}  // namespace

result<std::unique_ptr<environment>> environment::open(const std::string& data_dir,
                                                       int64_t initial_map_bytes) {
  if (initial_map_bytes <= 0) {
    return make_error(errc::storage_error, "the initial LMDB map size must be positive, got " +
                                               std::to_string(initial_map_bytes));
  }
  std::unique_ptr<environment> env(new environment());
  const std::string path = (std::filesystem::path(data_dir) / "lmdb").string();
  if (auto st = env->init(path, initial_map_bytes); !st) return st.error();
  if (auto st = env->open_databases(path); !st) return st.error();
  if (auto st = env->adopt_recorded_map_size(); !st) return st.error();
  return env;
}

environment::~environment() {
  if (env_ != nullptr) mdb_env_close(env_);
}

status environment::init(const std::string& path, int64_t initial_map_bytes) {
  std::error_code ec;
  std::filesystem::create_directories(path, ec);
  if (ec) return make_error(errc::storage_error, "cannot create " + path + ": " + ec.message());
  if (int rc = mdb_env_create(&env_); rc != MDB_SUCCESS) {
    env_ = nullptr;
    return lmdb_error(rc, "create environment");
  }
  mdb_env_set_maxdbs(env_, db_count);
  mdb_env_set_maxreaders(env_, max_readers);
  if (int rc = mdb_env_set_mapsize(env_, static_cast<size_t>(initial_map_bytes)); rc) {
    return lmdb_error(rc, "set map size");
  }
  // MDB_NOTLS: a read transaction is not tied to the thread that began it. No MDB_NOSYNC or
  // MDB_NOMETASYNC: every commit is durable (DESIGN.md durability rule 1).
  if (int rc = mdb_env_open(env_, path.c_str(), MDB_NOTLS, 0644); rc != MDB_SUCCESS) {
    return lmdb_error(rc, "open environment at " + path);
  }
  MDB_envinfo info;
  mdb_env_info(env_, &info);
  map_bytes_ = static_cast<int64_t>(info.me_mapsize);
  std::error_code canon_ec;
  data_file_ = std::filesystem::canonical(path, canon_ec).string() + "/data.mdb";
  locate_map();
  return ok;
}

void environment::locate_map() {
  auto [addr, len] = find_mapping(data_file_);
  map_addr_ = addr;
  map_len_ = len;
}

status environment::open_databases(const std::string& path) {
  auto w = begin_write();
  if (!w) return w.error();
  MDB_txn* t = w->txn_;
  if (int rc = mdb_dbi_open(t, "meta", MDB_CREATE, &dbis_[0]); rc != MDB_SUCCESS) {
    return lmdb_error(rc, "open database 'meta'");
  }
  // The version is checked before anything else is created, so a newer store is left untouched.
  if (auto v = w->get(db::meta, schema_key)) {
    auto found = parse_int(*v);
    if (!found || *found < 1) {
      return make_error(errc::schema_invalid,
                        "the store at " + path + " has an unreadable schema version '" + *v + "'");
    }
    if (*found > schema_version) {
      return make_error(errc::schema_too_new,
                        "the store at " + path + " has schema version " + std::to_string(*found) +
                            ", newer than version " + std::to_string(schema_version) +
                            " that this build understands; run a newer switchyard build");
    }
    // Older: migrate. 1 -> 2 changed only the outbox value's encoding, 2 -> 3 only the job,
    // task, lease and event values' encoding, and 3 -> 4 appended the task-list fields to job
    // and task values and added db::task_custom, db::list_live and db::list_ingest (made below);
    // this build reads the old and the new forms, so the migration is the version record itself —
    // it keeps an older build, which could not read the new values, from opening the store after
    // this one.
    if (*found < schema_version) {
      if (auto st = w->put(db::meta, schema_key, std::to_string(schema_version)); !st) return st;
    }
  } else if (auto st = w->put(db::meta, schema_key, std::to_string(schema_version)); !st) {
    return st;
  }
  if (auto v = w->get(db::meta, store_id_key)) {
    store_id_ = *v;
  } else {
    store_id_ = new_store_id();
    if (auto st = w->put(db::meta, store_id_key, store_id_); !st) return st;
  }
  for (int i = 1; i < db_count; ++i) {
    const auto name = std::string(detail::db_name(static_cast<db>(i)));
    if (int rc = mdb_dbi_open(t, name.c_str(), MDB_CREATE, &dbis_[i]); rc != MDB_SUCCESS) {
      return lmdb_error(rc, "open database '" + name + "'");
    }
  }
  return w->commit();
}

status environment::adopt_recorded_map_size() {
  std::optional<int64_t> recorded;
  {
    auto r = begin_read();
    if (!r.ok()) return *r.failure();
    if (auto v = r.get(db::meta, map_bytes_key)) recorded = parse_int(*v);
  }
  if (recorded && *recorded > map_bytes()) return set_map_size(*recorded);
  return ok;
}

status environment::set_map_size(int64_t bytes) {
  if (int rc = mdb_env_set_mapsize(env_, static_cast<size_t>(bytes)); rc != MDB_SUCCESS) {
    return lmdb_error(rc, "resize the map to " + std::to_string(bytes) + " bytes");
  }
  MDB_envinfo info;
  mdb_env_info(env_, &info);
  map_bytes_ = static_cast<int64_t>(info.me_mapsize);
  locate_map();  // the new map may be elsewhere
  return ok;
}

status environment::record_map_size() {
  auto w = begin_write();
  if (!w) return w.error();
  if (auto st = w->put(db::meta, map_bytes_key, std::to_string(map_bytes())); !st) return st;
  return w->commit();
}

read_txn environment::begin_read() const {
  // Passing through the gate (without holding it) lets a waiting grow() stop new readers.
  { std::lock_guard gate(gate_); }
  std::shared_lock lock(resize_);
  MDB_txn* t = nullptr;
  if (int rc = mdb_txn_begin(env_, nullptr, MDB_RDONLY, &t); rc != MDB_SUCCESS) {
    return read_txn(this, nullptr, {}, lmdb_error(rc, "begin a read transaction"));
  }
  return read_txn(this, t, std::move(lock), std::nullopt);
}

result<write_txn> environment::begin_write() {
  MDB_txn* t = nullptr;
  if (int rc = mdb_txn_begin(env_, nullptr, 0, &t); rc != MDB_SUCCESS) {
    return lmdb_error(rc, "begin the write transaction");
  }
  return write_txn(this, t);
}

int64_t environment::used_bytes() const {
  MDB_envinfo info{};
  MDB_stat st{};
  if (mdb_env_info(env_, &info) != MDB_SUCCESS || mdb_env_stat(env_, &st) != MDB_SUCCESS) return 0;
  return static_cast<int64_t>(info.me_last_pgno + 1) * st.ms_psize;
}

status environment::grow() {
  {
    std::unique_lock gate(gate_);
    std::unique_lock lock(resize_, std::defer_lock);
    // Wait for open readers with the gate closed. If they do not drain in time (a thread may be
    // opening a second snapshot while holding a first), open the gate briefly and try again,
    // so that such a thread can finish instead of deadlocking.
    while (!lock.try_lock_for(std::chrono::milliseconds(20))) {
      gate.unlock();
      std::this_thread::yield();
      gate.lock();
    }
    if (auto st = set_map_size(map_bytes() * 2); !st) return st;
  }
  // Recorded so that a restart starts with the grown map instead of filling up at once.
  return record_map_size();
}

void environment::trim_resident() const {
  using namespace std::chrono;
  const int64_t now = duration_cast<milliseconds>(steady_clock::now().time_since_epoch()).count();
  int64_t due = next_trim_check_ms_.load(std::memory_order_relaxed);
  if (now < due || !next_trim_check_ms_.compare_exchange_strong(due, now + trim_check_ms)) return;
  const int64_t resident = file_resident_bytes();
  if (resident < 0) return;
  const int64_t base = trim_baseline_bytes_.load(std::memory_order_relaxed);
  if (base < 0 || resident < base) {
    trim_baseline_bytes_.store(resident, std::memory_order_relaxed);
    return;
  }
  if (resident - base < trim_budget_bytes) return;
  if (map_addr_ == nullptr) return;
  ::madvise(map_addr_, map_len_, MADV_DONTNEED);
  trim_baseline_bytes_.store(file_resident_bytes(), std::memory_order_relaxed);
}

}  // namespace sy::storage
