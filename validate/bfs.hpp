// Sequential reference for breadth-first search: the level (Rodinia's "cost") of every node.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "validate/report.hpp"

namespace soac::validate {

// Node i's edges are edges[start[i] .. start[i] + degree[i]) (Rodinia's layout). Returns the
// number of edges on a shortest path from `source` to every node, -1 where none exists. A FIFO
// queue, each node entered once.
inline std::vector<std::int32_t> bfs_levels(std::span<const std::int32_t> start, std::span<const std::int32_t> degree,
                                            std::span<const std::int32_t> edges, std::int32_t source) {
  std::vector<std::int32_t> level(start.size(), -1);
  std::vector<std::int32_t> queue;
  queue.reserve(start.size());
  level[std::size_t(source)] = 0;
  queue.push_back(source);
  for (std::size_t head = 0; head < queue.size(); ++head) {
    const std::int32_t u = queue[head];
    const std::int64_t first = start[std::size_t(u)], last = first + degree[std::size_t(u)];
    for (std::int64_t e = first; e < last; ++e) {
      const std::int32_t v = edges[std::size_t(e)];
      if (level[std::size_t(v)] < 0) {
        level[std::size_t(v)] = level[std::size_t(u)] + 1;
        queue.push_back(v);
      }
    }
  }
  return level;
}

// Exact comparison of every node's cost.
inline report check_bfs_costs(std::span<const std::int32_t> expected, std::span<const std::int32_t> result) {
  report r;
  r.checked = static_cast<std::int64_t>(expected.size());
  if (result.size() != expected.size()) {
    r.mismatch("the result has " + std::to_string(result.size()) + " costs, the graph " +
               std::to_string(expected.size()) + " nodes");
    return r;
  }
  for (std::size_t i = 0; i < expected.size(); ++i)
    if (result[i] != expected[i])
      r.mismatch("node " + std::to_string(i) + ": cost " + std::to_string(result[i]) + ", expected " +
                 std::to_string(expected[i]));
  return r;
}

}  // namespace soac::validate
