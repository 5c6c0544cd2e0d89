#pragma once
/// The admin commands of the `switchyard` binary that talk to a running engine over its internal
/// listener (config/cli.hpp): one blocking HTTP exchange each, bounded in time.

#include <string>

namespace sy::runtime {

/// `switchyard keys rotate`: POST /internal/keys/rotate at `url` (http://host:port) with
/// `admin_key` (empty: none). Prints the answer (the JWKS after the rotation) to stdout and
/// returns 0, or prints what failed and why to stderr and returns 1.
int keys_rotate(const std::string& url, const std::string& admin_key);

}  // namespace sy::runtime
