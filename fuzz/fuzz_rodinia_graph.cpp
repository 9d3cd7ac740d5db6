// Rodinia's BFS graph files on any bytes; an accepted graph must write and read back equal.
#include <cstdint>

#include "datasets/rodinia_graph.hpp"
#include "fuzz/common.hpp"

using namespace soac;
using datasets::rodinia_graph;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  fuzz::check_round_trip(
      "graph", "graph.txt", fuzz::as_text(data, size),
      [](const std::filesystem::path& path) { return datasets::read_rodinia_graph(path); },
      [](const rodinia_graph& g, const std::filesystem::path& path) { return datasets::write_rodinia_graph(path, g), true; },
      [](const rodinia_graph& a, const rodinia_graph& b) {
        return a.start == b.start && a.degree == b.degree && a.edges == b.edges && a.source == b.source;
      });
  return 0;
}
