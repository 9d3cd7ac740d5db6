// Parboil tpacf, the two-point angular correlation function (SC20 section V-D, Table III): for a
// data set and R random sets of n points on the sky (unit vectors), how many pairs lie in each of
// 22 bins of angular distance (5 per decade from 1 to 10,000 arcminutes, and the two ends): DD
// over the data's pairs i < j, DR over every data x random pair, RR over each random set's pairs
// i < j, DR and RR summed over the sets. `large` (10,391 points x 100 sets) is ~16G pairs: a float
// dot product and its bin each, so tpacf is bound by instruction issue, not memory.
//
// On soac::hist: an element is one point a and a chunk of `chunk` consecutive points b of the
// same set (bin_values, one update per pair), so a warp's 32 lanes take 32 points a and the same
// chunk: the chunk's loads are one broadcast per warp, and the points a one coalesced load per
// element. A job is DD (the data's triangle of pairs), or for random set r the DR rectangle and
// the RR triangle together, counted into 66-bin histograms (DD | DR | RR, 22 each) of 32-bit
// counters (a job has fewer than 2^32 pairs: n <= 65,535); soac::segreduce sums the histograms'
// rows into 64-bit counts. Variants (`--variant`):
//   slices   (default) every job's elements in one sequence, cut into equal slices, one row each,
//            in one hist_batched call (rows: a multiple of two per SM, so whole waves of equal
//            blocks at every size; see slice_rows); the model's shape per row (438 shared copies
//            of the 66 bins, hardware atomics, two blocks per SM).
//   sets     one hist call per job (the model: one shared copy of the 66 bins per block).
//   batched  all jobs in one hist_batched call (SC20 IV-C: K blocks per histogram, K = (T / B) /
//            Nout), every job's elements padded to the largest job's.
//   parboil  baseline, Parboil's CUDA structure (cuda only): one 256-thread block per histogram
//            (2R + 1), tiles of 256 points in shared memory, a binary search over the boundaries
//            in constant memory, per-warp sub-histograms in shared memory (updated with shared
//            atomics: Parboil's tagged-retry update relies on warp-synchronous execution, which
//            GPUs since Volta do not guarantee).
// Measured on the H100 (ms, small / medium / large; slices with 1,056 rows at every size and a
// 64-bit decode): slices 0.119 / 4.39 / 28.19, slices,private=on 0.137 / 4.70 / 30.01, sets 0.816
// / 7.12 / 43.05, sets,private=on 1.11 / 5.56 / 28.90, batched 0.104 / 5.55 / 35.90,
// batched,private=on 0.112 / 5.90 / 38.17; parboil 0.450 / 29.38 / 190.42. sets pays a launch and
// a tail per job (101 of them), batched's 101 histograms leave a part of a wave idle. ncu
// (medium): 47 instructions per pair, issue slots 76% busy: tpacf is instruction-bound.
// Every formulation computes a pair's dot product as Parboil's sequential program does (each
// product and sum rounded to float, no fused multiply-add), so all match its float reference
// exactly (validate/tpacf.hpp).
#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <iomanip>
#include <iostream>
#include <limits>
#include <sstream>

#include "apps/app.hpp"
#include "apps/hist_apps.hpp"
#include "apps/tpacf/tpacf_binning.hpp"
#include "core/buffer.hpp"
#include "core/error.hpp"
#include "core/fast_divide.hpp"
#include "core/hist.cuh"
#include "core/launch.cuh"
#include "core/segreduce.cuh"
#include "datasets/binary_file.hpp"
#include "datasets/bundle.hpp"
#include "datasets/futhark_data.hpp"
#include "datasets/parboil_tpacf.hpp"
#include "datasets/random.hpp"
#include "datasets/text_reader.hpp"
#include "validate/tpacf.hpp"

namespace soac::apps {
namespace {

using datasets::bundle;
using u32 = std::uint32_t;
using u64 = std::uint64_t;
namespace ref = validate::tpacf;
using namespace soac::apps::tpacf;

constexpr int job_bins = 3 * counters;  // DD | DR | RR
constexpr int dd_kind = 0, dr_kind = 1, rr_kind = 2;  // where each kind's bins start: kind * counters
constexpr int dd_base = dd_kind * counters, dr_base = dr_kind * counters, rr_base = rr_kind * counters;
// Points b per element (pairs per hist update batch). Eight: each element's decode (a division for
// the rectangle, a square root for the triangles) is shared by eight pairs, and a thread's eight
// 64-bit bins stay in registers.
constexpr int chunk = 8;
// Points per set: a job's counters are 32-bit (a DR histogram counts n^2 pairs).
constexpr std::int64_t max_points = 65535;

const std::vector<std::string> formulations = {"slices", "sets", "batched", "parboil"};
// Settings a formulation takes unless its variant text says otherwise.
hist_variant parse_variant(const std::string& text) { return parse_hist_variant(text, formulations, "tpacf"); }
// The bench checks against the sequential reference up to this many pairs (medium: 2.5G).
constexpr std::int64_t reference_max_pairs = 4'000'000'000;

// ---- the pairs of a job as hist elements

// Rows of chunk c of a triangle over n points: the points a < the chunk's last point. 32-bit:
// below 2^29 for the 8,192 chunks of max_points.
SOAC_HD inline u32 triangle_start(u32 c) { return u32(chunk) * c * (c + 1) / 2 - c; }  // rows of chunks before c

struct job_shape {
  u32 n = 0, chunks = 0;
  u32 rect = 0, tri = 0;  // elements of a DR rectangle and of a triangle
};

job_shape shape_of(std::int64_t n) {
  job_shape s;
  s.n = u32(n);
  s.chunks = u32((n + chunk - 1) / chunk);
  s.rect = s.chunks * s.n;
  s.tri = s.chunks == 0 ? 0 : u32(triangle_start(s.chunks - 1) + (n - 1));  // the last chunk's rows: a < n - 1
  return s;
}

// Job 0: the DD triangle; job r >= 1: the DR rectangle (data x set r) then the RR triangle of set
// r. `points` holds the data then the R sets, n each. With seg_len > 0 (hist_batched), element i
// belongs to job i / seg_len; elements past a job's own end are ignored.
struct job_pairs {
  const float4* points;
  const bin_cell* tables;  // DD's, DR's and RR's, `cells` each, their bins offset by kind
  job_shape s;
  fast_divisor by_n;
  u32 job;               // the job when seg_len = 0
  std::uint64_t seg_len;

  SOAC_HD bin_values<u32, chunk> operator()(std::int64_t i) const {
    u64 j = job, e = u64(i);
    if (seg_len) {
      j = u64(i) / seg_len;
      e = u64(i) - j * seg_len;
    }
    return at(u32(j), u32(e));
  }

  // Element e of job j. 32-bit arithmetic (a job has fewer than 2^32 elements: 805M at
  // max_points): these decodes are a fifth of tpacf's instructions (ncu, medium: 47 per pair).
  SOAC_HD bin_values<u32, chunk> at(u32 j, u32 e) const {
    const float4* set = points + std::size_t(j) * s.n;
    const u32 end = j == 0 ? s.tri : s.rect + s.tri;
    bin_values<u32, chunk> r;
    if (e >= end) {
      SOAC_UNROLL
      for (int k = 0; k < chunk; ++k) r[k] = {-1, 0u};
      return r;
    }
    // The element's point a (from `firsts`), its chunk c of `set`, the first b allowed, its kind.
    u32 a, c, lo = 0;
    const float4* firsts = set;
    int kind = j == 0 ? dd_kind : rr_kind;
    if (j > 0 && e < s.rect) {
      c = by_n.divide(e);
      a = e - c * s.n;
      firsts = points;
      kind = dr_kind;
    } else {
      const u32 t = j > 0 ? e - s.rect : e;
      // The chunk whose rows hold t: the root of triangle_start(c) = t in float (t < 2^32, so
      // within a step of the answer), then exact by integers.
      constexpr float h = chunk / 2.0f - 1;
      c = u32((sqrtf(h * h + 2.0f * chunk * float(t)) - h) / chunk);
      while (c + 1 < s.chunks && triangle_start(c + 1) <= t) ++c;
      while (c > 0 && triangle_start(c) > t) --c;
      a = t - triangle_start(c);
      lo = a + 1;
    }
    const float4 p = firsts[a];
    const float4* chunk_points = set + c * chunk;
    const bin_cell* table = tables + kind * cells;
    if (c * chunk >= lo && c * chunk + chunk <= s.n) {
      // Every pair of the chunk counts (all but the triangles' diagonal and the sets' last chunks).
      SOAC_UNROLL
      for (int k = 0; k < chunk; ++k) r[k] = {bin_of(pair_dot(p, chunk_points[k]), table), 1u};
    } else {
      SOAC_UNROLL
      for (int k = 0; k < chunk; ++k) {
        const u32 b = c * chunk + u32(k);
        r[k] = {-1, 1u};
        if (b >= lo && b < s.n) r[k].bin = bin_of(pair_dot(p, chunk_points[k]), table);
      }
    }
    return r;
  }
};

// Every job's elements in one sequence, DD's then each set's (rectangle, triangle), cut by
// hist_batched into equal slices, one histogram row each: element i is the sequence's element i
// (past its end, none). Rows of equal work whatever the jobs, so the grid is whole waves of
// equal blocks, with one launch for every size.
struct sliced_pairs {
  job_pairs pairs;
  u64 total;             // elements in the sequence
  fast_divisor by_job;   // a set's elements, rect + tri
  SOAC_HD bin_values<u32, chunk> operator()(std::int64_t i) const {
    const u64 g = u64(i), dd = pairs.s.tri;
    if (g >= total) {
      bin_values<u32, chunk> none;
      SOAC_UNROLL
      for (int k = 0; k < chunk; ++k) none[k] = {-1, 0u};
      return none;
    }
    if (g < dd) return pairs.at(0, u32(g));
    const u64 q = g - dd, per = by_job.divisor();
    // (Past 2^32 elements, which only the largest inputs reach, a 64-bit division.)
    const u64 set = q <= UINT32_MAX ? by_job.divide(u32(q)) : q / per;
    return pairs.at(u32(set + 1), u32(q - set * per));
  }
};

// Rows of the slices formulation: a multiple of two per SM (whole waves of blocks, one or two
// per SM), about slice_elements_per_row elements each (16 per thread of a 1024-thread block), at
// most eight per SM, and enough that a row counts fewer than 2^32 pairs: with eight rows per SM
// at every size, small inputs lost to `batched` (each block initialising and folding its copies
// for a few thousand elements; docs/tuning/tpacf.md).
constexpr u64 slice_elements_per_row = 1024 * 16;
std::int64_t slice_rows(const device_properties& p, u64 elements) {
  const u64 wave = 2 * u64(std::max(p.sm_count, 1));
  const u64 waves = std::clamp<u64>((elements + wave * slice_elements_per_row / 2) / (wave * slice_elements_per_row), 1, 4);
  const u64 by_count = elements * chunk / (UINT32_MAX / 2) + 1;
  return std::int64_t(std::max(wave * waves, by_count));
}

// ---- Parboil's CUDA structure (the baseline)

__constant__ float parboil_binb[boundaries];
constexpr int parboil_block = 256, parboil_warps = parboil_block / 32;

// Block bx computes one histogram: bx = 0 DD, bx in [1, R] RR of set bx, bx in [R + 1, 2R] DR of
// set bx - R, into its job's row of `rows` (DD: row 0, set r: row r).
__global__ void __launch_bounds__(parboil_block) parboil_kernel(const float4* points, int n, int R, u32* rows) {
  __shared__ float4 tile[parboil_block];
  __shared__ u32 warp_hists[parboil_warps][counters];
  const int bx = blockIdx.x, tid = threadIdx.x;
  const bool self = bx <= R;
  const int set = self ? bx : bx - R;
  const float4* firsts = self ? points + std::int64_t(bx) * n : points;
  const float4* seconds = points + std::int64_t(set) * n;
  for (int i = tid; i < parboil_warps * counters; i += parboil_block) (&warp_hists[0][0])[i] = 0;
  u32* mine = warp_hists[tid / 32];
  for (int i = 0; i < n; i += parboil_block) {
    __syncthreads();  // the previous tile is no longer read
    if (tid + i < n) tile[tid] = firsts[tid + i];
    __syncthreads();
    for (int j = self ? i + 1 : 0; j < n; j += parboil_block) {
      const bool have = tid + j < n;
      const float4 q = have ? seconds[tid + j] : float4{0, 0, 0, 0};
      for (int k = 0; k < parboil_block && k + i < n; ++k) {
        const float d = pair_dot(tile[k], q);
        // Parboil's binary search over the boundaries (decreasing).
        int lo = 0, hi = boundaries - 1;
        while (hi > lo + 1) {
          const int m = (lo + hi) / 2;
          if (d >= parboil_binb[m]) hi = m;
          else lo = m;
        }
        const int bin = d >= parboil_binb[lo] ? lo : d < parboil_binb[hi] ? hi + 1 : hi;
        if (have && (!self || tid + j > i + k)) atomicAdd(mine + bin, 1u);
      }
    }
  }
  __syncthreads();
  if (tid < counters) {
    u32 sum = 0;
    for (int w = 0; w < parboil_warps; ++w) sum += warp_hists[w][tid];
    const int row = self ? bx : set, base = bx == 0 ? dd_base : self ? rr_base : dr_base;
    rows[std::int64_t(row) * job_bins + base + tid] = sum;
  }
}

// ---- inputs

// The data set and the random sets, n points each, as ra/dec (degrees).
struct sky {
  datasets::sky_points data;
  std::vector<datasets::sky_points> randoms;
  std::int64_t points() const { return std::int64_t(data.size()); }
  std::int64_t pairs() const {
    const std::int64_t n = points(), R = std::int64_t(randoms.size());
    return n * (n - 1) / 2 * (R + 1) + n * n * R;
  }
};

// Parboil's unit vectors, the data then each random set, as float4 (w = 0) for 16-byte loads.
std::vector<float4> unit_vectors(const sky& in) {
  std::vector<float4> v;
  v.reserve(in.data.size() * (in.randoms.size() + 1));
  const auto add = [&](const datasets::sky_points& p) {
    for (std::size_t i = 0; i < p.size(); ++i) {
      const auto u = datasets::parboil_unit_vector(p.ra[i], p.dec[i]);
      v.push_back(float4{u.x, u.y, u.z, 0});
    }
  };
  add(in.data);
  for (const auto& r : in.randoms) add(r);
  return v;
}

// Points on the sky: uniform (clusters = 0) or, for the data, in `clusters` clusters of 0.2 to 5
// degrees (log-uniform) around random centres, a fifth of the points uniform.
datasets::sky_points generate_points(std::int64_t n, std::int64_t clusters, std::uint64_t seed, std::uint64_t stream) {
  datasets::sky_points p;
  p.ra.resize(std::size_t(n));
  p.dec.resize(std::size_t(n));
  const auto unit = [&](std::uint64_t sub, std::uint64_t i) { return datasets::random_unit(seed, stream * 16 + sub, i); };
  const auto uniform = [&](std::uint64_t sub, std::uint64_t i, double v[3]) {
    const double z = 2 * unit(sub, i) - 1, a = 2 * M_PI * unit(sub + 1, i), r = std::sqrt(std::max(0.0, 1 - z * z));
    v[0] = r * std::cos(a), v[1] = r * std::sin(a), v[2] = z;
  };
  float* ra = p.ra.data();
  float* dec = p.dec.data();
  SOAC_OMP_PARALLEL_FOR
  for (std::int64_t i = 0; i < n; ++i) {
    double v[3];
    if (clusters > 0 && unit(0, u64(i)) >= 0.2) {
      const u64 c = u64(unit(1, u64(i)) * double(clusters));
      uniform(2, c, v);  // the cluster's centre
      const double sigma = 0.2 * std::pow(25.0, unit(4, c)) * M_PI / 180;
      for (int k = 0; k < 3; ++k) {  // Box-Muller, one normal per coordinate
        const double g = std::sqrt(-2 * std::log(1 - unit(5 + 2 * u64(k), u64(i)))) * std::cos(2 * M_PI * unit(6 + 2 * u64(k), u64(i)));
        v[k] += sigma * g;
      }
      const double len = std::sqrt(v[0] * v[0] + v[1] * v[1] + v[2] * v[2]);
      for (double& x : v) x /= len;
    } else {
      uniform(2, u64(n) + u64(i), v);
    }
    double lon = std::atan2(v[1], v[0]) * 180 / M_PI;
    if (lon < 0) lon += 360;
    ra[i] = float(lon);
    dec[i] = float(std::asin(std::clamp(v[2], -1.0, 1.0)) * 180 / M_PI);
  }
  return p;
}

struct sky_spec {
  std::int64_t n, R, clusters;
};
// The generator's parameters, checked (gen, and every dataset a run opens).
sky_spec spec_of(const nlohmann::json& params) {
  return {int_param(params, "points", 2, max_points), int_param(params, "randoms", 1, 10'000),
          int_param(params, "clusters", 0, 1'000'000)};
}

sky generate_sky(const nlohmann::json& params, std::uint64_t seed) {
  const auto [n, R, clusters] = spec_of(params);
  // ra and dec of the data and the random sets, twice (the sets, then the bundle's arrays).
  require_host_memory(checked_bytes(std::uint64_t(n), std::uint64_t(R + 1) * 4 * sizeof(float), "tpacf: points x randoms"),
                      "tpacf: " + std::to_string(n) + " points in " + std::to_string(R) + " random sets");
  sky s;
  s.data = generate_points(n, clusters, seed, 0);
  for (std::int64_t r = 1; r <= R; ++r) s.randoms.push_back(generate_points(n, 0, seed, u64(r)));
  return s;
}

// Both sequential references (validate/tpacf.hpp) of the data then the random sets, n points each.
void references(const std::vector<float4>& vectors, std::int64_t n, ref::pair_counts& parboil, ref::pair_counts& exact) {
  std::vector<float> x, y, z;
  for (const auto& p : vectors) x.push_back(p.x), y.push_back(p.y), z.push_back(p.z);
  const auto set = [&](std::size_t k) {
    const std::size_t at = k * std::size_t(n), len = std::size_t(n);
    return ref::points{std::span(x).subspan(at, len), std::span(y).subspan(at, len), std::span(z).subspan(at, len)};
  };
  std::vector<ref::points> randoms;
  for (std::size_t k = 1; k < vectors.size() / std::size_t(n); ++k) randoms.push_back(set(k));
  ref::reference_counts(set(0), randoms, parboil, exact);
}

// ---- the computation: one formulation's buffers and its run

// Segment `bin` of the jobs' histograms: the bin's count in every job, widened to 64 bits.
struct job_sums {
  const u32* rows;
  SOAC_HD u64 operator()(std::int64_t bin, std::int64_t job) const { return rows[job * job_bins + bin]; }
};

class pair_counter : public first_plan {
 public:
  pair_counter(context& ctx, const hist_variant& v, const std::vector<float4>& vectors, std::int64_t n, std::int64_t R)
      : ctx_(ctx), v_(v), n_(n), R_(R), s_(shape_of(n)), by_n_(u32(std::max<std::int64_t>(n, 1))) {
    if (v.name == "parboil" && !ctx.is_cuda()) throw usage_error("tpacf: the parboil baseline needs the cuda backend");
    points_ = buffer<float4>(ctx, std::span<const float4>(vectors));
    const boundaries_f bf;
    std::vector<bin_cell> tables;
    for (int kind : {dd_kind, dr_kind, rr_kind}) {
      const auto t = make_cells(bf, kind * counters);
      tables.insert(tables.end(), t.begin(), t.end());
    }
    table_ = buffer<bin_cell>(ctx, std::span<const bin_cell>(tables));
    const u64 elements = u64(s_.tri) + u64(R) * (u64(s_.rect) + s_.tri);
    rows_count_ = v.name == "slices" ? slice_rows(ctx.props(), elements) : R + 1;
    rows_ = buffer<u32>(ctx, std::size_t(rows_count_ * job_bins));
    sums_ = buffer<u64>(ctx, std::size_t(job_bins));
    if (v.name == "parboil") {
      ctx.activate();  // the symbol of this context's device
      SOAC_CUDA_CHECK(cudaMemcpyToSymbolAsync(parboil_binb, bf.b, sizeof bf.b, 0, cudaMemcpyHostToDevice, ctx.stream()));
    }
  }

  // DD, DR, RR (22 each) into sums.
  void compute() {
    ctx_.fill_zero(rows_.data(), rows_.size() * sizeof(u32));
    const job_pairs base{points_.data(), table_.data(), s_, by_n_, 0, 0};
    if (v_.name == "slices") {
      const u64 elements = u64(s_.tri) + u64(R_) * (u64(s_.rect) + s_.tri);
      const std::int64_t slice = std::int64_t((elements + u64(rows_count_) - 1) / u64(rows_count_));
      const sliced_pairs f{base, elements, fast_divisor(s_.rect + s_.tri)};
      keep(hist_batched(ctx_, v_.options, rows_count_, slice, f, rows_.view(), job_bins, plus<u32>{}));
    } else if (v_.name == "sets") {
      for (std::int64_t j = 0; j <= R_; ++j) {
        job_pairs f = base;
        f.job = u32(j);
        keep(hist(ctx_, v_.options, j == 0 ? s_.tri : std::int64_t(s_.rect) + s_.tri, f,
                  rows_.view().subspan(std::size_t(j * job_bins), job_bins), plus<u32>{}));
      }
    } else if (v_.name == "batched") {
      job_pairs f = base;
      f.seg_len = u64(s_.rect) + s_.tri;
      keep(hist_batched(ctx_, v_.options, R_ + 1, std::int64_t(f.seg_len), f, rows_.view(), job_bins, plus<u32>{}));
    } else if (n_ > 0) {
      parboil_kernel<<<unsigned(2 * R_ + 1), parboil_block, 0, ctx_.stream()>>>(points_.data(), int(n_), int(R_), rows_.data());
      SOAC_CHECK_LAUNCH("parboil_kernel");
    }
    segreduce(ctx_, job_bins, rows_count_, job_sums{rows_.data()}, sums_.view(), plus<u64>{});
  }

  ref::pair_counts result() const {
    const auto all = sums_.to_vector();
    ref::pair_counts p;
    for (int k = 0; k < counters; ++k)
      p.dd[std::size_t(k)] = all[std::size_t(dd_base + k)], p.dr[std::size_t(k)] = all[std::size_t(dr_base + k)],
      p.rr[std::size_t(k)] = all[std::size_t(rr_base + k)];
    return p;
  }

 private:
  context& ctx_;
  hist_variant v_;
  std::int64_t n_, R_, rows_count_ = 0;
  job_shape s_;
  fast_divisor by_n_;
  buffer<float4> points_;
  buffer<bin_cell> table_;
  buffer<u32> rows_;
  buffer<u64> sums_;
};

constexpr const char* parboil_tpacf = "Parboil's tpacf";

class tpacf_app final : public app {
 public:
  tpacf_app() : app(describe()) {}

  static app_info describe() {
    app_info a = app_info::named("tpacf", "Parboil tpacf: DD, DR and RR pair counts in 22 angular bins over a data set and R "
                                          "random sets (SC20 V-D)");
    {
      auto p = [](std::int64_t n, std::int64_t R) {
        return nlohmann::json{{"points", n}, {"randoms", R}, {"clusters", 20}, {"variants", ""}};
      };
      a.presets = {{"small", "Parboil's small: 487 points, 100 random sets", p(487, 100)},
                   {"medium", "Parboil's medium: 4,096 points, 100 random sets", p(4096, 100)},
                   {"large", "Parboil's large: 10,391 points, 100 random sets (~16G pairs)", p(10391, 100)},
                   {"tiny", "61 points, 3 random sets (tests)", p(61, 3)}};
    }
    a.variants = formulations;
    a.variant_settings = hist_variant_settings;
    a.input_formats = {{"parboil", "Parboil tpacf's text files of \"ra dec\" lines: -i FOLDER (Datapnts.1, Randompnts.1 ..), or -i DATA "
                                   "-i RANDOM1 -i RANDOM2 ...; gen -o FOLDER writes them"},
                       {"futhark", "the SC20 artifact's tpacf-data/*.in (benchmarks/parboil/tpacf.fut): data ra, data dec [n]f64, random ra, "
                                   "random dec [R][n]f64 (degrees) in a Futhark data file (-i FILE)"}};
    a.expected_formats = {{"parboil", "the result file Parboil's tpacf writes (-o tpacf.out: DD, DR, RR of bins 1 .. 20); by Parboil's "
                                      "tools/compare-output tolerances"},
                          {"futhark", "the SC20 artifact's tpacf-data/*.out: the same 60 counts as a Futhark [60]i32 array (computed in f64); "
                                      "by the same tolerances"}};
    a.run_settings = {{"points", 0, "points read from each file, as Parboil's -p (0: all of the data file's)"},
                      {"randoms", 0, "random sets used, as Parboil's -n (0: all given or found)"},
                      strict_setting(parboil_tpacf)};
    a.bench_presets = {"small", "medium", "large"};
    return a;
  }

  void check_params(const nlohmann::json& params) const override { spec_of(params); }
  // What a run reads: n data points and R random sets of n points (clusters is the generator's).
  void check_dataset(const bundle& b) const override {
    const std::int64_t n = datasets::length_of(b, "data_ra", "points");
    datasets::require_same_length(b, {"data_ra", "data_dec"});
    const auto h = b.header("random_ra");
    const std::int64_t R = h.shape.size() == 2 ? h.shape[0] : 0;
    for (const char* a : {"random_ra", "random_dec"})
      if (b.header(a).shape != std::vector<std::int64_t>{R, n} || R < 1)
        throw input_error(b.path_of(a).string() + ": shape " + datasets::shape_string(b.header(a).shape) +
                          ", but the random sets must be [randoms, points] with the data's " + std::to_string(n) + " points");
    if (b.params().contains("randoms") && b.params()["randoms"] != R)
      throw input_error(b.path_of("random_ra").string() + ": " + std::to_string(R) + " random sets, but the manifest says randoms = " +
                        b.params()["randoms"].dump());
  }

  void generate(const gen_request& r) const override {
    check_format(r.format);
    const sky s = generate_sky(r.params, r.seed);
    if (r.format == "futhark") {
      std::vector<double> ra, dec;
      for (const auto& p : s.randoms) ra.insert(ra.end(), p.ra.begin(), p.ra.end()), dec.insert(dec.end(), p.dec.begin(), p.dec.end());
      const std::int64_t n = s.points(), R = std::int64_t(s.randoms.size());
      const std::vector<double> data_ra(s.data.ra.begin(), s.data.ra.end()), data_dec(s.data.dec.begin(), s.data.dec.end());
      datasets::write_futhark_values(r.output, std::vector<datasets::futhark_value>{
                                                   datasets::make_futhark_value<double>({n}, data_ra),
                                                   datasets::make_futhark_value<double>({n}, data_dec),
                                                   datasets::make_futhark_value<double>({R, n}, ra),
                                                   datasets::make_futhark_value<double>({R, n}, dec)});
      return;
    }
    if (!r.format.empty()) {
      datasets::file_set_writer files(r.output);
      datasets::write_parboil_points(files.add("Datapnts.1"), s.data.ra, s.data.dec);
      const auto random_name = [&](std::size_t k) { return "Randompnts." + std::to_string(k); };
      for (std::size_t k = 1; k <= s.randoms.size(); ++k)
        datasets::write_parboil_points(files.add(random_name(k)), s.randoms[k - 1].ra, s.randoms[k - 1].dec);
      // Random files beyond R from an earlier gen into the folder would join the dataset.
      for (std::size_t k = s.randoms.size() + 1; std::filesystem::remove(r.output / random_name(k)); ++k) {
      }
      files.commit();
      return;
    }
    datasets::bundle_writer out(r.output, "dataset", name());
    out.add<float>("data_ra", s.data.ra);
    out.add<float>("data_dec", s.data.dec);
    std::vector<float> ra, dec;
    for (const auto& p : s.randoms) ra.insert(ra.end(), p.ra.begin(), p.ra.end()), dec.insert(dec.end(), p.dec.begin(), p.dec.end());
    const std::int64_t shape[2] = {std::int64_t(s.randoms.size()), s.points()};
    out.add("random_ra", datasets::dtype::f32, shape, ra.data());
    out.add("random_dec", datasets::dtype::f32, shape, dec.data());
    finish_dataset(out, r);
  }

  // A Futhark array of f64 (tpacf.fut's) or f32 coordinates, rounded to float.
  static std::vector<float> to_floats(const datasets::futhark_value& v, std::size_t rank) {
    if (v.rank() != rank || (v.type != "f64" && v.type != "f32"))
      throw input_error(v.file + ": value " + std::to_string(v.position) + " is " + v.type_text() + ", expected " +
                        (rank == 1 ? "[n]f64" : "[R][n]f64") + " coordinates (or f32)");
    if (v.type == "f32") return v.f32_elements(rank);
    std::vector<float> out(std::size_t(v.element_count()));
    for (std::size_t i = 0; i < out.size(); ++i) {
      double d;
      std::memcpy(&d, v.data.data() + sizeof d * i, sizeof d);
      out[i] = float(d);
    }
    return out;
  }

  // The first `points` points of the first `randoms` random sets (0: all) of n data points and R
  // sets of n (row-major), from `source`.
  static sky slice(std::vector<float> data_ra, std::vector<float> data_dec, const std::vector<float>& ra, const std::vector<float>& dec,
                   std::int64_t R, const std::string& source, std::int64_t points, std::int64_t randoms, const std::string& asked_by) {
    const std::int64_t n = std::int64_t(data_ra.size());
    if (data_dec.size() != data_ra.size() || R < 1 || std::int64_t(ra.size()) != R * n || dec.size() != ra.size())
      throw input_error(source + ": the random sets' ra and dec must both be [randoms, points] with the data's " + std::to_string(n) +
                        " points (and the data's ra and dec as many)");
    if (points > n) throw input_error(source + ": holds " + std::to_string(n) + " points per set, fewer than the " + std::to_string(points) + " " + asked_by);
    if (randoms > R) throw input_error(source + ": holds " + std::to_string(R) + " random sets, fewer than the " + std::to_string(randoms) + " " + asked_by);
    const std::int64_t use_n = points > 0 ? points : n, use_R = randoms > 0 ? randoms : R;
    sky s;
    s.data.ra = std::move(data_ra);
    s.data.dec = std::move(data_dec);
    s.data.ra.resize(std::size_t(use_n));
    s.data.dec.resize(std::size_t(use_n));
    for (std::int64_t r = 0; r < use_R; ++r) {
      datasets::sky_points p;
      p.ra.assign(ra.begin() + r * n, ra.begin() + r * n + use_n);
      p.dec.assign(dec.begin() + r * n, dec.begin() + r * n + use_n);
      s.randoms.push_back(std::move(p));
    }
    const std::vector<float>* coordinates[] = {&ra, &dec, &s.data.ra, &s.data.dec};
    for (const auto* a : coordinates)
      if (std::any_of(a->begin(), a->end(), [](float v) { return !std::isfinite(v); }))
        throw input_error(source + ": a coordinate is not a finite number (as a float)");
    return s;
  }

  // The input: Parboil's files (a folder, or the data file then the random files) or a bundle,
  // the first `points` points of the first `randoms` sets (0: all).
  // points and randoms: 0 for all the dataset holds; `asked_by` names who asked for more than 0
  // (the run's settings, or the result being validated) in the error when the dataset has fewer.
  sky load(const std::vector<std::filesystem::path>& inputs, const std::string& format, std::int64_t points,
           std::int64_t randoms, datasets::leniency& lenient, const std::string& asked_by = "requested") const {
    check_format(format);
    sky s;
    if (format == "parboil") {
      datasets::parboil_tpacf_files files;
      if (inputs.size() == 1 && std::filesystem::is_directory(inputs.front())) {
        files = datasets::parboil_tpacf_folder(inputs.front(), randoms);
      } else {
        if (inputs.size() < 2) throw usage_error("tpacf: give a Parboil dataset folder, or the data file and the random files");
        files.data = inputs.front();
        files.randoms.assign(inputs.begin() + 1, inputs.end());
        if (randoms > std::int64_t(files.randoms.size()))
          throw usage_error("tpacf: randoms = " + std::to_string(randoms) + " but " + std::to_string(files.randoms.size()) +
                            " random files given");
        if (randoms > 0) files.randoms.resize(std::size_t(randoms));
      }
      s.data = datasets::read_parboil_points(files.data, points, asked_by, lenient);
      const std::string whose = "of the data file " + files.data.filename().string() + " (every set holds as many points)";
      for (const auto& f : files.randoms) s.randoms.push_back(datasets::read_parboil_points(f, s.points(), whose, lenient));
    } else if (format == "futhark") {
      // The artifact's program (benchmarks/parboil/tpacf.fut): main (datapointsx: [n]f64)
      // (datapointsy: [n]f64) (randompointsx: [R][n]f64) (randompointsy: [R][n]f64), ra and dec in
      // degrees, which soac rounds to float as Parboil's fscanf("%f") reads its files.
      if (inputs.size() != 1) throw usage_error("tpacf: --format futhark reads one file (-i FILE)");
      const auto values = datasets::read_futhark_values(inputs.front());
      if (values.size() != 4)
        throw input_error(inputs.front().string() + ": holds " + std::to_string(values.size()) +
                          " values, not tpacf.fut's 4 (data ra, data dec, random ra, random dec)");
      s = slice(to_floats(values[0], 1), to_floats(values[1], 1), to_floats(values[2], 2), to_floats(values[3], 2),
                values[2].rank() == 2 ? values[2].shape[0] : 0, inputs.front().string(), points, randoms, asked_by);
    } else {
      if (inputs.size() != 1) throw usage_error("tpacf: a soac bundle is one input (-i)");
      const auto b = open_dataset(inputs.front());
      const auto h = b.header("random_ra");
      if (h.shape.size() != 2 || h.shape[1] != std::int64_t(b.header("data_ra").shape[0]) || b.header("random_dec").shape != h.shape)
        throw input_error(b.dir().string() + ": random_ra and random_dec must both be [randoms, points] with the data's points");
      s = slice(b.read<float>("data_ra"), b.read<float>("data_dec"), b.read<float>("random_ra"), b.read<float>("random_dec"), h.shape[0],
                b.dir().string(), points, randoms, asked_by);
    }
    if (s.points() < 2 || s.points() > max_points)
      throw input_error((inputs.front()).string() + ": " + std::to_string(s.points()) + " points per set; tpacf takes 2 to " +
                        std::to_string(max_points));
    if (s.randoms.empty()) throw input_error(inputs.front().string() + ": no random sets");
    return s;
  }

  std::string run(context& ctx, const run_request& r) const override {
    const std::int64_t points = int_param(r.settings, "points", 0, max_points);
    const std::int64_t randoms = int_param(r.settings, "randoms", 0, 10'000);
    if (points == 1) throw usage_error("tpacf: points is 0 (all the dataset holds) or 2 to " + std::to_string(max_points) + ", not 1");
    auto lenient = leniency_of(r.settings, parboil_tpacf);
    const sky s = load(r.inputs, r.format, points, randoms, lenient, "asked for by --set");
    report_leniency(lenient);
    const auto v = parse_variant(r.variant);
    pair_counter pc(ctx, v, unit_vectors(s), s.points(), std::int64_t(s.randoms.size()));
    const bench::stats t = bench::time(ctx, bench::settings{.warmup = 0, .runs = 1, .progress = false, .warmup_ms = 0},
                                       [&] { pc.compute(); });
    const auto counts = pc.result();
    datasets::bundle_writer out(r.output, "result", name());
    out.add<u64>("dd", counts.dd);
    out.add<u64>("dr", counts.dr);
    out.add<u64>("rr", counts.rr);
    out.add_file("tpacf.out", datasets::parboil_tpacf_output(counts.dd, counts.dr, counts.rr));
    out.params() = {{"points", s.points()}, {"randoms", s.randoms.size()}, {"format", r.format.empty() ? "bundle" : r.format}};
    out.info() = {{"backend", std::string(to_string(ctx.which()))}, {"device", ctx.props().name}, {"variant", v.text},
                  {"plan", pc.plan()}, {"ms", t.median_ms}, {"pairs", s.pairs()}};
    out.finish();
    std::ostringstream msg;
    msg << "tpacf: " << s.points() << " points, " << s.randoms.size() << " random sets (" << s.pairs() << " pairs) on "
        << ctx.describe() << "\n  " << v.text << ": " << t.median_ms << " ms, " << std::setprecision(3)
        << double(s.pairs()) / (t.median_ms * 1e-3) / 1e9 << " G pairs/s";
    if (r.verbose && !pc.plan().empty()) msg << "\n  plan (first job): " << pc.plan();
    return msg.str();
  }


  // The 22 counters of each kind a result holds.
  static ref::pair_counts result_counts(const bundle& out) {
    ref::pair_counts got;
    using counts_of = std::pair<const char*, ref::counts*>;
    for (const auto& [key, where] : {counts_of{"dd", &got.dd}, counts_of{"dr", &got.dr}, counts_of{"rr", &got.rr}}) {
      const auto v = out.read<u64>(key);
      if (v.size() != counters) throw input_error(out.path_of(key).string() + ": expected 22 counters");
      std::copy(v.begin(), v.end(), where->begin());
    }
    return got;
  }

  // Parboil's compare-output on the 60 numbers, against what Parboil prints: its counts are 32-bit
  // (the base program prints a long long with %d, the CUDA one an int with %u), so a count of
  // 2^31 or more is compared as Parboil would print it, and the summary says so.
  validate_report compare(const compare_request& r) const override {
    const auto out = bundle::open(r.result, "result", name());
    const ref::pair_counts got = result_counts(out);
    std::vector<double> theirs;
    if (r.format == "futhark") {  // tpacf.fut's output: the same 60 numbers as a [60]i32 array
      const auto values = datasets::read_futhark_values(r.expected);
      if (values.size() != 1) throw input_error(r.expected.string() + ": holds " + std::to_string(values.size()) + " values, not tpacf.fut's one");
      for (const std::int32_t v : values[0].i32_elements(1)) theirs.push_back(double(v));
    } else {
      datasets::text_reader in(r.expected);
      while (!in.at_end()) {
        if (theirs.size() == 60) in.fail("more than Parboil's 60 numbers (DD, DR, RR of bins 1 .. 20)");
        theirs.push_back(double(in.read_int("a count", std::numeric_limits<std::int64_t>::min(), std::numeric_limits<std::int64_t>::max())));
      }
    }
    if (theirs.size() != 60)
      throw input_error(r.expected.string() + ": holds " + std::to_string(theirs.size()) +
                        " numbers, not Parboil's 60 (DD, DR, RR of bins 1 .. 20)");
    std::vector<double> ours = ref::parboil_printed(got);
    std::ostringstream notes;
    for (std::size_t i = 0; i < ours.size(); ++i) {
      if (ours[i] < 2147483648.0 || ours[i] == theirs[i]) continue;
      const auto low = std::uint32_t(std::uint64_t(ours[i]));
      for (const double printed : {double(low), double(std::int32_t(low))})
        if (std::fabs(printed - theirs[i]) < std::fabs(ours[i] - theirs[i])) {
          notes << "; " << ref::parboil_printed_name(i) << ": soac counts " << std::uint64_t(ours[i]) << ", which Parboil prints as "
                << std::int64_t(printed) << " (wrapped at 2^32), compared so";
          ours[i] = printed;
        }
    }
    const auto rep = ref::check_parboil_printed(theirs, ours);
    std::size_t worst = 0;
    double worst_rel = -1;
    for (std::size_t i = 0; i < ours.size(); ++i) {
      const double rel = std::fabs(ours[i] - theirs[i]) / std::max(std::fabs(theirs[i]), 1.0);
      if (rel > worst_rel) worst_rel = rel, worst = i;
    }
    std::ostringstream s;
    s << (rep.ok() ? "within" : "beyond") << " Parboil's compare-output tolerances";
    if (!rep.ok()) s << " in " << rep.mismatches << " of " << rep.checked << " checks (60 numbers and their total)";
    s << "; the largest relative difference " << std::setprecision(3) << worst_rel << " at " << ref::parboil_printed_name(worst) << " ("
      << std::setprecision(12) << ours[worst] << " here, " << theirs[worst] << " in " << r.expected.filename().string() << ")"
      << notes.str();
    for (const auto& e : rep.examples) s << "\n  " << e;
    return {rep.ok(), s.str()};
  }

  validate_report validate(const validate_request& r) const override {
    const auto out = bundle::open(r.result, "result", name());
    // The points and sets the run used, as its result recorded them.
    const auto used = params_of_file(r.result / "manifest.json", [&] {
      return std::pair{int_param(out.params(), "points", 2, max_points), int_param(out.params(), "randoms", 1, 10'000)};
    });
    datasets::leniency lenient;
    const sky s = load(r.inputs, r.format, used.first, used.second, lenient, "that the result was computed on (a result of another dataset?)");
    const ref::pair_counts got = result_counts(out);
    ref::pair_counts parboil, exact;
    references(unit_vectors(s), s.points(), parboil, exact);
    const auto same = ref::compare_exactly(parboil, got);
    const auto close = ref::check_parboil_tolerances(exact, got);
    const auto agree = ref::compare_exactly(exact, got);
    std::ostringstream summary;
    summary << (same.ok() ? "all 66 counters match" : "counters differ from") << " the float reference (Parboil's sequential "
            << "program); " << (close.ok() ? "within" : "NOT within") << " Parboil's tolerances of the double-precision one ("
            << agree.checked - agree.mismatches << " of 66 counters equal to it)";
    for (const auto* rep : {&same, &close})
      for (const auto& e : rep->examples) summary << "\n  " << e;
    return {same.ok() && close.ok(), summary.str()};
  }

  void bench(context& ctx, const bench_request& r, bench::suite& suite) const override {
    if (!ctx.is_cuda()) throw usage_error("tpacf bench: the parboil baseline needs --backend cuda");
    datasets::leniency lenient;
    // The -i files are one case (a data file and its random files, or a folder); else the presets.
    const auto cases = r.inputs.empty()
                           ? preset_inputs<sky>(*this, r, [&](const nlohmann::json& p) { return generate_sky(p, r.seed); })
                           : std::vector<bench_input<sky>>{{r.inputs.front().string(),
                                                            load(r.inputs, r.format.empty() ? "parboil" : r.format, 0, 0, lenient), ""}};
    suite.expect_cases(int(cases.size()));
    for (const auto& c : cases) {
      const std::int64_t n = c.input.points(), R = std::int64_t(c.input.randoms.size());
      const auto vectors = unit_vectors(c.input);
      std::ostringstream title;
      title << "tpacf " << c.label << ": " << n << " points x " << R << " random sets, " << std::setprecision(3)
            << double(c.input.pairs()) / 1e9 << "G pairs";
      // Every point read once (the work is the pairs: see the G pairs/s in the notes).
      suite.begin_case(title.str(), {{"points", n}, {"randoms", R}, {"pairs", c.input.pairs()}}, double(vectors.size()) * 16);
      std::vector<std::string> chosen = split_variant_list(c.variants);
      if (chosen.empty()) chosen = {"parboil", "slices", "slices,private=on", "sets", "sets,private=on", "batched"};
      // Every formulation computes the float dot products of Parboil's sequential program: they
      // must all match its counts, computed here where that takes seconds; else the first's.
      ref::pair_counts expected, exact;
      bool have_expected = c.input.pairs() <= reference_max_pairs;
      if (have_expected) references(vectors, n, expected, exact);
      for (const auto& text : chosen) {
        const auto v = parse_variant(text);
        const std::string label = v.name == "parboil" ? "Parboil CUDA (block per histogram)" : "soac " + text;
        unless_ruled_out(label, [&] {
          pair_counter pc(ctx, v, vectors, n, R);
          suite.measure(label, v.name == "parboil" ? bench::role::baseline : bench::role::soac, [&] { pc.compute(); });
          const auto got = pc.result();
          std::ostringstream note;
          note << std::setprecision(3) << double(c.input.pairs()) / (suite.cases().back().variants.back().time.median_ms * 1e-3) / 1e9
               << " G pairs/s";
          if (!pc.plan().empty()) note << "; first job: " << pc.plan();
          if (!have_expected) expected = got, have_expected = true;
          else if (!ref::compare_exactly(expected, got).ok()) note << "; WRONG: differs from the float reference";
          suite.annotate(note.str());
        });
      }
    }
  }
};

}  // namespace
}  // namespace soac::apps

SOAC_REGISTER_APP(soac::apps::tpacf_app)
