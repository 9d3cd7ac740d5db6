// The split shared strategy's kernel (hist_overrides::split): the blocks of a cluster hold one
// histogram together through distributed shared memory (sm_90 and later).
#pragma once

#include <cstdint>
#include <utility>

#include "core/hist/block.cuh"
#include "core/launch.cuh"

namespace soac::detail {

// The split shared strategy (hist_overrides::split): the `C` blocks of a cluster hold one histogram
// together, block `rank` bins [rank * slice, (rank + 1) * slice) in its shared memory; each
// update goes to the slice's block through distributed shared memory with the kind's atomic
// (generic atomics reach another block's shared memory). Every block reads its own part of the
// input. At the end each block folds its slice into the destination (HDW: atomics, the clusters
// starting at different places; otherwise: its part of the cluster's row of partials, which
// hist_rows_kernel reduces).
// One update of a bin in another block's shared memory: the kind's atomic, except 8-byte hardware
// min, max, and, or, which take a CAS loop (on the H100 64-bit atomicMax into distributed shared
// memory lost updates: max<int64_t> came out low in 650 of 3000 bins; 64-bit add was right).
template <atomic_kind K, class Op>
__device__ __forceinline__ void remote_update(typename Op::value_type* p, const typename Op::value_type& v) {
  using V = typename Op::value_type;
  if constexpr (is_elementwise<Op>::value) {
#pragma unroll
    for (int j = 0; j < Op::size; ++j) remote_update<K, typename Op::scalar_op>(&p->v[j], v.v[j]);
  } else if constexpr (K == atomic_kind::hdw && sizeof(V) == 8 && !has_user_update<Op>::value && !is_family<Op, plus>::value) {
    cas_update<Op>(p, v);
  } else {
    atomic_update<K, Op>(p, nullptr, v);
  }
}

template <atomic_kind K, class Op, class R>
__device__ __forceinline__ void apply_split_updates(const R& r, typename Op::value_type* sub, std::int64_t H,
                                                    unsigned slice) {
  using U = updates_of<R>;
  using V = typename Op::value_type;
#pragma unroll
  for (int k = 0; k < U::count; ++k) {
    const auto& u = U::get(r, k);
    if (std::uint64_t(u.bin) >= std::uint64_t(H)) continue;
    const unsigned b = unsigned(u.bin), rank = b / slice;
#if __CUDA_ARCH__ >= 900
    V* owner = static_cast<V*>(__cluster_map_shared_rank(sub, rank));
#else
    V* owner = sub;  // never launched before sm_90 (plan_hist_split refuses)
#endif
    remote_update<K, Op>(owner + (b - rank * slice), static_cast<V>(u.value));
  }
}

template <atomic_kind K, int Items, class Op, class F>
__global__ void __launch_bounds__(hist_tuning::shared_block)
    hist_split_kernel(std::int64_t n, F f, typename Op::value_type* histo, std::int64_t H, unsigned slice,
                      typename Op::value_type* rows) {
#if __CUDA_ARCH__ >= 900
  using V = typename Op::value_type;
  extern __shared__ __align__(16) unsigned char smem[];
  V* sub = reinterpret_cast<V*>(smem);
  const unsigned C = __clusterSizeInBlocks(), rank = __clusterRelativeBlockRank();
  const std::int64_t lo = std::int64_t(rank) * slice, mine = std::clamp<std::int64_t>(H - lo, 0, slice);
  for (std::int64_t b = threadIdx.x; b < mine; b += blockDim.x) sub[b] = Op::identity();
  // No block updates another's slice before it is initialised...
  __cluster_barrier_arrive();
  __cluster_barrier_wait();
  for_part<Items>(0, n, blockIdx.x, gridDim.x, f, [&](const auto& res) {
    if constexpr (std::is_array_v<std::remove_cvref_t<decltype(res)>>) {
#pragma unroll
      for (const auto& one : res) apply_split_updates<K, Op>(one, sub, H, slice);
    } else {
      apply_split_updates<K, Op>(res, sub, H, slice);
    }
  });
  // ... nor reads its own slice before every block's updates have landed.
  __cluster_barrier_arrive();
  __cluster_barrier_wait();
  const std::int64_t cluster_id = blockIdx.x / C, clusters = gridDim.x / C;
  if (rows) {
    V* row = rows + cluster_id * H + lo;
    for (std::int64_t b = threadIdx.x; b < mine; b += blockDim.x) row[b] = sub[b];
  } else {
    fold_range<K, Op>(histo, nullptr, lo, lo + mine, cluster_id, clusters, [&](int q) { return sub[q]; });
  }
#endif
}

}  // namespace soac::detail
