// The building blocks of hist's kernels: a thread's steps over its part of the input (loads in
// flight, loads ahead, warp-paced steps), its updates into a sub-histogram, and a block's fold of
// its copies into the destination or into rows of partial results (hist_rows_kernel).
#pragma once

#include <algorithm>
#include <cstdint>
#include <type_traits>

#include "core/context.hpp"
#include "core/error.hpp"
#include "core/hist/atomics.cuh"
#include "core/hist/plan.hpp"
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
// for contiguous sub-histograms and M for the interleaved (bin-major) shared layout. Whether b is
// in the pass: one unsigned comparison (bins below off wrap around to values far above any limit).
__device__ __forceinline__ bool in_pass(std::int64_t b, std::int64_t off, std::int64_t limit) {
  return std::uint64_t(b) - std::uint64_t(off) < std::uint64_t(limit);
}

// How a thread's updates reach its sub-histogram.
enum class update_mode {
  atomic,     // the kind's atomic: the copy is shared with other threads
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
    } else if (in_pass(u.bin, off, limit)) {
      const std::int64_t at = (u.bin - off) * stride;
      if constexpr (Mode == update_mode::exclusive) sub[at] = Op{}(sub[at], v);
      else atomic_update<K, Op>(sub + at, locks ? locks + at : nullptr, v);
    }
  }
}

// The updates of a tile of Items results. With EarlyReads (global-memory sub-histograms) the CAS
// first read of every bin is issued before any compare-and-swap loop runs, so a thread waits for
// one round of L2 reads instead of one per update. In shared memory the reads are cheap and reading
// early only makes them stale under contention (docs/tuning/hist.md, launch-level choices).
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
        const bool lead = in_pass(b, off, limit);
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
// group by lane group, each group requesting the same sectors again (the bucket kernel read DRAM
// several times over). Not for the shared kernel (for_part): its input stays in L2, and lanes left
// to run apart are faster there (docs/tuning/hist.md, partition).
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
// loop took ~23 instructions per bin (docs/tuning/hist.md, launch-level choices).
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


template <class V>
__global__ void hist_fill_kernel(V* p, std::int64_t count, V value) {
  for (std::int64_t i = std::int64_t{blockIdx.x} * blockDim.x + threadIdx.x; i < count; i += std::int64_t{gridDim.x} * blockDim.x)
    p[i] = value;
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

}  // namespace soac::detail
