// The global-memory strategy's kernels: M sub-histograms sized to L2 updated with the kind's
// atomics, then folded into the destination.
#pragma once

#include <cstdint>

#include "core/hist/block.cuh"

namespace soac::detail {

// One pass of the global-memory strategy: thread t updates sub-histogram t % M (chunk bins each).
template <atomic_kind K, int Items, class Op, update_mode Mode, class F>
__global__ void __launch_bounds__(hist_tuning::global_block)
    hist_global_kernel(std::int64_t n, F f, typename Op::value_type* subs, int* locks, std::int64_t H,
                       std::int64_t off, std::int64_t chunk, int M) {
  const std::int64_t gtid = std::int64_t{blockIdx.x} * blockDim.x + threadIdx.x;
  const std::int64_t lhid = (gtid % M) * chunk;
  const std::int64_t limit = std::min<std::int64_t>(chunk, H - off);
  auto* mine = subs + lhid;
  int* my_locks = locks ? locks + lhid : nullptr;
  for_part<Items>(0, n, blockIdx.x, gridDim.x, f,
                  [&](const auto& res) { apply_tile_or_one<K, Op, true, Mode, false>(res, mine, my_locks, off, limit, 1); });
}

// histo[off + b] = histo[off + b] (+) sub_0[b] (+) ... (+) sub_{M-1}[b].
template <class Op>
__global__ void hist_reduce_kernel(const typename Op::value_type* subs, typename Op::value_type* histo,
                                   std::int64_t limit, std::int64_t chunk, int M) {
  for (std::int64_t b = std::int64_t{blockIdx.x} * blockDim.x + threadIdx.x; b < limit; b += std::int64_t{gridDim.x} * blockDim.x) {
    auto acc = histo[b];
    for (int m = 0; m < M; ++m) acc = Op{}(acc, subs[std::int64_t{m} * chunk + b]);
    histo[b] = acc;
  }
}

}  // namespace soac::detail
