// Rodinia's BFS graph files on any bytes; an accepted graph must write and read back equal.
#include <cstdint>

#include "datasets/rodinia_graph.hpp"
#include "fuzz/common.hpp"

using namespace soac;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const auto dir = fuzz::fresh_dir("graph");
  fuzz::write_bytes_or_abort(dir / "graph.txt", fuzz::as_text(data, size));
  fuzz::accepted([&] {
    const auto g = datasets::read_rodinia_graph(dir / "graph.txt");
    datasets::write_rodinia_graph(dir / "again.txt", g);
    const auto back = datasets::read_rodinia_graph(dir / "again.txt");
    if (back.start != g.start || back.degree != g.degree || back.edges != g.edges || back.source != g.source) std::abort();
  });
  return 0;
}
