#pragma once
/// The text of a batch's result lines and failure messages (docs/batches.md): the request id
/// each line carries, the error line of a request that got no response, what a line stopped by
/// cancel, expiry or failure says, and the batch_failed message of a finalization that gave up.
/// Pure functions; the line of a gateway response is rendered by actors/batch_response.hpp (it
/// needs storage's JSON writer and usage type).
///
/// Threading: none of its own; call from any thread.

#include <array>
#include <cstdint>
#include <string>

namespace sy::runtime::batch {

/// SplitMix64's finalizer: a bijection on 64-bit values that mixes every input bit.
uint64_t mix64(uint64_t x);

/// A batch's seed for request ids: the first 16 bytes of SHA-256 of its id.
std::array<uint64_t, 2> request_id_seed(const std::string& batch_id);

/// The id OpenAI shows for one request of a batch ("batch_req_" and 32 hex digits), from the
/// batch's seed and the line's input offset: deterministic, so a line recorded again after a
/// crash carries the same id, and distinct for distinct offsets (mix64 is a bijection) — at the
/// cost of two multiplications instead of a SHA-256 per request.
std::string request_id_for(const std::array<uint64_t, 2>& seed, uint64_t offset);

/// The message of a line that was never run, for the batch's stop code (batch_expired,
/// batch_cancelled; anything else reads as a failed batch).
std::string stop_message(const std::string& code);

/// An error line: {"id","custom_id","response":null,"error":{"code","message"}}. An empty
/// `custom_id` (unknown: the input file became unreadable before the line was drained) is null.
std::string error_line(const std::string& id, const std::string& custom_id, const std::string& code,
                       const std::string& message);

/// A batch's line counts, as its record keeps them.
struct line_counts {
  int64_t total = 0;      ///< request lines
  int64_t completed = 0;  ///< lines in the output file
  int64_t failed = 0;     ///< lines in the error file
};

/// The batch_failed message of a finalization that gave up: what is missing from the files and
/// why; "" when nothing is. `undrained`: why the drain of the lines without a result (to be
/// recorded as `stop_code`) gave up, with its tries, if it did; `output_failure`,
/// `error_failure`: why a file could not be written, if it could not, after `tries` tries.
std::string lost_message(const line_counts& n, const std::string& stop_code,
                         const std::string& undrained, const std::string& output_failure,
                         const std::string& error_failure, int tries);

}  // namespace sy::runtime::batch
