// Breadth-first search (Rodinia's bfs; write-construct report, section 5): the level ("cost") of
// every node from a source, -1 where unreachable, four ways:
//   rodinia    the original's structure: a thread per node looping over its edges, two kernels
//              per level over all nodes with masks, the host reading a flag until none changes;
//   padded     the report's bfs_parallel_simple: the frontier (filter) with every edge list
//              padded to the level's largest degree (reduce), then scatter;
//   segmented  the report's bfs_parallel_segmented: the frontier's edges flattened with a scan
//              of degrees and a segmented scan of edge indices, then scatter;
//   auto       a choice per level between top-down from a frontier queue (by queued node: on
//              cuda a warp's lanes share its 32 nodes' edges; or a thread per frontier edge after
//              a scan of their degrees) and bottom-up (every unvisited node looks for a parent in
//              a frontier bitmap), decided on the device: one cooperative kernel runs level after
//              level with a grid-wide barrier between them, and the host waits for the device
//              once per traversal (walk.cuh).
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/buffer.hpp"
#include "core/context.hpp"
#include "datasets/rodinia_graph.hpp"

namespace soac::apps::bfs {

enum class variant { rodinia, padded, segmented, automatic };

enum class level_kind { all_nodes, padded, segmented, thread_per_node, thread_per_edge, bottom_up };

// auto's per-level rule (Beamer, Asanovic, Patterson, SC12, with their constants): go bottom-up
// when the frontier's edges exceed the unexplored edges / alpha, stay bottom-up while the
// frontier holds at least N / beta nodes; top-down levels go by queued node when the frontier's
// largest degree is at most `thread_per_node`, else a thread per edge. `only` holds
// every level to one strategy (tests, and timing each strategy alone). The levels run in rounds
// of at most `levels_per_round`, the host reading the round's trace after each (one round for
// any graph of fewer levels; smaller rounds test the hand-over). cuda: the kernel runs
// `blocks_per_sm` blocks per SM, at most as many as fit at once.
struct auto_tuning {
  static constexpr int max_levels_per_round = 1024;
  double alpha = 14;
  double beta = 24;
  std::int64_t thread_per_node = 32;
  std::optional<level_kind> only;
  int levels_per_round = max_levels_per_round;
  int blocks_per_sm = 2;
};

struct options {
  variant which = variant::automatic;
  auto_tuning tuning;
};

// "auto", "rodinia", "padded", "segmented", or
// "auto,alpha=X,beta=X,tpn=N,only=nodes|edges|bottom-up,round=N,blocks=N" (usage_error else).
options parse_variant(const std::string& text);
std::string variant_name(variant v);

// How a level ran: how many frontier nodes it started from (-1: not counted, rodinia), the
// elements its expansion covered (edges, padded slots, or nodes), the largest degree in the
// frontier (0: not known) and the strategy.
struct level_step {
  std::int64_t frontier = 0, work = 0, largest_degree = 0;
  level_kind kind = level_kind::all_nodes;
};

struct trace {
  std::vector<level_step> steps;  // one per iteration (rodinia, padded, segmented) or level (auto)
  // "12 iterations: 7 thread per node, 2 thread per edge, 3 bottom-up".
  std::string summary() const;
  // One line per iteration (what --verbose prints).
  std::string per_level() const;
};

// Node pointers of a graph in the backend's memory, Rodinia's layout.
struct graph_view {
  const std::int32_t* start = nullptr;
  const std::int32_t* degree = nullptr;
  const std::int32_t* edges = nullptr;
};

// auto's bottom-up levels read every node's in-edges. Where every node's in-edges equal its
// out-edges as a multiset (undirected graphs: Rodinia's and every generated one) the out-edges
// serve and this returns nothing; otherwise it returns the transpose. Throws resource_error when
// the transpose would exceed 2^31 - 1 edges.
std::optional<datasets::rodinia_graph> transpose_unless_symmetric(const datasets::rodinia_graph& g);

// A graph in the backend's memory with the work arrays of every variant, allocated once so that
// a traversal allocates nothing (pinned memory costs tens of microseconds to allocate).
class runner {
 public:
  // `in_edges`: from transpose_unless_symmetric (only auto's bottom-up levels use it).
  runner(context& ctx, const datasets::rodinia_graph& g, const std::optional<datasets::rodinia_graph>& in_edges);
  ~runner();
  runner(const runner&) = delete;
  runner& operator=(const runner&) = delete;

  // Copies the graph into the buffers again (what the bench times as the host-to-device copy).
  void upload(const datasets::rodinia_graph& g, const std::optional<datasets::rodinia_graph>& in_edges);

  // Writes every node's level from `source` into cost (N elements in the backend's memory).
  trace traverse(std::int32_t source, const options& o, span<std::int32_t> cost);

  std::int64_t nodes() const { return nodes_; }
  std::int64_t edges() const { return static_cast<std::int64_t>(edges_.size()); }
  // Bytes of the graph on the device (the copy).
  std::int64_t bytes() const;
  // Whether auto's bottom-up levels read the out-edges (no transpose was given).
  bool reads_out_edges_bottom_up() const { return !has_in_edges_; }

 private:
  struct pinned;  // mapped pinned memory: rodinia's flag, auto's trace (cuda)
  graph_view out_view() const { return {start_.data(), degree_.data(), edges_.data()}; }
  graph_view in_view() const;
  trace rodinia(std::int32_t source, span<std::int32_t> cost);
  trace padded(std::int32_t source, span<std::int32_t> cost);
  trace segmented(std::int32_t source, span<std::int32_t> cost);
  trace automatic(std::int32_t source, const auto_tuning& t, span<std::int32_t> cost);

  context& ctx_;
  std::int64_t nodes_ = 0, total_degree_ = 0;
  std::vector<std::int32_t> host_degree_;
  buffer<std::int32_t> start_, degree_, edges_;
  buffer<std::int32_t> in_start_, in_degree_, in_edges_;  // the transpose, when given
  bool has_in_edges_ = false;
  // Work arrays, allocated on a variant's first traversal.
  buffer<std::uint8_t> mask_, updating_, visited_;
  buffer<std::int32_t> queue_a_, queue_b_;
  buffer<std::int64_t> offsets_, largest_, block_sums_;
  buffer<std::uint32_t> bits_;
  buffer<unsigned long long> counters_;
  std::unique_ptr<pinned> pinned_;
};

}  // namespace soac::apps::bfs
