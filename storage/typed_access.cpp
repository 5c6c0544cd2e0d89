#include <algorithm>
#include <charconv>

#include "storage/detail/codec.hpp"
#include "storage/lmdb_env.hpp"

namespace sy::storage {
namespace {

using json = nlohmann::json;

/// The outbox's high-water mark in `meta`: the next sequence to hand out.
constexpr std::string_view outbox_next_key = "outbox_next_seq";
/// The same for webhook deliveries.
constexpr std::string_view webhook_next_key = "webhook_next_seq";

using detail::decode;
using detail::encode;

uint64_t seq_of_key(std::string_view key) {
  uint64_t seq = 0;
  for (size_t i = 0; i < key.size() && i < 8; ++i) {
    seq = (seq << 8) | static_cast<unsigned char>(key[i]);
  }
  return seq;
}

uint64_t next_seq(const txn_view& t, db d, std::string_view meta_key) {
  uint64_t next = 1;
  t.scan_reverse(d, {}, [&](std::string_view key, std::string_view) {
    next = seq_of_key(key) + 1;
    return false;
  });
  if (auto v = t.get(db::meta, meta_key)) {
    uint64_t recorded = 0;
    auto [end, ec] = std::from_chars(v->data(), v->data() + v->size(), recorded);
    if (ec == std::errc{} && end == v->data() + v->size()) next = std::max(next, recorded);
  }
  return next;
}

}  // namespace

std::optional<job_record> get_job(const txn_view& t, std::string_view id) {
  auto v = t.get(db::jobs, id);
  return v ? decode_job(*v) : std::nullopt;
}

std::optional<task_record> get_task(const txn_view& t, std::string_view id) {
  auto v = t.get(db::tasks, id);
  return v ? decode_task(*v) : std::nullopt;
}

std::optional<lease_record> get_lease(const txn_view& t, std::string_view task_id) {
  auto v = t.get(db::leases, task_id);
  return v ? decode_lease(*v) : std::nullopt;
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

status put_job(write_txn& t, const job_record& r) { return t.put(db::jobs, r.id, encode_job(r)); }

status put_task(write_txn& t, const task_record& r) {
  return t.put(db::tasks, r.id, encode_task(r));
}

status put_lease(write_txn& t, const lease_record& r) {
  return t.put(db::leases, r.task_id, encode_lease(r));
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
  r.seq = next_seq(t, db::outbox, outbox_next_key);
  // Both puts poison the transaction on failure, so commit() reports it.
  (void)t.put(db::outbox, outbox_key(r.seq), encode_outbox(r));
  (void)t.put(db::meta, outbox_next_key, std::to_string(r.seq + 1));
  return r.seq;
}

bool del_outbox(write_txn& t, uint64_t seq) { return t.del(db::outbox, outbox_key(seq)); }

std::vector<outbox_record> read_outbox(const txn_view& t, uint64_t from_seq, size_t limit) {
  std::vector<outbox_record> out;
  if (limit == 0) return out;
  t.scan(db::outbox, outbox_key(from_seq), [&](std::string_view key, std::string_view value) {
    if (auto r = decode_outbox(value)) {
      out.push_back(std::move(*r));
      out.back().seq = seq_of_key(key);  // the key is the authority
    }
    return out.size() < limit;
  });
  return out;
}

std::vector<lease_record> read_leases(const txn_view& t) {
  std::vector<lease_record> out;
  t.scan(db::leases, {}, [&](std::string_view, std::string_view value) {
    if (auto r = decode_lease(value)) out.push_back(std::move(*r));
    return true;
  });
  return out;
}

static std::string hex16(uint64_t v) {
  static constexpr char digits[] = "0123456789abcdef";
  std::string out(16, '0');
  for (int i = 15; i >= 0; --i, v >>= 4) out[static_cast<size_t>(i)] = digits[v & 0xf];
  return out;
}

std::string event_key(std::string_view job_id, uint64_t seq) {
  std::string k(job_id);
  k.push_back('/');
  k += hex16(seq);
  return k;
}

status put_event(write_txn& t, const event_record& r) {
  return t.put(db::events, event_key(r.job_id, r.seq), encode_event(r));
}

std::vector<event_record> read_events(const txn_view& t, std::string_view job_id,
                                      uint64_t after_seq, size_t limit) {
  std::vector<event_record> out;
  std::string prefix = std::string(job_id) + "/";
  t.scan(db::events, event_key(job_id, after_seq + 1),
         [&](std::string_view key, std::string_view value) {
           if (key.substr(0, prefix.size()) != prefix) return false;
           if (auto r = decode_event(value)) out.push_back(std::move(*r));
           return out.size() < limit;
         });
  return out;
}

uint64_t append_webhook(write_txn& t, webhook_record r) {
  r.seq = next_seq(t, db::webhooks, webhook_next_key);
  (void)t.put(db::webhooks, outbox_key(r.seq), encode_webhook(r));
  (void)t.put(db::meta, webhook_next_key, std::to_string(r.seq + 1));
  return r.seq;
}

status put_webhook(write_txn& t, const webhook_record& r) {
  return t.put(db::webhooks, outbox_key(r.seq), encode_webhook(r));
}

std::optional<webhook_record> get_webhook(const txn_view& t, uint64_t seq) {
  const auto v = t.get(db::webhooks, outbox_key(seq));
  auto r = v ? decode_webhook(*v) : std::nullopt;
  if (r) r->seq = seq;
  return r;
}

bool del_webhook(write_txn& t, uint64_t seq) { return t.del(db::webhooks, outbox_key(seq)); }

std::vector<webhook_record> read_due_webhooks(const txn_view& t, int64_t now_ms, size_t limit,
                                              std::optional<int64_t>* earliest) {
  std::vector<webhook_record> out;
  if (earliest) earliest->reset();
  if (limit == 0 && !earliest) return out;
  t.scan(db::webhooks, {}, [&](std::string_view key, std::string_view value) {
    if (auto r = decode_webhook(value)) {
      if (earliest) *earliest = std::min(earliest->value_or(r->next_at_ms), r->next_at_ms);
      r->seq = seq_of_key(key);
      if (r->next_at_ms <= now_ms && out.size() < limit) out.push_back(std::move(*r));
    }
    return earliest != nullptr || out.size() < limit;  // the earliest time needs every record
  });
  return out;
}

std::string job_index_key(std::string_view tenant, std::string_view job_id) {
  std::string k(tenant);
  k.push_back('\x1f');
  k.append(job_id);
  return k;
}

std::string time_index_key(int64_t at_ms, std::string_view job_id) {
  std::string k = hex16(static_cast<uint64_t>(std::max<int64_t>(at_ms, 0)));
  k.push_back('/');
  k.append(job_id);
  return k;
}

std::vector<std::pair<int64_t, std::string>> read_due(const txn_view& t, db index, int64_t now_ms,
                                                      size_t limit) {
  std::vector<std::pair<int64_t, std::string>> out;
  if (limit == 0) return out;
  const std::string bound = hex16(static_cast<uint64_t>(std::max<int64_t>(now_ms, 0)));
  t.scan(index, {}, [&](std::string_view key, std::string_view) {
    if (key.size() < 17 || key.substr(0, 16) > bound) return false;
    uint64_t at = 0;
    std::from_chars(key.data(), key.data() + 16, at, 16);
    out.emplace_back(static_cast<int64_t>(at), std::string(key.substr(17)));
    return out.size() < limit;
  });
  return out;
}

uint64_t get_counter(const txn_view& t, std::string_view name) {
  uint64_t n = 0;
  if (auto v = t.get(db::meta, "counter/" + std::string(name)))
    std::from_chars(v->data(), v->data() + v->size(), n);
  return n;
}

status add_counter(write_txn& t, std::string_view name, uint64_t delta) {
  return t.put(db::meta, "counter/" + std::string(name),
               std::to_string(get_counter(t, name) + delta));
}

}  // namespace sy::storage
