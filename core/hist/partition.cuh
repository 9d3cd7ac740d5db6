// The partitioned multi-pass strategy's kernels (hist_overrides::partition).
#pragma once

#include <cstdint>

#include <cub/block/block_radix_rank.cuh>
#include <cub/block/block_scan.cuh>

#include "core/fast_divide.hpp"
#include "core/hist/block.cuh"

namespace soac::detail {

// ---- Partitioned multi-pass (hist_overrides::partition). Where the shared strategy needs S passes
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
// partition kernel's cursors start there. S < Block. A template (of the one block size) so that
// every translation unit that includes this header may define it (a plain __global__ function
// defined here was defined twice as soon as two apps used hist).
inline constexpr int partition_block = 256;
template <int Block = partition_block>
__global__ void __launch_bounds__(Block)
    hist_bucket_offsets_kernel(const unsigned* counts, int S, unsigned* offsets, unsigned* cursors) {
  using scan = cub::BlockScan<unsigned, Block>;
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
// the kernel stays near 40 registers and six blocks share an SM (docs/tuning/hist.md, partition).
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

}  // namespace soac::detail
