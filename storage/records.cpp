#include "storage/records.hpp"

#include <array>
#include <cstdint>
#include <utility>

#include "storage/detail/codec.hpp"

// Two codecs (docs/storage.md): binary values for jobs, tasks, leases and events (schema 3), and
// compact JSON with short keys for the rest and for values of older stores. JSON encoding omits
// empty optional fields; JSON decoding never throws: a missing field or a field of the wrong type
// leaves the struct's default, so an older or newer writer's record still decodes.

namespace sy::storage {
namespace {

using json = nlohmann::json;

constexpr std::array<std::pair<job_status, std::string_view>, 8> job_status_names{{
    {job_status::queued, "queued"},
    {job_status::in_progress, "in_progress"},
    {job_status::cancelling, "cancelling"},
    {job_status::completed, "completed"},
    {job_status::failed, "failed"},
    {job_status::cancelled, "cancelled"},
    {job_status::expired, "expired"},
    {job_status::ingesting, "ingesting"},
}};

constexpr std::array<std::pair<task_state, std::string_view>, 3> task_state_names{{
    {task_state::queued, "queued"},
    {task_state::leased, "leased"},
    {task_state::done, "done"},
}};

std::string get_str(const json& j, const char* key) {
  if (!j.is_object()) return {};
  auto it = j.find(key);
  return it != j.end() && it->is_string() ? it->get<std::string>() : std::string{};
}

template <class Int>
Int get_int(const json& j, const char* key, Int fallback = 0) {
  if (!j.is_object()) return fallback;
  auto it = j.find(key);
  return it != j.end() && it->is_number_integer() ? it->get<Int>() : fallback;
}

void put_str(json& j, const char* key, const std::string& v) {
  if (!v.empty()) j[key] = v;
}

void put_int(json& j, const char* key, int64_t v) {
  if (v != 0) j[key] = v;
}

}  // namespace

std::string_view to_string(job_status s) {
  for (const auto& [v, name] : job_status_names) {
    if (v == s) return name;
  }
  return "unknown";
}

std::optional<job_status> job_status_from(std::string_view s) {
  for (const auto& [v, name] : job_status_names) {
    if (name == s) return v;
  }
  return std::nullopt;
}

bool is_terminal(job_status s) {
  return s == job_status::completed || s == job_status::failed || s == job_status::cancelled ||
         s == job_status::expired;
}

std::string_view to_string(task_state s) {
  for (const auto& [v, name] : task_state_names) {
    if (v == s) return name;
  }
  return "unknown";
}

std::optional<task_state> task_state_from(std::string_view s) {
  for (const auto& [v, name] : task_state_names) {
    if (name == s) return v;
  }
  return std::nullopt;
}

std::string_view to_string(job_kind k) {
  switch (k) {
    case job_kind::list:
      return "list";
    case job_kind::batch:
      return "batch";
    default:
      return "single";
  }
}

std::optional<job_kind> job_kind_from(std::string_view s) {
  for (auto k : {job_kind::single, job_kind::list, job_kind::batch})
    if (to_string(k) == s) return k;
  return std::nullopt;
}

bool is_batch_id(std::string_view id) { return id.starts_with("batch_"); }

json to_json(const job_record& r) {
  json j = json::object();
  j["id"] = r.id;
  put_str(j, "tn", r.tenant);
  put_str(j, "ep", r.endpoint);
  put_str(j, "md", r.model);
  put_str(j, "bd", r.body);
  if (r.metadata.is_object() ? !r.metadata.empty() : !r.metadata.is_null()) j["mt"] = r.metadata;
  put_str(j, "ik", r.idempotency_key);
  put_str(j, "rh", r.request_hash);
  put_str(j, "tk", r.task_id);
  j["ma"] = r.max_attempts;
  put_int(j, "at", r.attempts);
  j["st"] = to_string(r.status);
  put_int(j, "ca", r.created_at_ms);
  put_int(j, "sa", r.started_at_ms);
  put_int(j, "fa", r.finished_at_ms);
  put_int(j, "ua", r.updated_at_ms);
  if (r.result) j["rs"] = json{{"sc", r.result->status_code}, {"bd", r.result->body}};
  if (r.error) j["er"] = json{{"cd", r.error->code}, {"ms", r.error->message}};
  put_str(j, "wh", r.webhook_url);
  put_int(j, "dl", r.deadline_ms);
  put_int(j, "ev", static_cast<int64_t>(r.event_seq));
  if (r.input_dropped) j["id0"] = true;
  return j;
}

job_record job_from_json(const json& j) {
  job_record r;
  r.id = get_str(j, "id");
  r.tenant = get_str(j, "tn");
  r.endpoint = get_str(j, "ep");
  r.model = get_str(j, "md");
  r.body = get_str(j, "bd");
  if (j.is_object() && j.contains("mt")) r.metadata = j["mt"];
  r.idempotency_key = get_str(j, "ik");
  r.request_hash = get_str(j, "rh");
  r.task_id = get_str(j, "tk");
  r.max_attempts = get_int<int>(j, "ma", r.max_attempts);
  r.attempts = get_int<int>(j, "at");
  r.status = job_status_from(get_str(j, "st")).value_or(job_status::queued);
  r.created_at_ms = get_int<int64_t>(j, "ca");
  r.started_at_ms = get_int<int64_t>(j, "sa");
  r.finished_at_ms = get_int<int64_t>(j, "fa");
  r.updated_at_ms = get_int<int64_t>(j, "ua");
  if (j.is_object() && j.contains("rs") && j["rs"].is_object()) {
    r.result = gateway_result{get_int<int>(j["rs"], "sc"), get_str(j["rs"], "bd")};
  }
  if (j.is_object() && j.contains("er") && j["er"].is_object()) {
    r.error = job_error{get_str(j["er"], "cd"), get_str(j["er"], "ms")};
  }
  r.webhook_url = get_str(j, "wh");
  r.deadline_ms = get_int<int64_t>(j, "dl");
  r.event_seq = get_int<uint64_t>(j, "ev");
  r.input_dropped = j.is_object() && j.value("id0", false);
  return r;
}

json to_json(const task_record& r) {
  json j = json::object();
  j["id"] = r.id;
  put_str(j, "jb", r.job_id);
  put_str(j, "tn", r.tenant);
  put_str(j, "md", r.model);
  put_int(j, "ix", r.index);
  j["at"] = r.attempt;
  j["ma"] = r.max_attempts;
  j["st"] = to_string(r.state);
  put_int(j, "nb", r.not_before_ms);
  put_int(j, "qa", r.queued_at_ms);
  put_str(j, "le", r.last_error);
  return j;
}

task_record task_from_json(const json& j) {
  task_record r;
  r.id = get_str(j, "id");
  r.job_id = get_str(j, "jb");
  r.tenant = get_str(j, "tn");
  r.model = get_str(j, "md");
  r.index = get_int<int>(j, "ix");
  r.attempt = get_int<int>(j, "at", r.attempt);
  r.max_attempts = get_int<int>(j, "ma", r.max_attempts);
  r.state = task_state_from(get_str(j, "st")).value_or(task_state::queued);
  r.not_before_ms = get_int<int64_t>(j, "nb");
  r.queued_at_ms = get_int<int64_t>(j, "qa");
  r.last_error = get_str(j, "le");
  return r;
}

json to_json(const lease_record& r) {
  json j = json::object();
  j["tk"] = r.task_id;
  j["at"] = r.attempt;
  put_str(j, "to", r.token);
  put_int(j, "ex", r.expires_at_ms);
  put_str(j, "ho", r.holder);
  return j;
}

lease_record lease_from_json(const json& j) {
  lease_record r;
  r.task_id = get_str(j, "tk");
  r.attempt = get_int<int>(j, "at");
  r.token = get_str(j, "to");
  r.expires_at_ms = get_int<int64_t>(j, "ex");
  r.holder = get_str(j, "ho");
  return r;
}

json to_json(const idempotency_record& r) {
  json j = json::object();
  j["jb"] = r.job_id;
  put_str(j, "rh", r.request_hash);
  put_int(j, "ca", r.created_at_ms);
  return j;
}

idempotency_record idempotency_from_json(const json& j) {
  idempotency_record r;
  r.job_id = get_str(j, "jb");
  r.request_hash = get_str(j, "rh");
  r.created_at_ms = get_int<int64_t>(j, "ca");
  return r;
}

namespace {
constexpr char outbox_format_v2 = '\x01';  // a rendered message (the build before)
constexpr char outbox_format_v3 = '\x02';  // typed: what happened

/// The binary values of schema 3 (records.hpp): a format byte, then fields in a fixed order.
constexpr char binary_format = '\x01';

class bin_writer {
 public:
  explicit bin_writer(char format = binary_format) { out_.push_back(format); }
  bin_writer& u(uint64_t v) {
    while (v >= 0x80) {
      out_.push_back(static_cast<char>((v & 0x7F) | 0x80));
      v >>= 7;
    }
    out_.push_back(static_cast<char>(v));
    return *this;
  }
  bin_writer& i(int64_t v) {  // zigzag: small negative numbers stay short
    return u((static_cast<uint64_t>(v) << 1) ^ static_cast<uint64_t>(v >> 63));
  }
  bin_writer& s(std::string_view v) {
    u(v.size());
    out_.append(v);
    return *this;
  }
  std::string take() { return std::move(out_); }

 private:
  std::string out_;
};

/// Reads the fields back in the same order. A field past the end of the value keeps its default
/// (fields are only ever appended, so an older value reads in a newer build); a field cut short
/// or out of range makes the value corrupt.
class bin_reader {
 public:
  explicit bin_reader(std::string_view v) : in_(v.substr(1)) {}
  bool corrupt() const { return corrupt_; }

  bin_reader& u(uint64_t& v) {
    if (in_.empty() || corrupt_) return *this;
    uint64_t out = 0;
    for (int shift = 0;; shift += 7) {
      if (in_.empty() || shift > 63) return fail();
      const auto b = static_cast<unsigned char>(in_.front());
      in_.remove_prefix(1);
      out |= static_cast<uint64_t>(b & 0x7F) << shift;
      if (!(b & 0x80)) break;
    }
    v = out;
    return *this;
  }
  bin_reader& i(int64_t& v) {
    uint64_t z = static_cast<uint64_t>(v) << 1 ^ static_cast<uint64_t>(v >> 63);
    u(z);
    v = static_cast<int64_t>(z >> 1) ^ -static_cast<int64_t>(z & 1);
    return *this;
  }
  bin_reader& i(int& v) {
    int64_t w = v;
    i(w);
    if (w < INT32_MIN || w > INT32_MAX) return fail();
    v = static_cast<int>(w);
    return *this;
  }
  bin_reader& s(std::string& v) {
    if (in_.empty() || corrupt_) return *this;
    uint64_t n = 0;
    u(n);
    if (corrupt_ || n > in_.size()) return fail();
    v.assign(in_.substr(0, n));
    in_.remove_prefix(n);
    return *this;
  }
  /// An enum stored as its index among `count` values.
  template <class E>
  bin_reader& e(E& v, size_t count) {
    uint64_t x = static_cast<uint64_t>(v);
    u(x);
    if (x >= count) return fail();
    v = static_cast<E>(x);
    return *this;
  }
  bool more() const { return !in_.empty() && !corrupt_; }

 private:
  bin_reader& fail() {
    corrupt_ = true;
    return *this;
  }
  std::string_view in_;
  bool corrupt_ = false;
};

bool is_binary(std::string_view value) { return !value.empty() && value.front() == binary_format; }

void write_error(bin_writer& w, const std::optional<job_error>& e) {
  w.u(e ? 1 : 0);
  if (e) w.s(e->code).s(e->message);
}

void read_error(bin_reader& r, std::optional<job_error>& e) {
  uint64_t has = 0;
  r.u(has);
  if (has) {
    e.emplace();
    r.s(e->code).s(e->message);
  }
}

void write_result(bin_writer& w, const std::optional<gateway_result>& r) {
  w.u(r ? 1 : 0);
  if (r) w.i(r->status_code).s(r->body);
}

void read_result(bin_reader& in, std::optional<gateway_result>& r) {
  uint64_t has = 0;
  in.u(has);
  if (has) {
    r.emplace();
    in.i(r->status_code).s(r->body);
  }
}

void write_event(bin_writer& w, const event_record& r) {
  w.s(r.job_id).u(r.seq).u(static_cast<uint64_t>(r.state));
  w.u(r.previous ? static_cast<uint64_t>(*r.previous) + 1 : 0);  // 0: none
  w.i(r.at_ms).i(r.attempt);
  write_error(w, r.error);
}

bool read_event(bin_reader& in, event_record& r) {
  in.s(r.job_id).u(r.seq).e(r.state, job_status_names.size());
  uint64_t previous = 0;
  in.u(previous);
  if (previous > job_status_names.size()) return false;
  if (previous > 0) r.previous = static_cast<job_status>(previous - 1);
  in.i(r.at_ms).i(r.attempt);
  read_error(in, r.error);
  return !in.corrupt();
}

void write_job_event(bin_writer& w, const job_event& e) {
  write_event(w, e.event);
  const auto& c = e.counts;
  w.u(e.task_list ? 1 : 0).i(c.total).i(c.queued).i(c.in_progress).i(c.completed);
  w.i(c.failed).i(c.cancelled);
  write_result(w, e.result);
  w.u(e.result_elsewhere ? 1 : 0);
}

bool read_job_event(bin_reader& in, job_event& e) {
  if (!read_event(in, e.event)) return false;
  auto& c = e.counts;
  uint64_t list = 0, elsewhere = 0;
  in.u(list).i(c.total).i(c.queued).i(c.in_progress).i(c.completed).i(c.failed).i(c.cancelled);
  read_result(in, e.result);
  in.u(elsewhere);
  e.task_list = list != 0;
  e.result_elsewhere = elsewhere != 0;
  return !in.corrupt();
}

}  // namespace

std::string encode_job(const job_record& r) {
  bin_writer w;
  w.s(r.id).s(r.tenant).s(r.endpoint).s(r.model).s(r.body);
  const bool no_metadata = r.metadata.is_null() || (r.metadata.is_object() && r.metadata.empty());
  w.s(no_metadata ? std::string()
                  : r.metadata.dump(-1, ' ', false, json::error_handler_t::replace));
  w.s(r.idempotency_key).s(r.request_hash).s(r.task_id);
  w.i(r.max_attempts).i(r.attempts).u(static_cast<uint64_t>(r.status));
  w.i(r.created_at_ms).i(r.started_at_ms).i(r.finished_at_ms).i(r.updated_at_ms);
  write_result(w, r.result);
  write_error(w, r.error);
  w.s(r.webhook_url).i(r.deadline_ms).u(r.event_seq).u(r.input_dropped ? 1 : 0);
  // A single job's value ends here, as in schema 3, unless it has grants or a trace: they come
  // after the task-list fields (then at their defaults).
  if (!r.task_list && r.grants.empty() && r.trace.empty()) return w.take();
  const auto& c = r.counts;
  w.u(r.task_list ? 1 : 0)
      .i(c.total)
      .i(c.queued)
      .i(c.in_progress)
      .i(c.completed)
      .i(c.failed)
      .i(c.cancelled);
  w.i(r.ingested).i(r.next_publish).i(r.live).i(r.window);
  w.s(r.ingest_path).i(r.ingest_offset).u(r.errors.size());
  for (const auto& e : r.errors) w.s(e.code).s(e.message).s(e.param).i(e.line);
  w.i(r.run).u(r.deleted ? 1 : 0).u(r.task_events ? 1 : 0);
  if (!r.grants.empty() || !r.trace.empty()) w.s(r.grants);
  if (!r.trace.empty()) w.s(r.trace).s(r.trace_state);
  return w.take();
}

std::optional<job_record> decode_job(std::string_view value) {
  if (!is_binary(value)) return detail::decode(value, &job_from_json);
  job_record r;
  bin_reader in(value);
  std::string metadata;
  in.s(r.id).s(r.tenant).s(r.endpoint).s(r.model).s(r.body).s(metadata);
  in.s(r.idempotency_key).s(r.request_hash).s(r.task_id);
  in.i(r.max_attempts).i(r.attempts).e(r.status, job_status_names.size());
  in.i(r.created_at_ms).i(r.started_at_ms).i(r.finished_at_ms).i(r.updated_at_ms);
  read_result(in, r.result);
  read_error(in, r.error);
  uint64_t dropped = 0;
  in.s(r.webhook_url).i(r.deadline_ms).u(r.event_seq).u(dropped);
  r.input_dropped = dropped != 0;
  uint64_t list = 0;
  in.u(list);
  r.task_list = list != 0;
  auto& c = r.counts;
  in.i(c.total).i(c.queued).i(c.in_progress).i(c.completed).i(c.failed).i(c.cancelled);
  in.i(r.ingested).i(r.next_publish).i(r.live).i(r.window);
  uint64_t errors = 0;
  in.s(r.ingest_path).i(r.ingest_offset).u(errors);
  for (uint64_t i = 0; i < errors && in.more(); ++i) {
    auto& e = r.errors.emplace_back();
    in.s(e.code).s(e.message).s(e.param).i(e.line);
  }
  uint64_t deleted = 0, task_events = 0;
  in.i(r.run).u(deleted).u(task_events).s(r.grants).s(r.trace).s(r.trace_state);
  r.deleted = deleted != 0;
  r.task_events = task_events != 0;
  if (in.corrupt()) return std::nullopt;
  if (!metadata.empty()) {
    r.metadata = json::parse(metadata, nullptr, /*allow_exceptions=*/false);
    if (r.metadata.is_discarded()) return std::nullopt;
  }
  return r;
}

std::string encode_task(const task_record& r) {
  bin_writer w;
  w.s(r.id).s(r.job_id).s(r.tenant).s(r.model);
  w.i(r.index).i(r.attempt).i(r.max_attempts).u(static_cast<uint64_t>(r.state));
  w.i(r.not_before_ms).i(r.queued_at_ms).s(r.last_error);
  if (r.body.empty() && r.custom_id.empty() && r.status == job_status::queued && !r.result &&
      !r.error && r.finished_at_ms == 0 && r.started_at_ms == 0)
    return w.take();  // a single job's task ends here, as in schema 3
  w.s(r.custom_id).s(r.body).u(static_cast<uint64_t>(r.status));
  write_result(w, r.result);
  write_error(w, r.error);
  w.i(r.started_at_ms).i(r.finished_at_ms);
  w.i(r.result_offset).i(r.result_length);
  return w.take();
}

std::optional<task_record> decode_task(std::string_view value) {
  if (!is_binary(value)) return detail::decode(value, &task_from_json);
  task_record r;
  bin_reader in(value);
  in.s(r.id).s(r.job_id).s(r.tenant).s(r.model);
  in.i(r.index).i(r.attempt).i(r.max_attempts).e(r.state, task_state_names.size());
  in.i(r.not_before_ms).i(r.queued_at_ms).s(r.last_error);
  in.s(r.custom_id).s(r.body).e(r.status, job_status_names.size());
  read_result(in, r.result);
  read_error(in, r.error);
  in.i(r.started_at_ms).i(r.finished_at_ms);
  in.i(r.result_offset).i(r.result_length);
  if (in.corrupt()) return std::nullopt;
  return r;
}

std::string encode_lease(const lease_record& r) {
  bin_writer w;
  w.s(r.task_id).i(r.attempt).s(r.token).i(r.expires_at_ms).s(r.holder);
  return w.take();
}

std::optional<lease_record> decode_lease(std::string_view value) {
  if (!is_binary(value)) return detail::decode(value, &lease_from_json);
  lease_record r;
  bin_reader in(value);
  in.s(r.task_id).i(r.attempt).s(r.token).i(r.expires_at_ms).s(r.holder);
  if (in.corrupt()) return std::nullopt;
  return r;
}

std::string encode_event(const event_record& r) {
  bin_writer w;
  write_event(w, r);
  return w.take();
}

std::optional<event_record> decode_event(std::string_view value) {
  if (!is_binary(value)) return detail::decode(value, &event_from_json);
  event_record r;
  bin_reader in(value);
  if (!read_event(in, r)) return std::nullopt;
  return r;
}

std::string encode_outbox(const outbox_record& r) {
  if (const auto* m = std::get_if<rendered_message>(&r.what)) {  // as the build before wrote it
    std::string out(1, outbox_format_v2);
    out.append(m->msg_id).append(1, '\0').append(m->subject).append(1, '\0');
    return out.append(m->payload);
  }
  bin_writer w(outbox_format_v3);
  w.u(r.what.index());
  if (const auto* m = std::get_if<task_message>(&r.what)) {
    w.s(m->queue).s(m->task_id).i(m->attempt).i(m->republished_at_ms);
  } else if (const auto* e = std::get_if<job_event>(&r.what)) {
    write_job_event(w, *e);
  } else if (const auto* t = std::get_if<task_event>(&r.what)) {
    w.s(t->job_id).s(t->task_id).s(t->custom_id).i(t->index).u(static_cast<uint64_t>(t->state));
    w.i(t->attempt);
    write_error(w, t->error);
    write_result(w, t->result);
    w.i(t->at_ms);
  } else if (const auto* d = std::get_if<dead_letter>(&r.what)) {
    w.s(d->job_id).i(d->run).s(d->task_id).s(d->custom_id).s(d->model).i(d->attempts);
    w.s(d->error.code).s(d->error.message).i(d->at_ms);
  }
  return w.take();
}

std::optional<outbox_record> decode_outbox(std::string_view value) {
  outbox_record r;
  if (!value.empty() && value.front() == outbox_format_v3) {
    bin_reader in(value);
    uint64_t kind = 0;
    in.u(kind);
    if (kind == 0) {
      auto& m = r.what.emplace<task_message>();
      in.s(m.queue).s(m.task_id).i(m.attempt).i(m.republished_at_ms);
    } else if (kind == 1) {
      if (!read_job_event(in, r.what.emplace<job_event>())) return std::nullopt;
    } else if (kind == 2) {
      auto& t = r.what.emplace<task_event>();
      in.s(t.job_id).s(t.task_id).s(t.custom_id).i(t.index).e(t.state, job_status_names.size());
      in.i(t.attempt);
      read_error(in, t.error);
      read_result(in, t.result);
      in.i(t.at_ms);
    } else if (kind == 3) {
      auto& d = r.what.emplace<dead_letter>();
      in.s(d.job_id).i(d.run).s(d.task_id).s(d.custom_id).s(d.model).i(d.attempts);
      in.s(d.error.code).s(d.error.message).i(d.at_ms);
    } else {
      return std::nullopt;
    }
    if (in.corrupt()) return std::nullopt;
    return r;
  }
  auto& m = r.what.emplace<rendered_message>();  // written by a build before the typed records
  if (!value.empty() && value.front() == outbox_format_v2) {
    value.remove_prefix(1);
    const auto id_end = value.find('\0');
    if (id_end == std::string_view::npos) return std::nullopt;
    const auto subject_end = value.find('\0', id_end + 1);
    if (subject_end == std::string_view::npos) return std::nullopt;
    m.msg_id = value.substr(0, id_end);
    m.subject = value.substr(id_end + 1, subject_end - id_end - 1);
    m.payload = value.substr(subject_end + 1);
    return r;
  }
  json j = json::parse(value.begin(), value.end(), nullptr, false);  // written before v2
  if (j.is_discarded() || !j.is_object()) return std::nullopt;
  r.seq = get_int<uint64_t>(j, "sq");
  m.msg_id = get_str(j, "id");
  m.subject = get_str(j, "sb");
  m.payload = get_str(j, "pl");
  return r;
}

json to_json(const event_record& r) {
  json j = json::object();
  j["jb"] = r.job_id;
  j["sq"] = r.seq;
  j["st"] = to_string(r.state);
  if (r.previous) j["pv"] = to_string(*r.previous);
  put_int(j, "at", r.at_ms);
  put_int(j, "an", r.attempt);
  if (r.error) j["er"] = json{{"cd", r.error->code}, {"ms", r.error->message}};
  return j;
}

event_record event_from_json(const json& j) {
  event_record r;
  r.job_id = get_str(j, "jb");
  r.seq = get_int<uint64_t>(j, "sq");
  r.state = job_status_from(get_str(j, "st")).value_or(job_status::queued);
  if (j.is_object() && j.contains("pv")) r.previous = job_status_from(get_str(j, "pv"));
  r.at_ms = get_int<int64_t>(j, "at");
  r.attempt = get_int<int>(j, "an");
  if (j.is_object() && j.contains("er") && j["er"].is_object())
    r.error = job_error{get_str(j["er"], "cd"), get_str(j["er"], "ms")};
  return r;
}

std::string encode_webhook(const webhook_record& r) {
  bin_writer w;
  w.u(r.seq).s(r.job_id).s(r.url).s(r.body).i(r.attempts).i(r.next_at_ms).s(r.last_error);
  write_job_event(w, r.event);
  w.s(r.batch_status).i(r.created_at_ms);
  return w.take();
}

std::optional<webhook_record> decode_webhook(std::string_view value) {
  webhook_record r;
  if (is_binary(value)) {
    bin_reader in(value);
    in.u(r.seq).s(r.job_id).s(r.url).s(r.body).i(r.attempts).i(r.next_at_ms).s(r.last_error);
    if (!read_job_event(in, r.event)) return std::nullopt;
    in.s(r.batch_status).i(r.created_at_ms);
    if (in.corrupt()) return std::nullopt;
    return r;
  }
  json j = json::parse(value.begin(), value.end(), nullptr, false);  // a rendered body, before
  if (j.is_discarded() || !j.is_object()) return std::nullopt;
  r.seq = get_int<uint64_t>(j, "sq");
  r.job_id = get_str(j, "jb");
  r.url = get_str(j, "ur");
  r.body = get_str(j, "bd");
  r.attempts = get_int<int>(j, "an");
  r.next_at_ms = get_int<int64_t>(j, "nx");
  r.last_error = get_str(j, "le");
  return r;
}

job_event job_event_of(const job_record& job, event_record ev, int64_t inline_result_bytes) {
  job_event e;
  e.task_list = job.task_list;
  if (job.task_list) e.counts = job.counts;
  if (is_terminal(ev.state) && job.result) {
    if (static_cast<int64_t>(job.result->body.size()) <= inline_result_bytes) {
      e.result = job.result;
    } else {
      e.result_elsewhere = true;
    }
  }
  e.event = std::move(ev);
  return e;
}

job_status shown_status(const job_record& job, const task_record& task) {
  if (task.state == task_state::done || !is_terminal(job.status)) return task.status;
  return job.status == job_status::cancelled ? job_status::cancelled : job_status::failed;
}

}  // namespace sy::storage
