// Shared by the OpenMP host backends: how many workers to split n elements over.
#pragma once

#include <algorithm>
#include <cstdint>
#include <limits>

#ifdef _OPENMP
#include <omp.h>
#endif

namespace soac::detail {

inline int host_max_threads() {
#ifdef _OPENMP
  return omp_get_max_threads();
#else
  return 1;
#endif
}

// This thread's index inside a parallel region (0 outside one or without OpenMP).
inline int host_thread_index() {
#ifdef _OPENMP
  return omp_get_thread_num();
#else
  return 0;
#endif
}

// Workers (threads, or contiguous chunks of one each) for n elements: at most one per OpenMP
// thread, at most `cap` (e.g. what a memory budget allows), and none with fewer than
// min_per_worker elements, below which scheduling costs more than the split gains. At least 1.
inline std::int64_t host_workers(std::int64_t n, std::int64_t min_per_worker,
                                 std::int64_t cap = std::numeric_limits<std::int64_t>::max()) {
  return std::max<std::int64_t>(1, std::min({std::int64_t{host_max_threads()}, cap, n / min_per_worker}));
}

}  // namespace soac::detail
