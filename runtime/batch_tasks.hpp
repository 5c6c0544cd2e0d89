#pragma once
/// What reading a batch's lines as tasks needs of its ids (docs/batches.md, "A batch as a job"):
/// the input offset a request id names (request ids are a bijection of the offset, runtime/
/// batch_render.hpp), and the request id a result line carries. The files themselves are read
/// with runtime/line_reader.hpp.
///
/// Pure; call from any thread.

#include <array>
#include <cstdint>
#include <optional>
#include <string_view>

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

}  // namespace sy::runtime::batch
