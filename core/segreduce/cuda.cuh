// CUDA kernels of segreduce (FHPC17 section 2), one per strategy, and the launcher. Element j of
// segment s is f(s, j); every kernel combines a segment's elements in index order unless the
// operator is commutative, so non-commutative operators (maximum subarray sum) are exact.
#pragma once

#include <algorithm>
#include <cstdint>

#include <cooperative_groups.h>
#include <cuda/atomic>
#include <cub/block/block_exchange.cuh>
#include <cub/block/block_reduce.cuh>
#include <cub/block/block_scan.cuh>
#include <cub/warp/warp_reduce.cuh>
#include <cub/util_type.cuh>

#include "core/context.hpp"
#include "core/launch.cuh"
#include "core/operators.hpp"
#include "core/segreduce/strategy.hpp"

namespace soac::detail {

// Element j of segment s as the operator's value type.
template <class Op, class F>
__device__ __forceinline__ typename Op::value_type segment_element(const F& f, std::int64_t s, std::int64_t j) {
  return static_cast<typename Op::value_type>(f(s, j));
}

// Advances (r, c), the row and column of flat tile element e, to element e + Block of a tile
// of width w, where Block = q * w + rem: no division per element.
__device__ __forceinline__ void advance_position(unsigned& r, unsigned& c, unsigned q, unsigned rem, unsigned w) {
  r += q;
  c += rem;
  if (c >= w) {
    c -= w;
    ++r;
  }
}

// Stages the rows x w sub-matrix {f(s0 + r, c0 + c)} in shared memory, row stride w | 1 (odd, so
// that threads reading different rows hit different banks). Flat element e = k * Block + t is
// read by thread t: consecutive threads read consecutive elements of a segment, so reads are
// coalesced when segments are rows of an array. All loads are issued before any store.
template <int Block, int Columns, class Op, class F>
__device__ __forceinline__ void stage_tile(const F& f, std::int64_t s0, std::int64_t c0, unsigned rows, unsigned w,
                                           typename Op::value_type* tile) {
  using T = typename Op::value_type;
  const unsigned t = threadIdx.x, count = rows * w, stride = w | 1u;
  const unsigned q = unsigned(Block) / w, rem = unsigned(Block) - q * w;
  const unsigned r0 = t / w, col0 = t - r0 * w;
  T v[Columns];
  unsigned r = r0, c = col0;
#pragma unroll
  for (int k = 0; k < Columns; ++k) {
    if (unsigned(k * Block) + t < count) v[k] = segment_element<Op>(f, s0 + r, c0 + c);
    advance_position(r, c, q, rem, w);
  }
  r = r0;
  c = col0;
#pragma unroll
  for (int k = 0; k < Columns; ++k) {
    if (unsigned(k * Block) + t < count) tile[r * stride + c] = v[k];
    advance_position(r, c, q, rem, w);
  }
}

// Sequential segments: every segment folded by one thread, in order, from a tile staged in
// shared memory (the paper's transposition, done per tile so no transposed copy is written).
//  - n <= Columns: the block takes segments_per_block (at most Block * Columns / n) whole
//    segments in one tile; thread t folds segments t, t + Block, ...
//  - n > Columns: the block takes up to Block segments, one per thread, in column chunks.
template <int Block, int Columns, class Op, class F>
__global__ void __launch_bounds__(Block)
segreduce_sequential_kernel(std::int64_t first, std::int64_t end, std::int64_t n, std::int64_t segments_per_block, F f,
                            typename Op::value_type* out, Op op) {
  wait_for_previous_grid();
  using T = typename Op::value_type;
  constexpr int capacity = Block * Columns;
  // rows * (w | 1) <= capacity * 3 / 2 for every tile shape used below.
  __shared__ cub::Uninitialized<T[capacity + capacity / 2]> storage;
  T* tile = storage.Alias();
  const std::int64_t s0 = first + std::int64_t{blockIdx.x} * segments_per_block;
  const unsigned rows = static_cast<unsigned>(std::min<std::int64_t>(segments_per_block, end - s0));
  const unsigned t = threadIdx.x;
  if (n <= Columns) {
    const unsigned w = static_cast<unsigned>(n), stride = w | 1u;
    stage_tile<Block, Columns, Op>(f, s0, 0, rows, w, tile);
    __syncthreads();
    for (unsigned r = t; r < rows; r += Block) {
      T acc = Op::identity();
      for (unsigned c = 0; c < w; ++c) acc = op(acc, tile[r * stride + c]);
      out[s0 + r] = acc;
    }
    return;
  }
  T acc = Op::identity();
  for (std::int64_t c0 = 0; c0 < n; c0 += Columns) {
    const unsigned w = static_cast<unsigned>(std::min<std::int64_t>(Columns, n - c0)), stride = w | 1u;
    stage_tile<Block, Columns, Op>(f, s0, c0, rows, w, tile);
    __syncthreads();
    if (t < rows)
      for (unsigned c = 0; c < w; ++c) acc = op(acc, tile[t * stride + c]);
    __syncthreads();
  }
  if (t < rows) out[s0 + t] = acc;
}

// Large segments: blocks_per_segment blocks per segment, block p of segment s reducing elements
// [p * chunk, min(n, (p + 1) * chunk)). Commutative operators: each thread folds a strided
// subsequence, Items loads in flight, and a block reduction combines the threads.
// Non-commutative ones: the paper's transposition within the block. Thread t owns the contiguous
// run t of the block's part (runs of a multiple of Items elements); in rounds, the block reads
// the next Items elements of every run into shared memory (consecutive threads read consecutive
// elements of a run: whole 32-byte sectors for 4-byte inputs), and each thread folds its own row
// in order; a block reduction in thread order combines the runs once at the end. Folding each
// tile across the block in order instead took two barriers and a block reduction per tile
// (1.9x a plain reduction's time for maximum subarray sum), and stays for parts shorter than a round.
// With one block per segment the block writes out[s]. With several, each block writes its
// partial to partials[(s - first) * blocks_per_segment + p], and the last block of the segment to
// arrive (an acq_rel counter from ctx.zeroed_counters) combines the partials in order, writes
// out[s] and resets the counter: one launch, no second pass.
// Rounds: a non-commutative operator's segments hold at least one round (block_threads x Items);
// the launcher picks it per call, so that the tile and its registers stay out of the version that
// folds short segments tile by tile (with both paths in one kernel, short segments lost occupancy
// to registers they never use: docs/tuning/segreduce.md).
template <int Block, int Items, bool Rounds, class Op, class F>
__global__ void __launch_bounds__(Block)
segreduce_large_kernel(std::int64_t first, std::int64_t n, std::int64_t blocks_per_segment, std::int64_t chunk, F f,
                       typename Op::value_type* out, typename Op::value_type* partials, unsigned* counters, Op op) {
  wait_for_previous_grid();
  using T = typename Op::value_type;
  using block_reduce = cub::BlockReduce<T, Block>;
  // Rows of the ordered path's tile: Items values and one of padding (an odd stride in words for
  // 4-byte values, and distinct banks per quarter warp for 8- and 16-byte ones).
  constexpr bool tiled = !is_commutative_v<Op> && Rounds;
  constexpr int row = !tiled || Items == 1 ? 1 : Items + 1;
  // Parts shorter than one round (segments of a few thousand elements) fold tile by tile instead:
  // striped loads exchanged to blocked order, a block reduction per tile (runs shorter than a
  // round would leave threads idle, and a round costs the same barriers).
  constexpr int tile_items = segreduce_items_per_thread(sizeof(T));
  using block_exchange = cub::BlockExchange<T, Block, tile_items>;
  __shared__ union {
    typename block_reduce::TempStorage reduce;
    typename block_exchange::TempStorage exchange;
    cub::Uninitialized<T[tiled ? Block * row : 1]> tile;
  } temp;
  const std::int64_t local = blockIdx.x / blocks_per_segment;
  const std::int64_t part = blockIdx.x - local * blocks_per_segment;
  const std::int64_t s = first + local;
  const std::int64_t lo = part * chunk, hi = std::min(n, lo + chunk);
  const int t = threadIdx.x;
  T result;
  if constexpr (is_commutative_v<Op>) {
    constexpr int tile = Block * Items;
    T acc[Items];
#pragma unroll
    for (int k = 0; k < Items; ++k) acc[k] = Op::identity();
    std::int64_t base = lo;
    for (; base + tile <= hi; base += tile) {
      T v[Items];
#pragma unroll
      for (int k = 0; k < Items; ++k) v[k] = segment_element<Op>(f, s, base + k * Block + t);
#pragma unroll
      for (int k = 0; k < Items; ++k) acc[k] = op(acc[k], v[k]);
    }
#pragma unroll
    for (int k = 0; k < Items; ++k) {
      const std::int64_t j = base + k * Block + t;
      if (j < hi) acc[k] = op(acc[k], segment_element<Op>(f, s, j));
    }
#pragma unroll
    for (int k = 1; k < Items; ++k) acc[0] = op(acc[0], acc[k]);
    result = block_reduce(temp.reduce).Reduce(acc[0], op);
  } else if (!Rounds || hi - lo < std::int64_t{Block} * Items) {
    constexpr int tile = Block * tile_items;
    T acc = Op::identity();  // meaningful in thread 0
    for (std::int64_t base = lo; base < hi; base += tile) {
      T v[tile_items];
#pragma unroll
      for (int k = 0; k < tile_items; ++k) {
        const std::int64_t j = base + k * Block + t;
        v[k] = j < hi ? segment_element<Op>(f, s, j) : Op::identity();
      }
      block_exchange(temp.exchange).StripedToBlocked(v);
      T mine = v[0];
#pragma unroll
      for (int k = 1; k < tile_items; ++k) mine = op(mine, v[k]);
      __syncthreads();  // the exchange's storage is reused by the reduction
      const T total = block_reduce(temp.reduce).Reduce(mine, op);
      if (t == 0) acc = op(acc, total);
      __syncthreads();
    }
    result = acc;
  } else if constexpr (tiled) {
    T* tile = temp.tile.Alias();
    const std::int64_t len = hi - lo;
    const std::int64_t run = ((len + Block - 1) / Block + Items - 1) / Items * Items;
    // Element k * Block + t of a round is column c of run r (Items divides Block).
    const int r0 = t / Items, c = t % Items;
    constexpr int runs_per_step = Block / Items;
    T acc = Op::identity();
    for (std::int64_t c0 = 0; c0 < run; c0 += Items) {
      T v[Items];
#pragma unroll
      for (int k = 0; k < Items; ++k) {
        const std::int64_t j = lo + std::int64_t(r0 + k * runs_per_step) * run + c0 + c;
        v[k] = j < hi ? segment_element<Op>(f, s, j) : Op::identity();
      }
#pragma unroll
      for (int k = 0; k < Items; ++k) tile[(r0 + k * runs_per_step) * row + c] = v[k];
      __syncthreads();
#pragma unroll
      for (int k = 0; k < Items; ++k) acc = op(acc, tile[t * row + k]);
      __syncthreads();
    }
    result = block_reduce(temp.reduce).Reduce(acc, op);
  }
  if (blocks_per_segment == 1) {
    if (t == 0) out[s] = result;
    return;
  }
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  // Launched in clusters (plan.cluster): the segment's blocks are one cluster, ranked by part.
  // Rank 0 folds their results in rank order out of their shared memory; the second barrier keeps
  // that memory alive until it has.
  namespace cg = cooperative_groups;
  cg::cluster_group cluster = cg::this_cluster();
  if (cluster.num_blocks() > 1) {
    __shared__ cub::Uninitialized<T> block_result;
    if (t == 0) block_result.Alias() = result;
    cluster.sync();
    if (part == 0) {
      const T acc = t < blocks_per_segment ? *cluster.map_shared_rank(&block_result.Alias(), t) : Op::identity();
      const T total = block_reduce(temp.reduce).Reduce(acc, op);
      if (t == 0) out[s] = total;
    }
    cluster.sync();
    return;
  }
#endif
  T* mine = partials + local * blocks_per_segment;
  __shared__ bool last;
  if (t == 0) {
    mine[part] = result;
    cuda::atomic_ref<unsigned, cuda::thread_scope_device> arrived(counters[local]);
    last = arrived.fetch_add(1, cuda::memory_order_acq_rel) == blocks_per_segment - 1;
  }
  __syncthreads();
  if (!last) return;
  __threadfence();  // every thread's loads below come after thread 0's acquire
  // Thread t folds a contiguous run of partials, so the block reduction (thread order) keeps the
  // segment's order for non-commutative operators.
  const std::int64_t per = (blocks_per_segment + Block - 1) / Block;
  T acc = Op::identity();
  for (std::int64_t j = t * per, e = std::min(blocks_per_segment, j + per); j < e; ++j) acc = op(acc, cub::ThreadLoad<cub::LOAD_CG>(mine + j));
  __syncthreads();  // temp may still be in use by the tile loop's last reduction
  const T total = block_reduce(temp.reduce).Reduce(acc, op);
  if (t == 0) {
    out[s] = total;
    counters[local] = 0;  // zero again for the next kernel (ctx.zeroed_counters contract)
  }
}

// Large strategy, non-commutative operators, segments shorter than a block's round: a warp per
// whole segment, the ordered kernel's transposition at warp scope. Lane l owns the contiguous
// run l of the segment; in rounds the warp stages the next Items elements of every run in its
// slice of shared memory (Items consecutive lanes read Items consecutive elements), each lane
// folds its row in order, and a warp reduction in lane order combines the runs.
template <int Block, int Items, class Op, class F>
__global__ void __launch_bounds__(Block)
segreduce_ordered_warps_kernel(std::int64_t first, std::int64_t end, std::int64_t n, F f, typename Op::value_type* out,
                               Op op) {
  wait_for_previous_grid();
  using T = typename Op::value_type;
  using warp_reduce = cub::WarpReduce<T>;
  constexpr int warps = Block / 32;
  constexpr int row = Items == 1 ? 1 : Items + 1;  // padded, as in segreduce_large_kernel
  static_assert(32 % Items == 0, "a round's columns divide the warp");
  __shared__ cub::Uninitialized<T[warps * 32 * row]> storage;
  __shared__ typename warp_reduce::TempStorage reduce[warps];
  const int w = threadIdx.x / 32, lane = threadIdx.x % 32;
  const std::int64_t s = first + std::int64_t{blockIdx.x} * warps + w;
  if (s >= end) return;  // warp-uniform: no block-wide barrier below
  T* tile = storage.Alias() + w * 32 * row;
  const std::int64_t run = ((n + 31) / 32 + Items - 1) / Items * Items;
  constexpr int runs_per_step = 32 / Items;
  const int r0 = lane / Items, c = lane % Items;
  T acc = Op::identity();
  for (std::int64_t c0 = 0; c0 < run; c0 += Items) {
    T v[Items];
#pragma unroll
    for (int k = 0; k < Items; ++k) {
      const std::int64_t j = std::int64_t(r0 + k * runs_per_step) * run + c0 + c;
      v[k] = j < n ? segment_element<Op>(f, s, j) : Op::identity();
    }
#pragma unroll
    for (int k = 0; k < Items; ++k) tile[(r0 + k * runs_per_step) * row + c] = v[k];
    __syncwarp();
#pragma unroll
    for (int k = 0; k < Items; ++k) acc = op(acc, tile[lane * row + k]);
    __syncwarp();
  }
  const T total = warp_reduce(reduce[w]).Reduce(acc, op);
  if (lane == 0) out[s] = total;
}

// A value with a segment-start flag: the operator of a segmented scan (associative when op is).
template <class T>
struct flagged {
  int head;
  T value;
};

template <class Op>
struct segmented_scan_op {
  Op op;
  template <class T>
  __device__ __forceinline__ flagged<T> operator()(const flagged<T>& a, const flagged<T>& b) const {
    return {a.head | b.head, b.head ? b.value : op(a.value, b.value)};
  }
};

// Small segments: segments_per_block whole segments (segments_per_block * n <= Block * Items
// elements) per block. The block reads them striped (coalesced), exchanges to blocked order,
// and an exclusive segmented scan over the threads' partial folds gives every thread the
// running value at its first element; the thread holding a segment's last element writes it.
template <int Block, int Items, class Op, class F>
__global__ void __launch_bounds__(Block)
segreduce_small_kernel(std::int64_t first, std::int64_t m, int n, int segments_per_block, F f,
                       typename Op::value_type* out, Op op) {
  wait_for_previous_grid();
  using T = typename Op::value_type;
  using block_exchange = cub::BlockExchange<T, Block, Items>;
  using block_scan = cub::BlockScan<flagged<T>, Block>;
  __shared__ union {
    typename block_exchange::TempStorage exchange;
    typename block_scan::TempStorage scan;
  } temp;
  const std::int64_t s0 = first + std::int64_t{blockIdx.x} * segments_per_block;
  const int segments = static_cast<int>(std::min<std::int64_t>(segments_per_block, m - s0));
  const unsigned count = unsigned(segments) * unsigned(n);
  const unsigned un = unsigned(n);
  const int t = threadIdx.x;
  T v[Items];
  {
    const unsigned q = unsigned(Block) / un, rem = unsigned(Block) - q * un;
    unsigned r = unsigned(t) / un, c = unsigned(t) - r * un;
#pragma unroll
    for (int k = 0; k < Items; ++k) {
      v[k] = unsigned(k * Block + t) < count ? segment_element<Op>(f, s0 + r, c) : Op::identity();
      advance_position(r, c, q, rem, un);
    }
  }
  block_exchange(temp.exchange).StripedToBlocked(v);
  // This thread holds elements t * Items + k; c is the position of the first in its segment.
  const unsigned e0 = unsigned(t) * Items;
  const unsigned c0 = e0 % un;
  flagged<T> mine{0, Op::identity()};
  {
    unsigned c = c0;
#pragma unroll
    for (int k = 0; k < Items; ++k) {
      if (c == 0) mine = {1, v[k]};
      else mine.value = op(mine.value, v[k]);
      if (++c == un) c = 0;
    }
  }
  __syncthreads();  // the exchange's storage is reused by the scan
  flagged<T> before;
  block_scan(temp.scan).ExclusiveScan(mine, before, flagged<T>{0, Op::identity()}, segmented_scan_op<Op>{op});
  T run = before.value;
  unsigned c = c0;
  unsigned r = e0 / un;
#pragma unroll
  for (int k = 0; k < Items; ++k) {
    run = c == 0 ? v[k] : op(run, v[k]);
    if (c + 1 == un && e0 + k < count) out[s0 + r] = run;
    if (++c == un) {
      c = 0;
      ++r;
    }
  }
}

// Small segments, commutative operators: Block / Group whole segments per block, each reduced by
// a group of Group lanes (a CUB logical warp). Lane l folds elements l, l + Group, ... (Items
// loads in flight, consecutive lanes reading consecutive elements), then WarpReduce combines the
// group. The order of combination differs from the index order, hence commutative only.
template <int Block, int Group, int Items, class Op, class F>
__global__ void __launch_bounds__(Block)
segreduce_small_groups_kernel(std::int64_t first, std::int64_t end, std::int64_t n, F f, typename Op::value_type* out,
                              Op op) {
  wait_for_previous_grid();
  using T = typename Op::value_type;
  using warp_reduce = cub::WarpReduce<T, Group>;
  constexpr int groups = Block / Group;
  __shared__ typename warp_reduce::TempStorage temp[groups];
  const int g = threadIdx.x / Group, lane = threadIdx.x % Group;
  const std::int64_t s = first + std::int64_t{blockIdx.x} * groups + g;
  T acc[Items];
#pragma unroll
  for (int k = 0; k < Items; ++k) acc[k] = Op::identity();
  if (s < end) {
    std::int64_t j = lane;
    for (; j + std::int64_t{Items - 1} * Group < n; j += std::int64_t{Items} * Group) {
      T v[Items];
#pragma unroll
      for (int k = 0; k < Items; ++k) v[k] = segment_element<Op>(f, s, j + k * Group);
#pragma unroll
      for (int k = 0; k < Items; ++k) acc[k] = op(acc[k], v[k]);
    }
#pragma unroll
    for (int k = 0; k < Items; ++k)
      if (j + k * Group < n) acc[k] = op(acc[k], segment_element<Op>(f, s, j + k * Group));
  }
#pragma unroll
  for (int k = 1; k < Items; ++k) acc[0] = op(acc[0], acc[k]);
  const T total = warp_reduce(temp[g]).Reduce(acc[0], op);  // every lane takes part, also past the end
  if (lane == 0 && s < end) out[s] = total;
}

template <class T>
__global__ void segreduce_fill_kernel(std::int64_t m, T value, T* out) {
  wait_for_previous_grid();
  const std::int64_t i = std::int64_t{blockIdx.x} * blockDim.x + threadIdx.x;
  if (i < m) out[i] = value;
}

// Blocks of the ordered (non-commutative, whole rounds) large kernel resident on the device at
// once, for the planner's wave; 0 for commutative operators.
template <class Op, class F>
std::int64_t segreduce_ordered_resident(context& ctx) {
  if constexpr (is_commutative_v<Op>) {
    return 0;
  } else {
    ctx.activate();
    constexpr int B = segreduce_tuning::block_threads;
    const int per_sm = resident_blocks(segreduce_large_kernel<B, segreduce_ordered_items(sizeof(typename Op::value_type)), true, Op, F>,
                                       B, 0, "segreduce_large_kernel");
    return std::int64_t(per_sm) * std::max(1, ctx.props().sm_count);
  }
}

template <class Op, class F>
void segreduce_cuda(context& ctx, segreduce_plan& plan, std::int64_t m, std::int64_t n, F f,
                    typename Op::value_type* out, Op op) {
  using T = typename Op::value_type;
  constexpr int B = segreduce_tuning::block_threads;
  constexpr int items = segreduce_items_per_thread(sizeof(T));
  constexpr int columns = segreduce_sequential_columns(sizeof(T));
  constexpr int large_items = is_commutative_v<Op> ? items : segreduce_ordered_items(sizeof(T));
  ctx.activate();
  // Every kernel here is a dependent launch (core/launch.cuh).
  if (n == 0) {
    launch_dependent(ctx, "segreduce_fill_kernel", segreduce_fill_kernel<T>, {ceil_div(m, B), B}, m, Op::identity(), out);
    return;
  }
  switch (plan.strategy) {
    case segreduce_strategy::sequential: {
      const std::int64_t per = plan.segments_per_block;
      const std::int64_t slice = max_grid_x * per;
      for (std::int64_t first = 0; first < m; first += slice) {
        const std::int64_t count = std::min(slice, m - first);
        launch_dependent(ctx, "segreduce_sequential_kernel", segreduce_sequential_kernel<B, columns, Op, F>, {ceil_div(count, per), B},
                         first, first + count, n, per, f, out, op);
      }
      break;
    }
    case segreduce_strategy::large: {
      if constexpr (!is_commutative_v<Op>) {
        if (plan.warp_segments) {
          const std::int64_t per = plan.segments_per_block;
          const std::int64_t slice = max_grid_x * per;
          for (std::int64_t first = 0; first < m; first += slice) {
            const std::int64_t count = std::min(slice, m - first);
            launch_dependent(ctx, "segreduce_ordered_warps_kernel", segreduce_ordered_warps_kernel<B, large_items, Op, F>,
                             {ceil_div(count, per), B}, first, first + count, n, f, out, op);
          }
          break;
        }
      }
      const std::int64_t k = plan.blocks_per_segment;
      const std::int64_t slice = max_grid_x / k;
      bool rounds = false;
      if constexpr (!is_commutative_v<Op>) rounds = n >= std::int64_t{B} * large_items;
      const auto kernel = rounds ? segreduce_large_kernel<B, large_items, !is_commutative_v<Op>, Op, F>
                                 : segreduce_large_kernel<B, large_items, false, Op, F>;
      if (plan.cluster > 1) {
        allow_cluster_size(kernel, plan.cluster);
        if (resident_clusters(kernel, B, 0, plan.cluster) < 1) plan.cluster = 0;  // the counters' way, then
      }
      // The partials and counters of one slice; the next slice's kernel waits for this one's.
      T* partials = nullptr;
      unsigned* counters = nullptr;
      if (k > 1 && plan.cluster <= 1) {
        partials = static_cast<T*>(ctx.scratch(static_cast<std::size_t>(std::min(slice, m) * k) * sizeof(T)));
        counters = ctx.zeroed_counters(static_cast<std::size_t>(std::min(slice, m)));
      }
      for (std::int64_t first = 0; first < m; first += slice) {
        const std::int64_t count = std::min(slice, m - first);
        launch_dependent(ctx, "segreduce_large_kernel", kernel, {count * k, B, 0, std::max(1, plan.cluster)}, first, n, k, plan.chunk, f, out,
                         partials, counters, op);
      }
      break;
    }
    case segreduce_strategy::small: {
      const std::int64_t per = plan.segments_per_block;
      if constexpr (is_commutative_v<Op>) {
        if (plan.group_threads) {
          const std::int64_t slice = max_grid_x * per;
          const auto kernel = plan.group_threads == segreduce_tuning::group_lanes_wide
                                  ? segreduce_small_groups_kernel<B, segreduce_tuning::group_lanes_wide, items, Op, F>
                                  : segreduce_small_groups_kernel<B, segreduce_tuning::group_lanes_narrow, items, Op, F>;
          for (std::int64_t first = 0; first < m; first += slice) {
            const std::int64_t count = std::min(slice, m - first);
            launch_dependent(ctx, "segreduce_small_groups_kernel", kernel, {ceil_div(count, per), B}, first, first + count, n, f, out, op);
          }
          break;
        }
      }
      const std::int64_t slice = max_grid_x * per;
      for (std::int64_t first = 0; first < m; first += slice) {
        const std::int64_t count = std::min(slice, m - first);
        launch_dependent(ctx, "segreduce_small_kernel", segreduce_small_kernel<B, items, Op, F>, {ceil_div(count, per), B}, first,
                         first + count, static_cast<int>(n), static_cast<int>(per), f, out, op);
      }
      break;
    }
    default: throw usage_error("segreduce: no strategy chosen");
  }
}

}  // namespace soac::detail
