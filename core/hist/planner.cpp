#include "core/hist/plan.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <sstream>

#include "core/error.hpp"

namespace soac {

namespace {
// An operator whose updates barely contend however many threads share a copy: a declared
// contention tolerance of at least a block's threads (arg_max, whose updates mostly lose and
// only read). More copies buy it nothing but their init and merge.
bool contention_tolerant(double u) { return u >= double(hist_tuning::shared_block); }
}  // namespace

int max_shared_passes(atomic_kind kind, double u) {
  switch (kind) {
    case atomic_kind::hdw: return hist_tuning::max_shared_passes_hdw;
    case atomic_kind::cas:
      return contention_tolerant(u) ? hist_tuning::max_shared_passes_cas_tolerant : hist_tuning::max_shared_passes_cas;
    default: return hist_tuning::max_shared_passes_xcg;
  }
}

namespace {

std::int64_t ceil_div64(std::int64_t a, std::int64_t b) { return (a + b - 1) / b; }

void check_common(std::int64_t n, std::int64_t bins, std::size_t el_bytes, const hist_options& o) {
  if (n < 0) throw usage_error("hist: n must not be negative");
  if (bins < 0) throw usage_error("hist: the number of bins must not be negative");
  if (el_bytes == 0) throw usage_error("hist: empty value type");
  check_hist_options(o);
}

// The shared plans whose block results are costly to fold with atomics: CAS updates that write
// (not a contention-tolerant operator) from shared copies (not thread-private ones), in one pass
// or several side by side. Block partials are for these.
bool cas_that_writes(const hist_plan& plan, bool tolerant) {
  return plan.atomic == atomic_kind::cas && !tolerant && !plan.thread_private;
}

// Blocks per cluster for a shared plan of shared atomics (not thread-private copies) with
// `per_sm` blocks per SM; the launch falls back to 1 where the grid or the device cannot hold
// them. See hist_tuning::cluster_note.
int shared_cluster(const hist_options& o, bool tolerant, int per_sm) {
  if (o.overrides.cluster > 0) return o.overrides.cluster;
  return tolerant && per_sm > 1 ? hist_tuning::cluster_tolerant : 1;
}

// Whether a shared plan folds through block partials; see hist_tuning::partials_for_cas.
bool shared_partials(const hist_options& o, const hist_plan& plan, bool tolerant) {
  if (o.overrides.block_partials != hist_toggle::automatic) return o.overrides.block_partials == hist_toggle::on;
  return hist_tuning::partials_for_cas && cas_that_writes(plan, tolerant);
}

// Whether a shared plan of shared atomics with `per_sm` blocks per SM issues each step's loads
// before the previous step's updates; see hist_tuning::load_ahead_note.
bool shared_load_ahead(const hist_options& o, atomic_kind kind, bool tolerant, int per_sm) {
  if (o.overrides.load_ahead != hist_toggle::automatic) return o.overrides.load_ahead == hist_toggle::on;
  return per_sm == 1 && (kind == atomic_kind::hdw || (kind == atomic_kind::cas && !tolerant));
}

// Shared memory one block may use when `per_sm` blocks share an SM (footnote 7).
std::size_t shared_limit(const device_properties& p, int per_sm) {
  const std::size_t share = p.shared_per_sm / std::size_t(per_sm);
  const std::size_t usable = share > hist_tuning::shared_reserved_per_block ? share - hist_tuning::shared_reserved_per_block : 0;
  return std::min(usable, std::max(p.shared_per_block_optin, p.shared_per_block));
}

// Shared memory one block of contended CAS may use when `per_sm` blocks share an SM; see
// hist_tuning::cas_shared_per_sm.
std::size_t cas_shared_limit(int per_sm) {
  const std::size_t share = hist_tuning::cas_shared_per_sm / std::size_t(per_sm);
  return share > hist_tuning::shared_reserved_per_block ? share - hist_tuning::shared_reserved_per_block : 0;
}

// The thread-private shape (hist_tuning::private_min_threads): blocks of `block` threads, each
// with its own copy of H bins, `per_sm` blocks per SM; the most threads per SM, then the fewest
// blocks. block is 0 when not even a warp's copies fit.
struct private_shape {
  int block = 0, per_sm = 0;
  int threads_per_sm() const { return block * per_sm; }
};

private_shape best_private_shape(const device_properties& p, std::int64_t H, std::size_t el) {
  constexpr int max_blocks_per_sm = 32;  // sm_80 and later
  private_shape best;
  const int warp = hist_tuning::warp_size;
  const int max_block = std::min(hist_tuning::shared_block, std::max(warp, p.max_threads_per_block));
  for (int k = 1; k <= std::min(max_blocks_per_sm, std::max(1, p.max_threads_per_sm / warp)); ++k) {
    const std::int64_t copies = std::int64_t(shared_limit(p, k) / (std::size_t(std::max<std::int64_t>(H, 1)) * el));
    const std::int64_t threads = std::min<std::int64_t>({copies, max_block, std::max(warp, p.max_threads_per_sm / k)});
    const int block = int(threads - threads % warp);
    if (block >= warp && block * k > best.threads_per_sm()) best = {block, k};
  }
  return best;
}

}  // namespace

hist_plan plan_hist_shared(const device_properties& p, std::int64_t n, std::int64_t H, std::size_t el,
                           atomic_kind kind, const hist_options& o, double u) {
  check_common(n, H, el, o);
  hist_plan plan;
  plan.strategy = hist_strategy::shared;
  plan.atomic = kind;
  plan.n = n;
  plan.bins = H;
  plan.block_threads = std::min(o.overrides.block > 0 ? o.overrides.block : hist_tuning::shared_block, std::max(32, p.max_threads_per_block));
  plan.items_per_thread = hist_tuning::items_per_thread;
  const int B = plan.block_threads;
  const int k = std::max(1, p.max_threads_per_sm / B);  // blocks that fit an SM by threads
  const std::size_t L_k = shared_limit(p, k), L_1 = shared_limit(p, 1);
  const std::int64_t Hs = std::max<std::int64_t>(H, 1);
  const auto fits = [&](std::int64_t M, std::int64_t chunk, std::size_t L) { return std::size_t(M * chunk) * el <= L; };

  // One sub-histogram per block for a contention-tolerant operator.
  const bool tolerant = contention_tolerant(u);
  // Eqs. 1-3 for a per-block limit L with `per_sm` blocks per SM.
  struct shape { std::int64_t M, S, chunk; std::size_t L; int per_sm; };
  const auto model = [&](std::size_t L, int per_sm) {
    if (kind == atomic_kind::cas && !tolerant && per_sm > 1) L = std::min(L, cas_shared_limit(per_sm));
    const std::int64_t blocks = std::int64_t(p.sm_count) * per_sm;
    const std::size_t L_multi = kind == atomic_kind::hdw ? std::min(L, hist_tuning::hdw_multi_bytes) : tolerant ? 0 : L;
    const double m = double(std::min<std::int64_t>(std::int64_t(L_multi / el), ceil_div64(std::max<std::int64_t>(n, 1), blocks))) / double(Hs);
    const std::int64_t M = std::max<std::int64_t>(1, std::min<std::int64_t>(std::int64_t(std::floor(m)), B));
    const std::int64_t len = std::max<std::int64_t>(1, std::int64_t(L / (el * M)));
    const std::int64_t S = ceil_div64(Hs, len);
    return shape{M, S, ceil_div64(Hs, S), L, per_sm};
  };
  if (std::size_t(1) * el > L_1) throw usage_error("hist: one bin (" + std::to_string(el) + " bytes) does not fit shared memory");

  shape s{};
  if (o.passes > 0) {
    const std::int64_t S = std::min<std::int64_t>(o.passes, Hs);
    const std::int64_t chunk = ceil_div64(Hs, S);
    const bool small = fits(std::max(1, o.multi), chunk, L_k);
    const std::size_t L = small ? L_k : L_1;
    std::int64_t M = o.multi > 0 ? std::min(o.multi, B) : std::max<std::int64_t>(1, std::min<std::int64_t>(B, std::int64_t(L / (el * chunk))));
    if (!fits(M, chunk, L))
      throw usage_error("hist: M=" + std::to_string(M) + " sub-histograms of " + std::to_string(chunk) + " bins (S=" +
                        std::to_string(S) + ") do not fit " + std::to_string(L_1) + " bytes of shared memory");
    s = {M, S, chunk, L, small ? k : 1};
  } else if (o.multi > 0) {
    const std::int64_t M = std::min(o.multi, B);
    const bool small = fits(M, Hs, L_k);
    const std::size_t L = small || fits(M, Hs, L_1) ? (small ? L_k : L_1) : L_1;
    const std::int64_t len = std::int64_t(L / (el * M));
    if (len < 1) throw usage_error("hist: M=" + std::to_string(M) + " sub-histograms do not fit shared memory");
    const std::int64_t S = ceil_div64(Hs, len);
    s = {M, S, ceil_div64(Hs, S), L, small ? k : 1};
  } else {
    s = model(L_k, k);
    // Footnote 7: only when one sub-histogram does not fit the shared memory of k blocks per SM,
    // run one block per SM with all of it; this holds for CAS too, with block partials and one
    // element per step (docs/tuning/hist.md, footnote 7 for CAS). HDW also beyond a small
    // histogram (hist_tuning::hdw_one_block_bytes).
    const bool large_hdw = kind == atomic_kind::hdw && std::size_t(s.M * s.chunk) * el > hist_tuning::hdw_one_block_bytes;
    if (k > 1 && (s.S > 1 || large_hdw)) s = model(L_1, 1);
  }
  const bool modelled = o.multi <= 0 && o.passes <= 0;
  // Thread-private copies: forced, or (model only) for CAS and locks when enough threads stay.
  if (o.overrides.thread_private == hist_toggle::on || (o.overrides.thread_private == hist_toggle::automatic && modelled && kind != atomic_kind::hdw)) {
    const private_shape ps = best_private_shape(p, Hs, el);
    const bool forced = o.overrides.thread_private == hist_toggle::on;
    if (forced && !modelled)
      throw usage_error("hist: thread-private sub-histograms set M to the block size; do not force M or S with them");
    if (forced && ps.block == 0)
      throw usage_error("hist: thread-private sub-histograms: " + std::to_string(hist_tuning::warp_size) + " copies of " +
                        std::to_string(Hs) + " bins do not fit shared memory");
    const int min_threads = tolerant ? hist_tuning::private_min_threads_tolerant : hist_tuning::private_min_threads;
    if (ps.block > 0 && (forced || ps.threads_per_sm() >= min_threads)) {
      plan.thread_private = true;
      plan.block_threads = plan.multi = plan.model_multi = ps.block;
      plan.passes = 1;
      plan.chunk = Hs;
      plan.coop = 1;
      plan.shared_bytes = std::size_t(ps.block) * std::size_t(Hs) * el;
      const bool few = ps.threads_per_sm() < hist_tuning::private_many_threads && ps.block <= hist_tuning::private_items_max_block;
      plan.items_per_thread = few ? hist_tuning::private_items_per_thread : hist_tuning::items_per_thread;
      plan.blocks_per_sm = ps.per_sm;
      plan.grid = std::max<std::int64_t>(1, std::min<std::int64_t>(std::int64_t(p.sm_count) * ps.per_sm,
                                                                   ceil_div64(n, std::int64_t(ps.block) * plan.items_per_thread)));
      plan.cluster = o.overrides.cluster > 0 ? o.overrides.cluster : 1;
      plan.block_partials = shared_partials(o, plan, tolerant);
      return plan;
    }
  }
  plan.model_multi = int(s.M);
  // The interleaved layout needs a multiple of the warp size (see hist_tuning::warp_size); CAS
  // keeps every copy that fits instead.
  const bool round = modelled && kind != atomic_kind::cas && s.M >= hist_tuning::warp_size;
  plan.multi = round ? int(s.M - s.M % hist_tuning::warp_size) : int(s.M);
  plan.passes = int(s.S);
  // CAS updates: fewer elements per step, for operators that write on most updates chosen by
  // each block from a sample (hist_tuning::shared_items_cas_contended).
  if (kind == atomic_kind::cas) {
    if (tolerant) {
      plan.items_per_thread = s.per_sm > 1 ? hist_tuning::shared_items_cas_contended : hist_tuning::shared_items_cas_alone;
    } else {
      plan.items_per_thread = hist_tuning::shared_items_cas_contended;
      plan.items_wide = hist_tuning::shared_items_cas_wide;
    }
  }
  plan.chunk = s.chunk;
  plan.coop = ceil_div64(B, plan.multi);
  plan.shared_bytes = std::size_t(plan.multi) * std::size_t(s.chunk) * el;
  const std::int64_t per_block = std::int64_t(B) * plan.items_per_thread;
  plan.blocks_per_sm = s.per_sm;
  plan.grid = std::max<std::int64_t>(1, std::min<std::int64_t>(std::int64_t(p.sm_count) * s.per_sm, ceil_div64(n, per_block)));
  plan.cluster = shared_cluster(o, tolerant, s.per_sm);
  plan.block_partials = shared_partials(o, plan, tolerant);
  plan.load_ahead = shared_load_ahead(o, kind, tolerant, s.per_sm);
  return plan;
}

hist_plan plan_hist_split(const device_properties& p, std::int64_t n, std::int64_t H, std::size_t el, atomic_kind kind,
                          int split, const hist_options& o) {
  check_common(n, H, el, o);
  if (kind == atomic_kind::xcg) throw usage_error("hist: split histograms take hardware or CAS atomics, not locks");
  if (p.compute_major < 9) throw usage_error("hist: split histograms need thread-block clusters (sm_90 or later)");
  if (H >= (std::int64_t{1} << 31)) throw usage_error("hist: split histograms take fewer than 2^31 bins");
  hist_plan plan;
  plan.strategy = hist_strategy::shared;
  plan.atomic = kind;
  plan.n = n;
  plan.bins = H;
  plan.split = split;
  plan.block_threads = std::min(hist_tuning::shared_block, std::max(32, p.max_threads_per_block));
  plan.chunk = ceil_div64(std::max<std::int64_t>(H, 1), split);
  plan.shared_bytes = std::size_t(plan.chunk) * el;
  const int k = std::max(1, p.max_threads_per_sm / plan.block_threads);
  const int per_sm = plan.shared_bytes <= shared_limit(p, k) ? k : 1;
  if (plan.shared_bytes > shared_limit(p, 1))
    throw usage_error("hist: a slice of " + std::to_string(plan.chunk) + " bins (H / " + std::to_string(split) +
                      ") does not fit one block's shared memory");
  plan.coop = std::int64_t(plan.block_threads) * split;
  plan.items_per_thread = kind == atomic_kind::hdw ? hist_tuning::items_per_thread : hist_tuning::split_items_cas;
  plan.block_partials = kind != atomic_kind::hdw;
  const std::int64_t wave = std::int64_t(p.sm_count) * per_sm;
  plan.grid = std::max<std::int64_t>(split, wave - wave % split);
  return plan;
}

hist_plan plan_hist_partition(const device_properties& p, std::int64_t n, std::int64_t updates, std::int64_t H,
                              std::size_t el, atomic_kind kind, const hist_options& o, double u) {
  check_common(n, H, el, o);
  if (kind == atomic_kind::xcg) throw usage_error("hist: partitioned histograms take hardware or CAS atomics, not locks");
  if (el > 8) throw usage_error("hist: partitioned histograms take values of at most 8 bytes (these have " + std::to_string(el) + ")");
  if (o.passes > 0) throw usage_error("hist: a partitioned histogram chooses its own S; do not force S with it");
  if (updates >= (std::int64_t{1} << 31))
    throw usage_error("hist: a partitioned histogram takes fewer than 2^31 updates (this call has " + std::to_string(updates) + ")");
  const int B = std::min(hist_tuning::shared_block, std::max(32, p.max_threads_per_block));
  const int k = std::max(1, p.max_threads_per_sm / B);
  std::size_t L = shared_limit(p, k);
  if (kind == atomic_kind::cas && !contention_tolerant(u) && k > 1) L = std::min(L, cas_shared_limit(k));
  const std::int64_t per_bucket = std::int64_t(L / el), Hs = std::max<std::int64_t>(H, 1);
  if (per_bucket < 1) throw usage_error("hist: one bin (" + std::to_string(el) + " bytes) does not fit shared memory");
  const std::int64_t S = ceil_div64(Hs, per_bucket);
  if (S > hist_tuning::partition_max_buckets)
    throw usage_error("hist: a partitioned histogram of " + std::to_string(H) + " bins needs " + std::to_string(S) +
                      " buckets of at most " + std::to_string(per_bucket) + " bins; at most " +
                      std::to_string(hist_tuning::partition_max_buckets) + " are possible");
  const std::int64_t chunk = ceil_div64(Hs, S);
  // Each bucket as one pass of an ordinary shared plan over its chunk (the updates spread over
  // the buckets); only the shape of the block carries over.
  hist_options one = o;
  one.strategy = hist_strategy::shared;
  one.passes = 1;
  one.overrides.thread_private = hist_toggle::off;
  one.overrides.cluster = 1;
  one.overrides.block_partials = hist_toggle::off;
  one.overrides.split = 0;
  one.overrides.partition = hist_toggle::off;
  hist_plan plan = plan_hist_shared(p, ceil_div64(std::max<std::int64_t>(n, 1), S), chunk, el, kind, one, u);
  plan.n = n;
  plan.bins = H;
  plan.partitioned = true;
  plan.items_wide = 0;  // no per-block sample (see hist_partition_run)
  plan.load_ahead = false;  // the bucket kernel steps by warp (warp_steps)
  plan.passes = int(S);
  plan.chunk = chunk;
  plan.grid = 0;  // set at launch: the resident blocks
  return plan;
}

std::size_t partition_temp_bytes(const hist_plan& plan, std::int64_t updates, std::size_t value_bytes,
                                 std::int64_t sm_count) {
  const std::int64_t rows = sm_count * std::max(1, plan.blocks_per_sm) + plan.passes;
  return std::size_t(updates) * (4 + value_bytes) + std::size_t(rows * plan.chunk) * value_bytes;
}

hist_plan plan_hist_global(const device_properties& p, std::int64_t n, std::int64_t H, std::size_t el,
                           atomic_kind kind, double rf, const hist_options& o, double u_given) {
  check_common(n, H, el, o);
  namespace t = hist_tuning;
  hist_plan plan;
  plan.strategy = hist_strategy::global;
  plan.atomic = kind;
  plan.n = n;
  plan.bins = H;
  plan.block_threads = t::global_block;
  // u_given > 0: a contention-tolerant CAS operator (see model_contention_tolerance).
  plan.items_per_thread = u_given > 0 && kind == atomic_kind::cas ? t::global_items_per_thread_tolerant : t::items_per_thread;
  plan.race_factor = rf;
  const double T = double(std::int64_t(p.sm_count) * p.max_threads_per_sm);
  const double Hs = double(std::max<std::int64_t>(H, 1));
  const double L2 = double(p.l2_bytes);
  const double u = u_given > 0 ? u_given : kind == atomic_kind::hdw ? t::u_hdw : t::u_other;
  // Eq. 4: sparse histograms leave lines untouched, so the L2 holds RF-times more sub-histograms,
  // less the part of each line a lone bin wastes.
  // Average bytes per bin in L2: xcg keeps its locks in a separate array, so the value and the
  // lock each fill their own lines (the paper's layout 2: (sizeof + 4) / 2); this is what
  // reproduces Table I's XCG rows.
  const double el_avg = kind == atomic_kind::xcg ? double(el) / 2 : double(el);
  const double race = std::max(1.0, t::k_rf * std::max(rf, 1.0) / std::max(1.0, t::l2_line_bytes / el_avg));
  const double budget = t::f_l2 * L2 * race;  // bytes of L2 the sub-histograms may take
  std::int64_t S, M;
  double chunk;
  if (o.passes > 0 || o.multi > 0) {
    S = o.passes > 0 ? std::min<std::int64_t>(o.passes, H > 0 ? H : 1) : 1;
    chunk = std::ceil(Hs / double(S));
    M = o.multi > 0 ? o.multi : std::max<std::int64_t>(1, std::int64_t(std::floor(T / std::min(T, u * chunk / std::max(1e-9, std::min(budget / double(el), double(std::max<std::int64_t>(n, 1))) / T)))));
  } else {
    // Eq. 5: passes so that the sub-histograms of the least cooperation allowed fit L2.
    const double c_max = std::min(T, Hs / t::k_min);
    const double m_min = std::max(1.0, std::floor(T / std::max(1.0, c_max)));
    S = std::max<std::int64_t>(1, std::int64_t(std::ceil(m_min * Hs * el_avg / budget)));
    chunk = std::ceil(Hs / double(S));
    // Eq. 6: the largest M that still fits.
    const double k_max = std::min(budget / double(el), double(std::max<std::int64_t>(n, 1))) / T;
    const double C = std::min(T, u * chunk / k_max);
    M = std::max<std::int64_t>(1, std::int64_t(std::floor(T / std::max(1.0, C))));
  }
  plan.multi = plan.model_multi = int(std::min<std::int64_t>(M, std::int64_t(T)));
  plan.passes = int(S);
  plan.chunk = std::int64_t(chunk);
  plan.coop = std::int64_t(std::ceil(T / plan.multi));
  const std::int64_t per_block = std::int64_t(plan.block_threads) * plan.items_per_thread;
  // One tile per thread, up to the largest gridDim.x.
  plan.grid = std::clamp<std::int64_t>(ceil_div64(n, per_block), 1, std::numeric_limits<std::int32_t>::max());
  return plan;
}

namespace {
// Whether the model may partition (hist_tuning::partition_note) a histogram that needs
// partition_min_passes shared passes or more: CAS operators that write on most updates on sm_90
// and later, unless options force a strategy or shape.
bool partition_pays(const device_properties& p, atomic_kind kind, double u, const hist_options& o) {
  // Measured on the H100 only: older GPUs keep the paper's switch.
  return p.compute_major >= 9 && o.overrides.partition == hist_toggle::automatic && kind == atomic_kind::cas && !contention_tolerant(u) &&
         o.strategy == hist_strategy::automatic && o.multi == 0 && o.passes == 0 && o.overrides.split == 0;
}
}  // namespace

hist_plan plan_hist(const device_properties& p, std::int64_t n, std::int64_t H, std::size_t el, atomic_kind kind,
                    const hist_options& o, const std::function<double()>& inspect, double u, int updates_per_element) {
  check_common(n, H, el, o);
  const std::int64_t updates = n * std::max(1, updates_per_element);
  if (o.overrides.partition == hist_toggle::on && o.strategy != hist_strategy::global)
    return plan_hist_partition(p, n, updates, H, el, kind, o, u);
  auto global = [&] {
    bool estimate = o.race_factor <= 0 && !(o.multi > 0 || o.passes > 0);
    if (estimate) {
      // The inspector waits for the device; skip it when no RF (1 .. H, its range) changes the plan.
      const hist_plan lo = plan_hist_global(p, n, H, el, kind, 1.0, o, u);
      const hist_plan hi = plan_hist_global(p, n, H, el, kind, double(std::max<std::int64_t>(H, 1)), o, u);
      if (lo.multi == hi.multi && lo.passes == hi.passes) estimate = false;
    }
    const double rf = o.race_factor > 0 ? o.race_factor : estimate && inspect ? inspect() : 1.0;
    hist_plan plan = plan_hist_global(p, n, H, el, kind, rf, o, u);
    plan.race_factor_estimated = estimate && inspect;
    return plan;
  };
  if (o.overrides.split > 1 && o.strategy != hist_strategy::global) return plan_hist_split(p, n, H, el, kind, o.overrides.split, o);
  switch (o.strategy) {
    case hist_strategy::shared: return plan_hist_shared(p, n, H, el, kind, o, u);
    case hist_strategy::global: return global();
    default: break;
  }
  // V-A: model-driven switch on the shared-memory multi-pass degree.
  hist_options model = o;
  model.multi = model.passes = 0;
  const std::size_t L_1 = std::max(p.shared_per_block_optin, p.shared_per_block);
  if (el <= L_1) {
    const hist_plan shared = plan_hist_shared(p, n, H, el, kind, model, u);
    // Contention-tolerant operators also leave a pass that takes one block per SM where the
    // threads would fit more (see hist_tuning::max_shared_passes_cas_tolerant).
    const bool lone_tolerant = contention_tolerant(u) && !shared.thread_private && shared.blocks_per_sm == 1 &&
                               p.max_threads_per_sm / shared.block_threads > 1;
    if (shared.passes <= max_shared_passes(kind, u) && !lone_tolerant &&
        !(shared.passes >= hist_tuning::partition_min_passes && partition_pays(p, kind, u, o)))
      return o.multi || o.passes ? plan_hist_shared(p, n, H, el, kind, o, u) : shared;
  }
  // From partition_min_passes shared passes on, CAS operators that write partition their
  // updates by chunk (hist_tuning::partition_note) where the buckets allow.
  if (partition_pays(p, kind, u, o)) {
    try {
      return plan_hist_partition(p, n, updates, H, el, kind, o, u);
    } catch (const usage_error&) {
      // Too many buckets or updates, or too large values: the other strategies below.
    }
  }
  // Beyond that, CAS operators that write split the histogram over a cluster where its slices fit
  // (hist_tuning::split_note).
  if (o.overrides.split == 0 && !(o.multi > 0 || o.passes > 0) && kind == atomic_kind::cas && !contention_tolerant(u) &&
      p.compute_major >= 9)
    for (int c = 2; c <= hist_tuning::split_max_cas; c *= 2)
      if (std::size_t(ceil_div64(std::max<std::int64_t>(H, 1), c)) * el <= shared_limit(p, 1))
        return plan_hist_split(p, n, H, el, kind, c, o);
  return global();
}

inspector_shape plan_inspector(std::int64_t n, std::int64_t H) {
  inspector_shape s;
  if (n <= 0 || H <= 0) return s;
  s.group = std::min(n, H);
  const std::int64_t budget = std::max(s.group, n / hist_tuning::inspector_sample_divisor);
  s.groups = int(std::clamp<std::int64_t>(budget / s.group, 1, hist_tuning::inspector_max_groups));
  return s;
}

std::string hist_plan::describe() const {
  std::ostringstream s;
  if (host) {
    s << "host: " << host_threads << " OpenMP threads, one sub-histogram of " << bins << " bins each, "
      << to_string(atomic) << " class operator";
    if (batches > 1) s << ", " << batches << " batched histograms";
    return s.str();
  }
  s << to_string(strategy) << " M=" << multi << " S=" << passes << " Hchk=" << chunk << " C=" << coop << ", "
    << to_string(atomic) << " atomics, " << grid << "x" << block_threads << " threads, " << items_per_thread;
  if (items_wide > 0) s << " or " << items_wide << " (sampled per block)";
  s << " items/thread";
  if (strategy == hist_strategy::shared) {
    s << ", " << (shared_bytes + 1023) / 1024 << " KiB shared/block";
    if (multi % hist_tuning::warp_size == 0) s << ", interleaved";
    if (thread_private) s << ", thread-private (no atomics)";
    if (cluster > 1) s << ", clusters of " << cluster;
    if (block_partials) s << ", block results reduced from partials";
    if (split > 1) s << ", split over clusters of " << split << " (distributed shared memory)";
    if (partitioned) s << ", updates partitioned into " << passes << " buckets of Hchk bins first";
    if (load_ahead) s << ", loads issued a step ahead";
  }
  if (strategy == hist_strategy::global && race_factor > 0)
    s << ", RF=" << race_factor << (race_factor_estimated ? " (inspected)" : " (given)");
  if (batches > 1) s << ", " << batches << " histograms, K=" << blocks_per_histogram << " blocks each";
  return s.str();
}

// ---- The launch shape: the model's plan fitted to the compiled kernel versions and to what the
// device holds of them.
namespace {

// Elements per step of a version compiled for `per_thread`, for a functor of `per_element`
// updates (hist_items in core/hist/block.cuh).
int items_for(int per_thread, int per_element) { return std::max(1, per_thread / std::max(1, per_element)); }

int resident(const hist_device& d, const hist_kernel& k, int threads, std::size_t bytes, const char* what) {
  const int per_sm = d.resident_blocks(k, threads, bytes);
  if (per_sm < 1)
    throw resource_error(std::string(what) + ": the kernel cannot run with " + std::to_string(threads) + " threads and " +
                         std::to_string(bytes) + " bytes of shared memory per block");
  return per_sm;
}

hist_kernel version(hist_kernel::family fam, int per_thread, int per_element) {
  hist_kernel k;
  k.fam = fam;
  k.per_thread = per_thread;
  k.items = items_for(per_thread, per_element);
  return k;
}

// The shared kernel's version, bytes, grid and folding for `batches` histograms of seg_len
// elements (1: a single histogram, whose passes run side by side). Clusters need the version
// with the cluster fold (see merge_block) where it keeps the blocks per SM, whole clusters per
// histogram and pass, and every cluster of the grid (up to a full wave) resident at once: a shape
// the GPCs cannot hold would leave SMs idle or run a second wave.
// `as`: the functor flags of the version (hist_kernel::flat, counts).
void shape_shared(const device_properties& p, const hist_device& d, hist_plan& plan, std::int64_t seg_len,
                  std::int64_t batches, const hist_call& c, const hist_kernel& as) {
  namespace t = hist_tuning;
  const std::size_t count = std::size_t(plan.multi) * std::size_t(plan.chunk);
  // Values, then (xcg sharing copies) the locks at the next 4-byte boundary, as the kernel lays
  // them out.
  const bool shared_locks = c.kind == atomic_kind::xcg && !plan.thread_private;
  const std::size_t bytes = shared_locks ? ((count * c.value_bytes + 3) & ~std::size_t(3)) + count * 4 : count * c.value_bytes;
  hist_kernel k;
  if (plan.thread_private) {
    const bool many = plan.items_per_thread > t::items_per_thread;
    k = version(hist_kernel::family::shared, many ? t::private_items_per_thread : t::items_per_thread, c.per_element);
    k.exclusive = true;
    if (many) k.max_block = t::private_items_max_block;
  } else if (c.kind == atomic_kind::cas) {
    // The plan's elements per step: sampled per block, or fixed for contention-tolerant operators.
    const bool alone = plan.items_wide == 0 && plan.items_per_thread == t::shared_items_cas_alone;
    k = version(hist_kernel::family::shared, alone ? t::shared_items_cas_alone : t::shared_items_cas_contended, c.per_element);
    if (plan.items_wide > 0) {
      k.wide = items_for(t::shared_items_cas_wide, c.per_element);
      k.ahead = plan.load_ahead;
    }
  } else {
    k = version(hist_kernel::family::shared, t::items_per_thread, c.per_element);
    k.ahead = plan.load_ahead;
  }
  k.flat = as.flat;
  k.counts = as.counts;
  if (plan.block_threads > k.max_block)
    throw usage_error("hist: a block of " + std::to_string(plan.block_threads) + " threads for a kernel built for at most " +
                      std::to_string(k.max_block));
  plan.load_ahead = k.ahead;
  plan.shared_bytes = bytes;
  // As many blocks per SM as fit, up to the plan's.
  const int fit = resident(d, k, plan.block_threads, bytes, "hist");
  const int per_sm = plan.blocks_per_sm > 0 ? std::min(fit, plan.blocks_per_sm) : fit;
  const std::int64_t resident_blocks = std::int64_t(p.sm_count) * per_sm;
  // Passes side by side: the blocks of a group of passes share each part of the input
  // (neighbouring block indices, so they run at the same time and all but one read it from L2)
  // instead of reading all of it from DRAM once per pass.
  const bool side = batches == 1 && plan.passes > 1;
  const std::int64_t group = side ? std::min<std::int64_t>(plan.passes, resident_blocks) : 1;
  // Blocks per pass of a single histogram; K blocks per histogram when batched (IV-C:
  // K = ceil((T / B) / Nout)).
  std::int64_t parts = 1;
  if (batches == 1) {
    parts = std::clamp<std::int64_t>(ceil_div64(seg_len, std::int64_t(plan.block_threads) * k.items), 1,
                                     std::max<std::int64_t>(1, resident_blocks / group));
  } else {
    plan.blocks_per_histogram = std::max<std::int64_t>(1, ceil_div64(resident_blocks, batches));
    if (plan.blocks_per_histogram * batches > std::numeric_limits<std::int32_t>::max())
      throw usage_error("hist: too many batched histograms for one grid");
  }
  // Block partials need a single histogram (passes side by side write their chunks of a part's
  // row); clusters and partials are for shared atomics, not thread-private copies.
  int cluster = 1;
  bool partials = false;
  if (!plan.thread_private) {
    partials = plan.block_partials && batches == 1;
    const int cl = plan.cluster;
    const bool whole = batches == 1 ? parts >= cl : plan.blocks_per_histogram % cl == 0;
    hist_kernel fold = k;  // contended steps only (see hist_tuning::cluster_note)
    fold.fam = hist_kernel::family::shared_fold;
    fold.wide = 0;
    fold.ahead = false;
    if (cl > 1 && whole && d.resident_blocks(fold, plan.block_threads, bytes) >= per_sm) {
      const std::int64_t grid = batches == 1 ? group * (parts - parts % cl) : plan.blocks_per_histogram * batches;
      if (std::int64_t(d.resident_clusters(fold, plan.block_threads, bytes, cl)) * cl >= std::min(grid, resident_blocks)) {
        cluster = cl;
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
  plan.kernel = k;
  plan.side_by_side = group;
  plan.partial_rows = partials ? plan.grid / group / cluster : 0;  // one per part (passes side by side share it)
}

// The global kernel: one tile per thread (the hardware hands blocks out in order, so the resident
// warps work on a narrow window of the input), up to the largest gridDim.x.
void shape_global(const hist_device& d, hist_plan& plan, const hist_call& c, const hist_kernel& as) {
  namespace t = hist_tuning;
  const bool tolerant = c.u() > 0;
  plan.kernel = version(hist_kernel::family::global, tolerant ? t::global_items_per_thread_tolerant : t::items_per_thread,
                        c.per_element);
  plan.kernel.flat = as.flat;
  plan.items_per_thread = plan.kernel.items;
  resident(d, plan.kernel, plan.block_threads, 0, "hist");
  plan.grid = std::clamp<std::int64_t>(ceil_div64(plan.n, std::int64_t(plan.block_threads) * plan.kernel.items), 1,
                                       std::numeric_limits<std::int32_t>::max());
}

hist_kernel split_version(atomic_kind kind, int per_element, const hist_kernel& as) {
  hist_kernel k = version(hist_kernel::family::split,
                          kind == atomic_kind::hdw ? hist_tuning::items_per_thread : hist_tuning::split_items_cas, per_element);
  k.flat = as.flat;
  return k;
}

// Whether the device holds at least one cluster of the split plan's shape (the model's split
// plans are CAS ones).
bool split_fits(const hist_device& d, const hist_plan& plan, int per_element, const hist_kernel& as) {
  const hist_kernel k = split_version(atomic_kind::cas, per_element, as);
  resident(d, k, plan.block_threads, plan.shared_bytes, "hist");
  return d.resident_clusters(k, plan.block_threads, plan.shared_bytes, plan.split) >= 1;
}

// The split kernel: one wave of whole clusters (a cluster's blocks must all be resident at once:
// they wait for each other).
void shape_split(const hist_device& d, hist_plan& plan, const hist_call& c, const hist_kernel& as) {
  if (c.kind == atomic_kind::xcg) throw usage_error("hist: split histograms take hardware or CAS atomics, not locks");
  plan.kernel = split_version(c.kind, c.per_element, as);
  resident(d, plan.kernel, plan.block_threads, plan.shared_bytes, "hist");
  const int clusters = d.resident_clusters(plan.kernel, plan.block_threads, plan.shared_bytes, plan.split);
  if (clusters < 1)
    throw resource_error("hist: no cluster of " + std::to_string(plan.split) + " blocks with " +
                         std::to_string(plan.shared_bytes) + " bytes of shared memory each fits this device (see hist_overrides::split)");
  plan.grid = std::int64_t(clusters) * plan.split;
  plan.items_per_thread = plan.kernel.items;
  plan.partial_rows = plan.block_partials ? clusters : 0;
}

// The partitioned strategy: the count of updates per bucket (an int histogram of S bins, planned
// as any other), then the bucket kernel over every resident block. Compare-and-swap kinds take
// the plan's narrow steps: a sample per bucket (as the shared kernel's) would need a second loop,
// whose registers spill (see hist_bucket_kernel).
void shape_partition(const device_properties& p, const hist_device& d, hist_plan& plan, const hist_call& c,
                     const hist_kernel& as) {
  namespace t = hist_tuning;
  if (c.kind == atomic_kind::xcg) throw usage_error("hist: partitioned histograms take hardware or CAS atomics, not locks");
  hist_call count{c.n, plan.passes, 0, atomic_kind::hdw, 4, 0, c.per_element};
  hist_plan counted = plan_hist_shared(p, c.n, plan.passes, 4, atomic_kind::hdw, {});
  hist_kernel counts = as;
  counts.counts = true;
  shape_shared(p, d, counted, c.n, 1, count, counts);
  plan.bucket_count = std::make_shared<const hist_plan>(counted);
  const int per_thread = c.kind == atomic_kind::cas
                             ? (plan.items_per_thread == t::shared_items_cas_alone ? t::shared_items_cas_alone : t::shared_items_cas_contended)
                             : t::items_per_thread;
  plan.kernel = version(hist_kernel::family::bucket, per_thread, 1);  // per update, not per element
  plan.kernel.flat = as.flat;
  const std::size_t bytes = std::size_t(plan.multi) * std::size_t(plan.chunk) * c.value_bytes;
  const int fit = resident(d, plan.kernel, plan.block_threads, bytes, "hist");
  const int per_sm = plan.blocks_per_sm > 0 ? std::min(fit, plan.blocks_per_sm) : fit;
  plan.grid = std::int64_t(p.sm_count) * per_sm;
  plan.shared_bytes = bytes;
  plan.items_per_thread = plan.kernel.items;
  plan.items_wide = 0;
  plan.partial_rows = plan.grid + plan.passes;
}

// A single histogram of n elements and H bins: the model's plan, then its launch shape.
hist_plan plan_single(const device_properties& p, const hist_device& d, const hist_call& c, std::int64_t n, std::int64_t H,
                      const hist_options& o, const std::function<double()>& inspect, const hist_kernel& as) {
  const std::size_t el = c.el_bytes();
  hist_plan plan = plan_hist(p, n, H, el, c.kind, o, inspect, c.u(), c.per_element);
  if (n == 0 || H == 0) return plan;
  if (plan.partitioned && o.overrides.partition == hist_toggle::automatic &&
      partition_temp_bytes(plan, n * c.per_element, c.value_bytes, p.sm_count) > d.free_bytes() / 4 * 3) {
    // The model's partitioned plan needs its bucketed updates in device memory: without room
    // (a quarter of what is free kept back), the plan it would make otherwise.
    hist_options whole = o;
    whole.overrides.partition = hist_toggle::off;
    plan = plan_hist(p, n, H, el, c.kind, whole, inspect, c.u(), c.per_element);
  }
  if (plan.split > 1 && o.overrides.split == 0 && !split_fits(d, plan, c.per_element, as)) {
    // The model's split cluster does not fit this device: global memory, as for larger histograms.
    hist_options global = o;
    global.strategy = hist_strategy::global;
    plan = plan_hist(p, n, H, el, c.kind, global, inspect, c.u(), c.per_element);
  }
  if (plan.partitioned) shape_partition(p, d, plan, c, as);
  else if (plan.split > 1) shape_split(d, plan, c, as);
  else if (plan.strategy == hist_strategy::shared) shape_shared(p, d, plan, n, 1, c, as);
  else shape_global(d, plan, c, as);
  return plan;
}

}  // namespace

hist_plan plan_hist_launch(const device_properties& p, const hist_device& d, const hist_call& c, const hist_options& o,
                           const std::function<double()>& inspect) {
  check_hist_options(o);
  if (c.batches < 0) return plan_single(p, d, c, c.n, c.bins, o, inspect, {});
  // Batched: K blocks per histogram when one histogram fits shared memory in one pass; otherwise
  // one flattened Nout * H histogram.
  const std::int64_t batches = c.batches, seg_len = c.n, H = c.bins;
  if (o.strategy != hist_strategy::global && c.el_bytes() <= p.shared_per_block_optin) {
    hist_options one = o;
    // One pass per histogram (a forced thread-private shape is one pass by itself).
    if (one.passes == 0 && one.overrides.thread_private != hist_toggle::on) one.passes = 1;
    hist_plan plan;
    bool fits = true;
    try {
      plan = plan_hist_shared(p, seg_len, H, c.el_bytes(), c.kind, one, c.u());
    } catch (const usage_error&) {
      if (o.strategy == hist_strategy::shared) throw;
      fits = false;
    }
    if (fits && (plan.passes == 1 || o.strategy == hist_strategy::shared)) {
      plan.batches = batches;
      plan.n = batches * seg_len;
      if (plan.n == 0 || H == 0) {
        plan.grid = 0;  // nothing to launch
        return plan;
      }
      shape_shared(p, d, plan, seg_len, batches, c, {});
      return plan;
    }
  }
  hist_kernel flat;
  flat.flat = true;
  hist_plan plan = plan_single(p, d, c, batches * seg_len, batches * H, o, inspect, flat);
  plan.batches = batches;
  plan.flattened = true;
  return plan;
}

void check_hist_fused_options(const hist_options& o) {
  check_hist_options(o);
  // One pass over both histograms, one shape: strategy and M are all it can honour.
  const bool others = o.passes > 0 || o.race_factor > 0 || o.force_atomic || o.overrides.thread_private != hist_toggle::automatic ||
                      o.overrides.cluster > 0 || o.overrides.block_partials != hist_toggle::automatic || o.overrides.split > 0 ||
                      o.overrides.partition != hist_toggle::automatic || o.overrides.block > 0 || o.overrides.load_ahead != hist_toggle::automatic;
  if (others)
    throw usage_error("hist_fused: of the hist options only strategy and M apply (forcing the atomic kind: specialise "
                      "soac::hist_atomic); S, RF, private, cluster, partials, split, partition, block and ahead do not");
}

hist_plan plan_hist_fused(const device_properties& p, const hist_device& d, const hist_fused_call& c, const hist_options& o) {
  check_hist_fused_options(o);
  hist_plan plan;
  plan.atomic = c.kind_a == c.kind_b ? c.kind_a : atomic_kind::cas;
  plan.n = c.n;
  plan.bins = c.bins_a + c.bins_b;
  plan.block_threads = hist_tuning::shared_block;
  plan.items_per_thread = hist_tuning::fused_items_per_thread;
  const std::size_t copy = std::size_t(c.bins_a) * c.bytes_a + 16 + std::size_t(c.bins_b) * c.bytes_b;
  const std::size_t limit = std::max(p.shared_per_block_optin, p.shared_per_block) - hist_tuning::shared_reserved_per_block;
  const bool shared = c.kind_a != atomic_kind::xcg && c.kind_b != atomic_kind::xcg && copy <= limit &&
                      o.strategy != hist_strategy::global;
  if (o.strategy == hist_strategy::shared && !shared)
    throw usage_error("hist_fused: the two histograms do not fit shared memory together (or need locks)");
  if (c.n == 0 || c.bins_a + c.bins_b == 0) return plan;
  // Eqs. 1-2 with one "bin" being a copy of both histograms; half the SM's memory (two blocks
  // of 1024 threads) when that leaves room for one copy.
  const std::size_t half = p.shared_per_sm / 2 - hist_tuning::shared_reserved_per_block;
  const std::size_t L = copy <= half ? half : limit;
  int M = 1;
  if (shared) {
    M = o.multi > 0 ? o.multi : int(std::clamp<std::size_t>(L / copy, 1, hist_tuning::shared_block));
    M = std::min(M, hist_tuning::shared_block);
  }
  const std::size_t bytes = shared ? std::size_t(M) * copy : 0;
  if (bytes > limit) throw usage_error("hist_fused: M=" + std::to_string(M) + " copies do not fit shared memory");
  plan.strategy = shared ? hist_strategy::shared : hist_strategy::global;
  plan.multi = M;
  plan.chunk = c.bins_a + c.bins_b;
  plan.shared_bytes = bytes;
  plan.kernel.fam = shared ? hist_kernel::family::fused_shared : hist_kernel::family::fused_global;
  plan.kernel.per_thread = plan.kernel.items = plan.items_per_thread;
  const int per_sm = resident(d, plan.kernel, plan.block_threads, bytes, "hist_fused");
  plan.grid = std::clamp<std::int64_t>(ceil_div64(c.n, std::int64_t(plan.block_threads) * plan.items_per_thread), 1,
                                       std::int64_t(p.sm_count) * per_sm);
  return plan;
}

std::string hist_kernel::name() const {
  std::ostringstream s;
  switch (fam) {
    case family::none: return "none";
    case family::fused_shared: return "fused<shared>";
    case family::fused_global: return "fused<global>";
    case family::shared: s << "shared"; break;
    case family::shared_fold: s << "shared+fold"; break;
    case family::split: s << "split"; break;
    case family::bucket: s << "bucket"; break;
    case family::global: s << "global"; break;
  }
  s << (exclusive ? "/private" : "") << "<items=" << items;
  if (wide) s << ",wide=" << wide;
  if (ahead) s << ",ahead";
  if (max_block != 1024) s << ",max_block=" << max_block;
  s << ">";
  return s.str();
}

}  // namespace soac
