#include "runtime/batch_render.hpp"

#include <vector>

#include <nlohmann/json.hpp>

#include "config/error_codes.hpp"
#include "config/sha256.hpp"

namespace sy::runtime::batch {

using json = nlohmann::json;

uint64_t mix64(uint64_t x) {
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

std::array<uint64_t, 2> request_id_seed(const std::string& batch_id) {
  const std::string digest = config::sha256_hex(batch_id);
  return {std::stoull(digest.substr(0, 16), nullptr, 16),
          std::stoull(digest.substr(16, 16), nullptr, 16)};
}

std::string request_id_for(const std::array<uint64_t, 2>& seed, uint64_t offset) {
  static constexpr char hex[] = "0123456789abcdef";
  std::string id = "batch_req_";
  id.resize(id.size() + 32);
  char* p = id.data() + 10;
  for (uint64_t v : {mix64(seed[0] ^ offset), mix64(seed[1] + offset)})
    for (int shift = 60; shift >= 0; shift -= 4) *p++ = hex[(v >> shift) & 0xf];
  return id;
}

std::string stop_message(const std::string& code) {
  if (code == errc::batch_expired)
    return "This request could not be executed before the completion window expired.";
  if (code == errc::batch_cancelled)
    return "This request was not executed: the batch was cancelled.";
  return "This request was not executed: the batch failed.";
}

std::string error_line(const std::string& id, const std::string& custom_id, const std::string& code,
                       const std::string& message) {
  json line = {{"id", id},
               {"custom_id", custom_id.empty() ? json(nullptr) : json(custom_id)},
               {"response", nullptr},
               {"error", {{"code", code}, {"message", message}}}};
  return line.dump(-1, ' ', false, json::error_handler_t::replace);
}

std::string lost_message(const line_counts& n, const std::string& stop_code,
                         const std::string& undrained, const std::string& output_failure,
                         const std::string& error_failure, int tries) {
  const std::string after = "after " + std::to_string(tries) + " tries: ";
  std::vector<std::string> parts;
  if (!undrained.empty())
    parts.push_back("cannot record the " + std::to_string(n.total - n.completed - n.failed) +
                    " requests that have no result as " + stop_code + " (" + undrained +
                    "); they are in neither file");
  if (!output_failure.empty())
    parts.push_back("cannot write the output file of " + std::to_string(n.completed) + " lines (" +
                    after + output_failure + "); those results are lost");
  if (!error_failure.empty())
    parts.push_back("cannot write the error file of " + std::to_string(n.failed) + " lines (" +
                    after + error_failure + "); those lines are lost");
  if (parts.empty()) return "";
  std::string m = "The batch could not be finalized: ";
  for (size_t i = 0; i < parts.size(); ++i) m += (i > 0 ? "; " : "") + parts[i];
  return m + ".";
}

}  // namespace sy::runtime::batch
