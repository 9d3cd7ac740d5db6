// The four BFS variants (see bfs.hpp) on a graph in the backend's memory.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <sstream>

#include "apps/bfs/bfs.hpp"
#include "apps/bfs/kernels.cuh"
#include "apps/bfs/walk.cuh"
#include "core/cuda_check.hpp"
#include "core/error.hpp"
#include "core/operators.hpp"
#include "core/scan.cuh"
#include "core/scatter.cuh"
#include "core/segreduce.cuh"
#include "core/sort.cuh"

namespace soac::apps::bfs {

using namespace detail;

// --- variants and traces ------------------------------------------------------------------------

std::string variant_name(variant v) {
  switch (v) {
    case variant::rodinia: return "rodinia";
    case variant::padded: return "padded";
    case variant::segmented: return "segmented";
    default: return "auto";
  }
}

options parse_variant(const std::string& text) {
  options o;
  std::string_view rest = text;
  const std::string name(rest.substr(0, rest.find(',')));
  if (name.empty() || name == "auto") o.which = variant::automatic;
  else if (name == "rodinia") o.which = variant::rodinia;
  else if (name == "padded") o.which = variant::padded;
  else if (name == "segmented") o.which = variant::segmented;
  else throw usage_error("bfs: unknown variant '" + name + "' (expected auto, rodinia, padded or segmented)");
  rest.remove_prefix(std::min(rest.size(), name.size() + 1));
  while (!rest.empty()) {
    const std::string item(rest.substr(0, rest.find(',')));
    rest.remove_prefix(std::min(rest.size(), item.size() + 1));
    const auto eq = item.find('=');
    if (o.which != variant::automatic)
      throw usage_error("bfs: variant " + name + " takes no settings, not '" + item +
                        "' (only auto takes them: alpha=X, beta=X, tpn=N, only=nodes|edges|bottom-up, round=N, blocks=N)");
    if (eq == std::string::npos || eq == 0)
      throw usage_error("bfs: variant setting '" + item + "' is not KEY=VALUE (alpha=X, beta=X, tpn=N, only=nodes|edges|bottom-up, round=N, blocks=N)");
    const std::string key = item.substr(0, eq), value = item.substr(eq + 1);
    // count() bounds its own numbers (more usefully, by its range).
    const auto number = [&](bool zero_allowed, double largest = 1e18) {
      double v = 0;
      std::istringstream in(value);
      if (!(in >> v) || !in.eof() || !(v > 0 || (zero_allowed && v == 0)))
        throw usage_error("bfs: variant setting " + key + " must be a " + (zero_allowed ? "non-negative" : "positive") +
                          " number, not '" + value + "'");
      if (v > largest) throw usage_error("bfs: variant setting " + key + " = " + value + " is beyond 1e18");
      return v;
    };
    // A whole number in [1, most].
    const auto count = [&](int most) {
      const double v = number(false, INFINITY);
      if (v > most || v != std::floor(v))
        throw usage_error("bfs: variant setting " + key + " must be a whole number from 1 to " + std::to_string(most) +
                          ", not '" + value + "'");
      return static_cast<int>(v);
    };
    if (key == "alpha") o.tuning.alpha = number(false);
    else if (key == "beta") o.tuning.beta = number(false);
    else if (key == "tpn") o.tuning.thread_per_node = static_cast<std::int64_t>(number(true));
    else if (key == "only" && value == "nodes") o.tuning.only = level_kind::thread_per_node;
    else if (key == "only" && value == "edges") o.tuning.only = level_kind::thread_per_edge;
    else if (key == "only" && value == "bottom-up") o.tuning.only = level_kind::bottom_up;
    else if (key == "only") throw usage_error("bfs: only=" + value + " (expected nodes, edges or bottom-up)");
    else if (key == "round") o.tuning.levels_per_round = count(auto_tuning::max_levels_per_round);
    else if (key == "blocks") o.tuning.blocks_per_sm = count(32);
    else throw usage_error("bfs: unknown auto setting '" + key + "' (alpha, beta, tpn, only, round, blocks)");
  }
  return o;
}

namespace {

const char* kind_name(level_kind k) {
  switch (k) {
    case level_kind::all_nodes: return "two kernels over all nodes";
    case level_kind::padded: return "a scatter over padded edge lists";
    case level_kind::segmented: return "a scatter over flattened edges";
    case level_kind::thread_per_node: return "top-down with a thread per node";
    case level_kind::thread_per_edge: return "top-down with a thread per edge";
    default: return "bottom-up";
  }
}

}  // namespace

std::string trace::summary() const {
  std::ostringstream s;
  s << steps.size() << " iterations";
  if (steps.empty()) return s.str();
  const auto same = [&](const level_step& l) { return l.kind == steps.front().kind; };
  if (std::all_of(steps.begin(), steps.end(), same)) {
    s << ", each " << kind_name(steps.front().kind);
    return s.str();
  }
  const char* sep = ": ";
  for (auto k : {level_kind::thread_per_node, level_kind::thread_per_edge, level_kind::bottom_up}) {
    const auto n = std::count_if(steps.begin(), steps.end(), [&](const level_step& l) { return l.kind == k; });
    if (n) s << sep << n << " " << kind_name(k), sep = ", ";
  }
  return s.str();
}

std::string trace::per_level() const {
  std::ostringstream s;
  for (std::size_t l = 0; l < steps.size(); ++l) {
    const auto& st = steps[l];
    s << "  level " << l << ": ";
    if (st.frontier >= 0) s << st.frontier << " frontier nodes, ";
    const bool over_nodes = st.kind == level_kind::all_nodes || st.kind == level_kind::bottom_up;
    s << st.work << (st.kind == level_kind::padded ? " padded slots" : over_nodes ? " nodes" : " edges");
    if (st.largest_degree > 0) s << " (largest degree " << st.largest_degree << ")";
    s << ": " << kind_name(st.kind) << "\n";
  }
  return s.str();
}

// --- the graph's in-edges -----------------------------------------------------------------------

std::optional<datasets::rodinia_graph> transpose_unless_symmetric(const datasets::rodinia_graph& g) {
  const std::size_t n = g.start.size();
  auto out_edges = [&](std::size_t u) {
    return std::span<const std::int32_t>(g.edges.data() + g.start[u], std::size_t(g.degree[u]));
  };
  std::vector<std::int64_t> in_degree(n, 0);
  for (std::size_t u = 0; u < n; ++u)
    for (const auto v : out_edges(u)) ++in_degree[std::size_t(v)];
  datasets::rodinia_graph t;
  t.start.resize(n);
  t.degree.resize(n);
  std::int64_t total = 0;
  for (std::size_t v = 0; v < n; ++v) {
    t.start[v] = static_cast<std::int32_t>(std::min<std::int64_t>(total, std::numeric_limits<std::int32_t>::max()));
    t.degree[v] = static_cast<std::int32_t>(in_degree[v]);  // <= the out-degree sum, checked next
    total += in_degree[v];
  }
  if (total > std::numeric_limits<std::int32_t>::max())
    throw resource_error("bfs: the graph's edge lists hold " + std::to_string(total) +
                         " edges in all (overlapping ranges), beyond the 2^31 - 1 the transpose for auto's bottom-up "
                         "levels can hold; run another variant");
  t.edges.resize(std::size_t(total));
  {
    std::vector<std::int32_t> cursor(t.start);
    for (std::size_t u = 0; u < n; ++u)
      for (const auto v : out_edges(u)) t.edges[std::size_t(cursor[std::size_t(v)]++)] = static_cast<std::int32_t>(u);
  }
  // Symmetric when every node's in-list and out-list are equal multisets: count one up and the
  // other down, and every touched count must be back at zero.
  std::vector<std::int32_t> count(n, 0);
  bool symmetric = true;
  for (std::size_t v = 0; v < n && symmetric; ++v) {
    const auto in = std::span<const std::int32_t>(t.edges.data() + t.start[v], std::size_t(t.degree[v]));
    for (const auto w : out_edges(v)) ++count[std::size_t(w)];
    for (const auto w : in) --count[std::size_t(w)];
    for (const auto w : out_edges(v)) symmetric = symmetric && count[std::size_t(w)] == 0;
    for (const auto w : in) symmetric = symmetric && count[std::size_t(w)] == 0;
    for (const auto w : out_edges(v)) count[std::size_t(w)] = 0;
    for (const auto w : in) count[std::size_t(w)] = 0;
  }
  if (symmetric) return std::nullopt;
  return t;
}

// --- runner -------------------------------------------------------------------------------------

// Mapped pinned host memory that the device writes and the host reads after synchronising,
// without a pageable copy: rodinia's flag (copied into its first byte) and auto's walk_report.
struct runner::pinned {
  walk_report* host = nullptr;
  walk_report* device = nullptr;
  explicit pinned(const context& ctx) {
    ctx.activate();
    SOAC_CUDA_CHECK(cudaHostAlloc(reinterpret_cast<void**>(&host), sizeof(walk_report), cudaHostAllocMapped));
    std::memset(static_cast<void*>(host), 0, sizeof(walk_report));
    SOAC_CUDA_CHECK(cudaHostGetDevicePointer(reinterpret_cast<void**>(&device), host, 0));
  }
  ~pinned() { cudaFreeHost(host); }
  pinned(const pinned&) = delete;
  pinned& operator=(const pinned&) = delete;
};

namespace {
template <class T>
buffer<T> array_of(context& ctx, const std::vector<T>& host) {
  return buffer<T>(ctx, std::span<const T>(host));
}
}  // namespace

runner::runner(context& ctx, const datasets::rodinia_graph& g, const std::optional<datasets::rodinia_graph>& in_edges)
    : ctx_(ctx),
      nodes_(g.node_count()),
      host_degree_(g.degree),
      start_(array_of(ctx, g.start)),
      degree_(array_of(ctx, g.degree)),
      edges_(array_of(ctx, g.edges)) {
  if (nodes_ < 1 || nodes_ > std::numeric_limits<std::int32_t>::max())
    throw usage_error("bfs: a graph needs 1 to 2^31 - 1 nodes, not " + std::to_string(nodes_));
  for (const auto d : g.degree) total_degree_ += d;
  if (in_edges) {
    in_start_ = array_of(ctx, in_edges->start);
    in_degree_ = array_of(ctx, in_edges->degree);
    in_edges_ = array_of(ctx, in_edges->edges);
    has_in_edges_ = true;
  }
  if (ctx.is_cuda()) pinned_ = std::make_unique<pinned>(ctx);
}

runner::~runner() = default;

void runner::upload(const datasets::rodinia_graph& g, const std::optional<datasets::rodinia_graph>& in_edges) {
  if (g.node_count() != nodes_ || g.edge_count() != edges() || in_edges.has_value() != has_in_edges_)
    throw usage_error("bfs: runner::upload needs a graph of the shape it was made for");
  start_.copy_from(g.start);
  degree_.copy_from(g.degree);
  edges_.copy_from(g.edges);
  host_degree_ = g.degree;
  if (in_edges) {
    in_start_.copy_from(in_edges->start);
    in_degree_.copy_from(in_edges->degree);
    in_edges_.copy_from(in_edges->edges);
  }
}

std::int64_t runner::bytes() const {
  const auto words = [](const buffer<std::int32_t>& b) { return std::int64_t(b.size()) * 4; };
  return words(start_) + words(degree_) + words(edges_) + words(in_start_) + words(in_degree_) + words(in_edges_);
}

graph_view runner::in_view() const {
  return has_in_edges_ ? graph_view{in_start_.data(), in_degree_.data(), in_edges_.data()} : out_view();
}

trace runner::traverse(std::int32_t source, const options& o, span<std::int32_t> cost) {
  if (source < 0 || source >= nodes_)
    throw usage_error("bfs: source " + std::to_string(source) + " is outside [0, " + std::to_string(nodes_ - 1) + "]");
  if (std::int64_t(cost.size()) != nodes_) throw usage_error("bfs: the cost array must hold one element per node");
  if (ctx_.is_cuda()) ctx_.activate();
  switch (o.which) {
    case variant::rodinia: return rodinia(source, cost);
    case variant::padded: return padded(source, cost);
    case variant::segmented: return segmented(source, cost);
    default: return automatic(source, o.tuning, cost);
  }
}

namespace {

// A work array of n elements, allocated once.
template <class T>
T* ensure(context& ctx, buffer<T>& b, std::int64_t n) {
  if (std::int64_t(b.size()) < n) b = buffer<T>(ctx, std::size_t(n));
  return b.data();
}

// Element `at` of an array in the backend's memory.
template <class T>
T read_one(const context& ctx, const T* at) {
  T v{};
  ctx.copy_to_host(&v, at, sizeof(T));
  return v;
}

}  // namespace

trace runner::rodinia(std::int32_t source, span<std::int32_t> cost) {
  std::uint8_t* mask = ensure(ctx_, mask_, nodes_);
  std::uint8_t* updating = ensure(ctx_, updating_, nodes_);
  // visited, then one byte more for the flag Kernel2 raises.
  std::uint8_t* visited = ensure(ctx_, visited_, nodes_ + 1);
  std::uint8_t* changed = visited + nodes_;
  for_each(ctx_, nodes_, rodinia_init{mask, updating, visited, cost.data(), source});
  const graph_view g = out_view();
  trace t;
  constexpr int rodinia_block = 512;
  bool again = true;
  while (again) {
    if (ctx_.is_cuda()) SOAC_CUDA_CHECK(cudaMemsetAsync(changed, 0, 1, ctx_.stream()));
    else *changed = 0;
    for_each(ctx_, nodes_, rodinia_expand{g, mask, updating, visited, cost.data()}, rodinia_block);
    for_each(ctx_, nodes_, rodinia_update{mask, updating, visited, changed}, rodinia_block);
    if (ctx_.is_cuda()) {
      SOAC_CUDA_CHECK(cudaMemcpyAsync(pinned_->host, changed, 1, cudaMemcpyDeviceToHost, ctx_.stream()));
      ctx_.synchronize();
      again = *reinterpret_cast<volatile std::uint8_t*>(pinned_->host) != 0;
    } else {
      again = *changed != 0;
    }
    t.steps.push_back({-1, nodes_, 0, level_kind::all_nodes});
  }
  return t;
}

// The frontier of padded and segmented: costs, mask and visited set for the source (one scatter),
// then per level the frontier's nodes in order (filter).
namespace {
struct mask_frontier {
  context& ctx;
  std::int64_t nodes;
  std::uint8_t* mask;
  std::uint8_t* visited;
  std::int32_t* active;

  void start(std::int32_t source, span<std::int32_t> cost) {
    scatter(ctx, nodes, frontier_init{source}, cost, span<std::uint8_t>(mask, std::size_t(nodes)),
            span<std::uint8_t>(visited, std::size_t(nodes)));
  }
  // The frontier's nodes into `active`, which leave the mask and become visited; their count.
  std::int64_t next() {
    const std::uint8_t* m = mask;
    const std::int64_t count = filter(
        ctx, nodes, [] SOAC_HD(std::int64_t i) { return std::int32_t(i); },
        [=] SOAC_HD(std::int64_t i) { return m[i] != 0; }, span<std::int32_t>(active, std::size_t(nodes)));
    scatter(ctx, count, frontier_leaves{active}, span<std::uint8_t>(mask, std::size_t(nodes)),
            span<std::uint8_t>(visited, std::size_t(nodes)));
    return count;
  }
};
}  // namespace

trace runner::padded(std::int32_t source, span<std::int32_t> cost) {
  mask_frontier f{ctx_, nodes_, ensure(ctx_, mask_, nodes_), ensure(ctx_, visited_, nodes_ + 1),
                  ensure(ctx_, queue_a_, nodes_)};
  std::int64_t* largest = ensure(ctx_, largest_, 1);
  const graph_view g = out_view();
  f.start(source, cost);
  trace t;
  for (std::int64_t count; (count = f.next()) > 0;) {
    // The report's e_max: a reduction (one segment) of the frontier's degrees.
    segreduce(ctx_, 1, count, listed_degree{f.active, g.degree}, span<std::int64_t>(largest, 1),
              maximum<std::int64_t>{});
    const std::int64_t width = read_one(ctx_, largest);
    t.steps.push_back({count, count * width, width, level_kind::padded});
    if (width == 0) continue;
    scatter(ctx_, count * width, padded_expand{g, f.active, f.visited, cost.data(), width}, cost,
            span<std::uint8_t>(f.mask, std::size_t(nodes_)));
  }
  t.steps.push_back({0, 0, 0, level_kind::padded});
  return t;
}

trace runner::segmented(std::int32_t source, span<std::int32_t> cost) {
  mask_frontier f{ctx_, nodes_, ensure(ctx_, mask_, nodes_), ensure(ctx_, visited_, nodes_ + 1),
                  ensure(ctx_, queue_a_, nodes_)};
  std::int64_t* degrees = ensure(ctx_, offsets_, nodes_);
  const graph_view g = out_view();
  f.start(source, cost);
  trace t;
  std::int32_t level = 0;
  for (std::int64_t count; (count = f.next()) > 0; ++level) {
    // Where each frontier node's edges start in the flattened list: a scan of degrees.
    scan(ctx_, count, listed_degree{f.active, g.degree}, span<std::int64_t>(degrees, std::size_t(count)),
         plus<std::int64_t>{});
    const std::int64_t total = read_one(ctx_, degrees + count - 1);
    t.steps.push_back({count, total, 0, level_kind::segmented});
    if (total == 0) continue;
    // The report's mask and is1 (flags and first edge indices at segment heads), then is2 (every
    // slot's edge index) by a segmented scan.
    buffer<std::uint8_t> heads(ctx_, std::size_t(total), lifetime::temporary);
    buffer<std::int32_t> first_edge(ctx_, std::size_t(total), lifetime::temporary);
    buffer<std::int32_t> edge_index(ctx_, std::size_t(total), lifetime::temporary);
    if (ctx_.is_cuda()) SOAC_CUDA_CHECK(cudaMemsetAsync(heads.data(), 0, std::size_t(total), ctx_.stream()));
    else std::memset(heads.data(), 0, std::size_t(total));
    scatter(ctx_, count, segment_heads{g, f.active, degrees}, heads.view(), first_edge.view());
    segscan(ctx_, total, edge_index_steps{heads.data(), first_edge.data()}, from_array(heads), edge_index.view(),
            plus<std::int32_t>{});
    scatter(ctx_, total, segmented_expand{g.edges, edge_index.data(), f.visited, level + 1}, cost,
            span<std::uint8_t>(f.mask, std::size_t(nodes_)));
  }
  t.steps.push_back({0, 0, 0, level_kind::segmented});
  return t;
}

// auto (see walk.cuh): rounds of levels until the walk is done, the host reading each round's
// trace.
trace runner::automatic(std::int32_t source, const auto_tuning& tuning, span<std::int32_t> cost) {
  const std::int64_t words = soac::detail::ceil_div(nodes_, 32);
  std::uint32_t* bits = ensure(ctx_, bits_, 3 * words);
  walk_arrays a{};
  a.out = out_view();
  a.in = in_view();
  a.cost = cost.data();
  a.queues[0] = ensure(ctx_, queue_a_, nodes_);
  a.queues[1] = ensure(ctx_, queue_b_, nodes_);
  a.offsets = ensure(ctx_, offsets_, nodes_);
  a.frontier_bits[0] = bits;
  a.frontier_bits[1] = bits + words;
  a.visited_bits = bits + 2 * words;
  a.nodes = nodes_;
  a.rule = {tuning.alpha, tuning.beta, tuning.thread_per_node, tuning.only ? int(*tuning.only) : -1};
  const int round = std::clamp(tuning.levels_per_round, 1, auto_tuning::max_levels_per_round);
  int blocks = 0;
  if (ctx_.is_cuda()) {
    const int fit = soac::detail::resident_blocks(walk_kernel, walk_block, 0, "bfs walk_kernel");
    blocks = ctx_.props().sm_count * std::clamp(tuning.blocks_per_sm, 1, fit);
    a.counters = ensure(ctx_, counters_, std::int64_t{all_counters});
    a.block_sums = ensure(ctx_, block_sums_, std::int64_t{blocks});
  }
  walk_state s = start_state(host_degree_[std::size_t(source)], total_degree_);
  trace t;
  std::vector<level_step> host_steps(ctx_.is_cuda() ? 0 : std::size_t(round));
  for (bool first = true; !s.done; first = false) {
    const std::int64_t from = s.level;
    const level_step* steps = host_steps.data();
    if (ctx_.is_cuda()) {
      walk_launch w{a, s, source, first, round, pinned_->device};
      void* args[] = {&w};
      SOAC_CUDA_CHECK(cudaLaunchCooperativeKernel(reinterpret_cast<const void*>(&walk_kernel), dim3(unsigned(blocks)),
                                                  dim3(walk_block), args, 0, ctx_.stream()));
      ctx_.synchronize();
      s = pinned_->host->state;
      steps = pinned_->host->steps;
    } else {
      s = host_walk(ctx_, a, s, round, first, source, host_steps.data());
    }
    t.steps.insert(t.steps.end(), steps, steps + (s.level - from));
  }
  return t;
}

}  // namespace soac::apps::bfs
