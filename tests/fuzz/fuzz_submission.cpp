/// fuzz_submission: a `POST /v1/jobs` body (the same document a NATS submission carries) as the
/// API reads it: runtime::parse_strict_json (admission's parser), then actors::parse_submission,
/// then actors::request_hash; every error is rendered with api::error_body as a client would get
/// it.
///
/// Input: the body's bytes.

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>

#include "actors/submission.hpp"
#include "runtime/strict_json.hpp"
#include "tests/fuzz/fuzz_support.hpp"

namespace {

using nlohmann::json;
using sy::fuzz::check;

bool is_lower_hex(std::string_view s) {
  for (char c : s)
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
  return true;
}

/// What parse_submission promises of a submission it accepts (actors/submission.hpp).
void check_submission(const sy::actors::submission& s) {
  check(s.endpoint == "/v1/chat/completions" || s.endpoint == "/v1/embeddings" ||
            s.endpoint == "/v1/completions",
        "accepted an unknown endpoint");
  // The body travels as its JSON text: it parses back to an object whose model it names.
  const json body = json::parse(s.body, nullptr, false);
  check(body.is_object(), "accepted a body that is not an object, or whose text does not parse");
  auto model = body.find("model");
  check(model != body.end() && model->is_string() &&
            !model->get_ref<const std::string&>().empty() &&
            model->get_ref<const std::string&>() == s.model,
        "accepted a body without a non-empty model, or carried another model");
  check(s.metadata.is_object(), "metadata is not an object");
  check(s.max_attempts >= 0 && s.max_attempts <= sy::actors::default_max_attempts_cap,
        "max_attempts out of range");
  check(s.timeout_ms >= 0, "negative timeout");
}

/// The hash depends on the request's content only: the same submission rebuilt from its dumped
/// body and metadata, for another tenant and key, hashes the same.
void check_hash(const sy::actors::submission& s) {
  const std::string hash = sy::actors::request_hash(s);
  check(hash.size() == 64 && is_lower_hex(hash), "request_hash is not 64 lowercase hex digits");
  auto reparse = [](const json& j) {
    return json::parse(j.dump(-1, ' ', false, json::error_handler_t::replace), nullptr, false);
  };
  sy::actors::submission again = s;
  again.tenant = "other";
  again.idempotency_key = "other";
  again.body = reparse(json::parse(s.body, nullptr, false))
                   .dump(-1, ' ', false, json::error_handler_t::replace);
  again.metadata = reparse(s.metadata);
  check(sy::actors::request_hash(again) == hash, "request_hash changed over a dump/parse trip");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  auto doc = sy::runtime::parse_strict_json(sy::fuzz::as_text(data, size));
  if (!doc) {
    sy::fuzz::check_client_error(doc.error());
    return 0;
  }
  auto sub = sy::actors::parse_submission(std::move(*doc), "fuzz", "fuzz-key");
  if (!sub) {
    sy::fuzz::check_client_error(sub.error());
    return 0;
  }
  check_submission(*sub);
  check_hash(*sub);
  return 0;
}
