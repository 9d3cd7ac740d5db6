// Host (OpenMP) backend of scan and segscan, with the CUDA backend's semantics: the input is cut
// into one chunk per thread; each chunk is reduced with the (lifted) operator, the chunk totals
// are scanned in order (so no commutativity is needed), and each chunk is rescanned from its
// prefix.
#pragma once

#include <algorithm>
#include <cstdint>
#include <vector>

#include "core/host_parallel.hpp"

#include "core/scan/lifted.hpp"

namespace soac::detail {

template <bool Seg, bool Inclusive, class Op, class F, class G>
void scan_host(std::int64_t n, F f, G flags, typename Op::value_type* out, Op op) {
  using T = typename Op::value_type;
  using V = scan_value_t<Seg, T>;
  const scan_operator<Seg, Op> sop{op};
  const std::int64_t chunks = host_workers(n, 16384);
  const std::int64_t chunk = (n + chunks - 1) / chunks;
  std::vector<V> totals(static_cast<std::size_t>(chunks), sop.identity());
  constexpr int batch = 256;  // elements scanned per scan_items call (stack buffers)

#pragma omp parallel for schedule(static, 1)
  for (std::int64_t c = 0; c < chunks; ++c) {
    const std::int64_t lo = c * chunk, hi = std::min(n, lo + chunk);
    V acc = sop.identity();
    for (std::int64_t i = lo; i < hi; ++i) acc = sop(acc, sop.make(static_cast<T>(f(i)), Seg ? bool(flags(i)) : false));
    totals[static_cast<std::size_t>(c)] = acc;
  }
  V prefix = sop.identity();
  for (auto& t : totals) {
    const V next = sop(prefix, t);
    t = prefix;
    prefix = next;
  }
#pragma omp parallel for schedule(static, 1)
  for (std::int64_t c = 0; c < chunks; ++c) {
    const std::int64_t lo = c * chunk, hi = std::min(n, lo + chunk);
    V running = totals[static_cast<std::size_t>(c)];
    T items[batch];
    bool fl[batch];
    for (std::int64_t b = lo; b < hi; b += batch) {
      const int count = static_cast<int>(std::min<std::int64_t>(batch, hi - b));
      for (int j = 0; j < count; ++j) {
        items[j] = static_cast<T>(f(b + j));
        fl[j] = Seg ? bool(flags(b + j)) : false;
      }
      // The running prefix after this batch, before items are overwritten by their results.
      V next = running;
      for (int j = 0; j < count; ++j) next = sop(next, sop.make(items[j], fl[j]));
      scan_items<Seg, Inclusive, Op, T>(sop, running, items, fl, count);
      running = next;
      for (int j = 0; j < count; ++j) out[b + j] = items[j];
    }
  }
}

}  // namespace soac::detail
