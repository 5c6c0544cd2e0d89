#pragma once
/// Names the calling thread (up to 15 characters), so that top -H, perf and the benchmarks'
/// per-thread CPU report say which of the engine's threads is busy.

#include <pthread.h>

namespace sy::runtime {

inline void name_this_thread(const char* name) { ::pthread_setname_np(::pthread_self(), name); }

}  // namespace sy::runtime
