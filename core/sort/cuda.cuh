// CUDA kernels of the digit radix sort: one pass = a per-tile digit histogram (local; the hist
// primitive is not used because the scan needs per-tile counts in digit-major order, which is
// what makes the scatter stable), soac::scan over those counts, and a rank-and-scatter kernel.
// The scatter cannot be a soac::scatter functor: a key's destination depends on how many keys
// of its tile with the same digit precede it, a block-wide ranking (cub::BlockRadixRankMatch);
// materialising ranks for soac::scatter would double the traffic of every pass.
#pragma once

#include <cstdint>

#include <cub/block/block_load.cuh>  // LoadDirectWarpStriped
#include <cub/block/block_radix_rank.cuh>

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
// writes each run of equal digits contiguously to offsets[d * tiles + t] onwards.
template <class K, class V, bool HasValues, int Block, int Items>
__global__ void __launch_bounds__(Block)
    radix_scatter_kernel(const K* keys_in, K* keys_out, const V* values_in, V* values_out, std::int64_t n, int shift,
                         const std::uint32_t* offsets, std::int64_t tiles) {
  static_assert(Block == radix_digits, "one thread per digit tracks the digit's tile offset");
  constexpr int tile_size = Block * Items;
  using Rank = cub::BlockRadixRankMatch<Block, sort_tuning::radix_bits, false>;
  constexpr int exchange_bytes = tile_size * (sizeof(V) > 4 && HasValues ? sizeof(V) : 4);
  __shared__ union {
    typename Rank::TempStorage rank;
    alignas(16) unsigned char exchange[exchange_bytes];
  } smem;
  __shared__ std::uint32_t digit_base[radix_digits];  // n < 2^32 (checked by the caller)

  const std::int64_t tile = blockIdx.x;
  const std::int64_t base = tile * tile_size;
  const int valid = static_cast<int>(n - base < tile_size ? n - base : tile_size);
  const digit_of digit{shift};

  // Warp-striped loads: BlockRadixRankMatch ranks stably in warp-striped order (warp w holds
  // keys [w * 32 * Items, (w + 1) * 32 * Items) of the tile, item j of lane l at j * 32 + l).
  const int warp_first = (threadIdx.x >> 5) * 32 * Items;
  const int lane = threadIdx.x & 31;
  std::uint32_t bits[Items];
  const auto* raw = reinterpret_cast<const std::uint32_t*>(keys_in) + base;
  if (valid == tile_size) cub::LoadDirectWarpStriped(threadIdx.x, raw, bits);
  else cub::LoadDirectWarpStriped(threadIdx.x, raw, bits, valid, 0u);
#pragma unroll
  for (int j = 0; j < Items; ++j) {
    // Padding keys get the largest encoding, so they rank after every real key of the tile.
    bits[j] = warp_first + j * 32 + lane < valid ? radix_key<K>::encode(bits[j]) : 0xffffffffu;
  }
  // Values are loaded now so that their loads overlap the ranking.
  [[maybe_unused]] V vals[HasValues ? Items : 1];
  if constexpr (HasValues) {
    if (valid == tile_size) cub::LoadDirectWarpStriped(threadIdx.x, values_in + base, vals);
    else cub::LoadDirectWarpStriped(threadIdx.x, values_in + base, vals, valid);
  }
  int ranks[Items];
  int digit_start[1];  // keys of this tile with a smaller digit than threadIdx.x
  Rank(smem.rank).RankKeys(bits, ranks, digit, digit_start);
  // Global position of the tile's first key with digit d, minus its tile-local start.
  digit_base[threadIdx.x] = offsets[std::int64_t(threadIdx.x) * tiles + tile] - std::uint32_t(digit_start[0]);
  __syncthreads();
  auto* ex_keys = reinterpret_cast<std::uint32_t*>(smem.exchange);
#pragma unroll
  for (int j = 0; j < Items; ++j) ex_keys[ranks[j]] = bits[j];
  __syncthreads();
  std::uint32_t dest[Items];
#pragma unroll
  for (int j = 0; j < Items; ++j) {
    const int k = j * Block + threadIdx.x;
    const std::uint32_t e = ex_keys[k];
    dest[j] = digit_base[digit.Digit(e)] + k;
    if (k < valid) {
      const std::uint32_t b = radix_key<K>::decode(e);
      reinterpret_cast<std::uint32_t*>(keys_out)[dest[j]] = b;
    }
  }
  if constexpr (HasValues) {
    __syncthreads();
    auto* ex_vals = reinterpret_cast<V*>(smem.exchange);
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

}  // namespace soac::detail
