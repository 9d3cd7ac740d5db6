// CUDA kernels of the digit radix sort. Two structures:
//  - one-sweep (default where n < 2^30): one read of the keys counts all four digits' totals;
//    then each pass is a single kernel that ranks a tile, publishes its per-digit counts and
//    finds the counts of the tiles before it by decoupled look-back (the single-pass scan of
//    thesis 2.3 with one look-back per digit), then scatters. 4 + 4 x 8 = 36 bytes a key.
//  - per pass: a per-tile digit histogram, soac::scan over the counts (digit-major, which makes
//    the scatter stable) and a rank-and-scatter kernel; 4 x 12 = 48 bytes a key. Kept for
//    n >= 2^30, where a count no longer fits beside the look-back's 2 status bits.
// The scatter cannot be a soac::scatter functor: a key's destination depends on how many keys
// of its tile with the same digit precede it, a block-wide ranking (cub::BlockRadixRankMatch);
// materialising ranks for soac::scatter would double the traffic of every pass.
#pragma once

#include <cstdint>

#include <cub/block/block_load.cuh>  // LoadDirectWarpStriped
#include <cub/block/block_radix_rank.cuh>
#include <cub/block/block_scan.cuh>
#include <cuda/atomic>

#include "core/context.hpp"
#include "core/launch.cuh"
#include "core/sort/keys.hpp"

namespace soac::detail {

inline constexpr int radix_digits = 1 << sort_tuning::radix_bits;

struct digit_of {
  int shift;
  __device__ __forceinline__ std::uint32_t Digit(std::uint32_t encoded) const {
    return (encoded >> shift) & (radix_digits - 1);
  }
};

// counts[d * tiles + t] = keys of tile t whose digit is d.
template <class K, int Block, int Items>
__global__ void __launch_bounds__(Block)
    radix_histogram_kernel(const K* keys, std::int64_t n, int shift, std::uint32_t* counts, std::int64_t tiles) {
  static_assert(Block >= radix_digits, "one thread per digit clears and writes the counters");
  // One sub-histogram per warp spreads the shared-memory atomics of skewed inputs.
  constexpr int warps = Block / 32;
  __shared__ std::uint32_t h[warps][radix_digits];
  for (int d = threadIdx.x; d < warps * radix_digits; d += Block) (&h[0][0])[d] = 0;
  __syncthreads();
  const std::int64_t tile = blockIdx.x;
  const std::int64_t base = tile * Block * Items;
  const int valid = static_cast<int>(n - base < Block * Items ? n - base : Block * Items);
  const digit_of digit{shift};
  std::uint32_t* mine = h[threadIdx.x / 32];
#pragma unroll
  for (int j = 0; j < Items; ++j) {
    const int k = j * Block + threadIdx.x;
    if (k < valid) atomicAdd(&mine[digit.Digit(encoded_bits(keys[base + k]))], 1u);
  }
  __syncthreads();
  if (threadIdx.x < radix_digits) {
    std::uint32_t c = 0;
#pragma unroll
    for (int w = 0; w < warps; ++w) c += h[w][threadIdx.x];
    counts[std::int64_t(threadIdx.x) * tiles + tile] = c;
  }
}

// Ranks the tile's keys by digit (stable), places them in shared memory in digit order, and
// The tile's ranked keys (and values) go through shared memory in digit order, so that each
// run of equal digits is written contiguously from digit_base[d] + its place in the tile.
// `exchange` holds the tile (values included); the caller has synchronised after the ranking.
template <class K, class V, bool HasValues, int Block, int Items>
__device__ __forceinline__ void scatter_ranked_tile(const std::uint32_t (&bits)[Items], const V (&vals)[HasValues ? Items : 1],
                                                    const int (&ranks)[Items], const std::uint32_t* digit_base,
                                                    unsigned char* exchange, int valid, digit_of digit, K* keys_out,
                                                    V* values_out) {
  auto* ex_keys = reinterpret_cast<std::uint32_t*>(exchange);
#pragma unroll
  for (int j = 0; j < Items; ++j) ex_keys[ranks[j]] = bits[j];
  __syncthreads();
  std::uint32_t dest[Items];
#pragma unroll
  for (int j = 0; j < Items; ++j) {
    const int k = j * Block + threadIdx.x;
    const std::uint32_t e = ex_keys[k];
    dest[j] = digit_base[digit.Digit(e)] + k;
    if (k < valid) reinterpret_cast<std::uint32_t*>(keys_out)[dest[j]] = radix_key<K>::decode(e);
  }
  if constexpr (HasValues) {
    __syncthreads();
    auto* ex_vals = reinterpret_cast<V*>(exchange);
#pragma unroll
    for (int j = 0; j < Items; ++j) ex_vals[ranks[j]] = vals[j];
    __syncthreads();
#pragma unroll
    for (int j = 0; j < Items; ++j) {
      const int k = j * Block + threadIdx.x;
      if (k < valid) values_out[dest[j]] = ex_vals[k];
    }
  }
}

// Warp-striped load of tile `tile` (BlockRadixRankMatch ranks stably in warp-striped order: warp
// w holds keys [w * 32 * Items, (w + 1) * 32 * Items) of the tile, item j of lane l at j * 32 +
// l), encoded; padding keys get the largest encoding, so they rank after every real key.
// Returns the tile's number of real keys.
template <class K, class V, bool HasValues, int Block, int Items>
__device__ __forceinline__ int load_tile(const K* keys_in, const V* values_in, std::int64_t n, std::int64_t tile,
                                         std::uint32_t (&bits)[Items], V (&vals)[HasValues ? Items : 1]) {
  constexpr int tile_size = Block * Items;
  const std::int64_t base = tile * tile_size;
  const int valid = static_cast<int>(n - base < tile_size ? n - base : tile_size);
  const int warp_first = (threadIdx.x >> 5) * 32 * Items;
  const int lane = threadIdx.x & 31;
  const auto* raw = reinterpret_cast<const std::uint32_t*>(keys_in) + base;
  if (valid == tile_size) cub::LoadDirectWarpStriped(threadIdx.x, raw, bits);
  else cub::LoadDirectWarpStriped(threadIdx.x, raw, bits, valid, 0u);
#pragma unroll
  for (int j = 0; j < Items; ++j)
    bits[j] = warp_first + j * 32 + lane < valid ? radix_key<K>::encode(bits[j]) : 0xffffffffu;
  // Values are loaded now so that their loads overlap the ranking.
  if constexpr (HasValues) {
    if (valid == tile_size) cub::LoadDirectWarpStriped(threadIdx.x, values_in + base, vals);
    else cub::LoadDirectWarpStriped(threadIdx.x, values_in + base, vals, valid);
  }
  return valid;
}

template <class K, class V, bool HasValues>
constexpr int exchange_bytes(int tile_size) {
  return tile_size * int(sizeof(V) > 4 && HasValues ? sizeof(V) : 4);
}

// Ranks the tile's keys by digit (stable), places them in shared memory in digit order, and
// writes each run of equal digits contiguously to offsets[d * tiles + t] onwards.
template <class K, class V, bool HasValues, int Block, int Items>
__global__ void __launch_bounds__(Block)
    radix_scatter_kernel(const K* keys_in, K* keys_out, const V* values_in, V* values_out, std::int64_t n, int shift,
                         const std::uint32_t* offsets, std::int64_t tiles) {
  static_assert(Block == radix_digits, "one thread per digit tracks the digit's tile offset");
  constexpr int tile_size = Block * Items;
  using Rank = cub::BlockRadixRankMatch<Block, sort_tuning::radix_bits, false>;
  __shared__ union {
    typename Rank::TempStorage rank;
    alignas(16) unsigned char exchange[exchange_bytes<K, V, HasValues>(tile_size)];
  } smem;
  __shared__ std::uint32_t digit_base[radix_digits];  // n < 2^32 (checked by the caller)

  const std::int64_t tile = blockIdx.x;
  const digit_of digit{shift};
  std::uint32_t bits[Items];
  [[maybe_unused]] V vals[HasValues ? Items : 1];
  const int valid = load_tile<K, V, HasValues, Block, Items>(keys_in, values_in, n, tile, bits, vals);
  int ranks[Items];
  int digit_start[1];  // keys of this tile with a smaller digit than threadIdx.x
  Rank(smem.rank).RankKeys(bits, ranks, digit, digit_start);
  // Global position of the tile's first key with digit d, minus its tile-local start.
  digit_base[threadIdx.x] = offsets[std::int64_t(threadIdx.x) * tiles + tile] - std::uint32_t(digit_start[0]);
  __syncthreads();
  scatter_ranked_tile<K, V, HasValues, Block, Items>(bits, vals, ranks, digit_base, smem.exchange, valid, digit, keys_out,
                                                    values_out);
}

// ---- one-sweep ----

inline constexpr int radix_passes = 32 / sort_tuning::radix_bits;

// totals[p * radix_digits + d] += keys whose digit p is d, for every pass p, in one read. One
// sub-histogram per pair of warps spreads the shared-memory atomics of skewed inputs.
template <class K, int Block>
__global__ void __launch_bounds__(Block)
    radix_all_digits_histogram_kernel(const K* keys, std::int64_t n, std::uint32_t* totals) {
  constexpr int copies = Block / 64;
  __shared__ std::uint32_t h[copies][radix_passes * radix_digits];
  for (int i = threadIdx.x; i < copies * radix_passes * radix_digits; i += Block) (&h[0][0])[i] = 0;
  __syncthreads();
  std::uint32_t* mine = h[threadIdx.x / 64];
  auto count = [&](std::uint32_t raw) {
    const std::uint32_t e = radix_key<K>::encode(raw);
#pragma unroll
    for (int p = 0; p < radix_passes; ++p)
      atomicAdd(&mine[p * radix_digits + ((e >> (p * sort_tuning::radix_bits)) & (radix_digits - 1))], 1u);
  };
  const auto* raw = reinterpret_cast<const std::uint32_t*>(keys);
  // Keys before the first 16-byte boundary and after the last whole quad go one at a time.
  const std::int64_t head = std::min<std::int64_t>(n, ((16 - (reinterpret_cast<std::uintptr_t>(raw) & 15)) & 15) / 4);
  const std::int64_t quads = (n - head) / 4;
  const std::int64_t stride = std::int64_t(gridDim.x) * Block;
  const std::int64_t first = std::int64_t(blockIdx.x) * Block + threadIdx.x;
  const auto* q = reinterpret_cast<const uint4*>(raw + head);
  for (std::int64_t i = first; i < quads; i += stride) {
    const uint4 v = q[i];
    count(v.x);
    count(v.y);
    count(v.z);
    count(v.w);
  }
  for (std::int64_t i = first; i < head; i += stride) count(raw[i]);
  for (std::int64_t i = head + quads * 4 + first; i < n; i += stride) count(raw[i]);
  __syncthreads();
  for (int i = threadIdx.x; i < radix_passes * radix_digits; i += Block) {
    std::uint32_t c = 0;
#pragma unroll
    for (int k = 0; k < copies; ++k) c += h[k][i];
    if (c) atomicAdd(&totals[i], c);
  }
}

// Look-back status of (tile, digit): 2 status bits over a 30-bit count (hence n < 2^30).
inline constexpr std::uint32_t radix_status_aggregate = 1u << 30;  // the tile's own count
inline constexpr std::uint32_t radix_status_prefix = 2u << 30;     // count of all tiles up to this one
inline constexpr std::uint32_t radix_status_count = (1u << 30) - 1;

// One pass of the one-sweep sort. Tiles are taken in launch order from *tile_counter, so every
// tile a block waits for belongs to a block already running. Thread d owns digit d: it
// publishes the tile's count of d as soon as the ranking has it, walks back over the earlier
// tiles' statuses until one carries a prefix, and publishes its own prefix.
template <class K, class V, bool HasValues, int Block, int Items>
__global__ void __launch_bounds__(Block)
    radix_onesweep_kernel(const K* keys_in, K* keys_out, const V* values_in, V* values_out, std::int64_t n, int shift,
                          const std::uint32_t* digit_totals, std::uint32_t* status, std::uint32_t* tile_counter) {
  static_assert(Block >= radix_digits && Block % 32 == 0, "the first radix_digits threads own a digit each");
  constexpr int tile_size = Block * Items;
  using Rank = cub::BlockRadixRankMatchEarlyCounts<Block, sort_tuning::radix_bits, false>;
  using Scan = cub::BlockScan<std::uint32_t, Block>;
  __shared__ union {
    typename Rank::TempStorage rank;
    alignas(16) unsigned char exchange[exchange_bytes<K, V, HasValues>(tile_size)];
  } smem;
  __shared__ typename Scan::TempStorage scan;
  __shared__ std::uint32_t digit_base[radix_digits];
  __shared__ std::uint32_t tile_slot;

  if (threadIdx.x == 0) tile_slot = atomicAdd(tile_counter, 1u);
  __syncthreads();
  const std::int64_t tile = tile_slot;
  const digit_of digit{shift};
  std::uint32_t bits[Items];
  [[maybe_unused]] V vals[HasValues ? Items : 1];
  const int valid = load_tile<K, V, HasValues, Block, Items>(keys_in, values_in, n, tile, bits, vals);
  // Where digit d starts in the whole output: the exclusive prefix of the pass's totals.
  const unsigned d = threadIdx.x;
  const bool owns_digit = d < radix_digits;
  std::uint32_t digit_global = 0;
  Scan(scan).ExclusiveSum(owns_digit ? digit_totals[d] : 0u, digit_global);

  std::uint32_t* const my_status = status + tile * radix_digits + d;
  std::uint32_t tile_count = 0;
  auto publish_count = [&](int (&bins)[1]) {
    if (!owns_digit) return;
    // Padding keys (a partial last tile) all rank last under digit radix_digits - 1.
    tile_count = std::uint32_t(bins[0]) - (d == radix_digits - 1 ? std::uint32_t(tile_size - valid) : 0u);
    cuda::atomic_ref<std::uint32_t, cuda::thread_scope_device>(*my_status)
        .store((tile == 0 ? radix_status_prefix : radix_status_aggregate) | tile_count, cuda::std::memory_order_relaxed);
  };
  int ranks[Items];
  int digit_start[1];  // keys of this tile with a smaller digit than d
  Rank(smem.rank).RankKeys(bits, ranks, digit, digit_start, publish_count);

  std::uint32_t before = 0;  // keys with digit d in the tiles before this one
  if (owns_digit && tile > 0) {
    for (std::int64_t t = tile - 1;;) {
      const std::uint32_t s = cuda::atomic_ref<std::uint32_t, cuda::thread_scope_device>(status[t * radix_digits + d])
                                  .load(cuda::std::memory_order_relaxed);
      if (s == 0) continue;  // not published yet
      before += s & radix_status_count;
      if (s & radix_status_prefix) break;
      --t;
    }
    cuda::atomic_ref<std::uint32_t, cuda::thread_scope_device>(*my_status)
        .store(radix_status_prefix | (before + tile_count), cuda::std::memory_order_relaxed);
  }
  if (owns_digit) digit_base[d] = digit_global + before - std::uint32_t(digit_start[0]);
  __syncthreads();
  scatter_ranked_tile<K, V, HasValues, Block, Items>(bits, vals, ranks, digit_base, smem.exchange, valid, digit, keys_out,
                                                    values_out);
}

}  // namespace soac::detail
