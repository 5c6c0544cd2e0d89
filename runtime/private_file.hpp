#pragma once
/// Secrets the engine keeps in its data dir (the webhook signing secret, the capability tokens'
/// signing keys) are written whole or not at all, readable by the engine's user only.

#include <string>
#include <string_view>

namespace sy::runtime {

/// Writes `text` to `path` with mode 0600: a temp file beside it (`path`.tmp) written whole and
/// fsync'd, renamed over `path`, then the directory fsync'd, so that a crash leaves the old file
/// or the new one. Returns "" on success, else what failed and why (with the path).
std::string write_private_file(const std::string& path, std::string_view text);

}  // namespace sy::runtime
