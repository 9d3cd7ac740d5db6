// Rodinia's BFS files (rodinia_3.1/data/bfs, e.g. graph1MW_6.txt) and the result file its bfs
// writes. A graph file holds whitespace-separated integers (any whitespace, blank lines included):
//
//   N                      the node count
//   start degree           N pairs: node i's edges are edges[start .. start + degree)
//   source                 the source node
//   E                      the edge count
//   destination weight     E pairs (the weight is unused by BFS)
//
// Nodes' edge ranges need not be contiguous or disjoint (only within [0, E)). The result file
// has one line per node, "<node>) cost:<cost>", -1 for unreached nodes.
#pragma once

#include <cstdint>
#include <filesystem>
#include <span>
#include <string>
#include <vector>

namespace soac::datasets {

// A graph in Rodinia's layout (also the in-memory form of soac's CSR bundles).
struct rodinia_graph {
  std::vector<std::int32_t> start, degree;  // per node
  std::vector<std::int32_t> edges;          // destination node of each edge
  std::int32_t source = 0;

  std::int64_t node_count() const { return static_cast<std::int64_t>(start.size()); }
  std::int64_t edge_count() const { return static_cast<std::int64_t>(edges.size()); }
};

// Reads and checks a graph file: every count against what the file holds (before allocating),
// every number non-negative, start + degree <= E, destinations and the source in [0, N). Errors
// are input_errors "FILE:LINE:COLUMN: ...".
rodinia_graph read_rodinia_graph(const std::filesystem::path& path);

// Writes the graph in the layout of Rodinia's graphgen (one pair per line, blank lines around the
// source). `weights`: one per edge, or empty for all 1.
void write_rodinia_graph(const std::filesystem::path& path, const rodinia_graph& graph,
                         std::span<const std::int32_t> weights = {});

// Rodinia bfs's result.txt for these costs: "<node>) cost:<cost>\n" per node.
std::string rodinia_costs_text(std::span<const std::int32_t> costs);

}  // namespace soac::datasets
