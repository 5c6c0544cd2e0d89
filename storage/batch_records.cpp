#include "storage/batch_records.hpp"

#include <algorithm>
#include <array>

namespace sy::storage {
namespace {

using json = nlohmann::json;

constexpr std::array<std::string_view, 8> batch_status_names = {
    "validating", "in_progress", "finalizing", "completed",
    "failed",     "expired",     "cancelling", "cancelled"};

template <class T>
T value_or(const json& j, const char* key, T fallback) {
  auto it = j.find(key);
  if (it == j.end() || it->is_null()) return fallback;
  try {
    return it->get<T>();
  } catch (const json::exception&) {
    return fallback;
  }
}

int64_t number(const json& j, const char* key) {
  auto it = j.find(key);
  return it != j.end() && it->is_number_integer() ? it->get<int64_t>() : 0;
}

}  // namespace

std::string_view to_string(batch_status s) { return batch_status_names[static_cast<size_t>(s)]; }

std::optional<batch_status> batch_status_from(std::string_view s) {
  for (size_t i = 0; i < batch_status_names.size(); ++i)
    if (batch_status_names[i] == s) return static_cast<batch_status>(i);
  return std::nullopt;
}

bool is_terminal(batch_status s) {
  return s == batch_status::completed || s == batch_status::failed || s == batch_status::expired ||
         s == batch_status::cancelled;
}

json to_json(const file_record& r) {
  return json{{"id", r.id},    {"tn", r.tenant},     {"fn", r.filename},  {"pu", r.purpose},
              {"by", r.bytes}, {"ca", r.created_at}, {"ea", r.expires_at}};
}

file_record file_from_json(const json& j) {
  file_record r;
  r.id = value_or<std::string>(j, "id", "");
  r.tenant = value_or<std::string>(j, "tn", "");
  r.filename = value_or<std::string>(j, "fn", "");
  r.purpose = value_or<std::string>(j, "pu", "");
  r.bytes = number(j, "by");
  r.created_at = number(j, "ca");
  r.expires_at = number(j, "ea");
  return r;
}

json to_json(const batch_record& r) {
  json errors = json::array();
  for (const auto& e : r.errors)
    errors.push_back(
        {{"code", e.code}, {"message", e.message}, {"param", e.param}, {"line", e.line}});
  json j{{"id", r.id},
         {"tn", r.tenant},
         {"ep", r.endpoint},
         {"in", r.input_file_id},
         {"cw", r.completion_window},
         {"st", to_string(r.status)},
         {"of", r.output_file_id},
         {"ef", r.error_file_id},
         {"ca", r.created_at},
         {"ipa", r.in_progress_at},
         {"ea", r.expires_at},
         {"fza", r.finalizing_at},
         {"coa", r.completed_at},
         {"fa", r.failed_at},
         {"exa", r.expired_at},
         {"cga", r.cancelling_at},
         {"cda", r.cancelled_at},
         {"dl", r.deadline_ms},
         {"tot", r.total},
         {"ok", r.completed},
         {"ko", r.failed},
         {"er", std::move(errors)},
         {"us", {r.usage.input, r.usage.output, r.usage.total, r.usage.cached, r.usage.reasoning}},
         {"md", r.metadata},
         {"oea", r.output_expires_after},
         {"sc", r.stop_code}};
  if (!r.trace.empty()) j["tp"] = r.trace;
  if (!r.trace_state.empty()) j["ts"] = r.trace_state;
  if (r.max_inflight > 0) j["mi"] = r.max_inflight;
  if (!r.webhook_url.empty()) j["wh"] = r.webhook_url;
  if (r.event_seq > 0) j["es"] = r.event_seq;
  if (r.run > 1) j["rn"] = r.run;
  j["ma"] = r.max_attempts;
  return j;
}

namespace {

/// A batch's usage: `[input, output, total, cached, reasoning]`; before, the object of OpenAI's
/// batch usage (read here so that older stores keep their counts).
token_usage usage_from(const json& u) {
  if (u.is_array()) {
    auto n = [&u](size_t i) {
      return i < u.size() && u[i].is_number_integer() ? u[i].get<int64_t>() : 0;
    };
    return {n(0), n(1), n(2), n(3), n(4)};
  }
  auto in = [&u](const char* key) { return u.is_object() ? u.value(key, json::object()) : json(); };
  return {number(u, "input_tokens"), number(u, "output_tokens"), number(u, "total_tokens"),
          number(in("input_tokens_details"), "cached_tokens"),
          number(in("output_tokens_details"), "reasoning_tokens")};
}

}  // namespace

batch_record batch_from_json(const json& j) {
  batch_record r;
  r.id = value_or<std::string>(j, "id", "");
  r.tenant = value_or<std::string>(j, "tn", "");
  r.endpoint = value_or<std::string>(j, "ep", "");
  r.input_file_id = value_or<std::string>(j, "in", "");
  r.completion_window = value_or<std::string>(j, "cw", "");
  r.status = batch_status_from(value_or<std::string>(j, "st", "")).value_or(batch_status::failed);
  r.output_file_id = value_or<std::string>(j, "of", "");
  r.error_file_id = value_or<std::string>(j, "ef", "");
  r.created_at = number(j, "ca");
  r.in_progress_at = number(j, "ipa");
  r.expires_at = number(j, "ea");
  r.finalizing_at = number(j, "fza");
  r.completed_at = number(j, "coa");
  r.failed_at = number(j, "fa");
  r.expired_at = number(j, "exa");
  r.cancelling_at = number(j, "cga");
  r.cancelled_at = number(j, "cda");
  r.deadline_ms = number(j, "dl");
  r.total = number(j, "tot");
  r.completed = number(j, "ok");
  r.failed = number(j, "ko");
  if (auto it = j.find("er"); it != j.end() && it->is_array())
    for (const auto& e : *it)
      r.errors.push_back(batch_error{value_or<std::string>(e, "code", ""),
                                     value_or<std::string>(e, "message", ""),
                                     value_or<std::string>(e, "param", ""), number(e, "line")});
  if (auto it = j.find("us"); it != j.end()) r.usage = usage_from(*it);
  if (auto it = j.find("md"); it != j.end()) r.metadata = *it;
  r.output_expires_after = number(j, "oea");
  r.stop_code = value_or<std::string>(j, "sc", "");
  r.trace = value_or<std::string>(j, "tp", "");
  r.trace_state = value_or<std::string>(j, "ts", "");
  r.max_inflight = number(j, "mi");
  r.webhook_url = value_or<std::string>(j, "wh", "");
  r.event_seq = value_or<uint64_t>(j, "es", 0);
  r.run = std::max(1, value_or<int>(j, "rn", 1));  // records before reruns: run 1
  r.max_attempts = value_or<int>(j, "ma", r.max_attempts);
  return r;
}

uint64_t batch_slot(uint64_t model_index, uint64_t position) {
  return (model_index << 48) | (position & ((uint64_t{1} << 48) - 1));
}

std::string batch_line_key(std::string_view batch_id, uint64_t slot) {
  std::string key(batch_id);
  key.push_back('/');
  for (int shift = 56; shift >= 0; shift -= 8)
    key.push_back(static_cast<char>((slot >> shift) & 0xff));
  return key;
}

uint64_t batch_line_slot(std::string_view key) {
  if (key.size() < 9) return 0;
  uint64_t slot = 0;
  for (size_t i = key.size() - 8; i < key.size(); ++i)
    slot = (slot << 8) | static_cast<unsigned char>(key[i]);
  return slot;
}

}  // namespace sy::storage
