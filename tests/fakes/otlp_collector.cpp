#include "tests/fakes/otlp_collector.hpp"

#include <map>

namespace sy::fakes {
namespace {

using nlohmann::json;

bool hex_of(const std::string& s, size_t n) {
  return s.size() == n && s.find_first_not_of("0123456789abcdef") == std::string::npos;
}

std::string attribute_text(const json& v) {
  if (v.contains("stringValue")) return v["stringValue"].get<std::string>();
  if (v.contains("intValue"))
    return v["intValue"].is_string() ? v["intValue"].get<std::string>() : v["intValue"].dump();
  return v.dump();
}

/// The spans of one OTLP/JSON export body; false when it is not one.
bool read_export(const json& body, std::vector<collected_span>& out) {
  if (!body.is_object() || !body.contains("resourceSpans") || !body["resourceSpans"].is_array())
    return false;
  for (const auto& rs : body["resourceSpans"]) {
    std::string service;
    for (const auto& a : rs.value("resource", json::object()).value("attributes", json::array()))
      if (a.value("key", "") == "service.name") service = attribute_text(a["value"]);
    for (const auto& ss : rs.value("scopeSpans", json::array())) {
      for (const auto& s : ss.value("spans", json::array())) {
        collected_span c;
        c.trace_id = s.value("traceId", "");
        c.span_id = s.value("spanId", "");
        c.parent_span_id = s.value("parentSpanId", "");
        c.name = s.value("name", "");
        c.kind = s.value("kind", 0);
        c.start_ns = std::stoll(s.value("startTimeUnixNano", "0"));
        c.end_ns = std::stoll(s.value("endTimeUnixNano", "0"));
        c.status_code = s.value("status", json::object()).value("code", 0);
        for (const auto& a : s.value("attributes", json::array()))
          c.attributes[a.value("key", "")] = attribute_text(a["value"]);
        c.service = service;
        out.push_back(std::move(c));
      }
    }
  }
  return true;
}

}  // namespace

otlp_collector::otlp_collector() : rx_(webhook_receiver_options{}) {}

std::string otlp_collector::start() { return rx_.start(); }

std::vector<collected_span> otlp_collector::spans() const {
  std::vector<collected_span> out;
  for (const auto& d : rx_.deliveries())
    if (d.answered == 200 && d.path == "/v1/traces") read_export(d.body, out);
  return out;
}

std::vector<collected_span> otlp_collector::named(const std::string& name) const {
  std::vector<collected_span> out;
  for (auto& s : spans())
    if (s.name == name) out.push_back(std::move(s));
  return out;
}

std::string otlp_collector::link_problems(const std::set<std::string>& external) const {
  const auto all = spans();
  std::map<std::string, std::string> trace_of;  // span id → trace id
  std::string problems;
  for (const auto& s : all) {
    if (!hex_of(s.trace_id, 32) || !hex_of(s.span_id, 16))
      problems += "malformed ids in " + s.name + "; ";
    if (!trace_of.emplace(s.span_id, s.trace_id).second)
      problems += "span id " + s.span_id + " seen twice; ";
  }
  for (const auto& s : all) {
    if (s.parent_span_id.empty() || external.count(s.parent_span_id) != 0) continue;
    auto it = trace_of.find(s.parent_span_id);
    if (it == trace_of.end())
      problems += s.name + "'s parent " + s.parent_span_id + " was never received; ";
    else if (it->second != s.trace_id)
      problems += s.name + "'s parent is in another trace; ";
    if (s.end_ns < s.start_ns) problems += s.name + " ends before it starts; ";
  }
  return problems;
}

int64_t otlp_collector::malformed() const {
  int64_t n = 0;
  std::vector<collected_span> ignored;
  for (const auto& d : rx_.deliveries())
    if (d.path != "/v1/traces" || !read_export(d.body, ignored)) ++n;
  return n;
}

}  // namespace sy::fakes
