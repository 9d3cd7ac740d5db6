// Rodinia's BFS files (rodinia_3.1/data/bfs, e.g. graph1MW_6.txt) and the result file its bfs
// writes. A graph file holds integers that Rodinia reads with fscanf("%d") one after another (any
// whitespace between them, blank lines included; a number ends where its digits end):
//
//   N                      the node count
//   start degree           N pairs: node i's edges are edges[start .. start + degree)
//   source                 the source node
//   E                      the edge count
//   destination weight     E pairs (the weight is unused by BFS)
//
// Nodes' edge ranges need not be contiguous or disjoint (only within [0, E)). The weight may be any
// integer (Rodinia reads and ignores it); what follows the last edge is not read, as in Rodinia
// (counted in `lenient`, or refused when it is strict). Rodinia's CUDA bfs reads the source and
// starts at node 0 anyway; its OpenMP bfs starts at the file's source, as soac does. The result
// file has one line per node, "<node>) cost:<cost>", -1 for unreached nodes.
#pragma once

#include <cstdint>
#include <filesystem>
#include <span>
#include <string>
#include <vector>

#include "datasets/lenient.hpp"

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
// every number but the weights non-negative, start + degree <= E, destinations and the source in
// [0, N). Errors are input_errors "FILE:LINE:COLUMN: ...": what Rodinia's reader would misread
// (a number fscanf cannot read where one is needed) or run out of bounds with.
rodinia_graph read_rodinia_graph(const std::filesystem::path& path, leniency& lenient);
// Lenient reading whose notes are dropped (fuzzers, tests).
rodinia_graph read_rodinia_graph(const std::filesystem::path& path);

// Writes the graph in the layout of Rodinia's graphgen (one pair per line, blank lines around the
// source). `weights`: one per edge, or empty for all 1.
void write_rodinia_graph(const std::filesystem::path& path, const rodinia_graph& graph,
                         std::span<const std::int32_t> weights = {});

// Rodinia bfs's result.txt for these costs: "<node>) cost:<cost>\n" per node.
std::string rodinia_costs_text(std::span<const std::int32_t> costs);
// Reads such a file (a CR before each newline is allowed): the costs of nodes 0, 1, ... in order.
// input_error "FILE:LINE:COLUMN: ..." for a line of another form or a node out of order.
std::vector<std::int32_t> read_rodinia_costs(const std::filesystem::path& path);

}  // namespace soac::datasets
