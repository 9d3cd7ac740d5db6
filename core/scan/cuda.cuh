// CUDA backend of scan and segscan: one kernel, single pass, decoupled look-back with dynamic
// tile ids (thesis 2.3; segments as in 3.2-3.3). A block
//   1. takes the next tile id from a global counter (tiles start in id order, so every
//      predecessor a tile waits for is running or done: no deadlock whatever the scheduler),
//   2. loads values and flags striped (coalesced) and transposes them to a blocked layout,
//   3. reduces each thread's items and scans the thread totals with cub::BlockScan, whose
//      prefix callback (first warp) publishes the tile's aggregate and looks back,
//   4. rescans its items from the prefix and stores them striped.
// Segmented: a tile holding a flag publishes its inclusive prefix at once (its lifted
// aggregate is already complete), so look-back never crosses it; a tile whose first element is
// flagged needs no look-back at all; the lifted operator makes only the elements before the
// tile's first flag take the carried prefix.
#pragma once

#include <algorithm>
#include <cstdint>
#include <type_traits>

#include <cub/block/block_exchange.cuh>
#include <cub/block/block_scan.cuh>
#include <cub/util_ptx.cuh>
#include <cub/warp/warp_reduce.cuh>

#include "core/context.hpp"
#include "core/launch.cuh"
#include "core/scan/input.hpp"
#include "core/scan/lifted.hpp"
#include "core/scan/lookback.cuh"
#include "core/scan/strategy.hpp"

namespace soac::detail {

// The first warp's prefix callback: publish, then look back one warp-wide window at a time.
template <bool Seg, class Op, class State>
struct lookback_prefix {
  using T = typename Op::value_type;
  using V = scan_value_t<Seg, T>;
  using WarpReduce = cub::WarpReduce<V>;

  scan_operator<Seg, Op> sop;
  State state;
  std::int64_t tile;
  bool first_flagged;  // the tile's first element starts a segment: nothing to carry in
  typename WarpReduce::TempStorage& reduce_storage;

  __device__ V operator()(const V& aggregate) {
    const unsigned lane = threadIdx.x & 31;
    // Tile 0, or a tile holding a segment start, knows its inclusive prefix now.
    const bool complete = tile == 0 || sop.flag(aggregate);
    if (lane == 0) state.publish(tile, complete ? status_prefix : status_aggregate, aggregate);
    if (tile == 0 || first_flagged) return sop.identity();

    V exclusive = sop.identity();
    // Lane l reads tile window_end - 31 + l: lanes ascend left to right, so the warp reduction
    // combines descriptors in sequence order (the operator need not be commutative).
    for (std::int64_t window_end = tile - 1;; window_end -= 32) {
      const std::int64_t pred = window_end - 31 + std::int64_t(lane);
      V v = sop.identity();
      unsigned st = status_prefix;  // tiles before 0: an identity prefix
      do {
        if (pred >= 0) st = state.peek(pred, v);
      } while (__any_sync(0xffffffffu, st == status_invalid));
      const unsigned prefixes = __ballot_sync(0xffffffffu, st == status_prefix);
      // The nearest complete prefix ends the look-back; lanes left of it do not contribute.
      const int stop = prefixes ? 31 - __clz(prefixes) : -1;
      if (int(lane) < stop) v = sop.identity();
      const V window = WarpReduce(reduce_storage).Reduce(v, sop);
      exclusive = sop(cub::ShuffleIndex<32>(window, 0, 0xffffffffu), exclusive);
      if (prefixes) break;
    }
    // A tile that published its complete prefix up front must not rewrite it while others read it.
    if (lane == 0 && !complete) state.publish(tile, status_prefix, sop(exclusive, aggregate));
    return exclusive;
  }
};

// Flags of an unsegmented scan: none.
struct no_flags {
  SOAC_HD bool operator()(std::int64_t) const { return false; }
};

template <bool Seg, bool Inclusive, int Block, int Items, class Op, class F, class G, class State>
__global__ void __launch_bounds__(Block)
    lookback_scan_kernel(std::int64_t n, F f, G flags, typename Op::value_type* out, Op op, State state,
                         unsigned* tile_counter) {
  using T = typename Op::value_type;
  using V = scan_value_t<Seg, T>;
  using Exchange = cub::BlockExchange<T, Block, Items>;
  using FlagExchange = cub::BlockExchange<unsigned char, Block, Items>;
  using BlockScan = cub::BlockScan<V, Block, cub::BLOCK_SCAN_WARP_SCANS>;
  using Prefix = lookback_prefix<Seg, Op, State>;
  constexpr int tile_size = Block * Items;
  __shared__ union {
    typename Exchange::TempStorage exchange;
    typename BlockScan::TempStorage scan;
  } smem;
  // Apart from `smem`: warps transpose flags while other warps may still transpose values.
  __shared__ typename FlagExchange::TempStorage flag_exchange;
  __shared__ typename Prefix::WarpReduce::TempStorage reduce_storage;
  __shared__ unsigned tile_id;

  if (threadIdx.x == 0) tile_id = atomicAdd(tile_counter, 1u);
  __syncthreads();
  const std::int64_t tile = tile_id;
  const std::int64_t base = tile * tile_size;
  const int valid = static_cast<int>(n - base < tile_size ? n - base : tile_size);
  const scan_operator<Seg, Op> sop{op};

  // Values: warp-striped loads (each warp reads 32 consecutive elements per instruction), then a
  // warp-local transpose to the blocked layout the thread-sequential scan needs (no block sync).
  const int lane = threadIdx.x & 31;
  const int warp_first = (threadIdx.x >> 5) * 32 * Items;
  T x[Items];
  bool fl[Items];
  if (valid == tile_size) {
#pragma unroll
    for (int j = 0; j < Items; ++j) x[j] = static_cast<T>(f(base + warp_first + j * 32 + lane));
  } else {
#pragma unroll
    for (int j = 0; j < Items; ++j) {
      const int k = warp_first + j * 32 + lane;
      x[j] = k < valid ? static_cast<T>(f(base + k)) : Op::identity();
    }
  }
  Exchange(smem.exchange).WarpStripedToBlocked(x);
  if constexpr (Seg) {
    bool loaded = false;
    if constexpr (std::is_same_v<G, array_reader<unsigned char>> && Items % 16 == 0) {
      // Byte flags from an array: a thread's Items consecutive flags are whole 16-byte vectors.
      const unsigned char* p = flags.data + base + threadIdx.x * Items;
      if (valid == tile_size && (reinterpret_cast<std::uintptr_t>(flags.data) & 15) == 0) {
#pragma unroll
        for (int v = 0; v < Items / 16; ++v) {
          const uint4 w = reinterpret_cast<const uint4*>(p)[v];
          const unsigned words[4] = {w.x, w.y, w.z, w.w};
#pragma unroll
          for (int b = 0; b < 16; ++b) fl[v * 16 + b] = (words[b / 4] >> (8 * (b % 4))) & 0xffu;
        }
        loaded = true;
      }
    }
    if (!loaded) {
      unsigned char b[Items];
#pragma unroll
      for (int j = 0; j < Items; ++j) {
        const int k = warp_first + j * 32 + lane;
        b[j] = k < valid ? static_cast<unsigned char>(bool(flags(base + k))) : 0;
      }
      FlagExchange(flag_exchange).WarpStripedToBlocked(b);
#pragma unroll
      for (int j = 0; j < Items; ++j) fl[j] = b[j];
    }
  } else {
#pragma unroll
    for (int j = 0; j < Items; ++j) fl[j] = false;
  }

  V total = sop.make(x[0], fl[0]);
#pragma unroll
  for (int j = 1; j < Items; ++j) total = sop(total, sop.make(x[j], fl[j]));
  // Thread 0 holds the tile's first element; the first warp (which runs the callback) learns it.
  const bool first_flagged = __shfl_sync(0xffffffffu, fl[0], 0);
  __syncthreads();
  V prefix;
  Prefix lookback{sop, state, tile, first_flagged, reduce_storage};
  BlockScan(smem.scan).ExclusiveScan(total, prefix, sop, lookback);
  scan_items<Seg, Inclusive, Op, T>(sop, prefix, x, fl, Items);

  __syncthreads();
  Exchange(smem.exchange).BlockedToWarpStriped(x);
  if (valid == tile_size) {
#pragma unroll
    for (int j = 0; j < Items; ++j) out[base + warp_first + j * 32 + lane] = x[j];
  } else {
#pragma unroll
    for (int j = 0; j < Items; ++j) {
      const int k = warp_first + j * 32 + lane;
      if (k < valid) out[base + k] = x[j];
    }
  }
}

template <int Items, bool Seg, class Op, class F, class G>
void scan_cuda_tiles(context& ctx, scan_plan& plan, std::int64_t n, F f, G flags, typename Op::value_type* out, Op op) {
  using V = scan_value_t<Seg, typename Op::value_type>;
  using State = tile_state<V>;
  constexpr int block = scan_tuning::block_threads;
  const std::int64_t tiles = ceil_div(n, std::int64_t{block} * Items);
  if (tiles > std::int64_t{0xffffffffu}) throw usage_error("scan: n is too large for 32-bit tile ids");
  plan.block_threads = block;
  plan.items_per_thread = Items;
  plan.tiles = tiles;
  plan.packed_descriptors = packable<V>::value;

  ctx.activate();
  // The tile counter, then the descriptors; counter and status words must start at 0, which one
  // memset does (for fenced descriptors the value arrays after the status words need no reset).
  constexpr std::size_t counter_bytes = 256;
  const std::size_t zero_bytes = counter_bytes + (packable<V>::value ? State::bytes(tiles) : std::size_t(tiles) * 4);
  void* temp = ctx.allocate_temp(counter_bytes + State::bytes(tiles));
  try {
    auto* bytes = static_cast<unsigned char*>(temp);
    SOAC_CUDA_CHECK(cudaMemsetAsync(bytes, 0, zero_bytes, ctx.stream()));
    auto* counter = reinterpret_cast<unsigned*>(bytes);
    const State state = State::carve(bytes + counter_bytes, tiles);
    if (plan.kind == scan_kind::inclusive)
      lookback_scan_kernel<Seg, true, block, Items><<<unsigned(tiles), block, 0, ctx.stream()>>>(n, f, flags, out, op, state, counter);
    else
      lookback_scan_kernel<Seg, false, block, Items><<<unsigned(tiles), block, 0, ctx.stream()>>>(n, f, flags, out, op, state, counter);
    SOAC_CHECK_LAUNCH("lookback_scan_kernel");
  } catch (...) {
    ctx.free_temp(temp);
    throw;
  }
  // The caching allocator only reuses this block for work queued later on the same stream.
  ctx.free_temp(temp);
}

template <bool Seg, class Op, class F, class G>
void scan_cuda(context& ctx, scan_plan& plan, std::int64_t n, F f, G flags, typename Op::value_type* out, Op op) {
  using T = typename Op::value_type;
  constexpr int items = scan_tuning::items_per_thread<T>();
  scan_cuda_tiles<items, Seg>(ctx, plan, n, f, flags, out, op);
}

}  // namespace soac::detail
