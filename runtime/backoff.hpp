#pragma once
/// Retry timing and classification for calls to gateways (and anything else that retries).
/// Pure functions: the caller supplies the randomness, so tests are exact.

#include <cstdint>

namespace sy::runtime {

/// The delay before retry number `retry` (0-based: 0 is the first retry).
/// Exponential growth `base = min(initial_ms * 2^retry, max_ms)` with "equal jitter": half of
/// `base` is fixed and the other half is scaled by `jitter01` (in [0, 1], clamped), so the result
/// lies in [ceil(base/2), base]. Spreading retries this way keeps many clients that failed together
/// from retrying together, while still guaranteeing a minimum wait. Never overflows; returns 0 when
/// `initial_ms <= 0`.
int64_t backoff_delay_ms(int retry, int64_t initial_ms, int64_t max_ms, double jitter01);

/// Whether an HTTP status is worth retrying: 408 (request timeout), 429 (rate limited) and every
/// 5xx. Every other status is final: the gateway understood the request and rejected it.
bool retryable_status(int status_code);

}  // namespace sy::runtime
