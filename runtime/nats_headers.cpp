#include "runtime/nats_headers.hpp"

#include <algorithm>
#include <array>
#include <cctype>
#include <cstdlib>

#include <nats/nats.h>

namespace sy::runtime {
namespace {

/// The headers whose empty value nats.c could have merged with the next line (see the header).
constexpr std::array<std::string_view, 7> read_by_the_engine = {"Authorization",
                                                                "Idempotency-Key",
                                                                "Nats-Msg-Id",
                                                                "Sy-Reply-To",
                                                                "traceparent",
                                                                "tracestate",
                                                                "X-Switchyard-Task-Capability"};

bool present(const std::vector<std::pair<std::string, std::string>>& headers,
             std::string_view name) {
  return std::any_of(headers.begin(), headers.end(),
                     [&](const auto& h) { return same_header(h.first, name); });
}

/// Takes back apart a value nats.c merged with the next header line: `name: rest`.
void repair(std::vector<std::pair<std::string, std::string>>& headers) {
  const size_t n = headers.size();
  for (size_t i = 0; i < n; ++i) {
    const std::string value = headers[i].second;
    const size_t colon = value.find(':');
    if (colon == std::string::npos) continue;
    const std::string_view name(value.data(), colon);
    const auto known = std::find_if(read_by_the_engine.begin(), read_by_the_engine.end(),
                                    [&](std::string_view k) { return same_header(k, name); });
    if (known == read_by_the_engine.end() || present(headers, name)) continue;
    size_t rest = colon + 1;
    while (rest < value.size() && (value[rest] == ' ' || value[rest] == '\t')) ++rest;
    headers[i].second.clear();
    headers.emplace_back(std::string(name), value.substr(rest));
  }
}

}  // namespace

bool same_header(std::string_view a, std::string_view b) {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
           return std::tolower(static_cast<unsigned char>(x)) ==
                  std::tolower(static_cast<unsigned char>(y));
         });
}

std::vector<std::pair<std::string, std::string>> read_nats_headers(natsMsg* msg) {
  std::vector<std::pair<std::string, std::string>> out;
  if (msg == nullptr) return out;
  const char** keys = nullptr;
  int count = 0;
  if (natsMsgHeader_Keys(msg, &keys, &count) != NATS_OK) return out;  // none, or unreadable
  for (int i = 0; i < count; ++i) {
    const char** values = nullptr;
    int n = 0;
    if (natsMsgHeader_Values(msg, keys[i], &values, &n) != NATS_OK) continue;
    for (int j = 0; j < n; ++j)
      if (values[j] != nullptr) out.emplace_back(keys[i], values[j]);
    free(static_cast<void*>(values));  // nats.c allocates the array, not the strings
  }
  free(static_cast<void*>(keys));
  repair(out);
  return out;
}

}  // namespace sy::runtime
