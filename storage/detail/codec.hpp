#pragma once
/// The compact-JSON codec shared by the typed accessors (typed_access.cpp, batch_ops.cpp) and the
/// readers of values written before schema 3 (records.cpp).
/// Private to storage/.

#include <optional>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

namespace sy::storage::detail {

/// Compact JSON. Invalid UTF-8 (e.g. in a gateway's body) is replaced rather than thrown on.
inline std::string encode(const nlohmann::json& j) {
  return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

/// Parses a stored value without throwing; a value that is not a JSON object reads as absent.
template <class Record>
std::optional<Record> decode(std::string_view v, Record (*from)(const nlohmann::json&)) {
  auto j = nlohmann::json::parse(v.begin(), v.end(), nullptr, false);
  if (j.is_discarded() || !j.is_object()) return std::nullopt;
  return from(j);
}

/// The same for a value that may be missing.
template <class Record>
std::optional<Record> decode(const std::optional<std::string>& v,
                             Record (*from)(const nlohmann::json&)) {
  if (!v) return std::nullopt;
  return decode(std::string_view(*v), from);
}

}  // namespace sy::storage::detail
