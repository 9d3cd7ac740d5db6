// auto's traversal (see bfs.hpp): each level's strategy and size decided where the previous
// level's totals are, so that the host does not wait for the device between levels.
//
// cuda: one cooperative kernel (walk_kernel) runs level after level on a fixed grid, every loop
// grid-strided over counts that live in device memory, with a grid-wide barrier where a level's
// output becomes the next one's input. Every block holds the same walk_state and takes the
// same decision from the same totals (read after a barrier), so all blocks arrive at the same
// barriers. The host launches a round of levels and waits once for its trace and final state.
// Chosen over back-to-back launches of per-level kernels: a barrier costs about a microsecond
// against 2-4 per launch, the thread-per-edge scan needs no host-known count, and no surplus
// launches are queued for levels that turn out not to be needed.
//
// host: the same rule, state and per-node work in OpenMP loops, the thread-per-edge scan by
// soac::scan, and the same queues and bitmaps, so the host tests check the bitmap and queue
// hand-overs that the device runs.
#pragma once

#include <algorithm>
#include <cstdint>

#include <cooperative_groups.h>
#include <cub/block/block_reduce.cuh>
#include <cub/block/block_scan.cuh>
#include <cub/util_type.cuh>
#include <cub/warp/warp_scan.cuh>

#include "apps/bfs/kernels.cuh"
#include "core/operators.hpp"
#include "core/scan.cuh"

namespace soac::apps::bfs::detail {

using u32 = std::uint32_t;

// --- the rule, shared by both backends ----------------------------------------------------------

// auto_tuning as the device reads it: `only` is -1 or a level_kind.
struct level_rule {
  double alpha = 14, beta = 24;
  i64 thread_per_node = 32;
  int only = -1;
};

// A level's count of the next frontier: the nodes found, those of them with edges (queued: every
// queued node has an edge, so an empty queue ends the search), their edges and largest degree.
struct frontier_totals {
  i64 queued = 0, found = 0, edges = 0, largest = 0;
};

SOAC_HD inline frontier_totals combine(const frontier_totals& a, const frontier_totals& b) {
  return {a.queued + b.queued, a.found + b.found, a.edges + b.edges, a.largest > b.largest ? a.largest : b.largest};
}

struct combine_totals {
  SOAC_HD frontier_totals operator()(const frontier_totals& a, const frontier_totals& b) const { return combine(a, b); }
};

// A node found with `degree` out-edges (queued is counted where the node is queued).
SOAC_HD inline void count_found(frontier_totals& t, i32 degree) {
  ++t.found;
  t.edges += degree;
  t.largest = degree > t.largest ? degree : t.largest;
}

// Where a traversal stands between levels.
struct walk_state {
  i64 level = 0;                  // the level to run next: its frontier nodes have this cost
  frontier_totals frontier;       // that frontier
  i64 found = 0, unexplored = 0;  // nodes found so far; the edges of the nodes not found yet
  int previous = int(level_kind::thread_per_node);
  // The frontier is frontier_bits[bitmap_side] after a bottom-up level (with visited_bits),
  // queues[queue_side] after a top-down one.
  int queue_side = 0, bitmap_side = 0;
  bool in_bitmaps = false;
  bool done = false;
};

// Level 0: the source, queued when it has edges.
inline walk_state start_state(i64 source_degree, i64 total_degree) {
  walk_state s;
  s.frontier = {source_degree > 0 ? 1 : 0, 1, source_degree, source_degree};
  s.found = 1;
  s.unexplored = total_degree - source_degree;
  return s;
}

constexpr int no_level = -1;

// The strategy of the next level (auto_tuning's rule), or no_level once the frontier has no
// edges or every node is found (which spares connected graphs a last level that finds nothing).
SOAC_HD inline int next_kind(const walk_state& s, const level_rule& r, i64 nodes) {
  if (s.frontier.queued == 0 || s.found >= nodes) return no_level;
  if (r.only >= 0) return r.only;
  const bool bottom_up = s.previous == int(level_kind::bottom_up)
                             ? double(s.frontier.queued) * r.beta >= double(nodes)
                             : double(s.frontier.edges) * r.alpha > double(s.unexplored);
  if (bottom_up) return int(level_kind::bottom_up);
  return s.frontier.largest <= r.thread_per_node ? int(level_kind::thread_per_node) : int(level_kind::thread_per_edge);
}

SOAC_HD inline level_step step_of(const walk_state& s, int kind, i64 nodes) {
  level_step step;
  step.frontier = s.frontier.queued;
  step.work = kind == int(level_kind::bottom_up) ? nodes : s.frontier.edges;
  step.largest_degree = s.frontier.largest;
  step.kind = level_kind(kind);
  return step;
}

SOAC_HD inline void advance(walk_state& s, int kind, const frontier_totals& next) {
  s.found += next.found;
  s.unexplored -= next.edges;
  s.previous = kind;
  s.frontier = next;
  ++s.level;
  s.in_bitmaps = kind == int(level_kind::bottom_up);
  if (s.in_bitmaps) s.bitmap_side ^= 1;
  else s.queue_side ^= 1;
}

// --- the arrays and the per-node work, shared by both backends ----------------------------------

// Slots of counters in device memory: a level adds to slot level % 3 (see walk_kernel).
enum counter : int { counter_queued, counter_found, counter_edges, counter_largest, counter_words };
constexpr int counter_slots = 3;
constexpr int compaction_counter = counter_slots * counter_words;  // the queue built from a bitmap
constexpr int all_counters = compaction_counter + 1;

struct walk_arrays {
  graph_view out, in;  // in: the transpose, or the out-edges of a symmetric graph
  i32* cost;
  i32* queues[2];
  i64* offsets;           // thread-per-edge levels: exclusive scan of the queued nodes' degrees
  u32* frontier_bits[2];  // bottom-up levels: the frontier, bit v % 32 of word v / 32
  u32* visited_bits;      // and every node found
  u64* counters;          // cuda: all_counters words
  i64* block_sums;        // cuda: a degree sum per block
  i64 nodes;
  level_rule rule;

  // Selected, not indexed: a kernel parameter indexed at run time would be copied to local memory.
  SOAC_HD i32* queue(int side) const { return side ? queues[1] : queues[0]; }
  SOAC_HD u32* bits(int side) const { return side ? frontier_bits[1] : frontier_bits[0]; }
  SOAC_HD i64 words() const { return (nodes + 31) / 32; }
};

// The graph's arrays, which no kernel writes during a traversal: through the read-only data
// cache on the device.
template <class T>
SOAC_HD T read_only(const T* p) {
#ifdef __CUDA_ARCH__
  return __ldg(p);
#else
  return *p;
#endif
}

SOAC_HD inline bool has_bit(const u32* bits, i64 v) { return (bits[v >> 5] >> (v & 31)) & 1u; }

// In-edges a bottom-up node tests at once: their loads are issued together, so a node waits for
// memory once per group instead of once per edge (at the price of up to 3 needless loads past its
// parent).
constexpr int bottom_up_group = 4;

// Bottom-up for node v of a word whose visited bits are `seen`: v looks for an in-neighbour in
// the frontier to be its parent (only this thread writes v's cost this level).
SOAC_HD inline bool bottom_up_node(const walk_arrays& a, const u32* frontier, i64 v, u32 seen, i32 next,
                                   frontier_totals& mine) {
  if (v >= a.nodes || ((seen >> (v & 31)) & 1u)) return false;
  const i32 node = i32(v);
  const i64 first = read_only(a.in.start + node), end = first + read_only(a.in.degree + node);
  bool found = false;
  for (i64 e = first; e < end && !found; e += bottom_up_group) {
    i32 u[bottom_up_group];
    for (int k = 0; k < bottom_up_group; ++k) u[k] = e + k < end ? read_only(a.in.edges + e + k) : -1;
    for (int k = 0; k < bottom_up_group; ++k)
      if (u[k] >= 0) found |= has_bit(frontier, u[k]);
  }
  if (!found) return false;
  a.cost[node] = next;
  const i32 degree = read_only(a.out.degree + node);
  count_found(mine, degree);
  mine.queued += degree > 0;
  return true;
}

// Whether node v of a bitmap frontier goes into the queue of a top-down level.
SOAC_HD inline bool queued_from_bits(const walk_arrays& a, const u32* frontier, i64 v) {
  return v < a.nodes && has_bit(frontier, v) && read_only(a.out.degree + v) > 0;
}

// Thread-per-edge: the target of frontier edge p, which belongs to the last queued node whose
// exclusive degree sum is <= p (every queued node has an edge, so that node's range holds p).
SOAC_HD inline i32 frontier_edge_target(const graph_view& g, const i32* queue, const i64* offsets, i64 queued, i64 p) {
  i64 lo = 0, hi = queued;
  while (hi - lo > 1) {
    const i64 mid = lo + (hi - lo) / 2;
    if (offsets[mid] <= p) lo = mid;
    else hi = mid;
  }
  const i32 u = queue[lo];
  return read_only(g.edges + read_only(g.start + u) + (p - offsets[lo]));
}

// A top-down level's queues: the frontier it expands and the one it fills, and the cost it gives.
struct top_down_queues {
  const i32* queue;
  i32* next_queue;
  i64 queued;
  i32 next;
  SOAC_HD top_down_queues(const walk_arrays& a, const walk_state& s)
      : queue(a.queue(s.queue_side)),
        next_queue(a.queue(s.queue_side ^ 1)),
        queued(s.frontier.queued),
        next(i32(s.level + 1)) {}
};

// --- cuda: the walk kernel ----------------------------------------------------------------------

constexpr int walk_block = 512;
constexpr unsigned full_warp = 0xffffffffu;

// What the host reads after a round (mapped pinned memory).
struct walk_report {
  walk_state state;
  level_step steps[auto_tuning::max_levels_per_round];
};

struct walk_launch {
  walk_arrays a;
  walk_state start;
  i32 source;
  bool initialise;  // the traversal's first round: costs, queue and counters set first
  int max_levels;
  walk_report* report;  // device address of the mapped report
};

// A thread's place in the grid; loops over items step over the whole grid (warp-aligned where
// the warp must stay converged for a ballot).
struct grid_place {
  i64 thread, threads, warp, warps;
  int lane;
};

struct walk_shared {
  union {
    cub::BlockReduce<frontier_totals, walk_block>::TempStorage totals;
    cub::BlockReduce<i64, walk_block>::TempStorage sum;
    cub::BlockScan<i64, walk_block>::TempStorage scan;
  } cub;
  cub::WarpScan<i64>::TempStorage warp_scan[walk_block / 32];
  cub::Uninitialized<walk_state> state;  // (no constructor runs for shared memory)
  i64 carry;
};

// Appends the converged warp's taken nodes to `queue` with one atomic on its length.
__device__ inline void warp_append(bool take, i32 v, i32* queue, u64* length, int lane) {
  const unsigned mask = __ballot_sync(full_warp, take);
  if (mask == 0) return;
  const int first = __ffs(int(mask)) - 1;
  u64 base = 0;
  if (lane == first) base = atomicAdd(length, u64(__popc(mask)));
  base = __shfl_sync(full_warp, base, first);
  if (take) queue[base + u64(__popc(mask & ((1u << lane) - 1u)))] = v;
}

// Top-down: node v claimed (or not) by this lane; called by the whole converged warp.
__device__ inline void found_top_down(bool claimed, i32 v, const walk_arrays& a, const top_down_queues& q, u64* slot,
                                      const grid_place& g, frontier_totals& mine) {
  const i32 degree = claimed ? read_only(a.out.degree + v) : 0;
  if (claimed) count_found(mine, degree);
  warp_append(claimed && degree > 0, v, q.next_queue, slot + counter_queued, g.lane);
}

// A warp per 32 queued nodes, a lane per node: the lanes' degrees scanned, the warp's edges are
// dealt to its lanes 32 at a time, each lane finding its edge's node by a binary search over the
// lanes' scans (shuffles). A warp takes ceil(its edges / 32) steps, not its largest degree, each
// step's loads and compare-and-swaps in flight together.
__device__ inline void device_top_down_nodes(const walk_arrays& a, const top_down_queues& q, const grid_place& g,
                                             u64* slot, walk_shared& sh, frontier_totals& mine) {
  cub::WarpScan<i64>::TempStorage& scan_storage = sh.warp_scan[threadIdx.x / 32];
  for (i64 base = g.warp * 32; base < q.queued; base += g.warps * 32) {
    const i64 k = base + g.lane;
    i64 first = 0, degree = 0;
    if (k < q.queued) {
      const i32 u = q.queue[k];
      first = read_only(a.out.start + u);
      degree = read_only(a.out.degree + u);
    }
    i64 before = 0, edges = 0;
    cub::WarpScan<i64>(scan_storage).ExclusiveSum(degree, before, edges);
    for (i64 dealt = 0; dealt < edges; dealt += 32) {
      const i64 p = dealt + g.lane;
      // The last lane whose edges start at or before p (scans do not decrease; lane 0's is 0).
      int owner = 0;
      for (int step = 16; step > 0; step /= 2)
        if (__shfl_sync(full_warp, before, owner + step) <= p) owner += step;
      const i64 owner_first = __shfl_sync(full_warp, first, owner), owner_before = __shfl_sync(full_warp, before, owner);
      i32 v = 0;
      bool claimed = false;
      if (p < edges) {
        v = read_only(a.out.edges + owner_first + (p - owner_before));
        claimed = claim(a.cost, v, q.next);
      }
      found_top_down(claimed, v, a, q, slot, g, mine);
    }
  }
}

// offsets[k] = the degrees of queued nodes 0..k-1: block b scans a contiguous share of the
// queue after adding up the shares before it. Two grid barriers.
__device__ inline void device_scan_degrees(const walk_arrays& a, const top_down_queues& q, walk_shared& sh,
                                           const cooperative_groups::grid_group& grid) {
  const i64 lo = q.queued * blockIdx.x / gridDim.x, hi = q.queued * (blockIdx.x + 1) / gridDim.x;
  i64 sum = 0;
  for (i64 k = lo + threadIdx.x; k < hi; k += walk_block) sum += read_only(a.out.degree + q.queue[k]);
  sum = cub::BlockReduce<i64, walk_block>(sh.cub.sum).Sum(sum);
  if (threadIdx.x == 0) a.block_sums[blockIdx.x] = sum;
  grid.sync();
  i64 carry = 0;
  for (unsigned b = threadIdx.x; b < blockIdx.x; b += walk_block) carry += a.block_sums[b];
  __syncthreads();  // the reduce's storage is read back before it is used again
  carry = cub::BlockReduce<i64, walk_block>(sh.cub.sum).Sum(carry);
  if (threadIdx.x == 0) sh.carry = carry;
  __syncthreads();
  carry = sh.carry;
  for (i64 base = lo; base < hi; base += walk_block) {
    const i64 k = base + threadIdx.x;
    i64 before = 0, tile = 0;
    __syncthreads();  // the previous tile's scan storage
    cub::BlockScan<i64, walk_block>(sh.cub.scan).ExclusiveSum(k < hi ? i64(read_only(a.out.degree + q.queue[k])) : 0, before, tile);
    if (k < hi) a.offsets[k] = carry + before;
    carry += tile;
  }
  grid.sync();
}

// A lane per frontier edge (after device_scan_degrees).
__device__ inline void device_top_down_edges(const walk_arrays& a, const top_down_queues& q, i64 edges,
                                             const grid_place& g, u64* slot, frontier_totals& mine) {
  for (i64 base = g.warp * 32; base < edges; base += g.warps * 32) {
    const i64 p = base + g.lane;
    i32 v = 0;
    bool claimed = false;
    if (p < edges) {
      v = frontier_edge_target(a.out, q.queue, a.offsets, q.queued, p);
      claimed = claim(a.cost, v, q.next);
    }
    found_top_down(claimed, v, a, q, slot, g, mine);
  }
}

// The bitmaps of a frontier that top-down left in the costs: a warp per word.
__device__ inline void device_bitmaps_from_costs(const walk_arrays& a, const walk_state& s, const grid_place& g) {
  u32* frontier = a.bits(s.bitmap_side);
  for (i64 w = g.warp; w < a.words(); w += g.warps) {
    const i64 v = w * 32 + g.lane;
    const i32 c = v < a.nodes ? a.cost[v] : -1;
    const u32 seen = __ballot_sync(full_warp, c >= 0), current = __ballot_sync(full_warp, c == s.level);
    if (g.lane == 0) {
      a.visited_bits[w] = seen;
      frontier[w] = current;
    }
  }
}

// A warp per word of 32 nodes: the word of the next frontier written whole (so it needs no
// clearing) and the visited word updated by the one warp that owns it.
__device__ inline void device_bottom_up(const walk_arrays& a, const walk_state& s, const grid_place& g,
                                        frontier_totals& mine) {
  const u32* frontier = a.bits(s.bitmap_side);
  u32* next_frontier = a.bits(s.bitmap_side ^ 1);
  const i32 next = i32(s.level + 1);
  for (i64 w = g.warp; w < a.words(); w += g.warps) {
    const u32 seen = a.visited_bits[w];
    const u32 found = __ballot_sync(full_warp, bottom_up_node(a, frontier, w * 32 + g.lane, seen, next, mine));
    if (g.lane == 0) {
      next_frontier[w] = found;
      if (found) a.visited_bits[w] = seen | found;
    }
  }
}

// The queue of a top-down level after a bottom-up one: the frontier's nodes with edges.
__device__ inline void device_queue_from_bits(const walk_arrays& a, const walk_state& s, const grid_place& g) {
  const u32* frontier = a.bits(s.bitmap_side);
  i32* queue = a.queue(s.queue_side);
  for (i64 base = g.warp * 32; base < a.nodes; base += g.warps * 32) {
    const i64 v = base + g.lane;
    warp_append(queued_from_bits(a, frontier, v), i32(v), queue, a.counters + compaction_counter, g.lane);
  }
}

// Up to w.max_levels levels from w.start; the trace and the final state into w.report.
//
// Counters: a level adds its totals to slot level % 3; after its last barrier every block reads
// them. The leader clears slot (level + 1) % 3 at the start of the level: that slot was last read
// right after level - 2's last barrier, which every block left before reaching level - 1's
// barriers, and it is next added to after this level's last barrier.
__global__ void __launch_bounds__(walk_block, 2) walk_kernel(const walk_launch w) {
  const cooperative_groups::grid_group grid = cooperative_groups::this_grid();
  __shared__ walk_shared sh;
  const walk_arrays& a = w.a;
  grid_place g;
  g.thread = i64{blockIdx.x} * walk_block + threadIdx.x;
  g.threads = i64{gridDim.x} * walk_block;
  g.warp = g.thread / 32;
  g.warps = g.threads / 32;
  g.lane = int(threadIdx.x % 32);
  const bool leader = g.thread == 0;
  if (w.initialise) {
    for (i64 i = g.thread; i < a.nodes; i += g.threads) a.cost[i] = i == w.source ? 0 : -1;
    if (leader) {
      a.queue(w.start.queue_side)[0] = w.source;
      for (int k = 0; k < all_counters; ++k) a.counters[k] = 0;
    }
    grid.sync();
  }
  // One copy of the state per block (the same in every block), which thread 0 advances.
  walk_state& shared_state = sh.state.Alias();
  const walk_state& s = shared_state;
  if (threadIdx.x == 0) shared_state = w.start;
  __syncthreads();
  bool done = false;
  for (int run = 0; run < w.max_levels; ++run) {
    const int kind = next_kind(s, a.rule, a.nodes);
    if (kind == no_level) {
      done = true;
      break;
    }
    u64* slot = a.counters + (s.level % counter_slots) * counter_words;
    if (leader) {
      w.report->steps[run] = step_of(s, kind, a.nodes);
      u64* following = a.counters + ((s.level + 1) % counter_slots) * counter_words;
      for (int k = 0; k < counter_words; ++k) following[k] = 0;
    }
    frontier_totals mine;
    if (kind == int(level_kind::bottom_up)) {
      if (!s.in_bitmaps) {
        device_bitmaps_from_costs(a, s, g);
        grid.sync();
      }
      device_bottom_up(a, s, g, mine);
    } else {
      if (s.in_bitmaps) {
        device_queue_from_bits(a, s, g);
        grid.sync();
        // Next used by another bottom-up to top-down switch, barriers away.
        if (leader) a.counters[compaction_counter] = 0;
      }
      const top_down_queues q(a, s);
      if (kind == int(level_kind::thread_per_node)) {
        device_top_down_nodes(a, q, g, slot, sh, mine);
      } else {
        device_scan_degrees(a, q, sh, grid);
        device_top_down_edges(a, q, s.frontier.edges, g, slot, mine);
      }
    }
    // The level's totals: a reduction per block, then one set of atomics per block that found a
    // node (top-down counted its queued nodes as it appended them).
    const frontier_totals block = cub::BlockReduce<frontier_totals, walk_block>(sh.cub.totals).Reduce(mine, combine_totals{});
    if (threadIdx.x == 0 && block.found > 0) {
      atomicAdd(slot + counter_found, u64(block.found));
      atomicAdd(slot + counter_edges, u64(block.edges));
      atomicMax(slot + counter_largest, u64(block.largest));
      if (block.queued > 0) atomicAdd(slot + counter_queued, u64(block.queued));
    }
    grid.sync();  // every thread of the block is done with this level's state
    if (threadIdx.x == 0) {
      const frontier_totals next{i64(load_relaxed(slot + counter_queued)), i64(load_relaxed(slot + counter_found)),
                                 i64(load_relaxed(slot + counter_edges)), i64(load_relaxed(slot + counter_largest))};
      advance(shared_state, kind, next);
    }
    __syncthreads();
  }
  if (leader) {
    w.report->state = s;
    w.report->state.done = done;
  }
}

// --- host: the same levels in OpenMP loops ------------------------------------------------------

// body(i, totals) for i < n in parallel; the threads' totals combined.
template <class Body>
frontier_totals host_levels_for(i64 n, const Body& body) {
  frontier_totals total;
#pragma omp parallel
  {
    frontier_totals mine;
    // Dynamic: the work per item (a node's edges) varies widely.
#pragma omp for schedule(dynamic, 256) nowait
    for (i64 i = 0; i < n; ++i) body(i, mine);
#pragma omp critical(bfs_walk_totals)
    total = combine(total, mine);
  }
  return total;
}

// Top-down: v claimed by this thread goes into the next queue when it has edges.
inline void host_found(const walk_arrays& a, i32 v, i32* next_queue, i64& length, frontier_totals& mine) {
  const i32 degree = a.out.degree[v];
  count_found(mine, degree);
  if (degree > 0) next_queue[__atomic_fetch_add(&length, i64{1}, __ATOMIC_RELAXED)] = v;
}

inline frontier_totals host_top_down(context& ctx, const walk_arrays& a, const walk_state& s, int kind) {
  const top_down_queues q(a, s);
  i64 length = 0;
  frontier_totals t;
  if (kind == int(level_kind::thread_per_node)) {
    t = host_levels_for(q.queued, [&](i64 k, frontier_totals& mine) {
      const i32 u = q.queue[k];
      for (i64 e = a.out.start[u], end = edges_end(a.out, u); e < end; ++e)
        if (claim(a.cost, a.out.edges[e], q.next)) host_found(a, a.out.edges[e], q.next_queue, length, mine);
    });
  } else {
    scan(ctx, q.queued, listed_degree{q.queue, a.out.degree}, span<i64>(a.offsets, std::size_t(q.queued)),
         plus<i64>{}, scan_kind::exclusive);
    t = host_levels_for(s.frontier.edges, [&](i64 p, frontier_totals& mine) {
      const i32 v = frontier_edge_target(a.out, q.queue, a.offsets, q.queued, p);
      if (claim(a.cost, v, q.next)) host_found(a, v, q.next_queue, length, mine);
    });
  }
  t.queued = length;
  return t;
}

inline frontier_totals host_bottom_up(const walk_arrays& a, const walk_state& s) {
  const u32* frontier = a.bits(s.bitmap_side);
  u32* next_frontier = a.bits(s.bitmap_side ^ 1);
  const i32 next = i32(s.level + 1);
  return host_levels_for(a.words(), [&](i64 w, frontier_totals& mine) {
    const u32 seen = a.visited_bits[w];
    u32 found = 0;
    for (int lane = 0; lane < 32; ++lane)
      if (bottom_up_node(a, frontier, w * 32 + lane, seen, next, mine)) found |= 1u << lane;
    next_frontier[w] = found;
    a.visited_bits[w] = seen | found;
  });
}

inline void host_bitmaps_from_costs(const walk_arrays& a, const walk_state& s) {
  u32* frontier = a.bits(s.bitmap_side);
  host_levels_for(a.words(), [&](i64 w, frontier_totals&) {
    u32 seen = 0, current = 0;
    for (i64 v = w * 32, end = std::min(a.nodes, v + 32); v < end; ++v) {
      seen |= u32(a.cost[v] >= 0) << (v % 32);
      current |= u32(a.cost[v] == s.level) << (v % 32);
    }
    a.visited_bits[w] = seen;
    frontier[w] = current;
  });
}

inline void host_queue_from_bits(const walk_arrays& a, const walk_state& s) {
  const u32* frontier = a.bits(s.bitmap_side);
  i32* queue = a.queue(s.queue_side);
  i64 length = 0;
  host_levels_for(a.nodes, [&](i64 v, frontier_totals&) {
    if (queued_from_bits(a, frontier, v)) queue[__atomic_fetch_add(&length, i64{1}, __ATOMIC_RELAXED)] = i32(v);
  });
}

// walk_kernel's round on the host: up to max_levels levels from s, their steps into `steps`.
inline walk_state host_walk(context& ctx, const walk_arrays& a, walk_state s, int max_levels, bool initialise,
                            i32 source, level_step* steps) {
  if (initialise) {
    host_levels_for(a.nodes, [&](i64 i, frontier_totals&) { a.cost[i] = i == source ? 0 : -1; });
    a.queue(s.queue_side)[0] = source;
  }
  for (int run = 0; run < max_levels; ++run) {
    const int kind = next_kind(s, a.rule, a.nodes);
    if (kind == no_level) {
      s.done = true;
      break;
    }
    steps[run] = step_of(s, kind, a.nodes);
    frontier_totals next;
    if (kind == int(level_kind::bottom_up)) {
      if (!s.in_bitmaps) host_bitmaps_from_costs(a, s);
      next = host_bottom_up(a, s);
    } else {
      if (s.in_bitmaps) host_queue_from_bits(a, s);
      next = host_top_down(ctx, a, s, kind);
    }
    advance(s, kind, next);
  }
  return s;
}

}  // namespace soac::apps::bfs::detail
