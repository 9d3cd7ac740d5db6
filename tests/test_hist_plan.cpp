// Golden plans of soac::hist (host only): for an H100 and an H200, every plan the model chooses
// over the SC20 Fig 7 grid, the figures' forced shapes, and the batched and fused shapes of the
// apps, recorded field by field as launched (kernel version, grid, shared bytes, elements per
// step, clusters, ...). tests/data/hist_plans.golden holds the table; a change to any plan fails
// here. SOAC_WRITE_GOLDEN=1 rewrites the table (then review its diff: it must be intended).
//
// The device's answers that the launch depends on (resident blocks and clusters of a kernel
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
#include "core/hist/strategy.hpp"

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
enum class family { shared, shared_fold, split, bucket, global, fused };
struct kernel_version {
  family fam = family::shared;
  bool exclusive = false;  // thread-private copies (no atomics)
  int items = 0, wide = 0, max_block = 1024;
  bool ahead = false;
  std::string name() const {
    static const char* names[] = {"shared", "shared+fold", "split", "bucket", "global", "fused"};
    std::ostringstream s;
    s << names[int(fam)] << (exclusive ? "/private" : "") << "<items=" << items;
    if (wide) s << ",wide=" << wide;
    if (ahead) s << ",ahead";
    if (max_block != 1024) s << ",max_block=" << max_block;
    s << ">";
    return s.str();
  }
};

int registers(const kernel_version& k) {
  if (k.fam == family::shared && !k.ahead && !k.exclusive) return 32;
  if (k.fam == family::shared && k.exclusive && k.max_block == 1024) return 32;
  if (k.fam == family::shared_fold) return k.items <= 2 ? 32 : 64;
  if (k.fam == family::bucket || k.fam == family::global || k.fam == family::fused) return 32;
  return 64;
}

struct fake_device {
  device_properties p;
  int resident_blocks(const kernel_version& k, int threads, std::size_t bytes) const {
    if (bytes > p.shared_per_block_optin || threads > k.max_block) return 0;
    const int by_threads = p.max_threads_per_sm / threads;
    const int by_shared = int(p.shared_per_sm / (bytes + 1024));
    const int by_registers = 65536 / (registers(k) * ((threads + 31) / 32 * 32));
    return std::max(0, std::min({by_threads, by_shared, by_registers, 32}));
  }
  // Clusters resident at once: GPCs of 16 SMs (the H100's 132 SMs in 8 GPCs, some of 18, some of
  // 16; the fake keeps 8 of 16 plus 4 SMs that hold no cluster of more than 4).
  int resident_clusters(const kernel_version& k, int threads, std::size_t bytes, int cluster) const {
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

// The kind a call runs with (check_hist_call), the bytes of a bin for the models and the
// tolerance the planner is given (model_contention_tolerance).
atomic_kind kind_of(const call& c) { return c.o.force_atomic ? c.o.atomic : c.op.kind; }
std::size_t el_of(const call& c) { return c.op.value_bytes + (kind_of(c) == atomic_kind::xcg ? 4 : 0); }
double u_of(const call& c) { return kind_of(c) == atomic_kind::cas ? c.op.tolerance : 0; }

// hist_items<F, PerThread>(): elements per step for a functor of `per_element` updates.
int items_for(int per_thread, int per_element) { return std::max(1, per_thread / per_element); }

std::int64_t ceil_div(std::int64_t a, std::int64_t b) { return (a + b - 1) / b; }

// What runs: the plan as launched, the kernel version, and (shared) the passes side by side and
// the rows of block partials; for a partitioned plan, the bucket count's own launch too.
struct launched {
  hist_plan plan;
  std::string kernel;
  std::int64_t side_by_side = 1, rows = 0;
  std::string count;
};

launched none(const hist_plan& plan) {
  launched r;
  r.plan = plan;
  r.kernel = "none";
  return r;
}

// ---- Transcribed from the launch code of core/hist/cuda.cuh and fused.cuh at 5f57afd
// (hist_shared_launch and hist_shared_run, hist_global_run, hist_split_run and hist_split_fits,
// hist_partition_run and hist_bucket_run, hist_cuda, hist_batched_cuda, hist_fused_cuda), with
// the device's answers from fake_device.
launched legacy_shared(const fake_device& d, hist_plan plan, std::int64_t seg_len, std::int64_t batches, atomic_kind K,
                       std::size_t vbytes, int per_el) {
  const std::size_t count = std::size_t(plan.multi) * plan.chunk;
  const bool shared_locks = K == atomic_kind::xcg && !plan.thread_private;
  const std::size_t bytes = shared_locks ? ((count * vbytes + 3) & ~std::size_t(3)) + count * 4 : count * vbytes;
  kernel_version k;
  k.exclusive = plan.thread_private;
  if (plan.thread_private) {
    if (plan.items_per_thread > hist_tuning::items_per_thread) {
      k.items = items_for(hist_tuning::private_items_per_thread, per_el);
      k.max_block = hist_tuning::private_items_max_block;
    } else {
      k.items = items_for(hist_tuning::items_per_thread, per_el);
    }
  } else if (K == atomic_kind::cas) {
    const int contended = items_for(hist_tuning::shared_items_cas_contended, per_el);
    const int wide = items_for(hist_tuning::shared_items_cas_wide, per_el);
    if (plan.items_wide > 0) {
      k.items = contended;
      k.wide = wide;
      k.ahead = plan.load_ahead;
    } else if (plan.items_per_thread == hist_tuning::shared_items_cas_alone) {
      k.items = items_for(hist_tuning::shared_items_cas_alone, per_el);
    } else {
      k.items = contended;
    }
  } else {
    k.items = items_for(hist_tuning::items_per_thread, per_el);
    k.ahead = plan.load_ahead;
  }
  if (plan.block_threads > k.max_block) throw usage_error("hist: a block too large for its kernel");
  plan.load_ahead = k.ahead;
  plan.shared_bytes = bytes;
  const int fit = d.resident_blocks(k, plan.block_threads, bytes);
  if (fit < 1) throw resource_error("hist: the kernel cannot run");
  const int per_sm = plan.blocks_per_sm > 0 ? std::min(fit, plan.blocks_per_sm) : fit;
  const std::int64_t resident = std::int64_t(d.p.sm_count) * per_sm;
  const bool side = batches == 1 && plan.passes > 1;
  const std::int64_t group = side ? std::min<std::int64_t>(plan.passes, resident) : 1;
  std::int64_t parts = 1;
  if (batches == 1) {
    parts = std::clamp<std::int64_t>(ceil_div(seg_len, std::int64_t(plan.block_threads) * k.items), 1,
                                     std::max<std::int64_t>(1, resident / group));
  } else {
    plan.blocks_per_histogram = std::max<std::int64_t>(1, ceil_div(resident, batches));
    if (plan.blocks_per_histogram * batches > 2147483647) throw usage_error("hist: too many batched histograms for one grid");
  }
  int cluster = 1;
  bool partials = false;
  if (!plan.thread_private) {
    partials = plan.block_partials && batches == 1;
    const int c = plan.cluster;
    const bool whole = batches == 1 ? parts >= c : plan.blocks_per_histogram % c == 0;
    kernel_version fold = k;
    fold.fam = family::shared_fold;
    fold.wide = 0;
    fold.ahead = false;
    if (c > 1 && whole && d.resident_blocks(fold, plan.block_threads, bytes) >= per_sm) {
      const std::int64_t grid = batches == 1 ? group * (parts - parts % c) : plan.blocks_per_histogram * batches;
      if (std::int64_t(d.resident_clusters(fold, plan.block_threads, bytes, c)) * c >= std::min(grid, resident)) {
        cluster = c;
        k = fold;
        plan.load_ahead = false;
      }
    }
  }
  plan.grid = batches == 1 ? group * (parts - parts % cluster) : plan.blocks_per_histogram * batches;
  plan.cluster = cluster;
  plan.block_partials = partials;
  plan.items_per_thread = k.items;
  plan.items_wide = cluster > 1 ? 0 : k.wide;
  launched r;
  r.kernel = k.name();
  r.side_by_side = group;
  r.rows = partials ? plan.grid / group / cluster : 0;
  r.plan = plan;
  return r;
}

launched legacy_global(const fake_device& d, hist_plan plan, std::int64_t n, atomic_kind K, double tolerance, int per_el) {
  const bool tolerant = K == atomic_kind::cas && tolerance > 0;
  kernel_version k;
  k.fam = family::global;
  k.items = items_for(tolerant ? hist_tuning::global_items_per_thread_tolerant : hist_tuning::items_per_thread, per_el);
  plan.items_per_thread = k.items;
  if (d.resident_blocks(k, plan.block_threads, 0) < 1) throw resource_error("hist: the kernel cannot run");
  plan.grid = std::clamp<std::int64_t>(ceil_div(n, std::int64_t(plan.block_threads) * k.items), 1, 2147483647);
  launched r;
  r.kernel = k.name();
  r.plan = plan;
  return r;
}

kernel_version split_version(atomic_kind K, int per_el) {
  kernel_version k;
  k.fam = family::split;
  k.items = K == atomic_kind::hdw ? items_for(hist_tuning::items_per_thread, per_el) : items_for(hist_tuning::split_items_cas, per_el);
  return k;
}

bool legacy_split_fits(const fake_device& d, const hist_plan& plan, int per_el) {
  const kernel_version k = split_version(atomic_kind::cas, per_el);
  if (d.resident_blocks(k, plan.block_threads, plan.shared_bytes) < 1) throw resource_error("hist: the kernel cannot run");
  return d.resident_clusters(k, plan.block_threads, plan.shared_bytes, plan.split) >= 1;
}

launched legacy_split(const fake_device& d, hist_plan plan, atomic_kind K, int per_el) {
  if (K == atomic_kind::xcg) throw usage_error("hist: split histograms take hardware or CAS atomics, not locks");
  const kernel_version k = split_version(K, per_el);
  if (d.resident_blocks(k, plan.block_threads, plan.shared_bytes) < 1) throw resource_error("hist: the kernel cannot run");
  const int clusters = d.resident_clusters(k, plan.block_threads, plan.shared_bytes, plan.split);
  if (clusters < 1) throw resource_error("hist: no cluster fits");
  plan.grid = std::int64_t(clusters) * plan.split;
  plan.items_per_thread = k.items;
  launched r;
  r.kernel = k.name();
  r.rows = plan.block_partials ? clusters : 0;
  r.plan = plan;
  return r;
}

launched legacy_partition(const fake_device& d, hist_plan plan, std::int64_t n, atomic_kind K, std::size_t vbytes,
                          int per_el) {
  const int S = plan.passes;
  const launched count = legacy_shared(d, plan_hist_shared(d.p, n, S, 4, atomic_kind::hdw, {}), n, 1, atomic_kind::hdw, 4, per_el);
  kernel_version k;
  k.fam = family::bucket;
  k.items = K == atomic_kind::cas ? (plan.items_per_thread == hist_tuning::shared_items_cas_alone ? hist_tuning::shared_items_cas_alone
                                                                                                 : hist_tuning::shared_items_cas_contended)
                                  : hist_tuning::items_per_thread;
  const std::size_t bytes = std::size_t(plan.multi) * std::size_t(plan.chunk) * vbytes;
  const int fit = d.resident_blocks(k, plan.block_threads, bytes);
  if (fit < 1) throw resource_error("hist: the kernel cannot run");
  const int per_sm = plan.blocks_per_sm > 0 ? std::min(fit, plan.blocks_per_sm) : fit;
  plan.grid = std::int64_t(d.p.sm_count) * per_sm;
  plan.shared_bytes = bytes;
  plan.items_per_thread = k.items;
  plan.items_wide = 0;
  launched r;
  r.kernel = k.name();
  r.rows = plan.grid + S;
  r.count = count.plan.describe() + " " + count.kernel;
  r.plan = plan;
  return r;
}

launched legacy_single(const fake_device& d, const call& c, std::int64_t n, std::int64_t H) {
  const atomic_kind K = kind_of(c);
  const std::size_t el = el_of(c);
  const double u = u_of(c);
  const int per_el = c.op.per_element;
  const auto inspect = [&] { return c.inspected > 0 ? c.inspected : 1.0; };
  hist_plan plan = plan_hist(d.p, n, H, el, K, c.o, inspect, u, per_el);
  if (n == 0 || H == 0) return none(plan);
  if (plan.partitioned && c.o.partition == hist_toggle::automatic &&
      partition_temp_bytes(plan, n * per_el, c.op.value_bytes, d.p.sm_count) > d.free_bytes() / 4 * 3) {
    hist_options whole = c.o;
    whole.partition = hist_toggle::off;
    plan = plan_hist(d.p, n, H, el, K, whole, inspect, u, per_el);
  }
  if (plan.split > 1 && c.o.split == 0 && !legacy_split_fits(d, plan, per_el)) {
    hist_options global = c.o;
    global.strategy = hist_strategy::global;
    plan = plan_hist(d.p, n, H, el, K, global, inspect, u, per_el);
  }
  if (plan.partitioned) {
    if (K == atomic_kind::xcg) throw usage_error("hist: partitioned histograms take hardware or CAS atomics, not locks");
    return legacy_partition(d, plan, n, K, c.op.value_bytes, per_el);
  }
  if (plan.split > 1) return legacy_split(d, plan, K, per_el);
  if (plan.strategy == hist_strategy::shared) return legacy_shared(d, plan, n, 1, K, c.op.value_bytes, per_el);
  return legacy_global(d, plan, n, K, c.op.tolerance, per_el);
}

launched legacy_batched(const fake_device& d, const call& c) {
  const atomic_kind K = kind_of(c);
  const std::size_t el = el_of(c);
  const std::int64_t batches = c.batches, seg_len = c.n, H = c.H;
  if (c.o.strategy != hist_strategy::global && el <= d.p.shared_per_block_optin) {
    hist_options o = c.o;
    if (o.passes == 0 && o.thread_private != hist_toggle::on) o.passes = 1;
    hist_plan plan;
    bool fits = true;
    try {
      plan = plan_hist_shared(d.p, seg_len, H, el, K, o, u_of(c));
    } catch (const usage_error&) {
      if (c.o.strategy == hist_strategy::shared) throw;
      fits = false;
    }
    if (fits && (plan.passes == 1 || c.o.strategy == hist_strategy::shared)) {
      plan.batches = batches;
      plan.n = batches * seg_len;
      if (plan.n == 0 || H == 0) return none(plan);
      return legacy_shared(d, plan, seg_len, batches, K, c.op.value_bytes, c.op.per_element);
    }
  }
  launched r = legacy_single(d, c, batches * seg_len, batches * H);
  r.plan.batches = batches;
  return r;
}

// Two histograms in one pass: sizes and kinds of a and b.
struct fused_call {
  std::string name;
  std::int64_t n, Ha, Hb;
  std::size_t a_bytes, b_bytes;
  atomic_kind Ka, Kb;
  hist_options o;
};

launched legacy_fused(const fake_device& d, const fused_call& c) {
  const auto& p = d.p;
  hist_plan plan;
  plan.atomic = c.Ka == c.Kb ? c.Ka : atomic_kind::cas;
  plan.n = c.n;
  plan.bins = c.Ha + c.Hb;
  plan.block_threads = hist_tuning::shared_block;
  plan.items_per_thread = 4;
  const std::size_t copy = std::size_t(c.Ha) * c.a_bytes + 16 + std::size_t(c.Hb) * c.b_bytes;
  const std::size_t limit = std::max(p.shared_per_block_optin, p.shared_per_block) - hist_tuning::shared_reserved_per_block;
  const bool shared = c.Ka != atomic_kind::xcg && c.Kb != atomic_kind::xcg && copy <= limit && c.o.strategy != hist_strategy::global;
  if (c.o.strategy == hist_strategy::shared && !shared)
    throw usage_error("hist_fused: the two histograms do not fit shared memory together (or need locks)");
  if (c.n == 0 || c.Ha + c.Hb == 0) return none(plan);
  const std::size_t half = p.shared_per_sm / 2 - hist_tuning::shared_reserved_per_block;
  const std::size_t L = copy <= half ? half : limit;
  int M = 1;
  if (shared) {
    M = c.o.multi > 0 ? c.o.multi : int(std::clamp<std::size_t>(L / copy, 1, hist_tuning::shared_block));
    M = std::min(M, hist_tuning::shared_block);
  }
  const std::size_t bytes = shared ? std::size_t(M) * copy : 0;
  if (bytes > limit) throw usage_error("hist_fused: M=" + std::to_string(M) + " copies do not fit shared memory");
  plan.strategy = shared ? hist_strategy::shared : hist_strategy::global;
  plan.multi = M;
  plan.chunk = c.Ha + c.Hb;
  plan.shared_bytes = bytes;
  kernel_version k;
  k.fam = family::fused;
  k.items = 4;
  k.exclusive = !shared;  // (the fused kernel's global version, in place)
  const int per_sm = d.resident_blocks(k, plan.block_threads, bytes);
  if (per_sm < 1) throw resource_error("hist_fused: the kernel cannot run");
  plan.grid = std::clamp<std::int64_t>(ceil_div(c.n, std::int64_t(plan.block_threads) * plan.items_per_thread), 1,
                                       std::int64_t(p.sm_count) * per_sm);
  launched r;
  r.kernel = shared ? "fused<shared>" : "fused<global>";
  r.plan = plan;
  return r;
}
// ---- End of the transcription.

std::string record(const launched& r) {
  const hist_plan& p = r.plan;
  std::ostringstream s;
  s << to_string(p.strategy) << " " << to_string(p.atomic) << " n=" << p.n << " H=" << p.bins << " M=" << p.multi
    << " Mmodel=" << p.model_multi << " S=" << p.passes << " Hchk=" << p.chunk << " C=" << p.coop << " block=" << p.block_threads
    << " per_sm=" << p.blocks_per_sm << " grid=" << p.grid << " items=" << p.items_per_thread << " wide=" << p.items_wide
    << " smem=" << p.shared_bytes << " RF=" << p.race_factor << (p.race_factor_estimated ? "(inspected)" : "")
    << " batches=" << p.batches << " K=" << p.blocks_per_histogram << " private=" << p.thread_private << " cluster=" << p.cluster
    << " partials=" << p.block_partials << " split=" << p.split << " partitioned=" << p.partitioned << " ahead=" << p.load_ahead
    << " | kernel=" << r.kernel << " side_by_side=" << r.side_by_side << " rows=" << r.rows;
  if (!r.count.empty()) s << " | count: " << r.count;
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
    for (const call& c : single_calls()) lines.push_back(gpu + " hist " + c.name + " : " + outcome([&] { return legacy_single(d, c, c.n, c.H); }));
    for (const call& c : batched_calls()) lines.push_back(gpu + " hist_batched " + c.name + " : " + outcome([&] { return legacy_batched(d, c); }));
    for (const fused_call& c : fused_calls()) lines.push_back(gpu + " hist_fused " + c.name + " : " + outcome([&] { return legacy_fused(d, c); }));
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
