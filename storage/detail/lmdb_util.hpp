#pragma once
/// Private helpers of the LMDB layer (storage/*.cpp only): error translation and value views.

#include <string>
#include <string_view>

#include <lmdb.h>

#include "config/result.hpp"
#include "storage/lmdb_env.hpp"

namespace sy::storage::detail {

/// The database's name in the environment (also used in error messages).
std::string_view db_name(db d);

/// An error saying what was being done and LMDB's own text; MDB_MAP_FULL maps to "map_full".
sy::error lmdb_error(int rc, std::string_view what);

/// A view of `s` as an LMDB value (LMDB does not write through it).
inline MDB_val to_val(std::string_view s) { return MDB_val{s.size(), const_cast<char*>(s.data())}; }

/// A view of an LMDB value.
inline std::string_view to_view(const MDB_val& v) {
  return std::string_view(static_cast<const char*>(v.mv_data), v.mv_size);
}

}  // namespace sy::storage::detail
