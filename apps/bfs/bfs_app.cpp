// BFS (Rodinia; write-construct report, section 5 and 9, appendix A): gen, run, validate and
// bench of the four variants in apps/bfs/bfs.hpp, on Rodinia's graph files or soac CSR bundles.
#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <limits>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "apps/app.hpp"
#include "apps/bfs/bfs.hpp"
#include "core/buffer.hpp"
#include "core/error.hpp"
#include "datasets/bundle.hpp"
#include "datasets/random.hpp"
#include "datasets/rodinia_graph.hpp"
#include "datasets/text_reader.hpp"
#include "validate/bfs.hpp"

namespace soac::apps {
namespace {

namespace fs = std::filesystem;
using datasets::bundle;
using datasets::rodinia_graph;
using i32 = std::int32_t;
using i64 = std::int64_t;
constexpr i64 int32_max = std::numeric_limits<i32>::max();

// --- generated graphs ---------------------------------------------------------------------------

// Each node draws min..max random neighbours within its component (distinct ones when `distinct`,
// else with repeats and self-loops, like Rodinia's graphgen); every drawn edge is stored in both
// directions (Rodinia's graphgen and the report's generator alike). Components split the nodes
// into that many equal ranges with no edges between them.
struct graph_spec {
  i64 nodes = 0, min_neighbours = 0, max_neighbours = 0, components = 1;
  bool distinct = false;
  i32 source = 0;
};

graph_spec spec_of(const nlohmann::json& p) {
  graph_spec s;
  s.nodes = int_param(p, "nodes", 1, int32_max);
  s.min_neighbours = int_param(p, "min_neighbours", 0, int32_max);
  s.max_neighbours = int_param(p, "max_neighbours", s.min_neighbours, int32_max);
  s.distinct = int_param(p, "distinct", 0, 1) == 1;
  s.components = int_param(p, "components", 1, s.nodes);
  s.source = static_cast<i32>(int_param(p, "source", 0, s.nodes - 1));
  // Every draw stores its edge both ways in int32 offsets: bounding the draws up front keeps gen
  // from looping through 2^62 of them before it finds the graph too big.
  const i64 most_draws = s.distinct ? std::min(s.max_neighbours, s.nodes) : s.max_neighbours;
  if (most_draws > 0 && s.nodes > int32_max / 2 / most_draws)
    throw usage_error("bfs: " + std::to_string(s.nodes) + " nodes drawing up to " + std::to_string(most_draws) +
                      " neighbours each may store more than 2^31 - 1 edges");
  return s;
}

// Streams of the counter-based generator.
enum : std::uint64_t { draws_stream = 1, permutation_stream, neighbour_stream, weight_stream };

// Calls visit(i, v) for every neighbour v that node i draws, in node order.
template <class Visit>
void for_each_draw(const graph_spec& s, std::uint64_t seed, Visit&& visit) {
  const std::uint64_t draws_key = datasets::stream_key(seed, draws_stream);
  const std::uint64_t neighbour_key = datasets::stream_key(seed, neighbour_stream);
  const std::uint64_t span = std::uint64_t(s.max_neighbours - s.min_neighbours) + 1;
  for (i64 i = 0; i < s.nodes; ++i) {
    // Component c holds nodes [c N / C, (c + 1) N / C).
    const i64 c = ((i + 1) * s.components + s.nodes - 1) / s.nodes - 1;
    const i64 first = c * s.nodes / s.components, size = (c + 1) * s.nodes / s.components - first;
    i64 draws = s.min_neighbours + i64(datasets::random_below(datasets::keyed_word(draws_key, std::uint64_t(i)), span));
    if (s.distinct) {
      draws = std::min(draws, size);
      const std::uint64_t key = datasets::random_word(seed, permutation_stream, std::uint64_t(i));
      const datasets::random_permutation pick(std::uint64_t(size), key);
      for (i64 j = 0; j < draws; ++j) visit(i, first + i64(pick(std::uint64_t(j))));
    } else {
      for (i64 j = 0; j < draws; ++j) {
        const std::uint64_t draw = std::uint64_t(i) * std::uint64_t(s.max_neighbours) + std::uint64_t(j);
        const std::uint64_t word = datasets::keyed_word(neighbour_key, draw);
        visit(i, first + i64(datasets::random_below(word, std::uint64_t(size))));
      }
    }
  }
}

rodinia_graph generate_graph(const graph_spec& s, std::uint64_t seed) {
  std::vector<i64> degree(std::size_t(s.nodes), 0);
  for_each_draw(s, seed, [&](i64 i, i64 v) { ++degree[std::size_t(i)], ++degree[std::size_t(v)]; });
  rodinia_graph g;
  g.source = s.source;
  g.start.resize(std::size_t(s.nodes));
  g.degree.resize(std::size_t(s.nodes));
  i64 edges = 0;
  for (i64 i = 0; i < s.nodes; ++i) {
    if (edges + degree[std::size_t(i)] > int32_max)
      throw usage_error("bfs gen: " + std::to_string(s.nodes) + " nodes drawing up to " + std::to_string(s.max_neighbours) +
                        " neighbours each store more than 2^31 - 1 edges");
    g.start[std::size_t(i)] = i32(edges);
    g.degree[std::size_t(i)] = i32(degree[std::size_t(i)]);
    edges += degree[std::size_t(i)];
  }
  g.edges.resize(std::size_t(edges));
  std::vector<i32> cursor(g.start);
  for_each_draw(s, seed, [&](i64 i, i64 v) {
    g.edges[std::size_t(cursor[std::size_t(i)]++)] = i32(v);
    g.edges[std::size_t(cursor[std::size_t(v)]++)] = i32(i);
  });
  return g;
}

// Rodinia's graphgen gives every edge a weight in [1, 10] (BFS ignores them).
std::vector<i32> random_weights(i64 edges, std::uint64_t seed) {
  std::vector<i32> w(static_cast<std::size_t>(edges));
  datasets::fill_random_int<i32>(w, 1, 10, seed, weight_stream);
  return w;
}

// --- soac bundles: CSR arrays -------------------------------------------------------------------

void add_graph(datasets::bundle_writer& out, const rodinia_graph& g) {
  std::vector<i64> offsets(g.start.size() + 1, 0);
  for (std::size_t i = 0; i < g.start.size(); ++i) offsets[i + 1] = offsets[i] + g.degree[i];
  out.add<i64>("offsets", offsets);
  out.add<i32>("edges", g.edges);
}

rodinia_graph graph_from_bundle(const bundle& in) {
  const auto offsets = in.read<i64>("offsets");
  rodinia_graph g;
  g.edges = in.read<i32>("edges");
  const std::string where = in.path_of("offsets").string();
  const i64 n = i64(offsets.size()) - 1;
  if (n < 1 || n > int32_max)
    throw input_error(where + ": a graph of N nodes has N + 1 offsets, 1 <= N < 2^31; found " + std::to_string(offsets.size()));
  if (i64(g.edges.size()) > int32_max) throw input_error(in.path_of("edges").string() + ": more than 2^31 - 1 edges");
  if (offsets.front() != 0) throw input_error(where + ": the first offset must be 0, not " + std::to_string(offsets.front()));
  if (offsets.back() != i64(g.edges.size()))
    throw input_error(where + ": the last offset is " + std::to_string(offsets.back()) + " but there are " +
                      std::to_string(g.edges.size()) + " edges");
  g.start.resize(std::size_t(n));
  g.degree.resize(std::size_t(n));
  for (i64 i = 0; i < n; ++i) {
    if (offsets[std::size_t(i + 1)] < offsets[std::size_t(i)])
      throw input_error(where + ": offsets decrease at node " + std::to_string(i));
    g.start[std::size_t(i)] = i32(offsets[std::size_t(i)]);
    g.degree[std::size_t(i)] = i32(offsets[std::size_t(i + 1)] - offsets[std::size_t(i)]);
  }
  for (std::size_t e = 0; e < g.edges.size(); ++e)
    if (g.edges[e] < 0 || g.edges[e] >= n)
      throw input_error(in.path_of("edges").string() + ": edge " + std::to_string(e) + " leads to node " +
                        std::to_string(g.edges[e]) + ", outside [0, " + std::to_string(n - 1) + "]");
  // The source: the manifest's, or node 0 (Rodinia's) where it names none.
  const auto& p = in.params();
  if (p.contains("source") && (!p["source"].is_number_integer() || p["source"].get<i64>() < 0 || p["source"].get<i64>() >= n))
    throw input_error((in.dir() / "manifest.json").string() + ": params.source must be a node in [0, " +
                      std::to_string(n - 1) + "]");
  g.source = p.contains("source") ? i32(p["source"].get<i64>()) : 0;
  return g;
}

constexpr const char* rodinia_bfs = "Rodinia's bfs";

// The graph of a run's inputs: a soac bundle, or (--format rodinia) one Rodinia graph file.
// `params` gets what the result's manifest should record about it.
// What it reads leniently goes into `lenient` (refused when it is strict).
rodinia_graph load_graph(const std::vector<fs::path>& inputs, const std::string& format, nlohmann::json& params,
                         datasets::leniency& lenient) {
  if (format == "rodinia") {
    if (inputs.size() != 1) throw usage_error("bfs: --format rodinia reads one graph file (-i FILE)");
    params = {{"file", inputs.front().string()}, {"format", "rodinia"}};
    return datasets::read_rodinia_graph(inputs.front(), lenient);
  }
  const auto in = find_app("bfs").open_dataset(inputs.front());
  params = in.params();
  return graph_from_bundle(in);
}

i32 source_of(const nlohmann::json& settings, const rodinia_graph& g) {
  const i64 s = int_param(settings, "source", -1, int32_max);
  if (s >= g.node_count())
    throw usage_error("bfs: source " + std::to_string(s) + " is outside the graph's nodes [0, " +
                      std::to_string(g.node_count() - 1) + "]");
  return s < 0 ? g.source : i32(s);
}

// The levels a BFS found (the largest cost + 1) and the nodes it reached.
std::pair<i64, i64> levels_and_reached(const std::vector<i32>& cost) {
  i64 levels = 0, reached = 0;
  for (const auto c : cost)
    if (c >= 0) levels = std::max<i64>(levels, c + 1), ++reached;
  return {levels, reached};
}

class bfs_app final : public app {
 public:
  bfs_app() : app(describe()) {}

  static app_info describe() {
    app_info a = app_info::named("bfs", "breadth-first search (Rodinia bfs; report section 5): Rodinia's structure, the "
                                        "report's padded and segmented ports, and a direction-optimising frontier queue");
    {
      auto p = [](i64 nodes, i64 lo, i64 hi, int distinct, i64 components) {
        return nlohmann::json{{"nodes", nodes}, {"min_neighbours", lo}, {"max_neighbours", hi},
                              {"distinct", distinct}, {"components", components}, {"source", 0}};
      };
      const std::string rodinia_like =
          " nodes drawing 2-4 random neighbours, stored both ways (Rodinia's graphgen: 6 edges per node on average)";
      a.presets = {{"4096", "4,096" + rodinia_like, p(4096, 2, 4, 0, 1)},
                   {"65536", "65,536" + rodinia_like, p(65536, 2, 4, 0, 1)},
                   {"1M", "1,000,000" + rodinia_like + ", like Rodinia's graph1MW_6", p(1'000'000, 2, 4, 0, 1)},
                   {"H100K", "the report's high_edge_variance_100K: 100,000 nodes drawing 5-200 distinct neighbours",
                    p(100'000, 5, 200, 1, 1)},
                   {"E1K", "the report's few_nodes_many_edges: 1,000 nodes drawing 1,000 distinct neighbours (all of them)",
                    p(1000, 1000, 1000, 1, 1)},
                   {"HH5K", "the report's higher_edge_variance_5K: 5,000 nodes drawing 5-5,000 distinct neighbours",
                    p(5000, 5, 5000, 1, 1)},
                   {"disconnected", "65,536 nodes in 4 components (Rodinia-like within each): 3/4 unreachable",
                    p(65536, 2, 4, 0, 4)},
                   {"tiny", "64 nodes drawing 0-3 neighbours in 2 components (tests)", p(64, 0, 3, 0, 2)}};
    }
    a.variants = {"auto", "rodinia", "padded", "segmented"};
    a.variant_settings = "auto,alpha=X,beta=X,tpn=N,only=S,round=N,blocks=N: bottom-up levels when the frontier's edges exceed "
                         "the unexplored edges / alpha (14), back to top-down when the frontier holds fewer than N / beta nodes "
                         "(24); top-down levels take a thread per node when the frontier's largest degree is <= tpn (32), else a "
                         "thread per edge; only=nodes|edges|bottom-up: every level one way; round: levels per kernel launch and "
                         "host wait (1024, the most); blocks: the kernel's blocks per SM (2, at most what fits)";
    a.input_formats = {{"rodinia", "Rodinia's BFS graph text file (e.g. graph1MW_6.txt): -i FILE; gen -o FILE writes one"}};
    a.expected_formats = {{"rodinia", "Rodinia bfs's result.txt (\"<node>) cost:<cost>\" per node); equal in every node"}};
    a.run_settings = {{"source", -1,
                       "the source node; -1: the dataset's (Rodinia's OpenMP bfs starts at its file's, its CUDA bfs at 0 whatever "
                       "the file says; generated graphs have source 0)"},
                      strict_setting(rodinia_bfs)};
    a.bench_presets = {"4096", "65536", "1M", "H100K", "E1K", "HH5K", "disconnected"};
    return a;
  }

  void check_params(const nlohmann::json& params) const override { spec_of(params); }
  // What a run reads: the CSR arrays (N + 1 offsets for the manifest's N nodes, where it gives
  // N) and the source; graph_from_bundle checks the offsets and edges as it reads them.
  void check_dataset(const bundle& in) const override {
    const i64 offsets = datasets::length_of(in, "offsets");
    datasets::length_of(in, "edges");
    if (in.params().contains("nodes") && in.params()["nodes"] != offsets - 1)
      throw input_error(in.path_of("offsets").string() + ": " + std::to_string(offsets) + " offsets, but the manifest says nodes = " +
                        in.params()["nodes"].dump() + " (N nodes have N + 1 offsets)");
  }

  void generate(const gen_request& r) const override {
    // Degrees, starts and cursors per node (the edges are bounded by spec_of).
    require_host_memory(checked_bytes(std::uint64_t(spec_of(r.params).nodes), sizeof(i64) + 3 * sizeof(i32), "bfs: nodes"),
                        "bfs: the nodes' degrees");
    const auto g = generate_graph(spec_of(r.params), r.seed);
    if (r.format == "rodinia") {
      datasets::write_rodinia_graph(r.output, g, random_weights(g.edge_count(), r.seed));
      return;
    }
    datasets::bundle_writer out(r.output, "dataset", name());
    add_graph(out, g);
    finish_dataset(out, r);
  }

  std::string run(context& ctx, const run_request& r) const override {
    nlohmann::json params;
    auto lenient = leniency_of(r.settings, rodinia_bfs);
    const auto g = load_graph(r.inputs, r.format, params, lenient);
    report_leniency(lenient);
    const i32 source = source_of(r.settings, g);
    const auto o = bfs::parse_variant(r.variant);
    const auto in_edges = o.which == bfs::variant::automatic ? bfs::transpose_unless_symmetric(g) : std::nullopt;
    const auto t0 = std::chrono::steady_clock::now();
    bfs::runner graph(ctx, g, in_edges);
    ctx.synchronize();
    const double copy_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    buffer<i32> cost(ctx, std::size_t(g.node_count()));
    bfs::trace tr;
    // One warm-up (module load, first allocations), then one timed traversal from the host's first
    // launch (the loop waits for the device every level anyway).
    const bench::settings once{.warmup = 1, .runs = 1, .progress = false, .warmup_ms = 0, .launch_latency = true};
    const auto t = bench::time(ctx, once, [&] { tr = graph.traverse(source, o, cost.view()); });
    const auto costs = cost.to_vector();
    const auto [levels, reached] = levels_and_reached(costs);

    datasets::bundle_writer out(r.output, "result", name());
    out.add<i32>("cost", costs);
    out.add_file("result.txt", datasets::rodinia_costs_text(costs));
    out.params() = params;
    out.params()["source"] = source;
    const std::string variant = r.variant.empty() ? "auto" : r.variant;
    out.info() = {{"backend", std::string(to_string(ctx.which()))}, {"device", ctx.props().name},
                  {"variant", variant},          {"levels", levels},
                  {"reached", reached},          {"iterations", tr.steps.size()},
                  {"plan", tr.summary()},        {"traversal_ms", t.median_ms},
                  {"graph_to_device_ms", copy_ms}};
    out.finish();
    std::ostringstream s;
    s << "bfs: " << g.node_count() << " nodes, " << g.edge_count() << " edges, source " << source << " on "
      << ctx.describe() << "\n  " << levels << " levels, " << reached << " nodes reached\n  " << variant << ": "
      << t.median_ms << " ms traversal (" << tr.summary() << "); graph to the device " << copy_ms
      << " ms (allocation included)";
    if (r.verbose) s << "\n" << tr.per_level();
    return s.str();
  }

  validate_report validate(const validate_request& r) const override {
    nlohmann::json params;
    datasets::leniency lenient;
    const auto g = load_graph(r.inputs, r.format, params, lenient);
    const auto out = bundle::open(r.result, "result", name());
    const auto& p = out.params();
    if (!p.contains("source") || !p["source"].is_number_integer() || p["source"].get<i64>() < 0 ||
        p["source"].get<i64>() >= g.node_count())
      throw input_error((out.dir() / "manifest.json").string() + ": params.source must be a node of the graph");
    const auto cost = out.read<i32>("cost");
    const auto expected = validate::bfs_levels(g.start, g.degree, g.edges, i32(p["source"].get<i64>()));
    auto rep = validate::check_bfs_costs(expected, cost);
    // Rodinia's text result must say the same as the array.
    if (out.has_file("result.txt") && datasets::read_text_file(out.file_path("result.txt")) != datasets::rodinia_costs_text(cost))
      rep.mismatch("result.txt differs from cost.npy");
    return {rep.ok(), rep.describe("node costs")};
  }


  // Rodinia's levels are exact: every node's cost must be the same.
  validate_report compare(const compare_request& r) const override {
    const auto out = bundle::open(r.result, "result", name());
    const auto cost = out.read<i32>("cost");
    const auto expected = datasets::read_rodinia_costs(r.expected);
    if (expected.size() != cost.size())
      return {false, r.expected.string() + " holds " + std::to_string(expected.size()) + " nodes, the result " + std::to_string(cost.size())};
    std::int64_t differ = 0, first = -1, worst = -1;
    for (std::size_t i = 0; i < cost.size(); ++i) {
      if (cost[i] == expected[i]) continue;
      ++differ;
      if (first < 0) first = i64(i);
      if (worst < 0 || std::abs(i64(cost[i]) - expected[i]) > std::abs(i64(cost[std::size_t(worst)]) - expected[std::size_t(worst)]))
        worst = i64(i);
    }
    std::ostringstream s;
    if (differ == 0) {
      s << "all " << cost.size() << " node costs equal Rodinia's";
    } else {
      const auto show = [&](i64 n) { return "node " + std::to_string(n) + ": " + std::to_string(cost[std::size_t(n)]) + " here, " +
                                            std::to_string(expected[std::size_t(n)]) + " in " + r.expected.filename().string(); };
      s << differ << " of " << cost.size() << " node costs differ; the first, " << show(first) << "; the largest difference, " << show(worst);
    }
    return {differ == 0, s.str()};
  }

  void bench(context& ctx, const bench_request& r, bench::suite& suite) const override {
    // --set variants="auto,alpha=10;auto,tpn=64": more variants timed beside the four.
    auto overrides = r.overrides;
    std::vector<std::string> extra;
    if (auto it = overrides.find("variants"); it != overrides.end()) {
      std::string_view rest = it->second;
      while (!rest.empty()) {
        const auto semi = rest.find(';');
        if (semi != 0) extra.emplace_back(rest.substr(0, semi));
        rest = semi == std::string_view::npos ? std::string_view{} : rest.substr(semi + 1);
      }
      for (const auto& v : extra) bfs::parse_variant(v);  // a bad one fails before any run
      overrides.erase(it);
    }
    if (!r.inputs.empty()) {
      suite.expect_cases(int(r.inputs.size()) * 2);
      for (const auto& file : r.inputs) {
        nlohmann::json params;
        datasets::leniency lenient;
        bench_graph(ctx, suite, file.filename().string(), load_graph({file}, r.format, params, lenient), extra);
      }
      return;
    }
    const auto names = r.presets.empty() ? bench_presets() : r.presets;
    std::vector<graph_spec> specs;
    for (const auto& n : names) specs.push_back(spec_of(resolve_params(n, overrides)));
    suite.expect_cases(int(names.size()) * 2);
    for (std::size_t k = 0; k < names.size(); ++k) bench_graph(ctx, suite, names[k], generate_graph(specs[k], r.seed), extra);
  }

  // Every variant's traversal of one graph (rodinia the baseline), each result checked against
  // the sequential reference, then the graph's host-to-device copy.
  static void bench_graph(context& ctx, bench::suite& suite, const std::string& name, const rodinia_graph& g,
                          const std::vector<std::string>& extra) {
    const auto expected = validate::bfs_levels(g.start, g.degree, g.edges, g.source);
    const auto [levels, reached] = levels_and_reached(expected);
    const auto in_edges = bfs::transpose_unless_symmetric(g);
    bfs::runner graph(ctx, g, in_edges);
    buffer<i32> cost(ctx, std::size_t(g.node_count()));
    std::ostringstream title;
    title << name << ": traversal (" << g.node_count() << " nodes, " << g.edge_count() << " edges, " << levels
          << " levels, " << reached << " reached)";
    // The floor: the graph read once and every cost written once.
    suite.begin_case(title.str(),
                     {{"graph", name}, {"nodes", g.node_count()}, {"edges", g.edge_count()}, {"levels", levels},
                      {"reached", reached}, {"source", g.source}, {"symmetric", !in_edges.has_value()}},
                     double(g.node_count()) * 12 + double(g.edge_count()) * 4);
    std::vector<std::string> variants = {"rodinia", "padded", "segmented", "auto"};
    variants.insert(variants.end(), extra.begin(), extra.end());
    for (const auto& v : variants) {
      const auto o = bfs::parse_variant(v);
      bfs::trace tr;
      suite.measure(v, v == "rodinia" ? bench::role::baseline : bench::role::soac,
                    [&] { tr = graph.traverse(g.source, o, cost.view()); });
      const auto rep = validate::check_bfs_costs(expected, cost.to_vector());
      suite.annotate(tr.summary() + (rep.ok() ? "" : "; WRONG RESULT: " + rep.describe("node costs")));
    }
    suite.begin_case(name + ": graph host-to-device copy (pageable memory, as soac run)",
                     {{"graph", name}, {"bytes", graph.bytes()}}, double(graph.bytes()));
    suite.measure("copy", bench::role::soac, [&] { graph.upload(g, in_edges); });
  }
};

}  // namespace
}  // namespace soac::apps

SOAC_REGISTER_APP(soac::apps::bfs_app)
