#include <algorithm>
#include <charconv>

#include "storage/lmdb_env.hpp"

namespace sy::storage {
namespace {

using json = nlohmann::json;

/// The outbox's high-water mark in `meta`: the next sequence to hand out.
constexpr std::string_view outbox_next_key = "outbox_next_seq";

/// Compact JSON. Invalid UTF-8 (e.g. in a gateway's body) is replaced rather than thrown on.
std::string encode(const json& j) { return j.dump(-1, ' ', false, json::error_handler_t::replace); }

/// Parses a stored value without throwing; a corrupt value reads as absent.
template <class Record>
std::optional<Record> decode(const std::optional<std::string>& v, Record (*from)(const json&)) {
  if (!v) return std::nullopt;
  json j = json::parse(v->begin(), v->end(), nullptr, false);
  if (j.is_discarded() || !j.is_object()) return std::nullopt;
  return from(j);
}

uint64_t seq_of_key(std::string_view key) {
  uint64_t seq = 0;
  for (size_t i = 0; i < key.size() && i < 8; ++i) {
    seq = (seq << 8) | static_cast<unsigned char>(key[i]);
  }
  return seq;
}

uint64_t next_outbox_seq(const txn_view& t) {
  uint64_t next = 1;
  t.scan_reverse(db::outbox, {}, [&](std::string_view key, std::string_view) {
    next = seq_of_key(key) + 1;
    return false;
  });
  if (auto v = t.get(db::meta, outbox_next_key)) {
    uint64_t recorded = 0;
    auto [end, ec] = std::from_chars(v->data(), v->data() + v->size(), recorded);
    if (ec == std::errc{} && end == v->data() + v->size()) next = std::max(next, recorded);
  }
  return next;
}

}  // namespace

std::optional<job_record> get_job(const txn_view& t, std::string_view id) {
  return decode(t.get(db::jobs, id), &job_from_json);
}

std::optional<task_record> get_task(const txn_view& t, std::string_view id) {
  return decode(t.get(db::tasks, id), &task_from_json);
}

std::optional<lease_record> get_lease(const txn_view& t, std::string_view task_id) {
  return decode(t.get(db::leases, task_id), &lease_from_json);
}

std::string idempotency_db_key(std::string_view tenant, std::string_view key) {
  std::string k;
  k.reserve(tenant.size() + 1 + key.size());
  k.append(tenant).push_back('\x1f');
  k.append(key);
  return k;
}

std::optional<idempotency_record> get_idempotency(const txn_view& t, std::string_view tenant,
                                                  std::string_view key) {
  return decode(t.get(db::idempotency, idempotency_db_key(tenant, key)), &idempotency_from_json);
}

status put_job(write_txn& t, const job_record& r) {
  return t.put(db::jobs, r.id, encode(to_json(r)));
}

status put_task(write_txn& t, const task_record& r) {
  return t.put(db::tasks, r.id, encode(to_json(r)));
}

status put_lease(write_txn& t, const lease_record& r) {
  return t.put(db::leases, r.task_id, encode(to_json(r)));
}

bool del_lease(write_txn& t, std::string_view task_id) { return t.del(db::leases, task_id); }

status put_idempotency(write_txn& t, std::string_view tenant, std::string_view key,
                       const idempotency_record& r) {
  return t.put(db::idempotency, idempotency_db_key(tenant, key), encode(to_json(r)));
}

std::string outbox_key(uint64_t seq) {
  std::string k(8, '\0');
  for (int i = 7; i >= 0; --i) {
    k[static_cast<size_t>(i)] = static_cast<char>(seq & 0xff);
    seq >>= 8;
  }
  return k;
}

uint64_t append_outbox(write_txn& t, outbox_record r) {
  r.seq = next_outbox_seq(t);
  // Both puts poison the transaction on failure, so commit() reports it.
  (void)t.put(db::outbox, outbox_key(r.seq), encode(to_json(r)));
  (void)t.put(db::meta, outbox_next_key, std::to_string(r.seq + 1));
  return r.seq;
}

bool del_outbox(write_txn& t, uint64_t seq) { return t.del(db::outbox, outbox_key(seq)); }

std::vector<outbox_record> read_outbox(const txn_view& t, uint64_t from_seq, size_t limit) {
  std::vector<outbox_record> out;
  if (limit == 0) return out;
  t.scan(db::outbox, outbox_key(from_seq), [&](std::string_view key, std::string_view value) {
    json j = json::parse(value.begin(), value.end(), nullptr, false);
    if (!j.is_discarded() && j.is_object()) {
      out.push_back(outbox_from_json(j));
      out.back().seq = seq_of_key(key);  // the key is the authority
    }
    return out.size() < limit;
  });
  return out;
}

std::vector<lease_record> read_leases(const txn_view& t) {
  std::vector<lease_record> out;
  t.scan(db::leases, {}, [&](std::string_view, std::string_view value) {
    json j = json::parse(value.begin(), value.end(), nullptr, false);
    if (!j.is_discarded() && j.is_object()) out.push_back(lease_from_json(j));
    return true;
  });
  return out;
}

}  // namespace sy::storage
