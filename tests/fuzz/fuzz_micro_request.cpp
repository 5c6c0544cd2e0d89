/// fuzz_micro_request: a `sy.api.jobs.create` request of the NATS micro service (docs/nats.md)
/// as api/nats_service.cpp hands it to admission (api/admission.hpp, admission::job): its
/// headers and its payload, judged as an HTTP body of the same bytes is. The same request is
/// also judged as the JetStream intake judges it (its key in `Nats-Msg-Id`): both surfaces must
/// agree on everything but the header's name.
///
/// Input: three lines — the Authorization, Idempotency-Key and traceparent headers (a line that
/// starts with '+' is the value after the '+'; any other line means no header) — then the
/// payload.

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "actors/submission.hpp"
#include "api/admission.hpp"
#include "config/sha256.hpp"
#include "tests/fuzz/fuzz_support.hpp"

namespace {

using sy::fuzz::check;
using sy::fuzz::next_line;

std::optional<std::string_view> header(std::string_view line) {
  if (line.empty() || line.front() != '+') return std::nullopt;
  return line.substr(1);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const sy::api::admission admit{[] {
    sy::config::settings s;
    s.max_body_bytes = 64 * 1024;  // within reach of the fuzzer, on both sides
    s.api_keys = {{sy::config::sha256_hex("sk-fuzz"), "fuzz"}};
    return s;
  }()};
  std::string_view rest = sy::fuzz::as_text(data, size);
  sy::api::client_request micro;
  micro.authorization = header(next_line(rest));
  micro.idempotency_key = header(next_line(rest));
  micro.traceparent = header(next_line(rest));
  micro.body = rest;
  sy::api::client_request intake = micro;
  intake.idempotency_param = "Nats-Msg-Id";

  auto a = admit.job(micro);
  auto b = admit.job(intake);
  check(a.ok() == b.ok(), "the micro service and the intake disagree");
  if (!a) {
    sy::fuzz::check_client_error(a.error());
    check(sy::api::error_body(a.error()).size() < 16 * 1024, "an error answer echoes its input");
    check(a.error().code == b.error().code, "the two surfaces give different codes");
    if (a.error().code == "body_too_large") check(rest.size() > 64 * 1024, "413 within the limit");
    return 0;
  }
  check(rest.size() <= 64 * 1024, "a payload over max_body_bytes was admitted");
  check((*a)->tenant == "fuzz", "admitted for another tenant");
  check((*a)->idempotency_key == micro.idempotency_key.value_or(""), "the key is not the header");
  check(sy::actors::request_hash(**a) == sy::actors::request_hash(**b), "the hashes differ");
  return 0;
}
