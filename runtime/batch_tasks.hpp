#pragma once
/// What reading a batch's lines as tasks needs of its files (docs/batches.md, "A batch as a
/// job"): a streaming pass over a JSONL file that yields each line with its byte offset, the
/// input offset a request id names (request ids are a bijection of the offset, runtime/
/// batch_render.hpp), and the request id a result line carries. Memory: one line at a time (a
/// line is gathered whole, bounded by the file's longest line) and the stream's buffer.
///
/// Threading: none of its own; call from any thread.

#include <array>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>

#include "config/result.hpp"

namespace sy::runtime::batch {

/// The inverse of mix64 (runtime/batch_render.hpp).
uint64_t unmix64(uint64_t x);

/// The input offset of the request whose id (request_id_for) is `id` in the batch of `seed`, or
/// nothing when `id` is not a request id of that batch.
std::optional<uint64_t> request_offset(const std::array<uint64_t, 2>& seed, std::string_view id);

/// The input offset of the request a result line (of the batch's output or error file, or of
/// db::batch_lines) answers, read from its "id"; nothing when it has none of that batch. The
/// first `"id":"` of a line is its own: a result line is an object whose "id" comes before any
/// value that could hold another (error lines: keys in name order, before "response").
std::optional<uint64_t> result_line_offset(const std::array<uint64_t, 2>& seed,
                                           std::string_view line);

/// Whether a line holds only spaces, tabs and '\r' (ingestion skips it: not a request line).
bool is_blank_line(std::string_view line);

/// Visits the lines of `path` from byte `from` (a line's start) in order: fn(offset, text), the
/// text without its "\n" or "\r\n"; fn returns false to stop. Error batch_io_error when the file
/// cannot be opened or read.
sy::status for_each_line(const std::string& path, uint64_t from,
                         const std::function<bool(uint64_t, std::string_view)>& fn);

}  // namespace sy::runtime::batch
