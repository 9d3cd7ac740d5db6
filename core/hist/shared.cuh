// The shared-memory strategy's kernel (SC20 Fig 4): M sub-histograms per block with strided
// assignment, one chunk of bins per pass (passes side by side in one grid), the block's copies
// folded into the destination with the kind's atomic, through a cluster, or into rows of partials.
// The same kernel serves batched histograms (K blocks per histogram, section IV-C).
#pragma once

#include <cstdint>

#include "core/hist/block.cuh"

namespace soac::detail {

// One pass (bins [off, off + chunk)) of the shared-memory strategy. Block b works on histogram
// b / per_hist over elements [h * seg_len, (h + 1) * seg_len); per_hist = gridDim.x and
// seg_len = n for a single histogram. Mode exclusive: M = blockDim.x, every thread owns a copy.
// MaxBlock bounds the block size the kernel is compiled for (and so its registers: 64 per thread
// at 1024 threads, which the 32 results of a thread-private tile would overflow into local memory).
// partials: null, or (a single histogram) rows of H bins, one per part of the input (per block
// or cluster of a pass), for the block results (see merge_block).
// WideItems > 0: the block takes Items or WideItems elements per step, as sample_wide_steps
// says. (The versions with the cluster fold never sample: see hist_tuning::cluster_note.)
template <atomic_kind K, int Items, class Op, update_mode Mode, class F, int MaxBlock = hist_tuning::shared_block,
          bool FoldVariants = false, int WideItems = 0, bool Ahead = false>
__global__ void __launch_bounds__(MaxBlock)
    hist_shared_kernel(std::int64_t seg_len, std::int64_t per_hist, F f, typename Op::value_type* histo,
                       int* global_locks, std::int64_t H, std::int64_t off, int chunk, int M, int side_by_side,
                       int cluster, typename Op::value_type* partials) {
  using V = typename Op::value_type;
  // Which histogram, which part of its elements (of `parts`), and (side by side) which pass. The
  // `cluster` consecutive blocks of a cluster always share the histogram and the pass.
  std::int64_t h = 0, r = 0, parts = per_hist;
  if (side_by_side > 1) {
    const std::int64_t q = blockIdx.x / cluster, rank = blockIdx.x % cluster;
    r = q / side_by_side * cluster + rank;
    parts = gridDim.x / side_by_side;
    off += std::int64_t(q % side_by_side) * chunk;
    if (off >= H) return;  // the last group of passes may be short (whole clusters leave)
  } else {
    h = blockIdx.x / per_hist;
    r = blockIdx.x % per_hist;
  }
  extern __shared__ __align__(16) unsigned char smem[];
  V* sub = reinterpret_cast<V*>(smem);
  const int total = M * chunk;
  constexpr bool shared_locks = K == atomic_kind::xcg && Mode != update_mode::exclusive;
  int* locks = shared_locks ? reinterpret_cast<int*>(smem + ((std::size_t(total) * sizeof(V) + 3) & ~std::size_t(3))) : nullptr;
  const std::int64_t limit = std::min<std::int64_t>(chunk, H - off);
  const part_range part = part_of(h * seg_len, (h + 1) * seg_len, r, parts);
  // The bitmap of limit bits fits the M * chunk values of at least 4 bytes.
  bool wide = false;
  if constexpr (WideItems > 0)
    wide = sample_wide_steps(f, part, off, limit, reinterpret_cast<unsigned int*>(smem), int(ceil_div(blockDim.x, M)));
  // Loads ahead without a sample: the first tile's loads are in flight while shared memory is
  // initialised.
  auto first_tile = [&] {
    if constexpr (Ahead && WideItems == 0) return tiles_ahead<Items, F>(f, part);
    else return 0;
  }();
  for (int i = threadIdx.x; i < total; i += blockDim.x) {
    sub[i] = Op::identity();
    if (locks) locks[i] = 0;
  }
  __syncthreads();
  // Strided assignment (III-C): neighbouring threads update different sub-histograms.
  const bool interleaved = hist_interleaved(M);
  const int m = threadIdx.x % M;
  const int lhid = interleaved ? m : m * chunk;
  const int stride = interleaved ? M : 1;
  V* mine = register_shared(sub + lhid);
  int* my_locks = locks ? locks + lhid : nullptr;
  const auto update = [&](const auto& res) { apply_tile_or_one<K, Op, false, Mode, true>(res, mine, my_locks, off, limit, stride); };
  const auto steps = [&](auto items) {
    for_part<decltype(items)::value, Ahead>(h * seg_len, (h + 1) * seg_len, r, parts, f, update);
  };
  using narrow = std::integral_constant<int, Items>;
  if constexpr (Ahead && WideItems == 0) {
    first_tile.run(f, update);
  } else if constexpr (WideItems > 0) {
    if (wide) steps(std::integral_constant<int, WideItems>{});
    else steps(narrow{});
  } else {
    steps(narrow{});
  }
  __syncthreads();
  // Combine the block's M sub-histograms and fold the result into the destination.
  V* out = histo + h * H + off;
  int* out_locks = global_locks ? global_locks + h * H + off : nullptr;
  // (Code built for GPUs before sm_90 folds per block, which is right whatever the cluster size.)
  // Passes side by side write their chunk of the row.
  V* partial = partials ? partials + (r / cluster) * H + off : nullptr;
  merge_block<K, Op, FoldVariants>(sub, limit, M, chunk, out, out_locks, cluster, r / cluster, parts / cluster, partial);
}

}  // namespace soac::detail
