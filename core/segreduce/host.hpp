// Host (OpenMP) backend of segreduce: the same semantics as the CUDA kernels. Every segment is
// folded in index order (per thread, then the threads' partials in thread order), so
// non-commutative operators give the sequential result.
#pragma once

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

namespace soac::detail {

// Segments at least this many times the thread count run one segment per iteration; fewer (and
// long) segments are each split across all threads.
inline constexpr std::int64_t host_segments_per_thread = 4;
inline constexpr std::int64_t host_min_split = 1 << 14;  // shorter segments are not worth splitting

template <class Op, class F>
typename Op::value_type host_fold(const F& f, const Op& op, std::int64_t s, std::int64_t lo, std::int64_t hi) {
  using T = typename Op::value_type;
  T acc = Op::identity();
  for (std::int64_t j = lo; j < hi; ++j) acc = op(acc, static_cast<T>(f(s, j)));
  return acc;
}

// Returns what it did, for the plan's description.
template <class Op, class F>
const char* segreduce_host(int threads, std::int64_t m, std::int64_t n, F f, typename Op::value_type* out, Op op) {
  using T = typename Op::value_type;
  threads = std::max(1, threads);
  if (m >= host_segments_per_thread * threads || n < host_min_split) {
#pragma omp parallel for schedule(static)
    for (std::int64_t s = 0; s < m; ++s) out[s] = host_fold(f, op, s, 0, n);
    return "one thread per segment";
  }
  std::vector<T> parts(static_cast<std::size_t>(threads), Op::identity());
  const std::int64_t chunk = (n + threads - 1) / threads;
  for (std::int64_t s = 0; s < m; ++s) {
#pragma omp parallel for schedule(static)
    for (int p = 0; p < threads; ++p)
      parts[std::size_t(p)] = host_fold(f, op, s, std::min(n, p * chunk), std::min(n, (p + 1) * chunk));
    T acc = Op::identity();
    for (const T& v : parts) acc = op(acc, v);
    out[s] = acc;
  }
  return "each segment split across the threads";
}

}  // namespace soac::detail
