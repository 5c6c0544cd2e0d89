#include "runtime/backoff.hpp"

#include <algorithm>
#include <cmath>

namespace sy::runtime {

int64_t backoff_delay_ms(int retry, int64_t initial_ms, int64_t max_ms, double jitter01) {
  if (initial_ms <= 0) return 0;
  const int64_t cap = std::max(max_ms, initial_ms);
  int64_t base = initial_ms;
  // Doubling stops at the cap, which also keeps the multiplication from overflowing.
  for (int i = 0; i < retry && base < cap; ++i) base = base > cap / 2 ? cap : base * 2;
  base = std::min(base, cap);
  if (!(jitter01 >= 0.0)) jitter01 = 0.0;  // also maps NaN to 0
  jitter01 = std::min(jitter01, 1.0);
  const int64_t half = base / 2;
  const int64_t fixed = base - half;
  // The double product can round above `half` for huge values; clamp so the sum cannot overflow.
  const double scaled = std::floor(static_cast<double>(half) * jitter01);
  const int64_t random_part =
      scaled >= static_cast<double>(half) ? half : static_cast<int64_t>(scaled);
  return fixed + random_part;
}

bool retryable_status(int status_code) {
  return status_code == 408 || status_code == 429 || (status_code >= 500 && status_code <= 599);
}

}  // namespace sy::runtime
