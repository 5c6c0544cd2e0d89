#pragma once
/// Crash points for system tests: `kill -9` at an exact moment instead of a lucky one.
///
/// A failpoint is a named place in the code. When the environment variable `SY_FAILPOINTS`
/// (comma-separated names) names it, reaching it logs `failpoint hit` and kills the process
/// with SIGKILL — what `kill -9` from outside does, only at a chosen instant. Without the
/// variable (every real deployment) a failpoint costs one branch on a flag read once.
/// The names in use are listed in tests/README.md.

#include <string_view>

namespace sy::runtime {

/// Dies by SIGKILL here if `SY_FAILPOINTS` names `name`; otherwise does nothing.
void failpoint(std::string_view name);

}  // namespace sy::runtime
