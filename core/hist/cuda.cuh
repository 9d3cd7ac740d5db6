// CUDA kernels of hist: the shared-memory kernel (SC20 Fig 4: M sub-histograms per block with
// strided assignment, one chunk of bins per pass, block results combined into the destination
// with the operator's own atomic), the global-memory kernel (M sub-histograms sized to L2, then a
// reduction), and the RF inspector. The same shared kernel serves batched histograms (K blocks per
// histogram, section IV-C).
#pragma once

#include <algorithm>
#include <cstdint>
#include <mutex>
#include <set>
#include <string>
#include <type_traits>

#include <cub/block/block_radix_rank.cuh>
#include <cub/block/block_reduce.cuh>
#include <cub/block/block_scan.cuh>
#include <cuda/std/span>

#include "core/context.hpp"
#include "core/error.hpp"
#include "core/fast_divide.hpp"
#include "core/hist/atomics.cuh"
#include "core/hist/strategy.hpp"
#include "core/hist/update.hpp"
#include "core/launch.cuh"

namespace soac::detail {

// Elements a thread evaluates before applying their updates: fewer when each yields several.
template <class F, int PerThread = hist_tuning::items_per_thread>
constexpr int hist_items() {
  using R = decltype(std::declval<F>()(std::int64_t{0}));
  return std::max(1, PerThread / updates_of<R>::count);
}

// Where bin b of a pass lives in a thread's sub-histogram: base + (b - off) * stride. stride is 1
// for contiguous sub-histograms and M for the interleaved (bin-major) shared layout.
//
// With Combine, lanes of a warp that update the same bin first combine their values (see
// combine_peers) and only the leader issues the atomic. Every lane of the warp that reaches the
// call takes part (out-of-range lanes under a key no bin has).
template <bool Combine, class Op, class V>
__device__ __forceinline__ bool lead_update(std::int64_t b, std::int64_t off, std::int64_t limit, V& v) {
  // One unsigned comparison: bins below off wrap around to values far above any limit.
  const bool in = std::uint64_t(b) - std::uint64_t(off) < std::uint64_t(limit);
  if constexpr (Combine) {
    const unsigned mask = __activemask();
    const unsigned key = in ? unsigned(b - off) : ~0u;
    const unsigned peers = __match_any_sync(mask, key);
    v = combine_peers<Op>(mask, peers, v);
    return in && (peers & ((1u << (threadIdx.x & 31)) - 1)) == 0;
  } else {
    return in;
  }
}

// How a thread's updates reach its sub-histogram.
enum class update_mode {
  atomic,     // the kind's atomic: the copy is shared with other threads
  combined,   // warp peers with the same bin combine first, the leader's atomic applies them
  exclusive,  // the copy is the thread's own: a plain read, the operator, a write
};

// Applies the updates of one f(i) result to bins [off, off + limit) of a sub-histogram. Shared:
// sub is in shared memory, so hardware updates of operators with a PTX reduction take one
// predicated instruction (predicated_red) instead of a branch.
template <atomic_kind K, class Op, update_mode Mode = update_mode::atomic, bool Shared = false, class R>
__device__ __forceinline__ void apply_updates(const R& r, typename Op::value_type* sub, int* locks, std::int64_t off,
                                              std::int64_t limit, std::int64_t stride = 1) {
  using U = updates_of<R>;
  using V = typename Op::value_type;
#pragma unroll
  for (int k = 0; k < U::count; ++k) {
    const auto& u = U::get(r, k);
    V v = static_cast<V>(u.value);
    if constexpr (Shared && K == atomic_kind::hdw && Mode == update_mode::atomic && has_predicated_red<Op>) {
      const bool in = std::uint64_t(u.bin) - std::uint64_t(off) < std::uint64_t(limit);
      const unsigned at = unsigned(__cvta_generic_to_shared(sub)) + unsigned(u.bin - off) * unsigned(stride) * unsigned(sizeof(V));
      predicated_red<Op>(at, v, in);
    } else if (lead_update<Mode == update_mode::combined, Op>(u.bin, off, limit, v)) {
      const std::int64_t at = (u.bin - off) * stride;
      if constexpr (Mode == update_mode::exclusive) sub[at] = Op{}(sub[at], v);
      else atomic_update<K, Op>(sub + at, locks ? locks + at : nullptr, v);
    }
  }
}

// The updates of a tile of Items results. With EarlyReads (global-memory sub-histograms) the CAS
// first read of every bin is issued before any compare-and-swap loop runs, so a thread waits for
// one round of L2 reads instead of one per update: measured on the H100, argmax at M=1 went from
// 1.29 to 0.71 ms. In shared memory the reads are cheap and reading early only makes them stale
// under contention (24-bit saturated add, H=31: 0.22 ms read per update, 0.64 ms read early).
template <atomic_kind K, class Op, bool EarlyReads, update_mode Mode, bool Shared, class R, int Items>
__device__ __forceinline__ void apply_tile_updates(const R (&r)[Items], typename Op::value_type* sub, int* locks,
                                                   std::int64_t off, std::int64_t limit, std::int64_t stride) {
  if constexpr (EarlyReads && K == atomic_kind::cas && !is_elementwise<Op>::value) {
    using U = updates_of<R>;
    using V = typename Op::value_type;
    constexpr int count = Items * U::count;
    V* where[count];
    V value[count];
    word_of<V> first[count];
#pragma unroll
    for (int j = 0; j < Items; ++j) {
#pragma unroll
      for (int k = 0; k < U::count; ++k) {
        const int q = j * U::count + k;
        const std::int64_t b = U::get(r[j], k).bin;
        value[q] = static_cast<V>(U::get(r[j], k).value);
        const bool lead = lead_update<Mode == update_mode::combined, Op>(b, off, limit, value[q]);
        where[q] = lead ? sub + (b - off) * stride : nullptr;
        if (lead) first[q] = cas_first_read<Op>(where[q]);
      }
    }
#pragma unroll
    for (int q = 0; q < count; ++q)
      if (where[q]) cas_update_from<Op>(where[q], first[q], value[q]);
  } else {
#pragma unroll
    for (int j = 0; j < Items; ++j) apply_updates<K, Op, Mode, Shared>(r[j], sub, locks, off, limit, stride);
  }
}

// What for_part hands over: a whole tile (an array of results) or a single result.
template <atomic_kind K, class Op, bool EarlyReads, update_mode Mode, bool Shared, class T>
__device__ __forceinline__ void apply_tile_or_one(const T& t, typename Op::value_type* sub, int* locks,
                                                  std::int64_t off, std::int64_t limit, std::int64_t stride) {
  if constexpr (std::is_array_v<T>) apply_tile_updates<K, Op, EarlyReads, Mode, Shared>(t, sub, locks, off, limit, stride);
  else apply_updates<K, Op, Mode, Shared>(t, sub, locks, off, limit, stride);
}

// Part `part` of `parts` balanced, contiguous parts of [begin, end) (whole tiles would leave up to
// one tile per block of imbalance). Parts start at multiples of 32 elements so warps' loads stay
// aligned.
struct part_range {
  std::int64_t lo, hi;
};
// Elements per part (the last may be shorter): a multiple of 32.
template <class I>
__host__ __device__ __forceinline__ I part_stride(I len, I parts) {
  return ((len + parts - 1) / parts + 31) & ~I{31};
}
__device__ __forceinline__ part_range part_of(std::int64_t begin, std::int64_t end, std::int64_t part, std::int64_t parts) {
  const std::int64_t len = end - begin;
  const std::int64_t per = part_stride(len, parts);
  return {begin + std::min(len, part * per), begin + std::min(len, (part + 1) * per)};
}

// The lanes of this thread's warp that exist (all 32 unless the block ends in a partial warp).
__device__ __forceinline__ unsigned warp_lanes() {
  const unsigned lanes = min(32u, blockDim.x - (threadIdx.x & ~31u));
  return lanes == 32 ? ~0u : (1u << lanes) - 1;
}

// Steps of a block over elements [lo, hi) for updates that loop until they land (compare-and-swap)
// where the loads are the bottleneck: the loop runs by warp (its bounds are the warp's first
// element) and the warp meets at __syncwarp after every step. Left to themselves, the lanes whose
// compare-and-swap succeeded run ahead of those that retry, and the warp's next loads go out lane
// group by lane group, each group requesting the same sectors again: under ncu on the H100 (24-bit
// saturated add, 24K bins, RF = 63, one bucket) the partitioned strategy's bucket kernel requested
// 86M sectors for 12.5M and read 1.5 GB from DRAM for 400 MB of bucketed updates, 858 us; by warp,
// 12.5M sectors, 400 MB, 575 us. Not for the shared kernel (for_part): its input stays in L2
// (39M sectors for 6.25M, 206 MB from DRAM), and lanes left to run apart are twice as fast there
// (260 vs 538 us; 525 with each step's loads issued before the previous step's updates). The
// bucket kernel with loads issued ahead took 645 us.
// load(i) gives element i's result; apply takes a tile's results as an array, then single ones.
template <int Items, class I, class Load, class Apply>
__device__ __forceinline__ void warp_steps(I lo, I hi, Load&& load, Apply&& apply) {
  using R = decltype(load(I{0}));
  const I step = blockDim.x, lane = threadIdx.x & 31;
  const unsigned warp = warp_lanes();
  I w = lo + (I(threadIdx.x) - lane);
  for (; w + 31 + (Items - 1) * step < hi; w += Items * step) {
    R r[Items];
#pragma unroll
    for (int j = 0; j < Items; ++j) r[j] = load(w + lane + j * step);
    apply(r);
    __syncwarp(warp);
  }
  for (; w < hi; w += step) {
    if (w + lane < hi) apply(load(w + lane));
    __syncwarp(warp);
  }
}

// A thread's tiles of a part, each tile's elements evaluated before the previous tile's updates
// (software pipelining), so the thread keeps its loads in flight while it updates. The constructor
// issues the first tile's loads, so a kernel can construct it before work that does not need them
// (initialising shared memory). At its last whole tile, run() evaluates that tile once more (one
// select per tile rather than a clamp per element), so that the loads of every step are
// unconditional and the compiler can schedule the updates between them and their uses.
template <int Items, class F>
struct tiles_ahead {
  using R = decltype(std::declval<F&>()(std::int64_t{0}));
  R cur[Items];
  std::int64_t i, hi;
  __device__ __forceinline__ tiles_ahead(F& f, part_range part) : i(part.lo + threadIdx.x), hi(part.hi) {
    const std::int64_t step = blockDim.x;
    if (i + (Items - 1) * step < hi)
#pragma unroll
      for (int j = 0; j < Items; ++j) cur[j] = f(i + j * step);
  }
  template <class Apply>
  __device__ __forceinline__ void run(F& f, Apply&& apply) {
    const std::int64_t step = blockDim.x;
    if (i + (Items - 1) * step < hi) {
      for (i += Items * step;; i += Items * step) {
        const bool more = i + (Items - 1) * step < hi;
        const std::int64_t at = more ? i : i - Items * step;  // the current tile's again: no more whole tiles
        R next[Items];
#pragma unroll
        for (int j = 0; j < Items; ++j) next[j] = f(at + j * step);
        apply(cur);
        if (!more) break;
#pragma unroll
        for (int j = 0; j < Items; ++j) cur[j] = next[j];
      }
    }
    for (; i < hi; i += step) apply(f(i));
  }
};

// Evaluates f over part `part` of `parts` of [begin, end) (see part_of). Within a tile of B * Items
// elements, all Items loads are issued before any update, so each thread keeps Items loads in
// flight; `apply` receives the tile's results as an array, and single results for the tail. With
// Ahead, the loads of the next tile are in flight during the updates too (tiles_ahead).
template <int Items, bool Ahead = false, class F, class Apply>
__device__ __forceinline__ void for_part(std::int64_t begin, std::int64_t end, std::int64_t part, std::int64_t parts,
                                         F& f, Apply&& apply) {
  if constexpr (Ahead) {
    tiles_ahead<Items, F>(f, part_of(begin, end, part, parts)).run(f, apply);
  } else {
    using R = decltype(f(std::int64_t{0}));
    const auto [lo, hi] = part_of(begin, end, part, parts);
    const std::int64_t step = blockDim.x;
    std::int64_t i = lo + threadIdx.x;
    for (; i + (Items - 1) * step < hi; i += Items * step) {
      R r[Items];
#pragma unroll
      for (int j = 0; j < Items; ++j) r[j] = f(i + j * step);
      apply(r);  // the whole tile at once (see the array overload of apply_updates)
    }
    for (; i < hi; i += step) apply(f(i));
  }
}

// The sample behind a shared CAS block's elements per step (cas_sample_wide): each thread
// evaluates the first element of the block's part [lo, hi), and the block counts the in-range
// ones and the distinct bins among them, marked in a bitmap of `limit` bits laid over the shared
// memory before the sub-histograms are initialised. The same answer in every thread.
template <class F>
__device__ __forceinline__ bool sample_wide_steps(F& f, part_range part, std::int64_t off, std::int64_t limit,
                                                  unsigned int* bitmap, int sharers) {
  using U = updates_of<decltype(f(std::int64_t{0}))>;
  const std::int64_t words = (limit + 31) / 32;
  for (std::int64_t w = threadIdx.x; w < words; w += blockDim.x) bitmap[w] = 0;
  __syncthreads();
  bool in = false, fresh = false;
  const std::int64_t i = part.lo + threadIdx.x;
  if (i < part.hi) {
    const std::int64_t b = U::get(f(i), 0).bin - off;
    in = std::uint64_t(b) < std::uint64_t(limit);
    if (in) {
      const unsigned int bit = 1u << (b % 32);
      fresh = !(atomicOr(bitmap + b / 32, bit) & bit);
    }
  }
  const int sampled = __syncthreads_count(in);
  const int distinct = __syncthreads_count(fresh);
  return cas_sample_wide(sampled, distinct, sharers);
}

// Whether the shared sub-histograms are interleaved: bin b of sub-histogram m at b * M + m. With M
// a multiple of the warp size, the 32 lanes of a warp (sub-histograms m .. m + 31 under strided
// assignment) then always hit 32 different banks, whatever their bins; the contiguous layout
// (m * chunk + b) leaves random bins to random banks.
__host__ __device__ inline bool hist_interleaved(int M) { return M % 32 == 0; }

// Lanes that fold one bin's interleaved row of M copies together: a power of two up to the warp
// size, as many as the block has threads for (limit bins * group lanes), so a small histogram with
// many copies (H = 31, M = 928) is folded by the whole block instead of 31 threads. 1 for values
// the shuffles cannot move (sizes not a multiple of 4 bytes).
template <class V>
__device__ __forceinline__ int merge_group(std::int64_t limit) {
  if constexpr (sizeof(V) % 4 != 0) return 1;
  int group = 1;
  while (group < 32 && limit * group * 2 <= blockDim.x) group *= 2;
  return group;
}

// Combines the block's M copies of bins [0, limit) and hands each bin's combination to
// sink(b, acc), once per bin. Interleaved copies (bin b of copy m at b * M + m) are folded by
// groups of lanes per bin; contiguous ones (m * chunk + b) by one thread per bin.
template <class Op, class Sink>
__device__ __forceinline__ void fold_copies(const typename Op::value_type* sub, std::int64_t limit, int M, int chunk,
                                            Sink&& sink) {
  using V = typename Op::value_type;
  if (!hist_interleaved(M)) {
    for (std::int64_t b = threadIdx.x; b < limit; b += blockDim.x) {
      V acc = sub[b];
      for (int j = 1; j < M; ++j) acc = Op{}(acc, sub[std::int64_t(j) * chunk + b]);
      sink(b, acc);
    }
    return;
  }
  const int group = merge_group<V>(limit);
  const int lane = threadIdx.x & 31;
  const unsigned group_mask = group == 32 ? ~0u : ((1u << group) - 1) << (lane & ~(group - 1));
  // Every lane of a group has the same bin, so a group enters and leaves the loop together.
  for (std::int64_t t = threadIdx.x; t < limit * group; t += blockDim.x) {
    const std::int64_t b = t / group;
    const V* row = sub + b * M;
    // Lane l folds copies l, l + group, ... (mod M): at each step the warp's lanes read 32
    // different banks (M is a multiple of 32), and the group's lanes cover every copy once.
    int c = lane % M;
    V acc = row[c];
    for (int j = 1; j < M / group; ++j) {
      c += group;
      if (c >= M) c -= M;
      acc = Op{}(acc, row[c]);
    }
    if constexpr (sizeof(V) % 4 == 0)
      for (int d = group / 2; d > 0; d /= 2) acc = Op{}(acc, shuffle_value(group_mask, acc, lane ^ d));
    if ((lane & (group - 1)) == 0) sink(b, acc);
  }
}

// Folds a bin's combination into the destination bin at `at` with the kind's atomic, unless it is
// the identity (nothing landed there): for hardware kinds with a PTX reduction, one predicated
// instruction (see predicated_red).
template <atomic_kind K, class Op>
__device__ __forceinline__ void fold_into(typename Op::value_type* at, int* lock, const typename Op::value_type& acc) {
  const bool landed = !same_bits(acc, Op::identity());
  if constexpr (K == atomic_kind::hdw && has_predicated_red<Op>) predicated_red<Op>(at, acc, landed);
  else if (landed) atomic_update<K, Op>(at, lock, acc);
}

// Folds value(q) into the destination bin lo + q for q in [0, hi - lo) (fewer than 2^31: one
// block's bins), fold_into for each. The blocks that fold the same bins at about the same time
// (the parts of one pass end together) start at different places: block `turn` of `turns` begins
// turn / turns of the way in and wraps around, so their atomics do not meet on the same
// addresses. 32-bit positions and the wrap as two loops: with 64-bit ones and a wrap per bin, the
// loop took ~23 instructions per bin (H100, int add, one 48K-bin block per SM: 43.5M -> 41.7M
// instructions in all, 83.8 -> 82.9 us).
// (Measured and not kept: CAS taking a thread's bins eight at a time, first reads and first
// compare-and-swaps all in flight together, was slower on the H100: 24-bit saturated add, one
// 48K-bin copy per block, 539 vs 396 us.)
template <atomic_kind K, class Op, class Value>
__device__ __forceinline__ void fold_range(typename Op::value_type* out, int* out_locks, std::int64_t lo, std::int64_t hi,
                                           std::int64_t turn, std::int64_t turns, Value&& value) {
  const int len = int(hi - lo);
  // A multiple of 32 bins, so each warp's updates stay on consecutive addresses.
  const int shift = turns > 1 ? int((std::int64_t(len) * turn / turns) & ~std::int64_t{31}) : 0;
  typename Op::value_type* base = out + lo;
  int* locks = out_locks ? out_locks + lo : nullptr;
  const auto one = [&](int q) { fold_into<K, Op>(base + q, locks ? locks + q : nullptr, value(q)); };
  for (int q = shift + int(threadIdx.x); q < len; q += blockDim.x) one(q);
  for (int q = int(threadIdx.x); q < shift; q += blockDim.x) one(q);
}

// Whether shared kernels of update mode Mode fold through clusters (in a version of their own)
// and block partials: the atomic mode's (the only one block partials serve and clusters can be
// forced for; see merge_block for what the cluster code costs, and for the compile time of one
// more kernel per operator and functor).
template <update_mode Mode>
inline constexpr bool hist_fold_variants = Mode == update_mode::atomic;

// Combines the block's M copies in place: afterwards bin b's block result is at b * (the
// returned stride). Callers synchronise before reading it.
template <class Op>
__device__ __forceinline__ std::int64_t combine_copies_in_place(typename Op::value_type* sub, std::int64_t limit, int M,
                                                                int chunk) {
  using V = typename Op::value_type;
  const std::int64_t first = hist_interleaved(M) ? M : 1;
  if (M > 1) fold_copies<Op>(sub, limit, M, chunk, [&](std::int64_t b, const V& acc) { sub[b * first] = acc; });
  return first;
}

// The end of a block: its M copies are combined in place, then folded into the destination. With
// FoldVariants, a block in a cluster of C blocks (all on the same pass of the same histogram)
// folds slice `rank` of the bins over all C blocks' shared memory (distributed shared memory), so
// the destination takes one update per cluster; the last barrier keeps every block's shared memory
// alive until the others have read it. With a `partial` row, the block (or cluster) stores its
// result there instead, for hist_rows_kernel to fold. turn / turns: this block's (or cluster's)
// place among those folding the same bins (see fold_range).
// The cluster code costs registers even where it does not run (ptxas, sm_90: 32 -> 44-64 per
// thread for 1024-thread blocks, which then no longer fit twice on an SM), so only the kernels
// launched in clusters have it (FoldVariants), and its loop over ranks stays rolled. The partial
// rows cost none: every kernel of the atomic mode has them.
template <atomic_kind K, class Op, bool FoldVariants>
__device__ __forceinline__ void merge_block(typename Op::value_type* sub, std::int64_t limit, int M, int chunk,
                                            typename Op::value_type* out, int* out_locks, int cluster, std::int64_t turn,
                                            std::int64_t turns, typename Op::value_type* partial) {
  using V = typename Op::value_type;
  const std::int64_t first = combine_copies_in_place<Op>(sub, limit, M, chunk);
  unsigned C = 1, rank = 0;
#if __CUDA_ARCH__ >= 900
  if (FoldVariants && cluster > 1) {
    C = __clusterSizeInBlocks();
    rank = __clusterRelativeBlockRank();
    __cluster_barrier_arrive();
    __cluster_barrier_wait();
  } else
#endif
  if (M > 1) {
    __syncthreads();
  }
  // Slices of whole warps' worth of bins, so the destination updates stay coalesced.
  const std::int64_t per = (ceil_div(limit, C) + 31) & ~std::int64_t{31};
  const std::int64_t lo = std::min<std::int64_t>(limit, rank * per), hi = std::min<std::int64_t>(limit, lo + per);
  const int stride = int(first);  // M * chunk values fit an int
  auto result = [&](int b) {
    V acc = sub[b * stride];
#if __CUDA_ARCH__ >= 900
    // The other blocks' copies from the next rank on, so the blocks of a cluster do not all read
    // the same block at once.
#pragma unroll 1
    for (unsigned j = 1; j < C; ++j)
      acc = Op{}(acc, static_cast<const V*>(__cluster_map_shared_rank(sub, (rank + j) % C))[b * stride]);
#endif
    return acc;
  };
  if (partial) {
    for (int b = int(lo) + threadIdx.x; b < hi; b += blockDim.x) partial[b] = result(b);
  } else {
    fold_range<K, Op>(out, out_locks, lo, hi, turn, turns, [&](int q) { return result(int(lo) + q); });
  }
#if __CUDA_ARCH__ >= 900
  if (C > 1) {
    __cluster_barrier_arrive();
    __cluster_barrier_wait();
  }
#endif
}

// p, a pointer into the block's shared memory, as one the compiler keeps in a register. Otherwise
// ptxas recomputes the shared window's address (S2UR, ULEA on sm_90) inside every conditional
// update, five of the ~35 instructions per element of a 48K-bin int histogram on the H100, whose
// one 1024-thread block per SM cannot hide them. The atomics stay shared-memory ones.
template <class T>
__device__ __forceinline__ T* register_shared(T* p) {
  unsigned int address = unsigned(__cvta_generic_to_shared(p));
  asm volatile("" : "+r"(address));  // opaque to the compiler, so it cannot rematerialise it
  return static_cast<T*>(__cvta_shared_to_generic(address));
}

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

// The split shared strategy (hist_options::split): the `C` blocks of a cluster hold one histogram
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

template <class V>
__global__ void hist_fill_kernel(V* p, std::int64_t count, V value) {
  for (std::int64_t i = std::int64_t{blockIdx.x} * blockDim.x + threadIdx.x; i < count; i += std::int64_t{gridDim.x} * blockDim.x)
    p[i] = value;
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

// histo[b] = histo[b] (+) rows[0][b] (+) ... (+) rows[count - 1][b] for b < len: the block
// partials (one row per block or cluster, 66-264 on the H100). A block takes 32 bins (blockDim =
// (32, rows_warps)) and its warps every rows_warps-th row, so a bin's rows are read by several
// warps at once rather than one load after another by a single thread. (For the global
// strategy's 3-39 sub-histograms hist_reduce_kernel stays: this kernel in its place measured
// 0.5-2% slower on the H100, sat-add 393K-1.5M.)
inline constexpr int rows_warps = 8;
template <class Op>
__global__ void __launch_bounds__(32 * rows_warps)
    hist_rows_kernel(const typename Op::value_type* rows, typename Op::value_type* histo, std::int64_t len,
                     std::int64_t count) {
  using V = typename Op::value_type;
  // Raw storage: V need not be default-constructible.
  __shared__ __align__(16) unsigned char raw[rows_warps * 32 * sizeof(V)];
  V* warp_results = reinterpret_cast<V*>(raw);
  const std::int64_t b = std::int64_t{blockIdx.x} * 32 + threadIdx.x;
  V acc = Op::identity();
  if (b < len)
    for (std::int64_t j = threadIdx.y; j < count; j += rows_warps) acc = Op{}(acc, rows[j * len + b]);
  warp_results[threadIdx.y * 32 + threadIdx.x] = acc;
  __syncthreads();
  if (threadIdx.y == 0 && b < len) {
    V total = histo[b];
    for (int w = 0; w < rows_warps; ++w) total = Op{}(total, warp_results[w * 32 + threadIdx.x]);
    histo[b] = total;
  }
}

// RF inspector (III-D): marks the bins each sampled group touches in a bitmap and counts the
// in-range updates and the distinct bins. Grid: (blocks per group, groups).
inline constexpr int inspect_block = 256;
template <class F>
__global__ void __launch_bounds__(inspect_block)
    hist_inspect_kernel(std::int64_t n, F f, std::int64_t H, std::int64_t group, unsigned int* bits,
                        unsigned long long* counts) {
  using R = decltype(f(std::int64_t{0}));
  using U = updates_of<R>;
  const int g = blockIdx.y;
  const std::int64_t start = gridDim.y > 1 ? g * ((n - group) / (gridDim.y - 1)) : 0;
  const std::int64_t words = (H + 31) / 32;
  unsigned int* my_bits = bits + g * words;
  unsigned long long hits = 0, distinct = 0;
  for (std::int64_t j = std::int64_t{blockIdx.x} * blockDim.x + threadIdx.x; j < group; j += std::int64_t{gridDim.x} * blockDim.x) {
    const R r = f(start + j);
#pragma unroll
    for (int k = 0; k < U::count; ++k) {
      const std::int64_t b = U::get(r, k).bin;
      if (b < 0 || b >= H) continue;
      ++hits;
      const unsigned int bit = 1u << (b % 32);
      if (!(atomicOr(my_bits + b / 32, bit) & bit)) ++distinct;
    }
  }
  using reduce = cub::BlockReduce<unsigned long long, inspect_block>;
  __shared__ typename reduce::TempStorage tmp;
  const unsigned long long h = reduce(tmp).Sum(hits);
  __syncthreads();
  const unsigned long long d = reduce(tmp).Sum(distinct);
  if (threadIdx.x == 0) {
    atomicAdd(counts + 2 * g, d);
    atomicAdd(counts + 2 * g + 1, h);
  }
}

// Estimates RF: updates per distinct bin over groups of H consecutive elements (1 when nothing
// lands in range). Synchronises the stream: the plan depends on the answer.
template <class F>
double hist_inspect_cuda(context& ctx, std::int64_t n, F f, std::int64_t H) {
  const inspector_shape shape = plan_inspector(n, H);
  if (shape.groups == 0) return 1.0;
  const std::int64_t words = (H + 31) / 32;
  const std::size_t bit_bytes = std::size_t(words) * shape.groups * 4, count_bytes = 2 * shape.groups * 8;
  auto* mem = static_cast<unsigned char*>(ctx.allocate_temp(bit_bytes + count_bytes));
  auto* counts = reinterpret_cast<unsigned long long*>(mem);
  auto* bits = reinterpret_cast<unsigned int*>(mem + count_bytes);
  std::vector<unsigned long long> host(2 * shape.groups);
  try {
    SOAC_CUDA_CHECK(cudaMemsetAsync(mem, 0, bit_bytes + count_bytes, ctx.stream()));
    const std::int64_t blocks = std::clamp<std::int64_t>(ceil_div(shape.group, inspect_block * 8), 1, 1024);
    hist_inspect_kernel<<<dim3(unsigned(blocks), unsigned(shape.groups)), inspect_block, 0, ctx.stream()>>>(n, f, H, shape.group, bits, counts);
    SOAC_CHECK_LAUNCH("hist_inspect_kernel");
    SOAC_CUDA_CHECK(cudaMemcpyAsync(host.data(), counts, count_bytes, cudaMemcpyDeviceToHost, ctx.stream()));
    SOAC_CUDA_CHECK(cudaStreamSynchronize(ctx.stream()));
  } catch (...) {
    ctx.free_temp(mem);
    throw;
  }
  ctx.free_temp(mem);
  double sum = 0;
  int used = 0;
  for (int g = 0; g < shape.groups; ++g) {
    if (host[2 * g] == 0) continue;
    sum += double(host[2 * g + 1]) / double(host[2 * g]);
    ++used;
  }
  return used ? sum / used : 1.0;
}

// Temporary device memory released at scope exit.
struct hist_temp {
  context& ctx;
  void* p = nullptr;
  hist_temp(context& c, std::size_t bytes) : ctx(c) { p = bytes ? c.allocate_temp(bytes) : nullptr; }
  ~hist_temp() { if (p) ctx.free_temp(p); }
  hist_temp(const hist_temp&) = delete;
  hist_temp& operator=(const hist_temp&) = delete;
};

// histo[b] (+)= the b-th bin of every one of `rows` rows of H partial results (hist_rows_kernel).
template <class Op>
void reduce_rows(context& ctx, const typename Op::value_type* rows, typename Op::value_type* histo, std::int64_t H,
                 std::int64_t count) {
  hist_rows_kernel<Op><<<unsigned(ceil_div(H, 32)), dim3(32, rows_warps), 0, ctx.stream()>>>(rows, histo, H, count);
  SOAC_CHECK_LAUNCH("hist_rows_kernel");
}

// Calls fn(integral_constant<update_mode, ...>) for the plan's update mode, instantiating the
// combining kernels only where they can apply.
template <atomic_kind K, class Op, class Fn>
void with_update_mode(const hist_plan& plan, Fn&& fn) {
  if (plan.thread_private) return fn(std::integral_constant<update_mode, update_mode::exclusive>{});
  if constexpr (combinable<K, Op>)
    if (plan.warp_combine) return fn(std::integral_constant<update_mode, update_mode::combined>{});
  fn(std::integral_constant<update_mode, update_mode::atomic>{});
}

template <atomic_kind K, int items, class Op, update_mode Mode, class F, int MaxBlock = hist_tuning::shared_block,
          int WideItems = 0, bool Ahead = false>
void hist_shared_run(context& ctx, hist_plan& plan, std::int64_t seg_len, std::int64_t batches, F f,
                     typename Op::value_type* histo, std::int64_t H, std::size_t bytes);

template <atomic_kind K, class Op, class F>
void hist_shared_launch(context& ctx, hist_plan& plan, std::int64_t seg_len, std::int64_t batches, F f,
                        typename Op::value_type* histo, std::int64_t H) {
  using V = typename Op::value_type;
  const std::size_t count = std::size_t(plan.multi) * plan.chunk;
  // Values, then (xcg sharing copies) the locks at the next 4-byte boundary, as the kernel lays
  // them out.
  const bool shared_locks = K == atomic_kind::xcg && !plan.thread_private;
  const std::size_t bytes = shared_locks ? ((count * sizeof(V) + 3) & ~std::size_t(3)) + count * 4 : count * sizeof(V);
  // (Other element counts for blocks that fill an SM alone were measured on the H100 and lost:
  // 48K int bins 93.5 us with 8, 94.0 us with 16; later, 4 / 6 / 8 / 12 elements 96.8 / 89.0 /
  // 85.7 / 93.1 us (RF = 1). Thread-private blocks are smaller: see
  // hist_tuning::private_items_per_thread.)
  with_update_mode<K, Op>(plan, [&](auto mode) {
    constexpr update_mode Mode = decltype(mode)::value;
    if constexpr (Mode == update_mode::exclusive) {
      if (plan.items_per_thread > hist_tuning::items_per_thread)
        return hist_shared_run<K, hist_items<F, hist_tuning::private_items_per_thread>(), Op, Mode, F,
                               hist_tuning::private_items_max_block>(ctx, plan, seg_len, batches, f, histo, H, bytes);
    }
    if constexpr (K == atomic_kind::cas && Mode == update_mode::atomic) {
      // The plan's elements per step (see hist_tuning::shared_items_cas_contended): sampled per
      // block, or fixed for contention-tolerant operators.
      constexpr int contended = hist_items<F, hist_tuning::shared_items_cas_contended>();
      constexpr int wide = hist_items<F, hist_tuning::shared_items_cas_wide>();
      if (plan.items_wide > 0 && plan.load_ahead)
        return hist_shared_run<K, contended, Op, Mode, F, hist_tuning::shared_block, wide, true>(ctx, plan, seg_len, batches,
                                                                                                 f, histo, H, bytes);
      if (plan.items_wide > 0)
        return hist_shared_run<K, contended, Op, Mode, F, hist_tuning::shared_block, wide>(ctx, plan, seg_len, batches, f,
                                                                                          histo, H, bytes);
      if (plan.items_per_thread == hist_tuning::shared_items_cas_alone)
        return hist_shared_run<K, hist_items<F, hist_tuning::shared_items_cas_alone>(), Op, Mode>(ctx, plan, seg_len, batches,
                                                                                                f, histo, H, bytes);
      return hist_shared_run<K, contended, Op, Mode>(ctx, plan, seg_len, batches, f, histo, H, bytes);
    }
    if constexpr (Mode == update_mode::atomic)
      if (plan.load_ahead)
        return hist_shared_run<K, hist_items<F>(), Op, Mode, F, hist_tuning::shared_block, 0, true>(ctx, plan, seg_len,
                                                                                                    batches, f, histo, H, bytes);
    hist_shared_run<K, hist_items<F>(), Op, Mode>(ctx, plan, seg_len, batches, f, histo, H, bytes);
  });
}

template <atomic_kind K, int items, class Op, update_mode Mode, class F, int MaxBlock, int WideItems, bool Ahead>
void hist_shared_run(context& ctx, hist_plan& plan, std::int64_t seg_len, std::int64_t batches, F f,
                     typename Op::value_type* histo, std::int64_t H, std::size_t bytes) {
  if (plan.block_threads > MaxBlock)
    throw usage_error("hist: a block of " + std::to_string(plan.block_threads) + " threads for a kernel built for at most " +
                      std::to_string(MaxBlock));
  auto kernel = hist_shared_kernel<K, items, Op, Mode, F, MaxBlock, false, WideItems, Ahead>;
  plan.load_ahead = Ahead;
  plan.shared_bytes = bytes;
  plan.warp_combine = Mode == update_mode::combined;
  // As many blocks per SM as fit, up to the plan's.
  const int fit = resident_blocks(kernel, plan.block_threads, bytes, "hist");
  const int per_sm = plan.blocks_per_sm > 0 ? std::min(fit, plan.blocks_per_sm) : fit;
  const std::int64_t resident = std::int64_t(ctx.props().sm_count) * per_sm;
  // Passes side by side: the blocks of a group of passes share each part of the input (neighbouring
  // block indices, so they run at the same time and all but one read it from L2) instead of
  // reading all of it from DRAM once per pass. Measured on the H100 (int add, 50M elements):
  // H = 192K (S = 4) 370 -> 290 us, 393K (S = 7) 681 -> 493 us.
  const bool side = batches == 1 && plan.passes > 1;
  const std::int64_t group = side ? std::min<std::int64_t>(plan.passes, resident) : 1;
  // Blocks per pass of a single histogram; K blocks per histogram when batched (IV-C:
  // K = ceil((T / B) / Nout)).
  std::int64_t parts = 1;
  if (batches == 1) {
    parts = std::clamp<std::int64_t>(ceil_div(seg_len, std::int64_t(plan.block_threads) * items), 1,
                                     std::max<std::int64_t>(1, resident / group));
  } else {
    plan.blocks_per_histogram = std::max<std::int64_t>(1, ceil_div(resident, batches));
    if (plan.blocks_per_histogram * batches > max_grid_x) throw usage_error("hist: too many batched histograms for one grid");
  }
  // Block partials need a single histogram (passes side by side write their chunks of a part's
  // row). Clusters need the kernel version with the
  // cluster fold (see merge_block) where it keeps the blocks per SM, whole clusters per histogram
  // and pass, and every cluster of the grid (up to a full wave) resident at once: a shape the GPCs
  // cannot hold would leave SMs idle or run a second wave.
  int cluster = 1;
  bool partials = false;
  if constexpr (hist_fold_variants<Mode>) {
    partials = plan.block_partials && batches == 1;
    const int c = plan.cluster;
    const bool whole = batches == 1 ? parts >= c : plan.blocks_per_histogram % c == 0;
    auto variants = hist_shared_kernel<K, items, Op, Mode, F, MaxBlock, true>;  // contended steps only
    if (c > 1 && whole && resident_blocks(variants, plan.block_threads, bytes, "hist") >= per_sm) {
      const std::int64_t grid = batches == 1 ? group * (parts - parts % c) : plan.blocks_per_histogram * batches;
      if (std::int64_t(resident_clusters(variants, plan.block_threads, bytes, c)) * c >= std::min(grid, resident)) {
        cluster = c;
        kernel = variants;
        plan.load_ahead = false;
      }
    }
  }
  plan.grid = batches == 1 ? group * (parts - parts % cluster) : plan.blocks_per_histogram * batches;
  plan.cluster = cluster;
  plan.block_partials = partials;
  plan.items_per_thread = items;
  plan.items_wide = cluster > 1 ? 0 : WideItems;
  hist_temp locks(ctx, K == atomic_kind::xcg ? std::size_t(batches * H) * 4 : 0);
  if (locks.p) SOAC_CUDA_CHECK(cudaMemsetAsync(locks.p, 0, std::size_t(batches * H) * 4, ctx.stream()));
  const std::int64_t rows = partials ? plan.grid / group / cluster : 0;  // one per part (passes side by side share it)
  hist_temp partial_rows(ctx, std::size_t(rows * H) * sizeof(typename Op::value_type));
  const std::int64_t per_hist = batches == 1 ? plan.grid : plan.blocks_per_histogram;
  cluster_launch launch(plan.grid, plan.block_threads, bytes, ctx.stream(), cluster);
  for (std::int64_t off = 0; off < H; off += group * plan.chunk) {
    SOAC_CUDA_CHECK(cudaLaunchKernelEx(&launch.config, kernel, seg_len, per_hist, f, histo, static_cast<int*>(locks.p), H, off,
                                       int(plan.chunk), plan.multi, int(group), cluster,
                                       static_cast<typename Op::value_type*>(partial_rows.p)));
  }
  if (partials) reduce_rows<Op>(ctx, static_cast<const typename Op::value_type*>(partial_rows.p), histo, H, rows);
}

template <atomic_kind K, class Op, update_mode Mode, class F>
void hist_global_run(context& ctx, hist_plan& plan, std::int64_t n, F f, typename Op::value_type* histo, std::int64_t H) {
  using V = typename Op::value_type;
  constexpr bool tolerant = model_contention_tolerance<Op>(K) > 0;
  constexpr int items =
      hist_items<F, tolerant ? hist_tuning::global_items_per_thread_tolerant : hist_tuning::items_per_thread>();
  auto kernel = hist_global_kernel<K, items, Op, Mode, F>;
  plan.items_per_thread = items;
  plan.warp_combine = Mode == update_mode::combined;
  // One tile per thread: the hardware hands blocks out in order, so the resident warps work on a
  // narrow window of the input. Measured on the H100 against a resident grid with one balanced
  // part per block (50M elements, RF = 1): argmax 48K 1513 -> 476 us (uncombined), 24-bit
  // saturated add 196K 1900 -> 1611 us. (resident_blocks still checks that the kernel can run.)
  // Two items per thread instead of eight: argmax 6-10% faster, saturated add RF = 63 8% slower.
  resident_blocks(kernel, plan.block_threads, 0, "hist");
  plan.grid = std::clamp<std::int64_t>(ceil_div(n, std::int64_t(plan.block_threads) * items), 1, max_grid_x);
  const std::int64_t M = plan.multi, chunk = plan.chunk;
  // M = 1 updates the destination in place; otherwise M sub-histograms of one chunk each.
  hist_temp subs(ctx, M > 1 ? std::size_t(M * chunk) * sizeof(V) : 0);
  const std::int64_t lock_count = K == atomic_kind::xcg ? (M > 1 ? M * chunk : H) : 0;
  hist_temp locks(ctx, std::size_t(lock_count) * 4);
  if (locks.p) SOAC_CUDA_CHECK(cudaMemsetAsync(locks.p, 0, std::size_t(lock_count) * 4, ctx.stream()));
  const int fill_grid = int(std::min<std::int64_t>(ceil_div(M * chunk, 256), 4 * ctx.props().sm_count));
  for (std::int64_t off = 0; off < H; off += chunk) {
    const std::int64_t limit = std::min(chunk, H - off);
    V* target = M > 1 ? static_cast<V*>(subs.p) : histo + off;
    int* target_locks = locks.p ? static_cast<int*>(locks.p) + (M > 1 ? 0 : off) : nullptr;
    if (M > 1) {
      hist_fill_kernel<<<fill_grid, 256, 0, ctx.stream()>>>(target, M * chunk, Op::identity());
      SOAC_CHECK_LAUNCH("hist_fill_kernel");
    }
    kernel<<<unsigned(plan.grid), plan.block_threads, 0, ctx.stream()>>>(n, f, target, target_locks, H, off,
                                                                          M > 1 ? chunk : limit, int(M));
    SOAC_CHECK_LAUNCH("hist_global_kernel");
    if (M > 1) {
      const int grid = int(std::clamp<std::int64_t>(ceil_div(limit, 256), 1, 8 * ctx.props().sm_count));
      hist_reduce_kernel<Op><<<grid, 256, 0, ctx.stream()>>>(target, histo + off, limit, chunk, int(M));
      SOAC_CHECK_LAUNCH("hist_reduce_kernel");
    }
  }
}

template <atomic_kind K, class Op, class F>
void hist_global_launch(context& ctx, hist_plan& plan, std::int64_t n, F f, typename Op::value_type* histo, std::int64_t H) {
  if (plan.warp_combine && plan.chunk >= std::int64_t{0xffffffff})
    plan.warp_combine = false;  // the combining key is a 32-bit bin offset
  with_update_mode<K, Op>(plan, [&](auto mode) { hist_global_run<K, Op, decltype(mode)::value>(ctx, plan, n, f, histo, H); });
}

// ---- Partitioned multi-pass (hist_options::partition). Where the shared strategy needs S passes
// over chunks of Hchk bins, the input is read once and every in-range update is written, as (bin
// within its chunk, value), into the bucket of its chunk (a partition kernel ranks each tile's
// updates by bucket with CUB's BlockRadixRankMatch and reserves room in the buckets with one atomic
// per bucket and tile); then every resident block folds one contiguous part of the bucketed
// updates into shared copies of the one or few chunks its part spans, and stores each chunk's
// result in a row of partials that a last kernel reduces into the destination.

inline constexpr unsigned partition_ignored = 255;  // hist_tuning::partition_max_buckets
static_assert(partition_ignored == unsigned(hist_tuning::partition_max_buckets));

// The bucket of a bin (bin / chunk), or partition_ignored outside [0, H). The count and the
// partition kernels take it for every update, so the division is a multiply (fast_divisor).
__host__ __device__ __forceinline__ unsigned bucket_of(std::int64_t bin, std::int64_t H, const fast_divisor& chunk) {
  return std::uint64_t(bin) < std::uint64_t(H) ? chunk.divide(unsigned(bin)) : partition_ignored;
}

// Bucket of every update, counted: a histogram of S bins, ignoring what f ignores.
template <class F>
struct bucket_counter {
  F f;
  std::int64_t H;
  fast_divisor chunk;
  SOAC_HD auto operator()(std::int64_t i) const {
    const auto r = f(i);
    using U = updates_of<std::remove_cv_t<decltype(r)>>;
    bin_values<unsigned, U::count> out;
    for (int k = 0; k < U::count; ++k) {
      const unsigned d = bucket_of(U::get(r, k).bin, H, chunk);
      out[k] = {d == partition_ignored ? std::int64_t{-1} : std::int64_t(d), 1u};
    }
    return out;
  }
};

// offsets[d] = the first position of bucket d (offsets[S] = all updates in range), and the
// partition kernel's cursors start there. S < partition_block.
inline constexpr int partition_block = 256;
// static: a header's only non-template kernel, defined in every translation unit that includes it.
static __global__ void __launch_bounds__(partition_block)
    hist_bucket_offsets_kernel(const unsigned* counts, int S, unsigned* offsets, unsigned* cursors) {
  using scan = cub::BlockScan<unsigned, partition_block>;
  __shared__ typename scan::TempStorage tmp;
  const int d = threadIdx.x;
  unsigned start = 0, total = 0;
  scan(tmp).ExclusiveSum(d < S ? counts[d] : 0u, start, total);
  if (d < S) offsets[d] = cursors[d] = start;
  if (d == 0) offsets[S] = total;
}

// The key the ranking sorts: bucket << 24 | bin within the chunk; the digit is the bucket, or
// partition_ignored.
struct bucket_digit {
  __device__ __forceinline__ std::uint32_t Digit(std::uint32_t key) const { return key >> 24; }
};
// Elements per thread of the partition kernel: partition_updates updates per thread. Few, so that
// the kernel stays near 40 registers and six blocks share an SM: measured on the H100 (24-bit
// saturated add, 393K bins, 16 buckets, 50M elements, under ncu), 256 threads with 4 / 8 / 16
// updates 424 / 562 / 719 us, 512 threads with 4 463 us, 1024 with 2 618 us.
inline constexpr int partition_updates = 4;
template <class F>
constexpr int partition_elements() {
  using R = decltype(std::declval<F>()(std::int64_t{0}));
  return std::max(1, partition_updates / updates_of<R>::count);
}

template <class V, int Tile>
struct partition_storage {
  using rank = cub::BlockRadixRankMatch<partition_block, 8, false>;
  union {
    typename rank::TempStorage ranking;
    struct {
      unsigned word[Tile];  // bucket << 24 | bin within the chunk, in ranked order
      alignas(16) unsigned char value[Tile * sizeof(V)];
    } staged;
  } u;
  unsigned prefix[partition_block];  // the tile's first rank of each bucket
  unsigned base[partition_block];    // where the tile's part of each bucket starts, less prefix
};

// One tile of partition_block * Elems elements: evaluate, rank by bucket, reserve room in each
// bucket, stage in ranked order, write each bucket's run.
template <class Op, int Elems, class F>
__global__ void __launch_bounds__(partition_block)
    hist_partition_kernel(std::int64_t n, F f, std::int64_t H, fast_divisor chunk, unsigned* cursors, unsigned* out_bins,
                          typename Op::value_type* out_values) {
  using V = typename Op::value_type;
  using U = updates_of<decltype(f(std::int64_t{0}))>;
  constexpr int Q = Elems * U::count, Tile = partition_block * Q;
  using storage = partition_storage<V, Tile>;
  extern __shared__ __align__(16) unsigned char smem[];
  storage& st = *reinterpret_cast<storage*>(smem);
  const int t = threadIdx.x;
  const std::int64_t first = std::int64_t{blockIdx.x} * partition_block * Elems;
  unsigned keys[Q];
  V values[Q];
#pragma unroll
  for (int j = 0; j < Elems; ++j) {
    const std::int64_t i = first + j * partition_block + t;
    if (i < n) {
      const auto r = f(i);
#pragma unroll
      for (int k = 0; k < U::count; ++k) {
        const auto& u = U::get(r, k);
        const unsigned d = bucket_of(u.bin, H, chunk);
        keys[j * U::count + k] = d << 24 | (d != partition_ignored ? unsigned(u.bin) - d * chunk.divisor() : 0u);
        values[j * U::count + k] = static_cast<V>(u.value);
      }
    } else {
#pragma unroll
      for (int k = 0; k < U::count; ++k) keys[j * U::count + k] = partition_ignored << 24;
    }
  }
  int ranks[Q], prefix[1];
  typename storage::rank(st.u.ranking).RankKeys(keys, ranks, bucket_digit{}, prefix);
  st.prefix[t] = unsigned(prefix[0]);  // thread d holds digit d's
  __syncthreads();  // the ranking's storage becomes the staging area
  const unsigned in_range = st.prefix[partition_ignored];
  if (t < int(partition_ignored)) {
    const unsigned count = st.prefix[t + 1] - st.prefix[t];
    if (count) st.base[t] = atomicAdd(cursors + t, count) - st.prefix[t];
  }
  V* staged_values = reinterpret_cast<V*>(st.u.staged.value);
#pragma unroll
  for (int q = 0; q < Q; ++q)
    if (keys[q] >> 24 != partition_ignored) {
      st.u.staged.word[ranks[q]] = keys[q];
      staged_values[ranks[q]] = values[q];
    }
  __syncthreads();
  for (unsigned p = t; p < in_range; p += partition_block) {
    const unsigned w = st.u.staged.word[p];
    const unsigned at = st.base[w >> 24] + p;
    out_bins[at] = w & 0xffffffu;
    out_values[at] = staged_values[p];
  }
}

// Block b folds part b of the bucketed updates (part_of over all of them); for each bucket s the
// part spans, it fills M shared copies of chunk s, folds them together and stores the result in
// row b + s of `rows` (distinct for every non-empty (part, bucket) pair: parts and buckets are
// both contiguous and in order). Items: elements per step, as hist_shared_kernel's.
template <atomic_kind K, int Items, class Op>
__global__ void __launch_bounds__(hist_tuning::shared_block)
    hist_bucket_kernel(const unsigned* bins, const typename Op::value_type* values, const unsigned* offsets, int S,
                       std::int64_t H, int chunk, int M, typename Op::value_type* rows) {
  using V = typename Op::value_type;
  extern __shared__ __align__(16) unsigned char smem[];
  V* sub = reinterpret_cast<V*>(smem);
  // Part blockIdx.x of the bucketed updates, as part_of cuts them (positions are below 2^31).
  const unsigned total = offsets[S];
  const unsigned per = part_stride(total, gridDim.x);
  const unsigned part_lo = min(total, blockIdx.x * per), part_hi = min(total, part_lo + per);
  // The bucket holding position part_lo: the last s with offsets[s] <= part_lo.
  int s = 0;
  for (int step = 128; step > 0; step /= 2)
    if (s + step < S && offsets[s + step] <= part_lo) s += step;
  const bool interleaved = hist_interleaved(M);
  const int m = threadIdx.x % M;
  const int stride = interleaved ? M : 1;
  V* mine = register_shared(sub + (interleaved ? m : m * chunk));
  // Every bucketed bin is in range. 32-bit positions keep the kernel within the 32 registers that
  // let two 1024-thread blocks share an SM: with 64-bit ones the compare-and-swap versions spilled,
  // and at RF = 63 the spills' local-memory traffic (evicted to DRAM by the streaming reads)
  // tripled the kernel's time.
  struct update {
    unsigned bin;
    V value;
  };
  const auto load = [&](unsigned p) { return update{bins[p], values[p]}; };
  const auto apply_one = [&](const update& u) { atomic_update<K, Op>(mine + u.bin * stride, nullptr, u.value); };
  const auto apply = [&](const auto& t) {
    if constexpr (std::is_array_v<std::remove_cvref_t<decltype(t)>>) {
#pragma unroll
      for (const update& u : t) apply_one(u);
    } else {
      apply_one(t);
    }
  };
  const auto steps = [&](auto items, unsigned lo, unsigned hi) {
    constexpr int I = decltype(items)::value;
    if constexpr (K == atomic_kind::cas) {
      warp_steps<I>(lo, hi, load, apply);  // the warp meets after every step (see warp_steps)
    } else {
      const unsigned step = blockDim.x;
      unsigned i = lo + threadIdx.x;
      for (; i + (I - 1) * step < hi; i += I * step) {
        update t[I];
#pragma unroll
        for (int j = 0; j < I; ++j) t[j] = load(i + j * step);
        apply(t);
      }
      for (; i < hi; i += step) apply(load(i));
    }
  };
  for (unsigned lo = part_lo; lo < part_hi; ++s) {
    const unsigned hi = min(part_hi, offsets[s + 1]);
    if (hi <= lo) continue;  // an empty bucket
    const int limit = int(min(std::int64_t(chunk), H - std::int64_t(s) * chunk));
    for (int i = threadIdx.x; i < M * chunk; i += blockDim.x) sub[i] = Op::identity();
    __syncthreads();
    steps(std::integral_constant<int, Items>{}, lo, hi);
    __syncthreads();
    const int first = int(combine_copies_in_place<Op>(sub, limit, M, chunk));
    if (M > 1) __syncthreads();
    V* row = rows + (std::int64_t{blockIdx.x} + s) * chunk;
    for (int b = threadIdx.x; b < limit; b += blockDim.x) row[b] = sub[b * first];
    __syncthreads();  // before the next bucket fills the copies again
    lo = hi;
  }
}

// histo[b] (+)= the rows of every part that spans bin b's bucket (see hist_bucket_kernel).
template <class Op>
__global__ void hist_bucket_rows_kernel(const typename Op::value_type* rows, typename Op::value_type* histo, std::int64_t H,
                                        int chunk, const unsigned* offsets, int S, std::int64_t parts) {
  const std::int64_t total = offsets[S];
  const std::int64_t per = part_stride(total, parts);  // as hist_bucket_kernel cut them
  for (std::int64_t b = std::int64_t{blockIdx.x} * blockDim.x + threadIdx.x; b < H; b += std::int64_t{gridDim.x} * blockDim.x) {
    const std::int64_t s = b / chunk, at = b - s * chunk;
    const std::int64_t begin = offsets[s], end = offsets[s + 1];
    if (begin == end) continue;
    auto acc = histo[b];
    for (std::int64_t j = begin / per; j <= (end - 1) / per; ++j) acc = Op{}(acc, rows[(j + s) * chunk + at]);
    histo[b] = acc;
  }
}

template <atomic_kind K, class Op, int Items>
void hist_bucket_run(context& ctx, hist_plan& plan, const unsigned* bins, const typename Op::value_type* values,
                     const unsigned* offsets, typename Op::value_type* histo, std::int64_t H) {
  using V = typename Op::value_type;
  auto kernel = hist_bucket_kernel<K, Items, Op>;
  const std::size_t bytes = std::size_t(plan.multi) * std::size_t(plan.chunk) * sizeof(V);
  const int fit = resident_blocks(kernel, plan.block_threads, bytes, "hist");
  const int per_sm = plan.blocks_per_sm > 0 ? std::min(fit, plan.blocks_per_sm) : fit;
  plan.grid = std::int64_t(ctx.props().sm_count) * per_sm;
  plan.shared_bytes = bytes;
  plan.items_per_thread = Items;
  plan.items_wide = 0;
  const int S = plan.passes;
  hist_temp rows(ctx, std::size_t((plan.grid + S) * plan.chunk) * sizeof(V));
  kernel<<<unsigned(plan.grid), plan.block_threads, bytes, ctx.stream()>>>(bins, values, offsets, S, H, int(plan.chunk),
                                                                            plan.multi, static_cast<V*>(rows.p));
  SOAC_CHECK_LAUNCH("hist_bucket_kernel");
  const int grid = int(std::clamp<std::int64_t>(ceil_div(H, 256), 1, 8 * ctx.props().sm_count));
  hist_bucket_rows_kernel<Op><<<grid, 256, 0, ctx.stream()>>>(static_cast<const V*>(rows.p), histo, H, int(plan.chunk), offsets,
                                                              S, plan.grid);
  SOAC_CHECK_LAUNCH("hist_bucket_rows_kernel");
}

template <atomic_kind K, class Op, class F>
void hist_partition_run(context& ctx, hist_plan& plan, std::int64_t n, F f, typename Op::value_type* histo, std::int64_t H) {
  using V = typename Op::value_type;
  using U = updates_of<decltype(f(std::int64_t{0}))>;
  const int S = plan.passes;
  const fast_divisor chunk(unsigned(plan.chunk));
  const std::int64_t updates = n * U::count;
  // counts, offsets and cursors; then the bucketed bins and values.
  hist_temp small(ctx, std::size_t(3 * S + 1) * 4);
  auto* counts = static_cast<unsigned*>(small.p);
  unsigned *offsets = counts + S, *cursors = offsets + S + 1;
  SOAC_CUDA_CHECK(cudaMemsetAsync(counts, 0, std::size_t(S) * 4, ctx.stream()));
  {
    hist_plan count_plan = plan_hist_shared(ctx.props(), n, S, 4, atomic_kind::hdw, {});
    hist_shared_launch<atomic_kind::hdw, plus<unsigned>>(ctx, count_plan, n, 1, bucket_counter<F>{f, H, chunk}, counts, S);
  }
  hist_bucket_offsets_kernel<<<1, partition_block, 0, ctx.stream()>>>(counts, S, offsets, cursors);
  SOAC_CHECK_LAUNCH("hist_bucket_offsets_kernel");
  const std::size_t bin_bytes = (std::size_t(updates) * 4 + 255) & ~std::size_t(255);
  hist_temp pairs(ctx, bin_bytes + std::size_t(updates) * sizeof(V));
  auto* bins = static_cast<unsigned*>(pairs.p);
  auto* values = reinterpret_cast<V*>(static_cast<unsigned char*>(pairs.p) + bin_bytes);
  constexpr int elems = partition_elements<F>();
  auto partition = hist_partition_kernel<Op, elems, F>;
  constexpr std::size_t storage_bytes = sizeof(partition_storage<V, partition_block * elems * U::count>);
  resident_blocks(partition, partition_block, storage_bytes, "hist");
  const std::int64_t tiles = ceil_div(n, std::int64_t(partition_block) * elems);
  partition<<<unsigned(tiles), partition_block, storage_bytes, ctx.stream()>>>(n, f, H, chunk, cursors, bins, values);
  SOAC_CHECK_LAUNCH("hist_partition_kernel");
  // Compare-and-swap kinds take the plan's narrow steps: a sample per bucket (as the shared
  // kernel's) would need a second loop, whose registers spill (see hist_bucket_kernel).
  if constexpr (K == atomic_kind::cas) {
    if (plan.items_per_thread == hist_tuning::shared_items_cas_alone)
      return hist_bucket_run<K, Op, hist_tuning::shared_items_cas_alone>(ctx, plan, bins, values, offsets, histo, H);
    hist_bucket_run<K, Op, hist_tuning::shared_items_cas_contended>(ctx, plan, bins, values, offsets, histo, H);
  } else {
    hist_bucket_run<K, Op, hist_tuning::items_per_thread>(ctx, plan, bins, values, offsets, histo, H);
  }
}

// Clusters of more than 8 blocks (H100: up to 16) are opt-in per kernel and device; once each.
template <class Kernel>
void allow_large_clusters(Kernel kernel) {
  static std::mutex guard;
  static std::set<std::pair<const void*, int>> done;
  int device = 0;
  SOAC_CUDA_CHECK(cudaGetDevice(&device));
  std::lock_guard<std::mutex> lock(guard);
  if (done.insert({reinterpret_cast<const void*>(kernel), device}).second)
    SOAC_CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeNonPortableClusterSizeAllowed, 1));
}

// Launches the split shared strategy: one wave of whole clusters (a cluster's blocks must all be
// resident at once: they wait for each other).
template <atomic_kind K, int Items, class Op, class F>
void hist_split_run(context& ctx, hist_plan& plan, std::int64_t n, F f, typename Op::value_type* histo, std::int64_t H) {
  using V = typename Op::value_type;
  auto kernel = hist_split_kernel<K, Items, Op, F>;
  const int C = plan.split;
  if (C > 8) allow_large_clusters(kernel);
  resident_blocks(kernel, plan.block_threads, plan.shared_bytes, "hist");
  const int clusters = resident_clusters(kernel, plan.block_threads, plan.shared_bytes, C);
  if (clusters < 1)
    throw resource_error("hist: no cluster of " + std::to_string(C) + " blocks with " + std::to_string(plan.shared_bytes) +
                         " bytes of shared memory each fits this device (see hist_options::split)");
  plan.grid = std::int64_t(clusters) * C;
  plan.items_per_thread = Items;
  const std::int64_t rows = plan.block_partials ? clusters : 0;
  hist_temp partial_rows(ctx, std::size_t(rows * H) * sizeof(V));
  cluster_launch launch(plan.grid, plan.block_threads, plan.shared_bytes, ctx.stream(), C);
  SOAC_CUDA_CHECK(cudaLaunchKernelEx(&launch.config, kernel, n, f, histo, H, unsigned(plan.chunk), static_cast<V*>(partial_rows.p)));
  if (rows) reduce_rows<Op>(ctx, static_cast<const V*>(partial_rows.p), histo, H, rows);
}

// Whether the device holds at least one cluster of the split plan's shape (the model's split
// plans are CAS ones).
template <class Op, class F>
bool hist_split_fits(const hist_plan& plan) {
  if constexpr (!atomic_allowed<Op>(atomic_kind::cas)) {
    return false;
  } else {
    auto kernel = hist_split_kernel<atomic_kind::cas, hist_items<F, hist_tuning::split_items_cas>(), Op, F>;
    if (plan.split > 8) allow_large_clusters(kernel);
    resident_blocks(kernel, plan.block_threads, plan.shared_bytes, "hist");
    return resident_clusters(kernel, plan.block_threads, plan.shared_bytes, plan.split) >= 1;
  }
}

template <atomic_kind K, class Op, class F>
void hist_split_launch(context& ctx, hist_plan& plan, std::int64_t n, F f, typename Op::value_type* histo, std::int64_t H) {
  if constexpr (K == atomic_kind::xcg) throw usage_error("hist: split histograms take hardware or CAS atomics, not locks");
  else if constexpr (K == atomic_kind::hdw) hist_split_run<K, hist_items<F>(), Op>(ctx, plan, n, f, histo, H);
  else hist_split_run<K, hist_items<F, hist_tuning::split_items_cas>(), Op>(ctx, plan, n, f, histo, H);
}

// Calls fn(integral_constant<atomic_kind, K>) for the kind chosen at run time, instantiating only
// the kinds the operator allows.
template <class Op, class Fn>
void with_atomic_kind(atomic_kind k, Fn&& fn) {
  if constexpr (atomic_allowed<Op>(atomic_kind::hdw))
    if (k == atomic_kind::hdw) return fn(std::integral_constant<atomic_kind, atomic_kind::hdw>{});
  if constexpr (atomic_allowed<Op>(atomic_kind::cas))
    if (k == atomic_kind::cas) return fn(std::integral_constant<atomic_kind, atomic_kind::cas>{});
  if (k == atomic_kind::xcg) return fn(std::integral_constant<atomic_kind, atomic_kind::xcg>{});
  throw usage_error("hist: atomic kind " + std::string(to_string(k)) + " cannot update this value type");
}

// A single histogram: plan (running the inspector if the global model needs RF), then launch.
template <class Op, class F>
hist_plan hist_cuda(context& ctx, const hist_options& options, atomic_kind kind, std::int64_t n, F f,
                    typename Op::value_type* histo, std::int64_t H) {
  ctx.activate();
  constexpr int per_element = updates_of<decltype(f(std::int64_t{0}))>::count;
  hist_plan plan = plan_hist(ctx.props(), n, H, model_element_bytes<Op>(kind), kind, options,
                             [&] { return hist_inspect_cuda(ctx, n, f, H); }, model_contention_tolerance<Op>(kind), per_element);
  if (n == 0 || H == 0) return plan;
  if (plan.partitioned && options.partition == hist_toggle::automatic) {
    // The model's partitioned plan needs its bucketed updates in device memory: without room
    // (a quarter of what is free kept back), the plan it would make otherwise.
    std::size_t free_bytes = 0, total = 0;
    SOAC_CUDA_CHECK(cudaMemGetInfo(&free_bytes, &total));
    if (partition_temp_bytes(plan, n * per_element, sizeof(typename Op::value_type), ctx.props().sm_count) > free_bytes / 4 * 3) {
      hist_options whole = options;
      whole.partition = hist_toggle::off;
      plan = plan_hist(ctx.props(), n, H, model_element_bytes<Op>(kind), kind, whole,
                       [&] { return hist_inspect_cuda(ctx, n, f, H); }, model_contention_tolerance<Op>(kind), per_element);
    }
  }
  if (plan.split > 1 && options.split == 0 && !hist_split_fits<Op, F>(plan)) {
    // The model's split cluster does not fit this device: global memory, as for larger histograms.
    hist_options global = options;
    global.strategy = hist_strategy::global;
    plan = plan_hist(ctx.props(), n, H, model_element_bytes<Op>(kind), kind, global,
                     [&] { return hist_inspect_cuda(ctx, n, f, H); }, model_contention_tolerance<Op>(kind), per_element);
  }
  with_atomic_kind<Op>(kind, [&](auto k) {
    constexpr atomic_kind K = decltype(k)::value;
    if (plan.partitioned) {
      if constexpr (K == atomic_kind::xcg) throw usage_error("hist: partitioned histograms take hardware or CAS atomics, not locks");
      else hist_partition_run<K, Op>(ctx, plan, n, f, histo, H);
    } else if (plan.split > 1) hist_split_launch<decltype(k)::value, Op>(ctx, plan, n, f, histo, H);
    else if (plan.strategy == hist_strategy::shared) hist_shared_launch<decltype(k)::value, Op>(ctx, plan, n, 1, f, histo, H);
    else hist_global_launch<decltype(k)::value, Op>(ctx, plan, n, f, histo, H);
  });
  return plan;
}

// Batched: Nout histograms over segments of seg_len elements, with K blocks per histogram when one
// histogram fits shared memory in one pass; otherwise one flattened Nout*H histogram.
template <class Op, class F, class Flat>
hist_plan hist_batched_cuda(context& ctx, const hist_options& options, atomic_kind kind, std::int64_t batches,
                            std::int64_t seg_len, F f, Flat flat, typename Op::value_type* histo, std::int64_t H) {
  ctx.activate();
  const std::size_t el = model_element_bytes<Op>(kind);
  if (options.strategy != hist_strategy::global && el <= ctx.props().shared_per_block_optin) {
    hist_options o = options;
    // One pass per histogram (a forced thread-private shape is one pass by itself).
    if (o.passes == 0 && o.thread_private != hist_toggle::on) o.passes = 1;
    hist_plan plan;
    bool fits = true;
    try {
      plan = plan_hist_shared(ctx.props(), seg_len, H, el, kind, o, model_contention_tolerance<Op>(kind));
    } catch (const usage_error&) {
      if (options.strategy == hist_strategy::shared) throw;
      fits = false;
    }
    if (fits && (plan.passes == 1 || options.strategy == hist_strategy::shared)) {
      plan.batches = batches;
      plan.n = batches * seg_len;
      if (plan.n == 0 || H == 0) return plan;
      with_atomic_kind<Op>(kind, [&](auto k) { hist_shared_launch<decltype(k)::value, Op>(ctx, plan, seg_len, batches, f, histo, H); });
      return plan;
    }
  }
  hist_plan plan = hist_cuda<Op>(ctx, options, kind, batches * seg_len, flat, histo, batches * H);
  plan.batches = batches;
  return plan;
}

}  // namespace soac::detail
