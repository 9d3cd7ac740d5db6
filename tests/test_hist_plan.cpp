// Golden plans of soac::hist (host only): for an H100 and an H200, every plan the model chooses
// over the SC20 Fig 7 grid, the figures' forced shapes, and the batched and fused shapes of the
// apps, recorded field by field as launched (kernel version, grid, shared bytes, elements per
// step, clusters, ...). tests/data/hist_plans.golden holds the table; a change to any plan fails
// here. SOAC_WRITE_GOLDEN=1 rewrites the table (then review its diff: it must be intended).
//
// The device's answers that the plan depends on (resident blocks and clusters of a kernel
// version, free memory) come from fake_device below, a model of an sm_90 part: registers per
// kernel version as ptxas gives them for the 4- and 8-byte operators of the hist app.
#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <iomanip>
#include <map>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

#include "core/error.hpp"
#include "core/hist/plan.hpp"

#ifndef SOAC_TEST_DATA
#define SOAC_TEST_DATA "tests/data"
#endif

using namespace soac;

namespace {

device_properties h100() {
  device_properties p;
  p.name = "NVIDIA H100 80GB HBM3";
  p.compute_major = 9;
  p.compute_minor = 0;
  p.sm_count = 132;
  p.max_threads_per_sm = 2048;
  p.max_threads_per_block = 1024;
  p.shared_per_block = 48 * 1024;
  p.shared_per_block_optin = 227 * 1024;
  p.shared_per_sm = 228 * 1024;
  p.l2_bytes = std::size_t{50} << 20;
  p.global_bytes = std::size_t{80} << 30;
  return p;
}

device_properties h200() {
  device_properties p = h100();
  p.name = "NVIDIA H200";
  p.global_bytes = std::size_t{141} << 30;
  return p;
}

// ---- The device's answers, modelled. Registers per thread of each kernel version (ptxas, sm_90,
// the hist app's operators): the plain shared kernels keep to 32 so two 1024-thread blocks share
// an SM, and so does the cluster fold with one or two elements per step; loads ahead, the fold
// with eight, thread-private tiles of 32 results and the split kernel take up to 64.
int registers(const hist_kernel& k) {
  using family = hist_kernel::family;
  if (k.fam == family::shared && !k.ahead && !k.exclusive) return 32;
  if (k.fam == family::shared && k.exclusive && k.max_block == 1024) return 32;
  if (k.fam == family::shared_fold) return k.items <= 2 ? 32 : 64;
  if (k.fam == family::bucket || k.fam == family::global || k.fam == family::fused_shared || k.fam == family::fused_global)
    return 32;
  return 64;
}

struct fake_device {
  device_properties p;
  int resident_blocks(const hist_kernel& k, int threads, std::size_t bytes) const {
    if (bytes > p.shared_per_block_optin || threads > k.max_block) return 0;
    const int by_threads = p.max_threads_per_sm / threads;
    const int by_shared = int(p.shared_per_sm / (bytes + 1024));
    const int by_registers = 65536 / (registers(k) * ((threads + 31) / 32 * 32));
    return std::max(0, std::min({by_threads, by_shared, by_registers, 32}));
  }
  // Clusters resident at once: GPCs of 16 SMs (the H100's 132 SMs in 8 GPCs, some of 18, some of
  // 16; the fake keeps 8 of 16 plus 4 SMs that hold no cluster of more than 4).
  int resident_clusters(const hist_kernel& k, int threads, std::size_t bytes, int cluster) const {
    if (p.compute_major < 9) return 0;
    const int per_sm = resident_blocks(k, threads, bytes);
    if (per_sm < 1) return 0;
    const int per_gpc = 16 * per_sm / cluster;
    const int rest = cluster <= 4 ? 4 * per_sm / cluster : 0;
    return 8 * per_gpc + rest;
  }
  std::size_t free_bytes() const { return p.global_bytes - (std::size_t{1} << 30); }
};

// ---- The calls of the sweep: an operator class and a shape.
struct op_class {
  const char* name;
  atomic_kind kind;
  std::size_t value_bytes;
  double tolerance;  // Op::hist_contention_tolerance (cas only)
  int per_element;   // updates per element (bin_values<V, K>)
};
const op_class int_add{"int-add", atomic_kind::hdw, 4, 0, 1};
const op_class sat_add{"sat24-add", atomic_kind::cas, 4, 0, 1};
const op_class argmax{"argmax", atomic_kind::cas, 8, 1e9, 1};

struct call {
  std::string name;
  op_class op;
  std::int64_t n = 0, H = 0;
  hist_options o;
  double inspected = 0;        // > 0: the inspector's answer (options.race_factor left 0)
  std::int64_t batches = 0;    // > 0: hist_batched of `batches` segments of n elements
  call(std::string name_, op_class op_, std::int64_t n_, std::int64_t H_, hist_options o_ = {}, double inspected_ = 0,
       std::int64_t batches_ = 0)
      : name(std::move(name_)), op(op_), n(n_), H(H_), o(o_), inspected(inspected_), batches(batches_) {}
};

// The kind a call runs with (check_hist_call).
atomic_kind kind_of(const call& c) { return c.o.force_atomic ? c.o.atomic : c.op.kind; }

hist_device answers(const fake_device& d) {
  hist_device h;
  h.resident_blocks = [&d](const hist_kernel& k, int threads, std::size_t bytes) { return d.resident_blocks(k, threads, bytes); };
  h.resident_clusters = [&d](const hist_kernel& k, int threads, std::size_t bytes, int cluster) {
    return d.resident_clusters(k, threads, bytes, cluster);
  };
  h.free_bytes = [&d] { return d.free_bytes(); };
  return h;
}

hist_plan planned(const fake_device& d, const call& c) {
  hist_call hc;
  hc.n = c.n;
  hc.bins = c.H;
  hc.batches = c.batches > 0 ? c.batches : -1;
  hc.kind = kind_of(c);
  hc.value_bytes = c.op.value_bytes;
  hc.tolerance = c.op.tolerance;
  hc.per_element = c.op.per_element;
  return plan_hist_launch(d.p, answers(d), hc, c.o, [&] { return c.inspected > 0 ? c.inspected : 1.0; });
}

// Two histograms in one pass: sizes and kinds of a and b.
struct fused_call {
  std::string name;
  std::int64_t n, Ha, Hb;
  std::size_t a_bytes, b_bytes;
  atomic_kind Ka, Kb;
  hist_options o;
};

hist_plan planned_fused(const fake_device& d, const fused_call& c) {
  return plan_hist_fused(d.p, answers(d), {c.n, c.Ha, c.Hb, c.a_bytes, c.b_bytes, c.Ka, c.Kb}, c.o);
}

std::string record(const hist_plan& p) {
  std::ostringstream s;
  s << to_string(p.strategy) << " " << to_string(p.atomic) << " n=" << p.n << " H=" << p.bins << " M=" << p.multi
    << " Mmodel=" << p.model_multi << " S=" << p.passes << " Hchk=" << p.chunk << " C=" << p.coop << " block=" << p.block_threads
    << " per_sm=" << p.blocks_per_sm << " grid=" << p.grid << " items=" << p.items_per_thread << " wide=" << p.items_wide
    << " smem=" << p.shared_bytes << " RF=" << p.race_factor << (p.race_factor_estimated ? "(inspected)" : "")
    << " batches=" << p.batches << " K=" << p.blocks_per_histogram << " private=" << p.thread_private << " cluster=" << p.cluster
    << " partials=" << p.block_partials << " split=" << p.split << " partitioned=" << p.partitioned << " ahead=" << p.load_ahead
    << " | kernel=" << p.kernel.name() << " side_by_side=" << p.side_by_side << " rows=" << p.partial_rows;
  if (p.bucket_count) s << " | count: " << p.bucket_count->describe() + " " + p.bucket_count->kernel.name();
  s << " | " << p.describe();
  return s.str();
}

template <class Run>
std::string outcome(Run&& run) {
  try {
    return record(run());
  } catch (const usage_error& e) {
    return std::string("usage_error: ") + e.what();
  } catch (const resource_error& e) {
    return std::string("resource_error: ") + e.what();
  }
}

// The SC20 Fig 7 grid (N = 50M, the paper's H less one, RF 1 and 63, the three operator classes
// and argmax under locks), RF given and inspected; then the hist app's forced variants of those
// figures; then the apps' own calls.
const std::int64_t fig7_bins[] = {31, 127, 505, 2041, 6141, 12281, 24569, 49145, 196607, 393215, 786431, 1572863};
constexpr std::int64_t N50M = 50'000'000;

hist_options settings(const std::string& s) { return s.empty() ? hist_options{} : parse_hist_options(s); }

std::vector<call> single_calls() {
  std::vector<call> calls;
  hist_options lock;
  lock.force_atomic = true;
  lock.atomic = atomic_kind::xcg;
  const std::pair<op_class, hist_options> ops[] = {{int_add, {}}, {sat_add, {}}, {argmax, {}}, {argmax, lock}};
  for (const auto& [op, base] : ops)
    for (std::int64_t H : fig7_bins)
      for (int rf : {1, 63}) {
        const std::string name = std::string(op.name) + (base.force_atomic ? "/lock" : "") + " H=" + std::to_string(H) + " RF=" + std::to_string(rf);
        call given{name + " given", op, N50M, H, base};
        given.o.race_factor = rf;
        calls.push_back(given);
        call inspected{name + " inspected", op, N50M, H, base};
        inspected.inspected = rf;
        calls.push_back(inspected);
      }
  // The hist app's forced variants (soac bench hist, the reproduce tables), RF = 1 and 63.
  const char* forced[] = {"strategy=shared", "strategy=global", "private=on", "private=off", "cluster=1", "cluster=2",
                          "cluster=4", "partials=on", "partials=off", "partials=on,cluster=1", "split=2", "split=4",
                          "split=8", "split=16", "partition=on", "partition=off", "ahead=on", "ahead=off", "block=512",
                          "block=256", "atomic=cas", "atomic=xcg", "atomic=hdw", "strategy=shared,M=1",
                          "strategy=shared,M=32", "strategy=shared,M=128", "strategy=shared,M=1,S=2",
                          "strategy=shared,S=3", "strategy=global,M=1,S=1", "strategy=global,M=4,S=1",
                          "strategy=global,M=32,S=1", "strategy=global,S=2", "M=3", "S=2"};
  for (const op_class& op : {int_add, sat_add, argmax})
    for (const char* f : forced)
      for (std::int64_t H : {std::int64_t(127), std::int64_t(2041), std::int64_t(24569), std::int64_t(196607), std::int64_t(1572863)})
        for (int rf : {1, 63}) {
          call c{std::string(op.name) + " H=" + std::to_string(H) + " RF=" + std::to_string(rf) + " " + f, op, N50M, H, settings(f)};
          c.o.race_factor = rf;
          calls.push_back(c);
        }
  // Small inputs and edges: fewer elements than a wave, empty input, no bins, one bin.
  for (const op_class& op : {int_add, sat_add, argmax})
    for (std::int64_t n : {std::int64_t(0), std::int64_t(1), std::int64_t(1000), std::int64_t(300'000)})
      for (std::int64_t H : {std::int64_t(0), std::int64_t(1), std::int64_t(505), std::int64_t(100'000)})
        calls.push_back({std::string(op.name) + " n=" + std::to_string(n) + " H=" + std::to_string(H), op, n, H});
  // The apps' single histograms (sizes of their datasets; updates per element as their functors).
  const op_class u32_add{"u32-add", atomic_kind::hdw, 4, 0, 1}, u32_add4{"u32-add/4", atomic_kind::hdw, 4, 0, 4},
      u32_add16{"u32-add/16", atomic_kind::hdw, 4, 0, 16}, sat8{"sat8-add", atomic_kind::cas, 4, 0, 1},
      float_add{"float-add", atomic_kind::hdw, 4, 0, 1}, float_add3{"float-add/3", atomic_kind::hdw, 4, 0, 3},
      float_add16{"float-add/16", atomic_kind::hdw, 4, 0, 16};
  calls.push_back({"histo counts", u32_add, 996 * 1040, 4096});
  calls.push_back({"histo saturating", sat8, 996 * 1040, 4096});
  calls.push_back({"histo window", u32_add, 996 * 1040, 96 * 1024, settings("ahead=off")});
  calls.push_back({"histo outside", u32_add, 996 * 1040, 1 << 20, settings("strategy=global,M=1,RF=1")});
  calls.push_back({"samples_hist words", u32_add4, 64 << 20, 256});
  calls.push_back({"samples_hist vectors", u32_add16, 16 << 20, 256});
  calls.push_back({"stream bytes", u32_add4, 256 << 20, 256});
  calls.push_back({"imgreg paper-2m", float_add16, 2'000'000 / 16, 53 * 53, settings("strategy=shared,M=16")});
  calls.push_back({"imgreg paper-8m", float_add16, 8'000'000 / 16, 203 * 203});
  calls.push_back({"imgreg fixed", float_add16, 8'000'000 / 16, 203 * 203, settings("ahead=off")});
  calls.push_back({"gromacs tables", float_add, 5 * 200'000, 5 * 2048, settings("private=on")});
  calls.push_back({"gromacs tables cas", float_add, 5 * 200'000, 5 * 2048, settings("private=on,atomic=cas")});
  call forces{"gromacs forces", float_add3, 3'000'000, 3 * 300'000};
  forces.inspected = 9.5;
  calls.push_back(forces);
  calls.push_back({"kmeans counts", u32_add, 1'000'000, 16});
  calls.push_back({"kmeans flat sums", float_add, 1'000'000 * 34, 16 * 34});
  calls.push_back({"tpacf sets", u32_add, 97178LL * 97178 / 2, 3 * 22});
  return calls;
}

std::vector<call> batched_calls() {
  const op_class u32_add{"u32-add", atomic_kind::hdw, 4, 0, 1}, float_add{"float-add", atomic_kind::hdw, 4, 0, 1};
  std::vector<call> calls;
  calls.push_back({"histeq frames", u32_add, 1920 * 1080, 256, {}, 0, 30});
  calls.push_back({"tpacf slices", u32_add, 97178LL * 97178 / 264, 3 * 22, {}, 0, 264});
  calls.push_back({"tpacf batched", u32_add, 97178LL * 97178, 3 * 22, {}, 0, 101});
  calls.push_back({"kmeans batched sums", float_add, 1'000'000 / 8, 16, settings("private=on"), 0, 34 * 8});
  calls.push_back({"kmeans batched sums M", float_add, 1'000'000 / 8, 16, settings("strategy=shared,M=4"), 0, 34 * 8});
  for (const op_class& op : {int_add, sat_add, argmax})
    for (std::int64_t H : {std::int64_t(31), std::int64_t(505), std::int64_t(24569), std::int64_t(196607)})
      for (std::int64_t batches : {std::int64_t(2), std::int64_t(100), std::int64_t(5000)})
        for (const char* f : {"", "strategy=shared", "strategy=global", "private=on", "cluster=2", "S=2"})
          calls.push_back({std::string(op.name) + " " + std::to_string(batches) + "x H=" + std::to_string(H) + " " + f, op,
                           N50M / batches, H, settings(f), 0, batches});
  return calls;
}

std::vector<fused_call> fused_calls() {
  std::vector<fused_call> calls;
  for (std::int64_t k : {5, 16, 64, 256, 2048})
    for (std::int64_t d : {2, 8, 34, 100}) {
      const std::string name = "kmeans k=" + std::to_string(k) + " d=" + std::to_string(d);
      calls.push_back({name + " flat", 1'000'000 * d, k, k * d, 4, 4, atomic_kind::hdw, atomic_kind::hdw, {}});
      calls.push_back({name + " vec4", 1'000'000 * ((d + 3) / 4), k, k * ((d + 3) / 4), 4, 16, atomic_kind::hdw, atomic_kind::hdw, {}});
      calls.push_back({name + " flat M=2", 1'000'000 * d, k, k * d, 4, 4, atomic_kind::hdw, atomic_kind::hdw, settings("M=2")});
      calls.push_back({name + " flat global", 1'000'000 * d, k, k * d, 4, 4, atomic_kind::hdw, atomic_kind::hdw, settings("strategy=global")});
      calls.push_back({name + " flat shared", 1'000'000 * d, k, k * d, 4, 4, atomic_kind::hdw, atomic_kind::hdw, settings("strategy=shared")});
    }
  calls.push_back({"counts and argmax", N50M, 127, 127, 4, 8, atomic_kind::hdw, atomic_kind::cas, {}});
  calls.push_back({"lock and counts", N50M, 127, 127, 12, 4, atomic_kind::xcg, atomic_kind::hdw, {}});
  calls.push_back({"empty", 0, 127, 127, 4, 4, atomic_kind::hdw, atomic_kind::hdw, {}});
  return calls;
}

namespace golden {
std::vector<std::string> table(const std::vector<std::pair<std::string, device_properties>>& devices) {
  std::vector<std::string> lines;
  for (const auto& [gpu, props] : devices) {
    const fake_device d{props};
    for (const call& c : single_calls()) lines.push_back(gpu + " hist " + c.name + " : " + outcome([&] { return planned(d, c); }));
    for (const call& c : batched_calls()) lines.push_back(gpu + " hist_batched " + c.name + " : " + outcome([&] { return planned(d, c); }));
    for (const fused_call& c : fused_calls()) lines.push_back(gpu + " hist_fused " + c.name + " : " + outcome([&] { return planned_fused(d, c); }));
  }
  return lines;
}
}  // namespace golden

std::string golden_path() { return std::string(SOAC_TEST_DATA) + "/hist_plans.golden"; }

std::vector<std::string> read_lines(const std::string& path) {
  std::ifstream in(path);
  std::vector<std::string> lines;
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

}  // namespace

TEST(HistPlanGolden, EveryPlanAsBefore) {
  const std::vector<std::string> got = golden::table({{"H100", h100()}, {"H200", h200()}});
  ASSERT_GT(got.size(), 1000u);
  if (const char* w = std::getenv("SOAC_WRITE_GOLDEN"); w && std::string(w) == "1") {
    std::ofstream out(golden_path());
    for (const auto& line : got) out << line << "\n";
    GTEST_SKIP() << "wrote " << got.size() << " plans to " << golden_path();
  }
  const std::vector<std::string> want = read_lines(golden_path());
  ASSERT_EQ(got.size(), want.size()) << "the sweep changed; " << golden_path();
  int differ = 0;
  for (std::size_t i = 0; i < got.size(); ++i)
    if (got[i] != want[i] && ++differ <= 20) ADD_FAILURE() << "plan " << i << "\n  want " << want[i] << "\n  got  " << got[i];
  EXPECT_EQ(differ, 0) << "plans differ from " << golden_path();
}

// No histograms (hist_batched with zero batches) is an empty call, not one histogram of a
// segment's elements: nothing to launch, whatever the segment length.
TEST(HistPlan, ZeroBatchesLaunchNothing) {
  const fake_device d{h100()};
  for (std::int64_t seg_len : {std::int64_t(0), std::int64_t(10), std::int64_t(1) << 24}) {
    hist_call c;
    c.n = seg_len;
    c.bins = 5;
    c.batches = 0;
    const hist_plan plan = plan_hist_launch(d.p, answers(d), c, {}, [] { return 1.0; });
    EXPECT_EQ(plan.n, 0) << seg_len;
    EXPECT_EQ(plan.kernel.fam, hist_kernel::family::none) << seg_len;
    EXPECT_EQ(plan.grid, 0) << seg_len;
  }
}
