// Loop inl1100 of 435.gromacs (SPEC CPU2006), the SC20 paper's case study V-C: the non-bonded
// forces (Lennard-Jones + Coulomb) of every listed particle pair, accumulated into faction[3P]
// (plus the shift forces and two energies per energy group). The forces are a float-add
// histogram of 3P bins with a computed bin for every update: soac::hist.
//
// The program, on the core:
//  1. segreduce: the i side. Each neighbour list's sums (the force on its particle i, and the
//     energies vctot, vnbtot) are a reduction over the list's pairs; lists are cut into segments
//     of a fixed power-of-two length (padded), so that this is a regular segmented reduction.
//  2. hist: the j side, every pair's -t into faction[3j..3j+2], together with each segment's
//     sum into faction[3i..]: one update per pair and coordinate plus three per segment, instead
//     of the straightforward program's six per pair (three of which all hit the same i).
//  3. hist: each segment's sums into the small tables fshift[shift], Vc[gid], Vnb[gid].
// Variants: `hdw` (step 2 with float atomic adds, three updates per pair) and `cas` (every float
// add forced through compare-and-swap, as on GPUs without float atomics, with the paper's
// restructuring: one update per element, so the three coordinates of a particle go to
// consecutive threads). Their baselines, the straightforward CUDA program (one thread per pair,
// six atomics into faction, by atomicAdd or by CAS loops), run as `baseline-hdw` and
// `baseline-cas` (cuda only) and beside them in `soac bench gromacs`.
#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <iomanip>
#include <sstream>

#include "apps/app.hpp"
#include "apps/gromacs/gromacs.hpp"
#include "core/buffer.hpp"
#include "core/cuda_check.hpp"
#include "core/error.hpp"
#include "core/fast_divide.hpp"
#include "core/hist.cuh"
#include "core/segreduce.cuh"
#include "datasets/bundle.hpp"
#include "datasets/futhark_data.hpp"
#include "validate/gromacs.hpp"

namespace soac::apps::gromacs {

namespace {

// ---- The loop's arithmetic, shared by every variant and both backends.

// The input arrays in the backend's memory.
struct system_view {
  const float* pos;
  const float* charge;
  const std::int32_t* type;
  const float* nbfp;
  const float* shiftvec;
  const std::int32_t* iinr;
  const std::int32_t* shift;
  const std::int32_t* gid;
  const std::int32_t* jjnr;
  std::int32_t ntype;
  float facel;
};

// List n's particle i, shifted: ix = shiftvec + pos[i] (float, as the original computes it).
struct i_atom {
  float x[3];
  float q;            // facel * charge[i]
  std::int32_t row;   // ntype * type[i]
  std::int32_t index; // i
};

SOAC_HD inline i_atom load_i(const system_view& s, std::int32_t n) {
  const std::int32_t i = s.iinr[n], sh = 3 * s.shift[n];
  i_atom a;
  for (int c = 0; c < 3; ++c) a.x[c] = s.shiftvec[sh + c] + s.pos[3 * i + c];
  a.q = s.facel * s.charge[i];
  a.row = s.ntype * s.type[i];
  a.index = i;
  return a;
}

// One pair's force t (added to i, subtracted from j) and energies.
struct pair_force {
  float t[3];
  float vcoul, vnb;
};

SOAC_HD inline pair_force interact(const system_view& s, const i_atom& a, std::int32_t j) {
  float d[3];
  for (int c = 0; c < 3; ++c) d[c] = a.x[c] - s.pos[3 * j + c];
  const float rsq = d[0] * d[0] + d[1] * d[1] + d[2] * d[2];
  const float rinv = 1.0f / sqrtf(rsq);
  const float rinvsq = rinv * rinv;
  const std::int32_t p = 2 * (a.row + s.type[j]);
  const float c6 = s.nbfp[p], c12 = s.nbfp[p + 1];
  const float rinvsix = rinvsq * rinvsq * rinvsq;
  const float vnb6 = c6 * rinvsix, vnb12 = c12 * rinvsix * rinvsix;
  const float vcoul = a.q * s.charge[j] * rinv;
  const float fs = (12.0f * vnb12 - 6.0f * vnb6 + vcoul) * rinvsq;
  return {{fs * d[0], fs * d[1], fs * d[2]}, vcoul, vnb12 - vnb6};
}

// A segment's sums: the force on its i and the energies (the original's fi, vctot, vnbtot).
struct list_sums {
  float f[3];
  float vc, vnb;
};

struct add_list_sums {
  using value_type = list_sums;
  static constexpr bool commutative = true;
  SOAC_HD static constexpr list_sums identity() { return {{0, 0, 0}, 0, 0}; }
  SOAC_HD list_sums operator()(const list_sums& a, const list_sums& b) const {
    return {{a.f[0] + b.f[0], a.f[1] + b.f[1], a.f[2] + b.f[2]}, a.vc + b.vc, a.vnb + b.vnb};
  }
};

// The lists cut into segments of at most 2^log2_length pairs: segment g covers pairs
// [start[g], start[g + 1]) of list list[g] (segments of a list are consecutive, so start is one
// ascending array), and its pairs sit in slots [g << log2_length, (g + 1) << log2_length).
struct segment_view {
  const std::int32_t* start;
  const std::int32_t* list;
  int log2_length;
};

// The pair in `slot`, or -1 for padding; `seg` receives the slot's segment.
SOAC_HD inline std::int32_t pair_of_slot(const segment_view& g, std::int64_t slot, std::int32_t& seg) {
  seg = std::int32_t(slot >> g.log2_length);
  const std::int32_t k = g.start[seg] + std::int32_t(slot & ((std::int64_t{1} << g.log2_length) - 1));
  return k < g.start[seg + 1] ? k : -1;
}

// Step 1's element: pair j of segment seg (padding adds nothing).
struct segment_terms {
  system_view s;
  segment_view g;
  SOAC_HD list_sums operator()(std::int64_t seg, std::int64_t j) const {
    const std::int32_t k = g.start[seg] + std::int32_t(j);
    if (k >= g.start[seg + 1]) return add_list_sums::identity();
    const pair_force t = interact(s, load_i(s, g.list[seg]), s.jjnr[k]);
    return {{t.t[0], t.t[1], t.t[2]}, t.vcoul, t.vnb};
  }
};

// Step 2, hdw: element e < slots is a pair slot (-t into faction[3j..]), element slots + g is
// segment g (its sum into faction[3i..]).
struct force_updates_by_pair {
  system_view s;
  segment_view g;
  const list_sums* sums;
  std::int64_t slots;
  SOAC_HD bin_values<float, 3> operator()(std::int64_t e) const {
    bin_values<float, 3> r;
    if (e < slots) {
      std::int32_t seg;
      const std::int32_t k = pair_of_slot(g, e, seg);
      if (k < 0) {
        for (int c = 0; c < 3; ++c) r[c] = {-1, 0.0f};
        return r;
      }
      const std::int32_t j = s.jjnr[k];
      const pair_force t = interact(s, load_i(s, g.list[seg]), j);
      for (int c = 0; c < 3; ++c) r[c] = {3 * std::int64_t(j) + c, -t.t[c]};
    } else {
      const std::int64_t seg = e - slots;
      const list_sums f = sums[seg];
      const std::int32_t i = s.iinr[g.list[seg]];
      for (int c = 0; c < 3; ++c) r[c] = {3 * std::int64_t(i) + c, f.f[c]};
    }
    return r;
  }
};

// Step 2 for the cas variant (the paper's restructuring), or step 3 for both variants: one update
// per element. (One functor type for both: every hist instantiation compiles a few dozen kernels,
// so the app keeps to two.) Elements are below 2^32 (checked when the run is set up).
//  * forces: element 3q + c is coordinate c of slot q, or for q >= slots of segment q - slots;
//  * tables: element 5g + k is update k of segment g into [fshift (3 * nshift) | Vc | Vnb]:
//    three shift-force coordinates, then the two energies.
struct single_updates {
  system_view s;
  segment_view g;
  const list_sums* sums;
  std::int64_t slots;
  fast_divisor three, five;
  bool tables;
  std::int32_t nshift, groups;

  SOAC_HD bin_value<float> operator()(std::int64_t e) const {
    if (tables) {
      const std::uint32_t seg = five.divide(std::uint32_t(e));
      const int k = int(std::uint32_t(e) - 5 * seg);
      const std::int32_t n = g.list[seg];
      if (k < 3) return {3 * std::int64_t(s.shift[n]) + k, sums[seg].f[k]};
      const std::int64_t energy = 3 * std::int64_t(nshift) + s.gid[n];
      return k == 3 ? bin_value<float>{energy, sums[seg].vc} : bin_value<float>{energy + groups, sums[seg].vnb};
    }
    const std::uint32_t q = three.divide(std::uint32_t(e));
    const int c = int(std::uint32_t(e) - 3 * q);
    if (q < slots) {
      std::int32_t seg;
      const std::int32_t k = pair_of_slot(g, q, seg);
      if (k < 0) return {-1, 0.0f};
      const std::int32_t j = s.jjnr[k];
      const pair_force t = interact(s, load_i(s, g.list[seg]), j);
      return {3 * std::int64_t(j) + c, -t.t[c]};
    }
    const std::int64_t seg = q - slots;
    return {3 * std::int64_t(s.iinr[g.list[seg]]) + c, sums[seg].f[c]};
  }
};

// The baseline: the straightforward CUDA program, one thread per pair and six atomics (kind K)
// into faction; list_of_pair maps a pair to its list.
template <atomic_kind K>
__global__ void straightforward_kernel(system_view s, const std::int32_t* list_of_pair, std::int32_t pairs, float* faction) {
  const std::int64_t k = std::int64_t{blockIdx.x} * blockDim.x + threadIdx.x;
  if (k >= pairs) return;
  const i_atom a = load_i(s, list_of_pair[k]);
  const std::int32_t j = s.jjnr[k];
  const pair_force t = interact(s, a, j);
  for (int c = 0; c < 3; ++c) {
    detail::atomic_update<K, plus<float>>(faction + 3 * std::int64_t(j) + c, nullptr, -t.t[c]);
    detail::atomic_update<K, plus<float>>(faction + 3 * std::int64_t(a.index) + c, nullptr, t.t[c]);
  }
}

// ---- Segments, chosen on the host.

struct segment_table {
  int log2_length = 0;
  std::vector<std::int32_t> start{0}, list;
  std::int64_t count() const { return std::int64_t(list.size()); }
  std::int64_t slots() const { return count() << log2_length; }
};

// Lists longer than the segment length are cut into near-equal segments. The length is the power
// of two (8 .. 128) with the least slots + 16 * segments: a padded slot only costs a thread that
// leaves, while each segment adds three atomics into faction and five updates of the small tables
// (a rough weight, not measured). The `paper` preset's lists (1 to 122 pairs, 41 on average)
// take 32: 60,600 segments, 1.94M slots for 1.36M pairs.
segment_table make_segments(const std::vector<std::int32_t>& jindex) {
  const std::int64_t lists = std::int64_t(jindex.size()) - 1;
  auto cost = [&](int log2) {
    const std::int64_t L = std::int64_t{1} << log2;
    std::int64_t segments = 0;
    for (std::int64_t n = 0; n < lists; ++n) segments += (jindex[n + 1] - jindex[n] + L - 1) / L;
    return std::pair{segments * L + 16 * segments, segments};
  };
  int best = 3;
  for (int log2 = 4; log2 <= 7; ++log2)
    if (cost(log2).first < cost(best).first) best = log2;
  segment_table t;
  t.log2_length = best;
  const std::int64_t L = std::int64_t{1} << best;
  for (std::int64_t n = 0; n < lists; ++n) {
    const std::int64_t len = jindex[n + 1] - jindex[n], parts = (len + L - 1) / L;
    for (std::int64_t p = 0; p < parts; ++p) {
      t.start.push_back(std::int32_t(jindex[n] + len * (p + 1) / parts));
      t.list.push_back(std::int32_t(n));
    }
  }
  return t;
}

// The race factor of SC20 section III-D for step 2's updates of faction (in the cas variant's
// order): H divided by the mean number of distinct bins among H consecutive updates. The paper
// sampled it from its dataset (RF = 79); it is a property of the lists, so it is counted here,
// once, and handed to hist instead of the inspector (which waits for the device in every call).
double count_race_factor(const inl1100_data& d) {
  const std::int64_t H = 3 * d.particles(), updates = 3 * d.pairs();
  if (H == 0 || updates == 0) return 1.0;
  // Whole groups of H updates (a last partial one would skew the mean); all updates if fewer.
  const std::int64_t counted = updates >= H ? updates / H * H : updates;
  std::vector<std::int64_t> seen(std::size_t(H), -1);
  std::int64_t distinct = 0;
  for (std::int64_t u = 0; u < counted; ++u) {
    const std::int64_t bin = 3 * std::int64_t(d.jjnr[std::size_t(u / 3)]) + u % 3;
    if (seen[std::size_t(bin)] != u / H) seen[std::size_t(bin)] = u / H, ++distinct;
  }
  return double(counted) / double(distinct);  // updates per distinct bin within a group
}

// ---- The variants.

enum class variant_kind { hdw, cas, baseline_hdw, baseline_cas };

struct variant_spec {
  variant_kind kind = variant_kind::hdw;
  std::string name;
  hist_options forces;  // step 2 (soac variants)
};

// NAME[,hist settings]: the settings (strategy=..., M=..., see soac list) apply to step 2 on top
// of the variant's own options. Both variants default to the global strategy: faction has far
// fewer updates per block than bins (paper preset: about 4M updates into 70K bins, so a resident
// grid of 132 blocks holding shared copies would fold 132 x 70K bins into faction, more than the
// updates themselves), and the global kernel adds straight into faction (hdw: M = 1) or, for
// compare-and-swap, into the L2-sized sub-histograms of eqs. 4-6 with the lists' race factor.
variant_spec parse_variant(const std::string& text, double rf) {
  const std::size_t comma = text.find(',');
  variant_spec v;
  v.name = text.empty() ? "hdw" : text.substr(0, comma);
  if (v.name == "hdw") v.kind = variant_kind::hdw;
  else if (v.name == "cas") v.kind = variant_kind::cas;
  else if (v.name == "baseline-hdw") v.kind = variant_kind::baseline_hdw;
  else if (v.name == "baseline-cas") v.kind = variant_kind::baseline_cas;
  else throw usage_error("gromacs: unknown variant '" + v.name + "' (expected hdw, cas, baseline-hdw or baseline-cas)");
  v.forces.strategy = hist_strategy::global;
  if (v.kind == variant_kind::cas) {
    v.forces.force_atomic = true;
    v.forces.atomic = atomic_kind::cas;
    v.forces.race_factor = rf;
  }
  if (comma != std::string::npos) {
    if (v.kind == variant_kind::baseline_hdw || v.kind == variant_kind::baseline_cas)
      throw usage_error("gromacs: the baselines take no hist settings (got '" + text + "')");
    v.forces = parse_hist_options(std::string_view(text).substr(comma + 1), v.forces);
  }
  return v;
}

bool is_cas(variant_kind k) { return k == variant_kind::cas || k == variant_kind::baseline_cas; }

// Everything a run needs in the backend's memory.
class device_system {
 public:
  device_system(context& ctx, const inl1100_data& d)
      : ctx_(ctx), segments_(make_segments(d.jindex)), rf_(count_race_factor(d)), ntype_(d.ntype), nshift_(d.shifts()),
        groups_(d.energy_groups), facel_(d.facel), pairs_(d.pairs()), particles_(d.particles()),
        pos_(ctx, std::span<const float>(d.pos)), charge_(ctx, std::span<const float>(d.charge)),
        nbfp_(ctx, std::span<const float>(d.nbfp)), shiftvec_(ctx, std::span<const float>(d.shiftvec)),
        type_(ctx, std::span<const std::int32_t>(d.type)), iinr_(ctx, std::span<const std::int32_t>(d.iinr)),
        shift_(ctx, std::span<const std::int32_t>(d.shift)), gid_(ctx, std::span<const std::int32_t>(d.gid)),
        jjnr_(ctx, std::span<const std::int32_t>(d.jjnr)), initial_faction_(ctx, std::span<const float>(d.faction)),
        seg_start_(ctx, std::span<const std::int32_t>(segments_.start)),
        seg_list_(ctx, std::span<const std::int32_t>(segments_.list)), sums_(ctx, std::size_t(segments_.count())) {
    // single_updates numbers three elements per slot and segment (five per segment for the
    // tables) with 32-bit arithmetic.
    if (3 * (segments_.slots() + segments_.count()) > std::int64_t(UINT32_MAX))
      throw resource_error("gromacs: " + std::to_string(segments_.slots()) +
                           " padded pair slots are beyond the 2^32 histogram elements of the cas variant");
  }

  system_view view() const {
    return {pos_.data(),   charge_.data(), type_.data(), nbfp_.data(), shiftvec_.data(), iinr_.data(),
            shift_.data(), gid_.data(),    jjnr_.data(), ntype_,       facel_};
  }
  segment_view segments() const { return {seg_start_.data(), seg_list_.data(), segments_.log2_length}; }
  const segment_table& table() const { return segments_; }
  double race_factor() const { return rf_; }
  std::int64_t faction_bins() const { return 3 * particles_; }
  std::int64_t table_bins() const { return 3 * std::int64_t(nshift_) + 2 * std::int64_t(groups_); }

  // The baseline's pair -> list map (built on first use: only the baselines read it).
  const std::int32_t* list_of_pair(const std::vector<std::int32_t>& jindex) {
    if (list_of_pair_.empty() && pairs_ > 0) {
      std::vector<std::int32_t> map(static_cast<std::size_t>(pairs_));
      for (std::size_t n = 0; n + 1 < jindex.size(); ++n)
        std::fill(map.begin() + jindex[n], map.begin() + jindex[n + 1], std::int32_t(n));
      list_of_pair_ = buffer<std::int32_t>(ctx_, std::span<const std::int32_t>(map));
    }
    return list_of_pair_.data();
  }

  // The plans of the last compute().
  struct plans {
    segreduce_plan lists;
    hist_plan forces, tables;
    std::string describe() const {
      std::ostringstream s;
      s << "i side: segreduce " << lists.describe() << "\n  forces: " << (forces.n ? forces.describe() : "baseline kernel")
        << "\n  tables: " << tables.describe();
      return s.str();
    }
  };

  // One run of the loop: faction (3P) is the dataset's faction plus the forces (or the forces),
  // tables (table_bins) are overwritten.
  plans compute(const variant_spec& v, const std::vector<std::int32_t>& jindex, span<float> faction, span<float> tables) {
    plans p;
    if (initial_faction_.empty()) zero(faction);
    else ctx_.copy_within(faction.data(), initial_faction_.data(), initial_faction_.size() * sizeof(float));
    zero(tables);
    const system_view s = view();
    const segment_view g = segments();
    p.lists = segreduce(ctx_, segments_.count(), std::int64_t{1} << g.log2_length, segment_terms{s, g}, sums_.view(),
                        add_list_sums{});
    // Each segment adds to a handful of table bins (3 x 27 shift forces, 2 x groups energies), from
    // consecutive segments mostly the same: one copy per thread needs no atomics at all, where
    // shared float adds would be compare-and-swap loops in hardware retrying on those few bins.
    hist_options table_options;
    table_options.overrides.thread_private = hist_toggle::on;
    if (is_cas(v.kind)) table_options.force_atomic = true, table_options.atomic = atomic_kind::cas;
    p.tables = hist(ctx_, table_options, 5 * segments_.count(), updates(true), tables, plus<float>{});
    switch (v.kind) {
      case variant_kind::hdw:
        p.forces = hist(ctx_, v.forces, segments_.slots() + segments_.count(),
                        force_updates_by_pair{s, g, sums_.data(), segments_.slots()}, faction, plus<float>{});
        break;
      case variant_kind::cas:
        p.forces = hist(ctx_, v.forces, 3 * (segments_.slots() + segments_.count()),
                        updates(false), faction, plus<float>{});
        break;
      default:
        straightforward(v.kind, list_of_pair(jindex), faction);
    }
    return p;
  }

 private:
  single_updates updates(bool tables) const {
    return {view(), segments(), sums_.data(), segments_.slots(), fast_divisor(3), fast_divisor(5), tables, nshift_, groups_};
  }

  void zero(span<float> a) const {
    if (a.empty()) return;
    if (ctx_.is_cuda()) SOAC_CUDA_CHECK(cudaMemsetAsync(a.data(), 0, a.size() * sizeof(float), ctx_.stream()));
    else std::fill(a.begin(), a.end(), 0.0f);
  }

  void straightforward(variant_kind k, const std::int32_t* map, span<float> faction) const {
    if (!ctx_.is_cuda())
      throw usage_error("gromacs: the baselines are CUDA programs (straightforward kernels); use --backend cuda");
    if (pairs_ == 0) return;
    constexpr int block = 256;
    const unsigned grid = unsigned((pairs_ + block - 1) / block);
    if (k == variant_kind::baseline_cas)
      straightforward_kernel<atomic_kind::cas><<<grid, block, 0, ctx_.stream()>>>(view(), map, std::int32_t(pairs_), faction.data());
    else
      straightforward_kernel<atomic_kind::hdw><<<grid, block, 0, ctx_.stream()>>>(view(), map, std::int32_t(pairs_), faction.data());
    SOAC_CHECK_LAUNCH("straightforward_kernel");
  }

  context& ctx_;
  segment_table segments_;
  double rf_;
  std::int32_t ntype_, nshift_, groups_;
  float facel_;
  std::int64_t pairs_, particles_;
  buffer<float> pos_, charge_, nbfp_, shiftvec_;
  buffer<std::int32_t> type_, iinr_, shift_, gid_, jjnr_;
  buffer<float> initial_faction_;
  buffer<std::int32_t> seg_start_, seg_list_, list_of_pair_;
  buffer<list_sums> sums_;
};

inl1100_output split_tables(std::vector<float> faction, const std::vector<float>& tables, int nshift, int groups) {
  inl1100_output out;
  out.faction = std::move(faction);
  out.fshift.assign(tables.begin(), tables.begin() + 3 * nshift);
  out.Vc.assign(tables.begin() + 3 * nshift, tables.begin() + 3 * nshift + groups);
  out.Vnb.assign(tables.begin() + 3 * nshift + groups, tables.end());
  return out;
}

validate::inl1100_input reference_input(const inl1100_data& d) {
  return {d.pos, d.charge, d.nbfp, d.shiftvec, d.faction, d.type, d.iinr, d.shift, d.gid, d.jindex, d.jjnr, d.ntype, d.energy_groups, d.facel};
}

// Every output against the sequential reference (see validate/gromacs.hpp for the tolerance).
validate::report check_output(const validate::inl1100_sums& ref, const inl1100_output& got) {
  validate::report all;
  const auto add = [&](const validate::report& r) {
    all.checked += r.checked;
    all.mismatches += r.mismatches;
    for (const auto& e : r.examples)
      if (all.examples.size() < validate::report::max_examples) all.examples.push_back(e);
  };
  add(validate::compare_inl1100("faction", ref.faction, ref.faction_scale, ref.faction_terms, got.faction, 3));
  add(validate::compare_inl1100("fshift", ref.fshift, ref.fshift_scale, ref.fshift_terms, got.fshift, 3));
  add(validate::compare_inl1100("Vc", ref.Vc, ref.Vc_scale, ref.Vc_terms, got.Vc, 1));
  add(validate::compare_inl1100("Vnb", ref.Vnb, ref.Vnb_scale, ref.Vnb_terms, got.Vnb, 1));
  return all;
}

}  // namespace

inl1100_output run_inl1100(context& ctx, const inl1100_data& d, const std::string& variant) {
  device_system sys(ctx, d);
  const variant_spec v = parse_variant(variant, sys.race_factor());
  buffer<float> faction(ctx, std::size_t(sys.faction_bins())), tables(ctx, std::size_t(sys.table_bins()));
  sys.compute(v, d.jindex, faction.view(), tables.view());
  return split_tables(faction.to_vector(), tables.to_vector(), d.shifts(), d.energy_groups);
}

namespace {

class gromacs_app final : public app {
 public:
  gromacs_app() : app(describe()) {}

  static app_info describe() {
    app_info a = app_info::named("gromacs", "435.gromacs loop inl1100 (SC20 V-C): Lennard-Jones + Coulomb forces of neighbour "
                                            "lists as float-add histograms");
    {
      auto p = [](std::int64_t particles, std::int64_t pairs, std::int64_t lists) {
        return nlohmann::json{{"particles", particles}, {"pairs", pairs},       {"lists", lists},
                              {"density", 100.0},       {"types", 3},           {"energy_groups", 2}};
      };
      // One list per particle and shift vector already gives ~33,300 lists at the paper's size
      // (a third of the particles lie within the cut-off of a face), more than the paper's 30,657,
      // so `lists` only splits lists where it asks for more than that.
      a.presets = {{"paper", "the paper's size: P = 23,178 particles, ~1.36M pairs (H = 69,534) in ~33,300 lists (paper: 30,657)",
                    p(23178, 1380160, 30657)},
                   {"small", "P = 4,000 particles, ~233K pairs in ~9,000 lists", p(4000, 238000, 9000)},
                   {"tiny", "P = 300 particles, ~3,000 pairs in ~600 lists (tests)", p(300, 3000, 600)}};
    }
    a.variants = {"hdw", "cas", "baseline-hdw", "baseline-cas"};
    a.variant_settings = "hdw and cas take hist settings for the force histogram (as soac run hist: strategy=auto|shared|global, "
                         "M=N, S=N, RF=X, ...), e.g. cas,strategy=auto";
    a.input_formats = {{"futhark", "the SC20 artifact's inputs (benchmarks/435.gromacs/data/all-largest.in, all-huge.in): a Futhark data "
                                   "file of gromacs-inl1100-hdw.fut's 12 arguments (-i FILE); the forces are added to its faction1d"}};
    a.expected_formats = {{"futhark", "the SC20 artifact's output (data/all-largest.out, all-huge.out): faction as a Futhark data file; each "
                                      "particle's force within twice the float bound of soac validate"}};
    a.bench_presets = {"paper"};
    return a;
  }

  void check_params(const nlohmann::json& params) const override { check_generator_params(params); }
  // The particles, where the manifest counts them; read_inl1100 checks the arrays against each
  // other as it reads them (lists, pairs, density and types are the generator's).
  void check_dataset(const datasets::bundle& in) const override { datasets::length_of(in, "charge", "particles"); }

  void generate(const gen_request& r) const override {
    const inl1100_data d = generate_inl1100(r.params, r.seed);
    if (r.format == "futhark") return write_inl1100_futhark(r.output, d);
    datasets::bundle_writer out(r.output, "dataset", name());
    write_inl1100(out, d);
    finish_dataset(out, r);
  }

  // A run's inputs: a bundle, or (futhark) the artifact's file; `params` gets what the result
  // records of them (compare reads the inputs again through it), `unread` what the file holds
  // beyond what the loop reads.
  inl1100_data load(const std::vector<std::filesystem::path>& inputs, const std::string& format, nlohmann::json& params,
                    std::string* unread = nullptr) const {
    if (inputs.size() != 1) throw usage_error("gromacs reads one input (-i), got " + std::to_string(inputs.size()));
    if (format == "futhark") {
      params = {{"file", std::filesystem::absolute(inputs.front()).string()}, {"format", "futhark"}};
      return read_inl1100_futhark(inputs.front(), unread);
    }
    const auto in = open_dataset(inputs.front());
    params = in.params();
    params["dataset"] = std::filesystem::absolute(inputs.front()).string();
    return read_inl1100(in);
  }

  std::string run(context& ctx, const run_request& r) const override {
    nlohmann::json params;
    std::string unread;
    const inl1100_data d = load(r.inputs, r.format, params, &unread);
    device_system sys(ctx, d);
    const variant_spec v = parse_variant(r.variant, sys.race_factor());
    buffer<float> faction(ctx, std::size_t(sys.faction_bins())), tables(ctx, std::size_t(sys.table_bins()));
    device_system::plans plans;
    const bench::stats t = bench::time(ctx, bench::settings{.warmup = 1, .runs = 1, .progress = false, .warmup_ms = 0},
                                       [&] { plans = sys.compute(v, d.jindex, faction.view(), tables.view()); });
    const inl1100_output o = split_tables(faction.to_vector(), tables.to_vector(), d.shifts(), d.energy_groups);
    datasets::bundle_writer out(r.output, "result", name());
    out.add<float>("faction", o.faction);
    out.add<float>("fshift", o.fshift);
    out.add<float>("Vc", o.Vc);
    out.add<float>("Vnb", o.Vnb);
    out.params() = params;
    out.info() = {{"backend", std::string(to_string(ctx.which()))}, {"device", ctx.props().name},
                  {"variant", r.variant.empty() ? "hdw" : r.variant}, {"plans", plans.describe()},
                  {"race_factor", sys.race_factor()}, {"segment_length", 1 << sys.table().log2_length},
                  {"segments", sys.table().count()}, {"ms", t.median_ms}};
    out.finish();
    std::ostringstream s;
    s << "gromacs inl1100: P=" << d.particles() << " nri=" << d.lists() << " nrj=" << d.pairs() << " (H=" << 3 * d.particles()
      << ", RF=" << std::setprecision(3) << sys.race_factor() << ") on " << ctx.describe() << "\n  " << v.name << ": "
      << t.median_ms << " ms";
    if (!unread.empty()) s << "\n  " << r.input.filename().string() << ": " << unread;
    if (r.verbose) s << "\n  " << plans.describe();
    return s.str();
  }

  validate_report validate(const validate_request& r) const override {
    nlohmann::json params;
    const inl1100_data d = load(r.inputs, r.format, params);
    const auto res = datasets::bundle::open(r.result, "result", name());
    const inl1100_output got{res.read<float>("faction"), res.read<float>("fshift"), res.read<float>("Vc"), res.read<float>("Vnb")};
    const validate::report rep = check_output(validate::inl1100_reference(reference_input(d)), got);
    return {rep.ok(), rep.describe("force vectors and energies") + " (tolerance (n + 64) * 2^-24 * the n contributions' magnitude)"};
  }

  // The artifact's faction against the result's, each particle's force within twice the bound
  // validate allows one float result (both are float sums of the same terms), from the inputs the
  // result records.
  validate_report compare(const compare_request& r) const override {
    const auto res = datasets::bundle::open(r.result, "result", name());
    const auto got = res.read<float>("faction");
    const auto values = datasets::read_futhark_values(r.expected);
    if (values.size() != 1)
      throw input_error(r.expected.string() + ": holds " + std::to_string(values.size()) + " values, not the one faction array of "
                        "gromacs-inl1100-hdw.fut's output");
    const auto expected = values[0].f32_elements(1);
    const auto& p = res.params();
    const bool futhark = p.value("format", std::string()) == "futhark";
    const std::string input = futhark ? p.value("file", std::string()) : p.value("dataset", std::string());
    if (input.empty())
      throw input_error((r.result / "manifest.json").string() + ": names no input (params.file or params.dataset), whose forces "
                        "bound the comparison");
    nlohmann::json ignored;
    const inl1100_data d = load({input}, futhark ? "futhark" : "", ignored);
    if (expected.size() != got.size() || got.size() != d.pos.size()) {
      std::ostringstream s;
      s << r.expected.filename().string() << " holds " << expected.size() << " force values, the result " << got.size()
        << ", its input's 3P " << d.pos.size();
      return {false, s.str()};
    }
    const validate::inl1100_sums ref = validate::inl1100_reference(reference_input(d));
    std::int64_t beyond = 0, worst = 0;
    double worst_ratio = -1, norm_diff = 0, norm_expected = 0;
    for (std::size_t q = 0; q < ref.faction_scale.size(); ++q) {
      double err = 0;
      for (int c = 0; c < 3; ++c) {
        const double diff = double(got[3 * q + c]) - double(expected[3 * q + c]);
        err += diff * diff;
        norm_expected += double(expected[3 * q + c]) * expected[3 * q + c];
      }
      norm_diff += err;
      const double ratio = std::sqrt(err) / (2 * validate::inl1100_tolerance(ref.faction_scale[q], ref.faction_terms[q]));
      beyond += !(ratio <= 1);  // NaN too
      if (!(ratio <= worst_ratio)) worst_ratio = ratio, worst = std::int64_t(q);
    }
    std::ostringstream s;
    s << (beyond == 0 ? "every one of the " + std::to_string(ref.faction_scale.size()) + " particles' forces within"
                      : std::to_string(beyond) + " of " + std::to_string(ref.faction_scale.size()) + " particles' forces beyond")
      << " twice the float bound of " << input << "'s reference; relative difference of the whole faction " << std::setprecision(3)
      << std::sqrt(norm_diff / std::max(norm_expected, 1e-300)) << "; the largest, particle " << worst << ", at " << worst_ratio
      << " of its bound (" << std::setprecision(9) << got[3 * std::size_t(worst)] << " " << got[3 * std::size_t(worst) + 1] << " "
      << got[3 * std::size_t(worst) + 2] << " here, " << expected[3 * std::size_t(worst)] << " " << expected[3 * std::size_t(worst) + 1]
      << " " << expected[3 * std::size_t(worst) + 2] << " expected)";
    return {beyond == 0, s.str()};
  }

  void bench(context& ctx, const bench_request& r, bench::suite& suite) const override {
    if (!ctx.is_cuda()) throw usage_error("gromacs bench compares with straightforward CUDA programs and needs --backend cuda");
    const auto names = r.presets.empty() ? bench_presets() : r.presets;
    suite.expect_cases(int(2 * names.size()));
    for (const auto& preset_name : names) {
      const inl1100_data d = generate_inl1100(resolve_params(preset_name, r.overrides), r.seed);
      const validate::inl1100_sums ref = validate::inl1100_reference(reference_input(d));
      device_system sys(ctx, d);
      buffer<float> faction(ctx, std::size_t(sys.faction_bins())), tables(ctx, std::size_t(sys.table_bins()));
      // Bytes that must move: the lists and pairs, the particles, faction written.
      const double bytes = 4.0 * double(d.pairs()) + 16.0 * double(d.lists()) + 32.0 * double(d.particles());
      const nlohmann::json params = {{"preset", preset_name}, {"P", d.particles()}, {"nri", d.lists()}, {"nrj", d.pairs()},
                                     {"H", 3 * d.particles()}, {"RF", sys.race_factor()},
                                     {"segment_length", 1 << sys.table().log2_length}, {"segments", sys.table().count()}};
      auto measure = [&](const std::string& label, const std::string& variant, bench::role role) {
        const variant_spec v = parse_variant(variant, sys.race_factor());
        device_system::plans plans;
        suite.measure(label, role, [&] { plans = sys.compute(v, d.jindex, faction.view(), tables.view()); });
        const validate::report rep =
            check_output(ref, split_tables(faction.to_vector(), tables.to_vector(), d.shifts(), d.energy_groups));
        std::string note = plans.describe();
        for (auto& c : note)
          if (c == '\n') c = ';';
        suite.annotate(rep.ok() ? note : "WRONG RESULT: " + rep.describe("values"));
      };
      std::ostringstream name;
      name << "inl1100 " << preset_name << " (nri=" << d.lists() << ", nrj=" << d.pairs() << ", H=" << 3 * d.particles()
           << ", RF=" << std::setprecision(3) << sys.race_factor() << ")";
      suite.begin_case(name.str() + ", float atomic add", params, bytes);
      measure("straightforward CUDA: thread per pair, 6 atomicAdd", "baseline-hdw", bench::role::baseline);
      measure("soac hdw (global, M=1)", "hdw", bench::role::soac);
      measure("soac hdw, model's plan", "hdw,strategy=auto", bench::role::soac);
      suite.begin_case(name.str() + ", compare-and-swap", params, bytes);
      measure("straightforward CUDA: thread per pair, 6 CAS loops", "baseline-cas", bench::role::baseline);
      measure("soac cas (global, model's M)", "cas", bench::role::soac);
      measure("soac cas, model's plan", "cas,strategy=auto", bench::role::soac);
      measure("soac cas, global M=1", "cas,M=1", bench::role::soac);
    }
  }
};

}  // namespace
}  // namespace soac::apps::gromacs

SOAC_REGISTER_APP(soac::apps::gromacs::gromacs_app)
