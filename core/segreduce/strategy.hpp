// How segreduce maps m segments of n elements to threads (FHPC17 section 2) and the run-time
// choice between the three strategies (section 3.1, re-tuned by measurement on an H100):
//   sequential: every segment folded in order by one thread, from a tile that the block stages
//               in shared memory with coalesced reads (whole short segments, or column chunks
//               of block_threads long ones): the paper's transposition, per tile.
//   large:      one or more blocks per segment, each thread reducing a chunk, a block reduction,
//               and (with several blocks per segment) the last block to finish combining the
//               partials in order, in the same launch; non-commutative segments shorter than a
//               block's round, enough to fill the GPU, take a warp each instead.
//   small:      several whole segments per block: the intra-block segmented scan (any
//               operator), or for commutative operators a lane group per segment (WarpReduce).
#pragma once

#include <cstddef>
#include <algorithm>
#include <bit>
#include <cstdint>
#include <string>
#include <string_view>
#include <type_traits>

#include "core/context.hpp"

namespace soac {

enum class segreduce_strategy { automatic, sequential, large, small };

std::string_view to_string(segreduce_strategy);
segreduce_strategy parse_segreduce_strategy(std::string_view);  // throws usage_error

struct segreduce_options {
  segreduce_strategy strategy = segreduce_strategy::automatic;
  // large only: blocks per segment; 0 lets the model choose (enough blocks to fill the GPU).
  std::int64_t blocks_per_segment = 0;
};

// What a call chose; returned so callers can report it.
struct segreduce_plan {
  segreduce_strategy strategy = segreduce_strategy::sequential;
  int block_threads = 256;
  int items_per_thread = 1;             // large/small: loads in flight per thread (large, non-commutative:
                                        // elements of its run per round); sequential: tile columns
  std::int64_t blocks_per_segment = 1;  // large only
  std::int64_t chunk = 0;               // large only: elements of a segment per block (whole tiles; in a
                                        // cluster, whole blocks' widths)
  std::int64_t segments_per_block = 1;  // sequential and small (sequential: tile rows)
  int group_threads = 0;                // small, commutative operators: lanes per segment (0: segmented scan)
  std::int64_t grid = 0;                // blocks of the first kernel
  bool second_pass = false;             // large with blocks_per_segment > 1: partials combined by the last block
  bool ordered = false;                 // large, non-commutative: each thread folds a contiguous run in order
  bool warp_segments = false;           // large, ordered, segments shorter than a round: a warp per segment
  int cluster = 0;                      // large: the blocks of a segment run as one thread-block cluster and
                                        // combine through distributed shared memory (0: the last block does)
  bool host = false;                    // ran on the host backend (OpenMP); the fields above are unused
  const char* reason = "";              // why auto chose it ("forced" when options named it)
  std::string describe() const;
};

namespace segreduce_tuning {
// Threads per block of every kernel: the paper's workgroup size, and on sm_90 8 such blocks are
// resident per SM (2048 threads), so a block-wide sync stalls only 1/8 of an SM.
inline constexpr int block_threads = 256;
// Elements of one sequential-strategy tile, in bytes: block_threads x `columns` values (16 ints,
// 8 pairs or doubles, 4 quads per thread). Rows are padded to an odd length, so the tile takes
// up to 1.5x this (24 KiB), which keeps 8 blocks (2048 threads) resident per SM.
inline constexpr std::size_t sequential_tile_bytes = 16 * 1024;
// Independent loads per thread and step of the large kernel, and the tile of the small one,
// in bytes of value per thread: 32 B = 8 ints, 4 int pairs or doubles, 2 quads in flight.
inline constexpr std::size_t bytes_in_flight_per_thread = 32;
// A large-strategy block gives each thread at least this many elements before the segment is
// split across more blocks (fewer makes the block reduction and the combine dominate)...
inline constexpr std::int64_t large_min_items_per_thread = 16;
// ...unless the segments cannot fill the GPU so and a tile a block gives each at least this many
// blocks (H100, 2^18 elements: one segment of argmax, max-subarray or Black-Scholes 0.57-0.92x
// the time; 2 to 4 blocks a segment, 1.2-1.4x: their combine costs more than they gain).
inline constexpr std::int64_t large_min_fine_split = 8;
// Waves of resident blocks the large strategy aims for when it splits segments: one, so that
// no partly filled last wave idles most of the GPU (measured: 2 waves of 2048 blocks for one
// segment left a 6% tail).
inline constexpr int large_waves = 1;
// Large strategy on sm_90 and later, latency-bound calls: where a segment's blocks are 2 to
// large_cluster_max_blocks, each block's share is at most large_cluster_max_tiles tiles and the
// grid fits one wave (see plan_segreduce), they run as a thread-block cluster and combine their
// results through distributed shared memory after a cluster barrier, which is shorter than an
// arrival counter and the last block's reads of the partials (clusters of more than 8 blocks are
// not portable, but the H100 and H200 have them). Longer shares amortise the combine, and there
// co-scheduling a cluster's blocks cost bandwidth (docs/tuning/backprop.md has both measurements).
inline constexpr int large_cluster_max_blocks = 16;
inline constexpr int large_cluster_max_tiles = 2;
// The sequential strategy shrinks its tiles (down to this many segments per block) until the
// grid has a block for every resident block slot: small problems and compute-heavy elements
// (Black-Scholes) need the blocks more than the long tiles.
inline constexpr std::int64_t sequential_min_rows = 32;
// ...but a tile of whole short segments still gives each thread at least this many elements to
// stage: thinner tiles, one element a thread, left the loads' latency exposed (2^18 elements).
inline constexpr std::int64_t sequential_min_items = 4;
// Small strategy, commutative operators: lanes per segment. Segments of at least 16 x items
// elements are read by a full warp, shorter ones by 8 lanes, so that lanes are not left idle.
inline constexpr int group_lanes_wide = 32, group_lanes_narrow = 8;
// Auto rule thresholds (FHPC17 3.1 re-measured on the H100, see auto_rule in strategy.cpp).
inline constexpr std::int64_t large_min_n = 4 * block_threads;  // from here on large, but see auto_rule
inline constexpr std::int64_t group_min_n = 32;                 // commutative: lane groups from here on
inline constexpr std::int64_t sequential_max_n_wide = 256;      // 8+ byte values: sequential below this
}  // namespace segreduce_tuning

// Chooses strategy and launch shape for m segments of n elements whose reduction values take
// value_bytes bytes (host backend: the result is informational).
// commutative: whether the operator may be reordered (soac::is_commutative_v), which lets the
// small strategy reduce each segment with a group of lanes instead of the segmented scan.
// compute_bound: f declares that an element costs far more to compute than to load (see
// soac::declares_compute_bound), which makes threads worth more than few long lane groups.
// ordered_resident: blocks of the non-commutative large kernel resident on the device at once
// (its tile and registers hold it below the 8 per SM the plan assumes otherwise); 0: assume 8.
segreduce_plan plan_segreduce(const device_properties& props, std::int64_t m, std::int64_t n, std::size_t value_bytes,
                              const segreduce_options& options, bool commutative = false, bool compute_bound = false,
                              std::int64_t ordered_resident = 0);

// Whether an element functor declares `static constexpr bool compute_bound = true` (Black-Scholes
// pricing per element: exp, log and sqrt where an array read would be a load).
template <class F, class = void>
inline constexpr bool declares_compute_bound = false;
template <class F>
inline constexpr bool declares_compute_bound<F, std::void_t<decltype(F::compute_bound)>> = bool(F::compute_bound);

// Tile sizes derived from the value size (shared by the planner and the kernels' template
// arguments, so both agree).
constexpr int segreduce_items_per_thread(std::size_t value_bytes) {
  const std::size_t k = segreduce_tuning::bytes_in_flight_per_thread / (value_bytes ? value_bytes : 1);
  return k < 1 ? 1 : (k > 8 ? 8 : int(k));
}
// Large strategy, non-commutative operators: elements of its run a thread folds per round, 128 B
// of values (32 ints, 8 maximum-subarray quads) and a power of two, so that a round's 32-byte
// sectors are read whole; fewer where the tile (block_threads padded rows) would pass 40 KiB.
constexpr int segreduce_ordered_items(std::size_t value_bytes) {
  const std::size_t vb = value_bytes ? value_bytes : 1;
  std::size_t k = std::bit_floor(std::clamp<std::size_t>(128 / vb, 1, 32));
  while (k > 1 && std::size_t(segreduce_tuning::block_threads) * (k + 1) * vb > 40 * 1024) k /= 2;
  return int(k);
}
constexpr int segreduce_sequential_columns(std::size_t value_bytes) {
  const std::size_t k = segreduce_tuning::sequential_tile_bytes / (std::size_t(segreduce_tuning::block_threads) * value_bytes);
  return k < 1 ? 1 : (k > 64 ? 64 : int(k));
}

}  // namespace soac
