#include "storage/records.hpp"

#include <array>
#include <utility>

// The codecs use short keys (documented in docs/storage.md) because every job write re-encodes the
// whole record. Encoding omits empty optional fields; decoding never throws: a missing field or a
// field of the wrong type leaves the struct's default, so an older or newer writer's record still
// decodes.

namespace sy::storage {
namespace {

using json = nlohmann::json;

constexpr std::array<std::pair<job_status, std::string_view>, 7> job_status_names{{
    {job_status::queued, "queued"},
    {job_status::in_progress, "in_progress"},
    {job_status::cancelling, "cancelling"},
    {job_status::completed, "completed"},
    {job_status::failed, "failed"},
    {job_status::cancelled, "cancelled"},
    {job_status::expired, "expired"},
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
  put_int(j, "ev", r.event_seq);
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
constexpr char outbox_format_v2 = '\x01';
}  // namespace

std::string encode_outbox(const outbox_record& r) {
  std::string out;
  out.reserve(3 + r.msg_id.size() + r.subject.size() + r.payload.size());
  out.push_back(outbox_format_v2);
  out.append(r.msg_id);
  out.push_back('\0');
  out.append(r.subject);
  out.push_back('\0');
  out.append(r.payload);
  return out;
}

std::optional<outbox_record> decode_outbox(std::string_view value) {
  outbox_record r;
  if (!value.empty() && value.front() == outbox_format_v2) {
    value.remove_prefix(1);
    const auto id_end = value.find('\0');
    if (id_end == std::string_view::npos) return std::nullopt;
    const auto subject_end = value.find('\0', id_end + 1);
    if (subject_end == std::string_view::npos) return std::nullopt;
    r.msg_id = value.substr(0, id_end);
    r.subject = value.substr(id_end + 1, subject_end - id_end - 1);
    r.payload = value.substr(subject_end + 1);
    return r;
  }
  json j = json::parse(value.begin(), value.end(), nullptr, false);  // written before v2
  if (j.is_discarded() || !j.is_object()) return std::nullopt;
  r.seq = get_int<uint64_t>(j, "sq");
  r.msg_id = get_str(j, "id");
  r.subject = get_str(j, "sb");
  r.payload = get_str(j, "pl");
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

json to_json(const webhook_record& r) {
  json j = json::object();
  j["sq"] = r.seq;
  put_str(j, "jb", r.job_id);
  put_str(j, "ur", r.url);
  put_str(j, "bd", r.body);
  put_int(j, "an", r.attempts);
  put_int(j, "nx", r.next_at_ms);
  put_str(j, "le", r.last_error);
  return j;
}

webhook_record webhook_from_json(const json& j) {
  webhook_record r;
  r.seq = get_int<uint64_t>(j, "sq");
  r.job_id = get_str(j, "jb");
  r.url = get_str(j, "ur");
  r.body = get_str(j, "bd");
  r.attempts = get_int<int>(j, "an");
  r.next_at_ms = get_int<int64_t>(j, "nx");
  r.last_error = get_str(j, "le");
  return r;
}

}  // namespace sy::storage
