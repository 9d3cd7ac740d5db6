// Host (OpenMP) backend of hist: the same semantics as the CUDA strategies. Each thread owns a
// private sub-histogram (no atomics needed), then the sub-histograms are folded into the
// destination bin by bin, in thread order.
#pragma once

#include <algorithm>
#include <cstdint>
#include <vector>

#include "core/host_parallel.hpp"

#include "core/hist/update.hpp"

namespace soac::detail {

// Private sub-histograms beyond this many bytes in all use fewer threads instead.
inline constexpr std::size_t host_sub_histogram_budget = std::size_t{512} << 20;

template <class Op, class F>
int hist_host(std::int64_t n, F f, typename Op::value_type* histo, std::int64_t H) {
  using V = typename Op::value_type;
  using R = decltype(f(std::int64_t{0}));
  using U = updates_of<R>;
  if (n == 0 || H == 0) return 0;
  const std::size_t per = std::size_t(H) * sizeof(V);
  const int threads = int(host_workers(n, 1024, std::int64_t(host_sub_histogram_budget / std::max<std::size_t>(per, 1))));
  const Op op{};
  const auto update = [&](V* dest, std::int64_t i) {
    const R r = f(i);
    for (int k = 0; k < U::count; ++k) {
      const auto& u = U::get(r, k);
      if (u.bin >= 0 && u.bin < H) dest[u.bin] = op(dest[u.bin], static_cast<V>(u.value));
    }
  };
  if (threads == 1) {
    // One thread updates the destination itself: no copy of a histogram that may be most of memory.
    for (std::int64_t i = 0; i < n; ++i) update(histo, i);
    return 1;
  }
  std::vector<V> subs(std::size_t(threads) * H, Op::identity());
#pragma omp parallel num_threads(threads)
  {
    V* mine = subs.data() + std::size_t(host_thread_index()) * H;
#pragma omp for schedule(static)
    for (std::int64_t i = 0; i < n; ++i) update(mine, i);
  }
#pragma omp parallel for schedule(static) num_threads(threads)
  for (std::int64_t b = 0; b < H; ++b) {
    V acc = histo[b];
    for (int t = 0; t < threads; ++t) acc = op(acc, subs[std::size_t(t) * H + b]);
    histo[b] = acc;
  }
  return threads;
}

}  // namespace soac::detail
