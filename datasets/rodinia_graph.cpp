#include "datasets/rodinia_graph.hpp"

#include <algorithm>
#include <charconv>
#include <limits>

#include "core/error.hpp"
#include "datasets/binary_file.hpp"
#include "datasets/text_reader.hpp"

namespace soac::datasets {

namespace {

constexpr std::int64_t int32_max = std::numeric_limits<std::int32_t>::max();

// Appends integers and separators to a string without a stream (graph files run to 100s of MB).
class text_builder {
 public:
  explicit text_builder(std::size_t reserve) { text_.reserve(reserve); }
  text_builder& operator<<(std::int64_t v) {
    char digits[24];
    const auto r = std::to_chars(digits, digits + sizeof digits, v);
    text_.append(digits, r.ptr);
    return *this;
  }
  text_builder& operator<<(const char* s) {
    text_ += s;
    return *this;
  }
  const std::string& str() const { return text_; }

 private:
  std::string text_;
};

}  // namespace

rodinia_graph read_rodinia_graph(const std::filesystem::path& path, leniency& lenient) {
  text_reader in(path);
  rodinia_graph g;
  const std::int64_t n = in.scan_int("the node count", 1, int32_max);
  const auto count_line = std::to_string(in.line());
  // Everything after N: 2N numbers for the nodes, the source, E, then 2E for the edges. Counting
  // the numbers fscanf would read first bounds every allocation by the file's size and turns a
  // count that disagrees with the lines that follow into one clear error instead of a misread of
  // the next section (Rodinia's fscanf would leave the values it cannot read unset).
  const auto scannable = in.count_scannable_ints();
  const std::int64_t numbers = scannable.numbers;
  const std::string stop = scannable.stop.empty() ? std::string() : " before " + scannable.stop;
  if (numbers < 2 * n + 2)
    in.fail_at_token("the node count is " + std::to_string(n) + ", so " + std::to_string(2 * n + 2) +
                     " numbers should follow before the edges (a start and a degree per node, the source, the edge "
                     "count), but the file holds only " + std::to_string(numbers) + stop);
  g.start.resize(static_cast<std::size_t>(n));
  g.degree.resize(static_cast<std::size_t>(n));
  std::int64_t furthest_end = 0, furthest_node = 0;  // the node whose edges reach furthest
  text_reader::position furthest_at;
  for (std::int64_t i = 0; i < n; ++i) {
    in.skip_space();
    const auto at = in.here();
    const std::int64_t start = in.scan_int("a node's first edge (start)", 0, int32_max);
    const std::int64_t degree = in.scan_int("a node's edge count (degree)", 0, int32_max);
    g.start[std::size_t(i)] = static_cast<std::int32_t>(start);
    g.degree[std::size_t(i)] = static_cast<std::int32_t>(degree);
    if (start + degree > furthest_end) furthest_end = start + degree, furthest_node = i, furthest_at = at;
  }
  // The source's range is checked after the counts, which explain a misread source better.
  in.skip_space();
  const auto source_at = in.here();
  const std::int64_t source = in.scan_int("the source node", 0, int32_max);
  const std::int64_t e = in.scan_int("the edge count", 0, int32_max);
  const std::int64_t edge_numbers = numbers - 2 * n - 2;
  if (edge_numbers < 2 * e)
    in.fail_at_token("the edge count is " + std::to_string(e) + ", so " + std::to_string(2 * e) +
                     " numbers (a destination and a weight per edge) should follow, but only " + std::to_string(edge_numbers) +
                     " do" + stop + ": the node count (" + std::to_string(n) + ", line " + count_line +
                     ") or the edge count disagrees with the lines that follow");
  // With numbers to spare after the edges, a count that disagrees with the lines is the likely cause.
  const std::string hint = edge_numbers == 2 * e ? std::string()
                                                 : " (" + std::to_string(edge_numbers) + " numbers follow the edge count, not 2 x " +
                                                       std::to_string(e) + ": the node count (" + std::to_string(n) + ", line " +
                                                       count_line + ") or the edge count disagrees with the lines that follow?)";
  if (source >= n)
    in.fail_at(source_at, "the source node is " + std::to_string(source) + ", outside [0, " + std::to_string(n - 1) + "]" + hint);
  g.source = static_cast<std::int32_t>(source);
  if (furthest_end > e)
    in.fail_at(furthest_at, "node " + std::to_string(furthest_node) + "'s edges (start " +
                                std::to_string(g.start[std::size_t(furthest_node)]) + ", degree " +
                                std::to_string(g.degree[std::size_t(furthest_node)]) + ") reach edge " +
                                std::to_string(furthest_end) + ", beyond the edge count " + std::to_string(e) + hint);
  g.edges.resize(static_cast<std::size_t>(e));
  for (auto& dest : g.edges) {
    dest = static_cast<std::int32_t>(in.scan_int("an edge's destination node", 0, n - 1));
    // Rodinia reads the weight and ignores it: any integer will do.
    in.scan_int("an edge's weight", std::numeric_limits<std::int64_t>::min(), std::numeric_limits<std::int64_t>::max());
  }
  if (in.skip_space()) {
    const auto at = in.here();
    lenient.note(at.line, path.string() + ":" + std::to_string(at.line) + ":" + std::to_string(at.column) + ": what follows the " +
                              std::to_string(e) + " edges is not read, as Rodinia's reader stops after the last edge");
  }
  return g;
}

rodinia_graph read_rodinia_graph(const std::filesystem::path& path) {
  leniency lenient;
  return read_rodinia_graph(path, lenient);
}

void write_rodinia_graph(const std::filesystem::path& path, const rodinia_graph& g, std::span<const std::int32_t> weights) {
  if (!weights.empty() && weights.size() != g.edges.size())
    throw usage_error("write_rodinia_graph: " + std::to_string(weights.size()) + " weights for " +
                      std::to_string(g.edges.size()) + " edges");
  // Up to 11 characters per number, a separator each.
  text_builder out(std::size_t(12) * (2 * g.start.size() + 2 * g.edges.size() + 4));
  out << g.node_count() << "\n";
  for (std::size_t i = 0; i < g.start.size(); ++i) out << g.start[i] << " " << g.degree[i] << "\n";
  out << "\n" << g.source << "\n\n" << g.edge_count() << "\n";
  for (std::size_t k = 0; k < g.edges.size(); ++k) out << g.edges[k] << " " << (weights.empty() ? 1 : weights[k]) << "\n";
  write_file_atomically(path, out.str());
}

std::string rodinia_costs_text(std::span<const std::int32_t> costs) {
  text_builder out(costs.size() * 24);
  for (std::size_t i = 0; i < costs.size(); ++i) out << static_cast<std::int64_t>(i) << ") cost:" << costs[i] << "\n";
  return out.str();
}

std::vector<std::int32_t> read_rodinia_costs(const std::filesystem::path& path) {
  const std::string text = read_text_file(path);
  std::vector<std::int32_t> costs;
  for_each_line(text, true, [&](std::int64_t line_no, std::string_view line) {
    if (line.empty()) return;
    const auto fail = [&](std::size_t at, const std::string& what) {
      throw input_error(path.string() + ":" + std::to_string(line_no) + ":" + std::to_string(at + 1) + ": " + what +
                        " (Rodinia's result.txt holds a line \"<node>) cost:<cost>\" per node, nodes 0, 1, ... in order)");
    };
    std::int64_t node = 0, cost = 0;
    auto r = std::from_chars(line.data(), line.data() + line.size(), node);
    if (r.ec != std::errc{} || node != std::int64_t(costs.size()))
      fail(0, "expected node " + std::to_string(costs.size()) + ", found " + quoted(line.substr(0, 20)));
    constexpr std::string_view middle = ") cost:";
    std::size_t at = std::size_t(r.ptr - line.data());
    if (line.substr(at, middle.size()) != middle) fail(at, "expected \") cost:\" after the node");
    at += middle.size();
    r = std::from_chars(line.data() + at, line.data() + line.size(), cost);
    if (r.ec != std::errc{} || r.ptr != line.data() + line.size() || cost < -1 || cost > std::numeric_limits<std::int32_t>::max())
      fail(at, "expected the cost (-1 or a level), found " + quoted(line.substr(at)));
    costs.push_back(std::int32_t(cost));
  });
  if (costs.empty()) throw input_error(path.string() + ": holds no nodes (Rodinia's result.txt: a line \"<node>) cost:<cost>\" per node)");
  return costs;
}

}  // namespace soac::datasets
