#pragma once
/// The CAF side of storage/inspect.hpp: how CAF 0.17's deserializers report a value they cannot
/// take (an unknown variant index, JSON that does not parse, a record encoding that does not
/// decode) — as `sec::invalid_argument` with what was wrong. Included by every header that
/// declares a message carrying storage values (actors/storage_writer.hpp), so a translation unit
/// that makes such a message (and so instantiates its loading code) always sees it.

#include <string>
#include <type_traits>

#include <caf/deserializer.hpp>
#include <caf/error.hpp>
#include <caf/sec.hpp>

#include "storage/inspect.hpp"

namespace sy::storage {

template <class Inspector>
struct inspect_failure<Inspector,
                       std::enable_if_t<std::is_base_of_v<caf::deserializer, Inspector>>> {
  static caf::error make(const char* what) {
    return caf::make_error(caf::sec::invalid_argument, std::string(what));
  }
};

}  // namespace sy::storage
