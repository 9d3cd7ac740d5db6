// The per-element work of the four BFS variants as __host__ __device__ functors, so that the
// cuda kernels and the OpenMP loops of the host backend run the same code, and the launcher that
// is not a core primitive: for_each (Rodinia's thread-per-node kernels, which write any number of
// elements per thread). auto's traversal is in walk.cuh.
#pragma once

#include <cstdint>

#include "apps/bfs/bfs.hpp"
#include "core/context.hpp"
#include "core/hd.hpp"
#include "core/launch.cuh"
#include "core/scatter/write.hpp"

namespace soac::apps::bfs::detail {

using i32 = std::int32_t;
using i64 = std::int64_t;
using u64 = unsigned long long;

// --- Accesses that race ------------------------------------------------------------------------
// Within a level, threads read costs and flags that other threads write (always the same value
// per level, so any interleaving gives the same result). These are relaxed atomics on the host,
// where a plain racing access is undefined in C++, and volatile accesses on the device (relaxed,
// system scope, in PTX's memory model), which also keep a stale L1 line from being read.

template <class T>
SOAC_HD T load_relaxed(const T* p) {
#ifdef __CUDA_ARCH__
  return *static_cast<const volatile T*>(p);
#else
  return __atomic_load_n(p, __ATOMIC_RELAXED);
#endif
}

template <class T>
SOAC_HD void store_relaxed(T* p, T v) {
#ifdef __CUDA_ARCH__
  *static_cast<volatile T*>(p) = v;
#else
  __atomic_store_n(p, v, __ATOMIC_RELAXED);
#endif
}

// Sets cost[v] from -1 to `level`; true for exactly one caller per node.
SOAC_HD inline bool claim(i32* cost, i32 v, i32 level) {
  if (load_relaxed(cost + v) >= 0) return false;  // the common case costs no atomic
#ifdef __CUDA_ARCH__
  return atomicCAS(cost + v, -1, level) == -1;
#else
  i32 expected = -1;
  return __atomic_compare_exchange_n(cost + v, &expected, level, false, __ATOMIC_RELAXED, __ATOMIC_RELAXED);
#endif
}

SOAC_HD inline i64 edges_end(const graph_view& g, i32 u) { return i64{g.start[u]} + g.degree[u]; }

// --- for_each: f(i) for every i < n, for side effects -------------------------------------------

template <class F>
__global__ void for_each_kernel(i64 n, F f) {
  const i64 i = i64{blockIdx.x} * blockDim.x + threadIdx.x;
  if (i < n) f(i);
}

// `block`: Rodinia's kernels run 512 threads per block (its MAX_THREADS_PER_BLOCK).
template <class F>
void for_each(context& ctx, i64 n, F f, int block = 256) {
  if (n <= 0) return;
  if (ctx.is_cuda()) {
    ctx.activate();
    for_each_kernel<<<unsigned(soac::detail::ceil_div(n, block)), block, 0, ctx.stream()>>>(n, f);
    SOAC_CHECK_LAUNCH("bfs for_each_kernel");
  } else {
#pragma omp parallel for schedule(static)
    for (i64 i = 0; i < n; ++i) f(i);
  }
}

// --- rodinia ------------------------------------------------------------------------------------

// Every node starts unvisited at cost -1 except the source (Rodinia sets these on the host and
// copies them; here one kernel).
struct rodinia_init {
  std::uint8_t *mask, *updating, *visited;
  i32* cost;
  i32 source;
  SOAC_HD void operator()(i64 i) const {
    const bool is_source = i == source;
    mask[i] = is_source;
    updating[i] = 0;
    visited[i] = is_source;
    cost[i] = is_source ? 0 : -1;
  }
};

// Rodinia's Kernel: a frontier node gives every unvisited neighbour its cost + 1, in a loop.
struct rodinia_expand {
  graph_view g;
  std::uint8_t *mask, *updating;
  const std::uint8_t* visited;
  i32* cost;
  SOAC_HD void operator()(i64 i) const {
    const i32 u = i32(i);
    if (!mask[u]) return;
    mask[u] = 0;
    const i32 next = cost[u] + 1;  // u is visited: no thread writes its cost now
    for (i64 e = g.start[u], end = edges_end(g, u); e < end; ++e) {
      const i32 v = g.edges[e];
      if (!visited[v]) {
        store_relaxed(cost + v, next);
        store_relaxed(updating + v, std::uint8_t{1});
      }
    }
  }
};

// Rodinia's Kernel2: the nodes reached become the next frontier, and the host learns that one did.
struct rodinia_update {
  std::uint8_t *mask, *updating, *visited, *changed;
  SOAC_HD void operator()(i64 i) const {
    if (!updating[i]) return;
    mask[i] = 1;
    visited[i] = 1;
    store_relaxed(changed, std::uint8_t{1});
    updating[i] = 0;
  }
};

// --- padded and segmented (on the core: filter, reduce, scan, segscan, scatter) -----------------

// Costs -1 except the source's 0; only the source in the frontier; nothing visited yet (a node is
// marked visited when it enters the frontier, see frontier_leaves).
struct frontier_init {
  i32 source;
  SOAC_HD auto operator()(i64 i) const {
    const bool is_source = i == source;
    return writes(write_at<i64, i32>{i, is_source ? 0 : -1}, write_at<i64, std::uint8_t>{i, std::uint8_t(is_source)},
                  write_at<i64, std::uint8_t>{i, 0});
  }
};

// The frontier's k-th node (from filter) leaves the mask and is visited: to mask, visited.
struct frontier_leaves {
  const i32* active;
  SOAC_HD auto operator()(i64 k) const {
    return writes(write_at<i64, std::uint8_t>{active[k], 0}, write_at<i64, std::uint8_t>{active[k], 1});
  }
};

// The degree of the k-th node of a list (the frontier, or auto's queue); as a segreduce element,
// of the one segment.
struct listed_degree {
  const i32* list;
  const i32* degree;
  SOAC_HD i64 operator()(i64 k) const { return degree[list[k]]; }
  SOAC_HD i64 operator()(i64, i64 k) const { return degree[list[k]]; }
};

// A write of cost `next` and frontier mask 1 to node v, or to nothing (index -1) when there is
// no edge (a padded slot) or v is visited: the report's "index -1 is ignored by write".
SOAC_HD inline auto reach(bool edge, const std::uint8_t* visited, i32 v, i32 next) {
  const i64 to = edge && !visited[v] ? i64{v} : -1;
  return writes(write_at<i64, i32>{to, next}, write_at<i64, std::uint8_t>{to, 1});
}

// bfs_parallel_simple's node_work, flattened: slot p is edge j = p % width of frontier node
// p / width, padded with index -1 beyond the node's degree.
struct padded_expand {
  graph_view g;
  const i32* active;
  const std::uint8_t* visited;
  const i32* cost;
  i64 width;  // the frontier's largest degree
  SOAC_HD auto operator()(i64 p) const {
    const i32 u = active[p / width];
    const i64 j = p % width;
    const bool edge = j < g.degree[u];
    return reach(edge, visited, edge ? g.edges[g.start[u] + j] : 0, cost[u] + 1);
  }
};

// The head of each frontier node's segment in the flattened edge list: a flag and the node's
// first edge index (the report's mask and is1), nothing for nodes without edges.
struct segment_heads {
  graph_view g;
  const i32* active;
  const i64* inclusive_degrees;  // inclusive scan of the frontier's degrees
  SOAC_HD auto operator()(i64 k) const {
    const i32 u = active[k];
    const i64 at = g.degree[u] > 0 ? inclusive_degrees[k] - g.degree[u] : -1;
    return writes(write_at<i64, std::uint8_t>{at, 1}, write_at<i64, i32>{at, g.start[u]});
  }
};

// The segmented scan's input: a segment's first edge index at its head, 1 after it, so the
// inclusive segmented sum is every slot's edge index (the report's is2).
struct edge_index_steps {
  const std::uint8_t* heads;
  const i32* first_edge;
  SOAC_HD i32 operator()(i64 p) const { return heads[p] ? first_edge[p] : 1; }
};

// Slot p of the flattened edges reaches edges[edge_index[p]], at cost `next`: every frontier
// node's cost is the level, so the report's second segmented scan (of costs) is a constant here
// (its replicate elimination).
struct segmented_expand {
  const i32* edges;
  const i32* edge_index;
  const std::uint8_t* visited;
  i32 next;
  SOAC_HD auto operator()(i64 p) const { return reach(true, visited, edges[edge_index[p]], next); }
};

}  // namespace soac::apps::bfs::detail
