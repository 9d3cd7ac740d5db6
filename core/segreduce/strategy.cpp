#include "core/segreduce/strategy.hpp"

#include <algorithm>
#include <sstream>

#include "core/enum_names.hpp"
#include "core/error.hpp"

namespace soac {

namespace {
constexpr enum_name<segreduce_strategy> strategy_names[] = {{segreduce_strategy::automatic, "auto"},
                                                            {segreduce_strategy::sequential, "sequential"},
                                                            {segreduce_strategy::large, "large"},
                                                            {segreduce_strategy::small, "small"}};
}  // namespace

std::string_view to_string(segreduce_strategy s) { return name_of<segreduce_strategy>(strategy_names, s); }

segreduce_strategy parse_segreduce_strategy(std::string_view s) {
  return parse_name<segreduce_strategy>(strategy_names, s, "segreduce strategy");
}

std::string segreduce_plan::describe() const {
  if (host) return std::string("host OpenMP (") + reason + ")";
  std::ostringstream s;
  s << to_string(strategy) << " (" << block_threads << " threads/block, ";
  switch (strategy) {
    case segreduce_strategy::sequential:
      s << segments_per_block << " segments/block, tiles of " << block_threads * items_per_thread << " elements";
      break;
    case segreduce_strategy::large:
      if (warp_segments) s << segments_per_block << " segments/block, a warp per segment, ";
      else s << blocks_per_segment << " block" << (blocks_per_segment == 1 ? "" : "s") << "/segment, ";
      s << items_per_thread << (ordered ? " elements of its run/thread and round" : " loads in flight/thread");
      if (cluster > 1) s << ", a cluster per segment combines through shared memory";
      else if (second_pass) s << ", last block combines the partials";
      break;
    default:
      s << segments_per_block << " segments/block, ";
      if (group_threads) s << group_threads << " lanes/segment (WarpReduce)";
      else s << items_per_thread << " items/thread, segmented scan";
      break;
  }
  s << ", " << grid << " blocks; " << reason << ")";
  return s.str();
}

namespace {

using namespace segreduce_tuning;

// Blocks of block_threads resident on the whole device at once (a fixed guess on the host).
std::int64_t resident_blocks(const device_properties& p) {
  const std::int64_t sms = p.sm_count > 0 ? p.sm_count : 132;
  const std::int64_t per_sm = p.max_threads_per_sm > 0 ? p.max_threads_per_sm / block_threads : 8;
  return sms * std::max<std::int64_t>(1, per_sm);
}

std::int64_t small_capacity(std::size_t value_bytes) {
  return std::int64_t{block_threads} * segreduce_items_per_thread(value_bytes);
}

// Lanes per segment of the small strategy's group kernel (commutative operators).
int group_lanes(std::int64_t n, std::size_t value_bytes) {
  return n >= std::int64_t{group_lanes_wide} * segreduce_items_per_thread(value_bytes) / 2 ? group_lanes_wide
                                                                                          : group_lanes_narrow;
}

// FHPC17 3.1 re-derived on the H100 from `soac bench segreduce` (every forced strategy measured
// in every cell of the four microbenchmarks; tables in the report). The paper switches to
// sequential above 2^16 segments and to large when n exceeds half a block. On the H100:
//  - segments too long for a small-strategy block, or n >= 1024 unless a commutative operator
//    gives the lane-group kernel at least a full wave of blocks: large (1.00-1.10x the floor);
//  - the same for compute-bound elements (declared by f) from a block's width on: a lane group
//    short of a wave leaves most SMs idle while each lane computes n / 32 elements in turn;
//  - a non-commutative operator whose segments give a warp one whole round (32 runs of
//    segreduce_ordered_items), enough of them for every resident block slot: large, a warp per
//    segment (maximum subarray sum, 2^18 x 256: 0.98x a plain reduction, sequential 1.51x);
//  - enough segments for one thread each on every SM (m >= SMs x block_threads) and either
//    segments that fit one tile row (n <= columns), a non-commutative operator (the segmented
//    scan costs more than the tile transposition for maximum subarray sum), or short segments of
//    8-byte values (index of max: lane groups lose at n = 64): sequential;
//  - otherwise whole segments per block: small (lane groups with WarpReduce for commutative
//    operators, the segmented scan otherwise).
const char* auto_rule(const device_properties& props, std::int64_t m, std::int64_t n, std::size_t value_bytes,
                      bool commutative, bool compute_bound, segreduce_strategy& chosen) {
  chosen = segreduce_strategy::large;
  if (n > small_capacity(value_bytes)) return "segments longer than a small-strategy tile";
  const std::int64_t group_blocks = (m * group_lanes(n, value_bytes) + block_threads - 1) / block_threads;
  if (n >= large_min_n) {
    if (!commutative || group_blocks < resident_blocks(props)) return "n >= 4 blocks' width";
    chosen = segreduce_strategy::small;
    return "n >= 4 blocks' width, commutative, a full wave of lane groups";
  }
  if (compute_bound && commutative && n >= block_threads && group_blocks < resident_blocks(props))
    return "compute-bound elements, a block's width per segment, lane groups short of a wave";
  if (!commutative && n >= 32 * std::int64_t{segreduce_ordered_items(value_bytes)} && m >= resident_blocks(props))
    return "non-commutative, a warp's round per segment, a warp each fills the GPU";
  const std::int64_t sms = props.sm_count > 0 ? props.sm_count : 132;
  if (m >= sms * block_threads) {
    chosen = segreduce_strategy::sequential;
    if (n <= segreduce_sequential_columns(value_bytes)) return "m >= SMs x block, n fits a tile row";
    if (!commutative) return "m >= SMs x block, non-commutative: no segmented scan";
    if (n < group_min_n) return "m >= SMs x block, n below a warp";
    if (value_bytes >= 8 && n < sequential_max_n_wide) return "m >= SMs x block, short segments of 8+ byte values";
  }
  chosen = segreduce_strategy::small;
  return commutative ? "whole segments per block, lane groups" : "whole segments per block, segmented scan";
}

}  // namespace

segreduce_plan plan_segreduce(const device_properties& props, std::int64_t m, std::int64_t n, std::size_t value_bytes,
                              const segreduce_options& options, bool commutative, bool compute_bound,
                              std::int64_t ordered_resident) {
  if (options.blocks_per_segment < 0) throw usage_error("segreduce: blocks_per_segment must not be negative");
  segreduce_plan plan;
  plan.block_threads = block_threads;
  if (options.strategy == segreduce_strategy::automatic) {
    plan.reason = auto_rule(props, m, n, value_bytes, commutative, compute_bound, plan.strategy);
  } else {
    plan.strategy = options.strategy;
    plan.reason = "forced";
  }
  const std::int64_t B = block_threads;
  switch (plan.strategy) {
    case segreduce_strategy::sequential:
      plan.items_per_thread = segreduce_sequential_columns(value_bytes);
      {
        const bool whole = n <= plan.items_per_thread;
        const std::int64_t most = whole ? B * plan.items_per_thread / std::max<std::int64_t>(n, 1) : B;
        const std::int64_t fill = (m + resident_blocks(props) - 1) / resident_blocks(props);
        const std::int64_t least = whole ? std::max(sequential_min_rows, (sequential_min_items * B + n - 1) / std::max<std::int64_t>(n, 1))
                                         : sequential_min_rows;
        plan.segments_per_block = std::clamp<std::int64_t>(fill, std::min(most, least), most);
      }
      plan.grid = (m + plan.segments_per_block - 1) / plan.segments_per_block;
      break;
    case segreduce_strategy::large: {
      plan.ordered = !commutative;
      plan.items_per_thread = commutative ? segreduce_items_per_thread(value_bytes) : segreduce_ordered_items(value_bytes);
      std::int64_t k = options.blocks_per_segment;
      if (k == 0) {
        // One wave of the kernel that runs: a second, partly filled wave of the ordered kernel
        // (5 blocks per SM, not 8) left most SMs idle at its end.
        const std::int64_t resident = !commutative && ordered_resident > 0 ? ordered_resident : resident_blocks(props);
        const std::int64_t target = resident * large_waves;
        std::int64_t most = std::max<std::int64_t>(1, n / (B * large_min_items_per_thread));
        // Segments too few to fill the GPU so (one long one, a min/max over an image, left 64
        // blocks on 132 SMs): down to a tile a block, where that gives each enough blocks.
        const std::int64_t tiles = n / (B * plan.items_per_thread);
        if (m * most < target && std::min(target / std::max<std::int64_t>(m, 1), tiles) >= large_min_fine_split)
          most = std::max(most, tiles);
        k = std::clamp<std::int64_t>(target / std::max<std::int64_t>(m, 1), 1, most);
      }
      k = std::max<std::int64_t>(1, std::min(k, std::max<std::int64_t>(n, 1)));
      // Whole tiles per block keep every block's loads aligned; that may leave fewer blocks.
      const std::int64_t tile = B * plan.items_per_thread;
      plan.chunk = std::max<std::int64_t>(tile, (n + k - 1) / k + tile - 1) / tile * tile;
      plan.blocks_per_segment = std::max<std::int64_t>(1, (n + plan.chunk - 1) / plan.chunk);
      plan.second_pass = plan.blocks_per_segment > 1;
      plan.grid = m * plan.blocks_per_segment;
      // Clusters (sm_90 on) for latency-bound calls: shares of a tile or two, a grid of one wave.
      // A split a little beyond the cluster limit (backprop's 16 segments of 65,537: 16 blocks and
      // one for the last element) is evened out to the limit where that adds at most a quarter to
      // each block's share (doubling it cost the ordered kernel more than the cluster saved).
      const std::int64_t resident = !commutative && ordered_resident > 0 ? ordered_resident : resident_blocks(props);
      if (props.compute_major >= 9 && plan.second_pass && plan.grid <= resident && plan.chunk <= large_cluster_max_tiles * tile) {
        if (plan.blocks_per_segment > large_cluster_max_blocks && options.blocks_per_segment == 0) {
          const std::int64_t even = (n + large_cluster_max_blocks * B - 1) / (large_cluster_max_blocks * B) * B;
          if (4 * even <= 5 * plan.chunk) {
            plan.chunk = even;
            plan.blocks_per_segment = (n + even - 1) / even;
            plan.grid = m * plan.blocks_per_segment;
          }
        }
        if (plan.blocks_per_segment <= large_cluster_max_blocks) plan.cluster = int(plan.blocks_per_segment);
      }
      // Ordered segments shorter than one round (block_threads runs of items_per_thread) would
      // leave a block folding tile by tile; a warp per segment folds runs of its own, where the
      // segments fill every resident block slot so.
      if (!commutative && plan.blocks_per_segment == 1 && n < tile && m >= resident_blocks(props)) {
        plan.warp_segments = true;
        plan.segments_per_block = B / 32;
        plan.grid = (m + plan.segments_per_block - 1) / plan.segments_per_block;
      }
      break;
    }
    case segreduce_strategy::small: {
      plan.items_per_thread = segreduce_items_per_thread(value_bytes);
      const std::int64_t capacity = small_capacity(value_bytes);
      if (n > capacity)
        throw usage_error("segreduce: the small-segments strategy holds whole segments of at most " +
                          std::to_string(capacity) + " elements in a block, but n = " + std::to_string(n));
      if (commutative) {
        plan.group_threads = group_lanes(n, value_bytes);
        plan.segments_per_block = B / plan.group_threads;
      } else {
        plan.segments_per_block = capacity / std::max<std::int64_t>(n, 1);
      }
      plan.grid = (m + plan.segments_per_block - 1) / plan.segments_per_block;
      break;
    }
    default: break;
  }
  return plan;
}

}  // namespace soac
