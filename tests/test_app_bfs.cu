// The bfs app on both backends: every variant (and auto held to each of its level strategies) on
// the graph shapes that break BFS codes, against the sequential reference; gen/run/validate in
// soac bundles and Rodinia's files; bad input.
#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <numeric>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "apps/bfs/bfs.hpp"
#include "datasets/bundle.hpp"
#include "datasets/rodinia_graph.hpp"
#include "tests/app_fixture.hpp"
#include "validate/bfs.hpp"

namespace {

using namespace soac;
using soac::datasets::rodinia_graph;
using soac::testing::error_of;
namespace bfs = soac::apps::bfs;
using i32 = std::int32_t;

// A graph from adjacency lists (edge lists stored one after another).
rodinia_graph from_lists(const std::vector<std::vector<i32>>& lists, i32 source = 0) {
  rodinia_graph g;
  g.source = source;
  for (const auto& l : lists) {
    g.start.push_back(i32(g.edges.size()));
    g.degree.push_back(i32(l.size()));
    g.edges.insert(g.edges.end(), l.begin(), l.end());
  }
  return g;
}

// Undirected: every pair stored in both directions.
rodinia_graph undirected(i32 nodes, const std::vector<std::pair<i32, i32>>& pairs, i32 source = 0) {
  std::vector<std::vector<i32>> lists(static_cast<std::size_t>(nodes));
  for (auto [a, b] : pairs) {
    lists[std::size_t(a)].push_back(b);
    lists[std::size_t(b)].push_back(a);
  }
  return from_lists(lists, source);
}

// Every variant, auto held to each of its level strategies, auto in rounds of one and three
// levels (the hand-over between kernel launches), and auto switching direction every level
// (alpha huge: bottom-up after every top-down level; beta 1: top-down after every bottom-up one;
// tpn 2: thread per edge wherever a frontier node has more than 2 edges), which builds the
// bitmaps from the costs and the queue from the bitmap again and again.
bool any_auto_kind(bfs::level_kind k) {
  return k == bfs::level_kind::thread_per_node || k == bfs::level_kind::thread_per_edge || k == bfs::level_kind::bottom_up;
}
const std::string alternating = "auto,alpha=1e9,beta=1,tpn=2,round=3";
struct variant_case {
  std::string text;
  bool (*allowed)(bfs::level_kind);
};
const variant_case variants[] = {
    {"rodinia", [](bfs::level_kind k) { return k == bfs::level_kind::all_nodes; }},
    {"padded", [](bfs::level_kind k) { return k == bfs::level_kind::padded; }},
    {"segmented", [](bfs::level_kind k) { return k == bfs::level_kind::segmented; }},
    {"auto", any_auto_kind},
    {"auto,only=nodes", [](bfs::level_kind k) { return k == bfs::level_kind::thread_per_node; }},
    {"auto,only=edges", [](bfs::level_kind k) { return k == bfs::level_kind::thread_per_edge; }},
    {"auto,only=bottom-up", [](bfs::level_kind k) { return k == bfs::level_kind::bottom_up; }},
    {"auto,round=1", any_auto_kind},
    {alternating, any_auto_kind},
};

// auto's trace against the reference costs: one step per level while the frontier has a node
// with edges and some node is still unfound, each with the frontier's queued nodes (those with
// edges), their edges (or all nodes, bottom-up) and largest degree, as the device counted them.
void expect_auto_trace(const rodinia_graph& g, const std::vector<i32>& cost, const bfs::trace& t,
                       const std::string& what) {
  const std::int64_t n = std::int64_t(cost.size());
  std::int64_t found = 0;
  for (std::size_t level = 0;; ++level) {
    std::int64_t queued = 0, edges = 0, largest = 0;
    for (std::size_t v = 0; v < cost.size(); ++v) {
      if (cost[v] != i32(level)) continue;
      ++found;
      if (g.degree[v] == 0) continue;
      ++queued;
      edges += g.degree[v];
      largest = std::max<std::int64_t>(largest, g.degree[v]);
    }
    if (queued == 0 || found == n) {
      EXPECT_EQ(t.steps.size(), level) << what << ": the walk runs levels 0.." << level << " exclusive\n" << t.per_level();
      return;
    }
    if (level >= t.steps.size()) {
      ADD_FAILURE() << what << ": the trace ends at level " << level << "\n" << t.per_level();
      return;
    }
    const auto& step = t.steps[level];
    EXPECT_EQ(step.frontier, queued) << what << ", level " << level;
    EXPECT_EQ(step.work, step.kind == bfs::level_kind::bottom_up ? n : edges) << what << ", level " << level;
    EXPECT_EQ(step.largest_degree, largest) << what << ", level " << level;
  }
}

class Bfs : public soac::testing::app_test {
 protected:
  // Every variant from every source, each cost array exactly the reference's; returns the
  // reference from the last source.
  std::vector<i32> check_all(const rodinia_graph& g, std::vector<i32> sources = {}) {
    if (sources.empty()) sources = {g.source};
    const auto in_edges = bfs::transpose_unless_symmetric(g);
    bfs::runner graph(ctx(), g, in_edges);
    buffer<i32> cost(ctx(), g.start.size());
    std::vector<i32> expected;
    for (const i32 s : sources) {
      expected = validate::bfs_levels(g.start, g.degree, g.edges, s);
      for (const auto& v : variants) {
        const auto t = graph.traverse(s, bfs::parse_variant(v.text), cost.view());
        EXPECT_EQ(cost.to_vector(), expected) << v.text << " from " << s;
        // auto runs no level when the source has no edges or is the only node; the others always
        // look once.
        if (!v.text.starts_with("auto")) EXPECT_FALSE(t.steps.empty()) << v.text;
        if (g.degree[std::size_t(s)] > 0 && g.start.size() > 1) EXPECT_FALSE(t.steps.empty()) << v.text;
        for (const auto& step : t.steps) EXPECT_TRUE(v.allowed(step.kind)) << v.text << ": " << t.per_level();
        if (v.text.starts_with("auto")) expect_auto_trace(g, expected, t, v.text + " from " + std::to_string(s));
      }
    }
    return expected;
  }
};

TEST_P(Bfs, SingleNode) {
  EXPECT_EQ(check_all(from_lists({{}})), (std::vector<i32>{0}));
  EXPECT_EQ(check_all(from_lists({{0, 0}})), (std::vector<i32>{0}));  // a self-loop, twice
}

TEST_P(Bfs, DisconnectedGraph) {
  // Two triangles and a lone node; from each side the other stays at -1.
  const auto g = undirected(7, {{0, 1}, {1, 2}, {2, 0}, {3, 4}, {4, 5}, {5, 3}});
  EXPECT_EQ(check_all(g, {0, 4}), (std::vector<i32>{-1, -1, -1, 1, 0, 1, -1}));
  EXPECT_EQ(check_all(g, {6}), (std::vector<i32>{-1, -1, -1, -1, -1, -1, 0}));
}

TEST_P(Bfs, NodesWithoutEdges) {
  // Node 2 is reached but has no edges of its own (directed); node 4 has none at all; the source
  // of the second run has none either.
  const auto g = from_lists({{1, 2}, {3}, {}, {0}, {}});
  EXPECT_EQ(check_all(g, {0}), (std::vector<i32>{0, 1, 1, 2, -1}));
  EXPECT_EQ(check_all(g, {2}), (std::vector<i32>{-1, -1, 0, -1, -1}));
}

TEST_P(Bfs, SelfLoopsAndDuplicateEdges) {
  const auto g = from_lists({{0, 1, 1, 1, 0}, {1, 2, 2, 0}, {2, 2, 3, 1, 3}, {3, 2, 2}});
  EXPECT_EQ(check_all(g, {0, 3}), (std::vector<i32>{3, 2, 1, 0}));
}

TEST_P(Bfs, PathGraphHasAsManyLevelsAsNodes) {
  // Hundreds of levels, each a few launches per variant; racecheck takes minutes over 300.
  const i32 n = soac::testing::under_sanitizer() ? 40 : 300;
  std::vector<std::pair<i32, i32>> pairs;
  for (i32 i = 0; i + 1 < n; ++i) pairs.push_back({i, i + 1});
  std::vector<i32> expected(n);
  std::iota(expected.begin(), expected.end(), 0);
  EXPECT_EQ(check_all(undirected(n, pairs), {n / 2, 0}), expected);
  // Directed one way: from the far end nothing else is reached, and auto reads the transpose.
  std::vector<std::vector<i32>> forward(static_cast<std::size_t>(n));
  for (i32 i = 0; i + 1 < n; ++i) forward[std::size_t(i)] = {i + 1};
  const auto directed = from_lists(forward);
  ASSERT_TRUE(bfs::transpose_unless_symmetric(directed).has_value());
  EXPECT_EQ(check_all(directed, {0}), expected);
  std::vector<i32> only_last(n, -1);
  only_last.back() = 0;
  EXPECT_EQ(check_all(directed, {n - 1}), only_last);
}

TEST_P(Bfs, Star) {
  constexpr i32 leaves = 2000;
  std::vector<std::pair<i32, i32>> pairs;
  for (i32 i = 1; i <= leaves; ++i) pairs.push_back({0, i});
  const auto g = undirected(leaves + 1, pairs);
  std::vector<i32> from_leaf(leaves + 1, 2);
  from_leaf[0] = 1;
  from_leaf[7] = 0;
  EXPECT_EQ(check_all(g, {0, 7}), from_leaf);
}

TEST_P(Bfs, EveryLevelKindAndEveryHandOverInOneTraversal) {
  // A caterpillar: a path whose every sixth node has 4 leaves. The alternating rule runs
  // bottom-up on even levels and top-down on odd ones, a thread per node where the frontier's
  // nodes have at most 2 edges (path nodes) and a thread per edge where one has 6.
  std::vector<std::pair<i32, i32>> pairs;
  constexpr i32 path = 60;
  i32 next_leaf = path;
  for (i32 i = 0; i < path; ++i) {
    if (i + 1 < path) pairs.push_back({i, i + 1});
    if (i % 6 == 3)
      for (int k = 0; k < 4; ++k) pairs.push_back({i, next_leaf++});
  }
  const auto g = undirected(next_leaf, pairs);
  check_all(g, {0, 9});
  bfs::runner graph(ctx(), g, std::nullopt);
  buffer<i32> cost(ctx(), g.start.size());
  const auto t = graph.traverse(0, bfs::parse_variant(alternating), cost.view());
  EXPECT_EQ(cost.to_vector(), validate::bfs_levels(g.start, g.degree, g.edges, 0));
  std::map<bfs::level_kind, int> kinds;
  int to_bottom_up = 0, to_top_down = 0;
  for (std::size_t l = 0; l < t.steps.size(); ++l) {
    ++kinds[t.steps[l].kind];
    EXPECT_EQ(t.steps[l].kind == bfs::level_kind::bottom_up, l % 2 == 0) << t.per_level();
    if (l == 0) continue;
    const bool was_bottom_up = t.steps[l - 1].kind == bfs::level_kind::bottom_up;
    const bool is_bottom_up = t.steps[l].kind == bfs::level_kind::bottom_up;
    to_bottom_up += !was_bottom_up && is_bottom_up;
    to_top_down += was_bottom_up && !is_bottom_up;
  }
  EXPECT_GE(kinds[bfs::level_kind::thread_per_node], 10) << t.per_level();
  EXPECT_GE(kinds[bfs::level_kind::thread_per_edge], 5) << t.per_level();
  EXPECT_GE(to_bottom_up, 20);
  EXPECT_GE(to_top_down, 20);
}

TEST_P(Bfs, LongPathRunsInSeveralRounds) {
  // 2,500 levels: three rounds of at most 1,024 levels (auto_tuning::max_levels_per_round).
  constexpr i32 n = 2500;
  static_assert(n > 2 * bfs::auto_tuning::max_levels_per_round);
  std::vector<std::pair<i32, i32>> pairs;
  for (i32 i = 0; i + 1 < n; ++i) pairs.push_back({i, i + 1});
  const auto g = undirected(n, pairs);
  bfs::runner graph(ctx(), g, std::nullopt);
  buffer<i32> cost(ctx(), g.start.size());
  std::vector<i32> expected(n);
  std::iota(expected.begin(), expected.end(), 0);
  for (const std::string v : {"auto", "auto,only=bottom-up"}) {
    const auto t = graph.traverse(0, bfs::parse_variant(v), cost.view());
    EXPECT_EQ(cost.to_vector(), expected) << v;
    expect_auto_trace(g, expected, t, v);
  }
}

TEST_P(Bfs, DirectedGraphWithSharedAndUnorderedEdgeRanges) {
  // Rodinia's layout allows ranges in any order, overlapping, with edges no node uses.
  rodinia_graph g;
  g.edges = {1, 2, 3, 4, 0, 5, 5, 3};
  g.start = {0, 4, 1, 6, 2, 7};
  g.degree = {2, 2, 2, 0, 1, 1};
  g.source = 0;
  ASSERT_TRUE(bfs::transpose_unless_symmetric(g).has_value());
  EXPECT_EQ(check_all(g, {0, 5, 1}), validate::bfs_levels(g.start, g.degree, g.edges, 1));
}

TEST_P(Bfs, GeneratedGraphsEveryVariant) {
  for (const std::string preset : {"tiny", "4096", "disconnected"})
    for (const auto& v : variants) round_trip("bfs", preset, v.text);
  // The irregular shapes, smaller: H100K's degree spread on 3,000 nodes, HH5K's on 600.
  for (const auto& v : variants) {
    round_trip("bfs", "H100K", v.text, {{"nodes", "3000"}});
    round_trip("bfs", "HH5K", v.text, {{"nodes", "600"}, {"max_neighbours", "600"}});
    round_trip("bfs", "E1K", v.text, {{"nodes", "300"}, {"min_neighbours", "300"}, {"max_neighbours", "300"}});
  }
}

TEST_P(Bfs, RodiniaFilesInAndOut) {
  // The same generated graph as a bundle and as Rodinia's file gives the same result.txt, and
  // a run from another source is recorded so that validate uses it.
  const auto bundle = gen("bfs", "4096", "g");
  const auto file = gen("bfs", "4096", "g.txt", {}, "rodinia");
  run("bfs", {bundle}, "rodinia", {}, "", path("from-bundle"));
  run("bfs", {file}, "", {}, "rodinia", path("from-file"));
  EXPECT_TRUE(validate("bfs", {file}, path("from-file"), "rodinia").ok);
  EXPECT_TRUE(validate("bfs", {bundle}, path("from-file")).ok);
  auto text = [](const std::filesystem::path& p) {
    std::ifstream in(p / "result.txt");
    return std::string(std::istreambuf_iterator<char>(in), {});
  };
  EXPECT_EQ(text(path("from-bundle")), text(path("from-file")));
  EXPECT_EQ(text(path("from-file")).substr(0, 10), "0) cost:0\n");
  run("bfs", {file}, "padded", {{"source", "17"}}, "rodinia", path("from-17"));
  EXPECT_TRUE(validate("bfs", {file}, path("from-17"), "rodinia").ok);
  EXPECT_NE(text(path("from-17")).substr(0, 10), "0) cost:0\n");
}

// soac compare against Rodinia's result.txt: every cost equal, else the first and the largest
// difference named; a file of another form is an input error.
TEST_P(Bfs, CompareWithRodiniasResultFile) {
  const auto file = gen("bfs", "4096", "g.txt", {}, "rodinia");
  run("bfs", {file}, "", {}, "rodinia", path("out"));
  const auto rodinia = path("rodinia-result.txt");
  auto cost = datasets::bundle::open(path("out")).read<i32>("cost");
  std::ofstream(rodinia, std::ios::binary) << datasets::rodinia_costs_text(cost);
  const auto same = compare("bfs", path("out"), rodinia);
  EXPECT_TRUE(same.ok) << same.summary;
  EXPECT_NE(same.summary.find("all 4096 node costs equal Rodinia's"), std::string::npos) << same.summary;
  cost[9] += 1;
  cost[100] = -1;
  std::ofstream(rodinia, std::ios::binary) << datasets::rodinia_costs_text(cost);
  const auto differ = compare("bfs", path("out"), rodinia);
  EXPECT_FALSE(differ.ok);
  EXPECT_NE(differ.summary.find("2 of 4096 node costs differ; the first, node 9"), std::string::npos) << differ.summary;
  std::ofstream(rodinia, std::ios::binary) << "0) cost:0\nnode 1 cost 1\n";
  EXPECT_NE(error_of<input_error>([&] { compare("bfs", path("out"), rodinia); }).find("rodinia-result.txt:2:1: expected node 1"),
            std::string::npos);
}

TEST_P(Bfs, ValidateCatchesAWrongCostAndADisagreeingTextFile) {
  const auto data = gen("bfs", "tiny", "data");
  run("bfs", {data}, "", {}, "", path("good"));
  const auto good = datasets::bundle::open(path("good"), "result", "bfs");
  auto cost = good.read<i32>("cost");
  // One cost off by one: INVALID, naming the node.
  cost[5] += 1;
  {
    datasets::bundle_writer out(path("bad-cost"), "result", "bfs");
    out.add<i32>("cost", cost);
    out.params() = good.params();
    out.finish();
  }
  const auto report = validate("bfs", {data}, path("bad-cost"));
  EXPECT_FALSE(report.ok);
  EXPECT_NE(report.summary.find("node 5: cost"), std::string::npos) << report.summary;
  // The right costs with a result.txt that says otherwise: INVALID too.
  cost[5] -= 1;
  cost[6] += 1;
  {
    datasets::bundle_writer out(path("bad-text"), "result", "bfs");
    out.add<i32>("cost", good.read<i32>("cost"));
    out.add_file("result.txt", datasets::rodinia_costs_text(cost));
    out.params() = good.params();
    out.finish();
  }
  EXPECT_FALSE(validate("bfs", {data}, path("bad-text")).ok);
}

TEST_P(Bfs, BadInputIsAClearError) {
  const auto data = gen("bfs", "tiny", "data");
  // A source outside the graph, and unknown or malformed variant settings: usage errors.
  EXPECT_NE(error_of<usage_error>([&] { run("bfs", {data}, "", {{"source", "64"}}); }).find("source 64 is outside"),
            std::string::npos);
  EXPECT_NE(error_of<usage_error>([&] { run("bfs", {data}, "auto,gamma=2"); }).find("unknown auto setting 'gamma'"),
            std::string::npos);
  EXPECT_NE(error_of<usage_error>([&] { run("bfs", {data}, "padded,alpha=2"); }).find("variant padded takes no settings"),
            std::string::npos);
  EXPECT_NE(error_of<usage_error>([&] { run("bfs", {data}, "auto,alpha=-1"); }).find("must be a positive number"),
            std::string::npos);
  // A malformed Rodinia file: an input error naming it.
  const auto bad = path("bad.txt");
  std::ofstream(bad) << "2\n0 1\n1 1\n\n0\n\n2\n1 0\n7 0\n";
  const auto m = error_of<input_error>([&] { run("bfs", {bad}, "", {}, "rodinia"); });
  EXPECT_NE(m.find(bad.string() + ":9:1: an edge's destination node is 7, outside [0, 1]"), std::string::npos) << m;
  // A bundle whose arrays do not make a graph.
  const auto write_bundle = [&](const std::string& name, std::vector<std::int64_t> offsets, std::vector<i32> edges,
                                std::int64_t source) {
    datasets::bundle_writer out(path(name), "dataset", "bfs");
    out.add<std::int64_t>("offsets", offsets);
    out.add<i32>("edges", edges);
    // What gen records beside the arrays (every dataset is checked against its parameters).
    out.params() = {{"source", source}, {"nodes", std::int64_t(offsets.size()) - 1}, {"min_neighbours", 0},
                    {"max_neighbours", 1}, {"distinct", 0}, {"components", 1}};
    out.finish();
    return path(name);
  };
  auto bundle_error = [&](const std::filesystem::path& p) { return error_of<input_error>([&] { run("bfs", {p}); }); };
  EXPECT_NE(bundle_error(write_bundle("decreasing", {0, 2, 1, 3}, {1, 2, 0}, 0)).find("offsets decrease at node 1"),
            std::string::npos);
  EXPECT_NE(bundle_error(write_bundle("far", {0, 1, 2}, {1, 2}, 0)).find("edge 1 leads to node 2, outside [0, 1]"),
            std::string::npos);
  EXPECT_NE(bundle_error(write_bundle("short", {0, 1, 3}, {1, 0}, 0)).find("the last offset is 3 but there are 2 edges"),
            std::string::npos);
  EXPECT_NE(bundle_error(write_bundle("nosource", {0, 1, 2}, {1, 0}, 2)).find("params.source must be a node in [0, 1]"),
            std::string::npos);
  EXPECT_NE(bundle_error(write_bundle("empty", {0}, {}, 0)).find("1 <= N < 2^31; found 1"), std::string::npos);
}

SOAC_INSTANTIATE_APP_BACKENDS(Bfs);

// --- backend-independent ------------------------------------------------------------------------

TEST(BfsGraphs, TransposeOnlyWhereInEdgesDifferFromOutEdges) {
  // Undirected, lists in any order: no transpose needed.
  EXPECT_FALSE(bfs::transpose_unless_symmetric(from_lists({{1, 2, 1}, {0, 2, 0}, {1, 0}})).has_value());
  // 0 -> 1 twice but 1 -> 0 once: the multisets differ.
  const auto t = bfs::transpose_unless_symmetric(from_lists({{1, 1}, {0}, {}}));
  ASSERT_TRUE(t.has_value());
  EXPECT_EQ(t->degree, (std::vector<i32>{1, 2, 0}));
  EXPECT_EQ(t->edges, (std::vector<i32>{1, 0, 0}));
}

TEST(BfsGraphs, VariantsParse) {
  const auto o = bfs::parse_variant("auto,alpha=3,beta=5.5,tpn=64");
  EXPECT_EQ(o.which, bfs::variant::automatic);
  EXPECT_EQ(o.tuning.alpha, 3);
  EXPECT_EQ(o.tuning.beta, 5.5);
  EXPECT_EQ(o.tuning.thread_per_node, 64);
  EXPECT_FALSE(o.tuning.only.has_value());
  EXPECT_EQ(bfs::parse_variant("auto,only=bottom-up").tuning.only, bfs::level_kind::bottom_up);
  EXPECT_EQ(bfs::parse_variant("auto,tpn=0").tuning.thread_per_node, 0);
  EXPECT_EQ(bfs::parse_variant("auto").tuning.levels_per_round, bfs::auto_tuning::max_levels_per_round);
  EXPECT_EQ(bfs::parse_variant("auto,round=7,blocks=1").tuning.levels_per_round, 7);
  EXPECT_EQ(bfs::parse_variant("auto,round=7,blocks=1").tuning.blocks_per_sm, 1);
  EXPECT_THROW(bfs::parse_variant("auto,round=0"), usage_error);
  EXPECT_THROW(bfs::parse_variant("auto,round=2.5"), usage_error);
  EXPECT_THROW(bfs::parse_variant("auto,round=1025"), usage_error);
  EXPECT_THROW(bfs::parse_variant("auto,blocks=33"), usage_error);
  EXPECT_THROW(bfs::parse_variant("auto,only=sideways"), usage_error);
  EXPECT_EQ(bfs::parse_variant("").which, bfs::variant::automatic);
  EXPECT_EQ(bfs::parse_variant("segmented").which, bfs::variant::segmented);
  EXPECT_THROW(bfs::parse_variant("dfs"), usage_error);
  EXPECT_THROW(bfs::parse_variant("auto,alpha"), usage_error);
  EXPECT_THROW(bfs::parse_variant("auto,beta=x"), usage_error);
}

TEST(BfsGraphs, GeneratorsAreDeterministicAndMatchTheDescriptions) {
  namespace fs = std::filesystem;
  const auto dir = fs::temp_directory_path() / ("soac_bfs_gen_" + std::to_string(::getpid()));
  fs::remove_all(dir);
  const auto& app = apps::find_app("bfs");
  auto make = [&](const std::string& preset, std::uint64_t seed, const std::string& name,
                  const std::map<std::string, std::string>& overrides = {}) {
    apps::gen_request r;
    r.preset = preset;
    r.params = app.resolve_params(preset, overrides);
    r.seed = seed;
    r.output = dir / name;
    r.format = "rodinia";
    app.generate(r);
    return datasets::read_rodinia_graph(dir / name);
  };
  fs::create_directories(dir);
  const std::map<std::string, std::string> smaller = {{"nodes", "20000"}};
  const auto a = make("H100K", 1, "a.txt", smaller), b = make("H100K", 1, "b.txt", smaller);
  const auto c = make("H100K", 2, "c.txt", smaller);
  EXPECT_EQ(a.edges, b.edges);
  EXPECT_NE(a.edges, c.edges);
  // H100K: every node draws 5..200 distinct neighbours (102.5 on average), each edge stored both
  // ways.
  EXPECT_EQ(a.node_count(), 20000);
  EXPECT_TRUE(std::all_of(a.degree.begin(), a.degree.end(), [](i32 d) { return d >= 5; }));
  EXPECT_GT(a.edge_count(), 2 * 20000 * 95);
  EXPECT_LT(a.edge_count(), 2 * 20000 * 110);
  EXPECT_FALSE(bfs::transpose_unless_symmetric(a).has_value());
  // E1K: everyone draws everyone.
  const auto e = make("E1K", 1, "e.txt");
  EXPECT_TRUE(std::all_of(e.degree.begin(), e.degree.end(), [](i32 d) { return d == 2000; }));
  // The disconnected preset: no edge leaves its quarter.
  const auto d = make("disconnected", 1, "d.txt");
  for (std::size_t u = 0; u < d.start.size(); ++u)
    for (i32 k = 0; k < d.degree[u]; ++k) EXPECT_EQ(d.edges[std::size_t(d.start[u] + k)] / 16384, i32(u / 16384));
  fs::remove_all(dir);
}

}  // namespace
