#include "storage/events.hpp"

namespace sy::storage {

using nlohmann::json;

json event_payload(const job_record& job, const event_record& ev, int64_t inline_result_bytes) {
  json out = {{"job_id", ev.job_id},
              {"sequence", ev.seq},
              {"state", std::string(to_string(ev.state))},
              {"previous_state",
               ev.previous ? json(std::string(to_string(*ev.previous))) : json(nullptr)},
              {"timestamp", ev.at_ms / 1000},
              {"timestamp_ms", ev.at_ms},
              {"attempt", ev.attempt},
              {"error", ev.error ? json{{"code", ev.error->code}, {"message", ev.error->message}}
                                 : json(nullptr)},
              {"result", nullptr}};
  if (is_terminal(ev.state) && job.result) {
    const auto& r = *job.result;
    if (static_cast<int64_t>(r.body.size()) <= inline_result_bytes) {
      json body = json::parse(r.body, nullptr, /*allow_exceptions=*/false);
      if (body.is_discarded()) body = r.body;
      out["result"] = {{"status_code", r.status_code}, {"body", std::move(body)}};
    } else {
      out["result_url"] = "/v1/jobs/" + job.id;
    }
  }
  return out;
}

std::string event_subject(std::string_view subject_prefix, const event_record& ev) {
  return std::string(subject_prefix) + ".jobs." + ev.job_id + "." +
         std::string(to_string(ev.state));
}

}  // namespace sy::storage
