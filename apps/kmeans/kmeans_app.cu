// k-means clustering (Lloyd's algorithm) on the core: SC20 section V-D1 (the update as one fused
// histogram of counts and vector sums) and FHPC17 section 4 (the same as segmented reductions),
// with Rodinia's program structure as the in-run baseline.
//
// One iteration: assign every point to its nearest centroid, then move every non-empty
// cluster's centroid to the mean of its points (an empty cluster keeps its centroid); stop after
// max_iterations, or once at most `threshold` points (Rodinia's rule: its default runs until no point
// changes) or at most threshold_fraction * n points changed cluster (validate::kmeans_stop_rule).
//   layout      columns (small k): a feature-major copy of the points beside the row-major one,
//               so that a warp reads one feature of 32 points as one line; rows: row-major only.
//   assignment  direct: columns: a lane per point keeps its distance to every centroid in
//               registers, the centroids in shared memory (the points stream once); rows: a lane
//               group per point holds the point in registers and sums (x - c)^2 over the centroids;
//               gemm: cuBLAS SGEMM of -2 X C^T in chunks of points, then soac::segreduce takes each
//               row's argmin of |c|^2 - 2 x.c (k large: the 2 n k d flops run at SGEMM speed).
//   update      hist (default): with columns, the counts as soac::hist and the sums as
//               soac::hist_batched, one histogram of k sums per feature, thread-private copies;
//               with rows, soac::hist_fused of the counts (k int bins) and the sums, either
//               flattened (element (p, j) of the n x d points adds to float bin member[p] * d + j,
//               one kernel for any d) or as soac::elementwise vector bins of 4 columns;
//               segreduce (FHPC17): radix sort of (membership, index), the counts as k regular
//               segments of n one-hot values, and the sums as k * d regular segments padded to
//               the largest cluster (the core's segreduce is regular; see padded_sum);
//               rodinia: memberships copied to the host every iteration, sums and counts summed
//               there by one thread, centroids copied back (Rodinia 3.1's kmeans_cuda).
// Every variant assigns with the same rule (lowest index on ties) and the same convergence test.
#include <algorithm>
#include <tuple>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <iomanip>
#include <iostream>
#include <limits>
#include <memory>
#include <optional>
#include <sstream>
#include <unordered_map>

#include <cublas_v2.h>

#include "apps/app.hpp"
#include "apps/multi_scaling.hpp"
#include "core/buffer.hpp"
#include "core/cuda_event.hpp"
#include "core/error.hpp"
#include "core/fast_divide.hpp"
#include "core/hist.cuh"
#include "core/launch.cuh"
#include "core/multi/combine.cuh"
#include "core/scan.cuh"
#include "core/scatter.cuh"
#include "core/segreduce.cuh"
#include "core/sort.cuh"
#include "datasets/bundle.hpp"
#include "datasets/random.hpp"
#include "datasets/rodinia_kmeans.hpp"
#include "validate/kmeans.hpp"

namespace soac::apps {
namespace {

using datasets::bundle;
using datasets::kmeans_points;

// ---- Values and operators -------------------------------------------------------------------

// A point's nearest centroid: the distance as the assignment computed it (direct: the squared
// distance; gemm: |c|^2 - 2 x.c, the squared distance less |x|^2) and the centroid.
struct nearest {
  float distance;
  std::int32_t index;
};

// The smaller distance wins, the lower index on ties (Rodinia's strict `<` over increasing c).
struct nearest_op {
  using value_type = nearest;
  static constexpr bool commutative = true;
  SOAC_HD static nearest identity() { return {cuda::std::numeric_limits<float>::infinity(), cuda::std::numeric_limits<std::int32_t>::max()}; }
  SOAC_HD nearest operator()(const nearest& a, const nearest& b) const {
    return (b.distance < a.distance || (b.distance == a.distance && b.index < a.index)) ? b : a;
  }
};

// What an iteration reports: the objective of its assignment and how many points changed cluster.
struct summary {
  double objective;
  std::int64_t changed;
};
struct summary_op {
  using value_type = summary;
  static constexpr bool commutative = true;
  SOAC_HD static summary identity() { return {0.0, 0}; }
  SOAC_HD summary operator()(const summary& a, const summary& b) const { return {a.objective + b.objective, a.changed + b.changed}; }
};

SOAC_HD inline float squared_distance(const float* x, const float* c, std::int64_t d) {
  float acc = 0.f;
  for (std::int64_t j = 0; j < d; ++j) {
    const float diff = x[j] - c[j];
    acc = fmaf(diff, diff, acc);
  }
  return acc;
}

// The row of element e of a row-major array with rows of d: e / d, by multiplication where
// e < 2^32 (fast_divisor is 32-bit), else by division.
struct index_split {
  std::int64_t d;
  fast_divisor div;
  bool narrow;
  index_split(std::int64_t d_, std::int64_t total)
      : d(d_), div(std::uint32_t(d_ <= 0xffffffffLL ? d_ : 1)), narrow(total <= 0xffffffffLL && d_ <= 0xffffffffLL) {}
  SOAC_HD std::int64_t row(std::int64_t e) const { return narrow ? std::int64_t(div.divide(std::uint32_t(e))) : e / d; }
};

// ---- Functors given to the core ----------------------------------------------------------------

// segreduce: |row s|^2 (the points' norms once, the centroids' every gemm iteration).
struct row_squared_norm {
  const float* rows;
  std::int64_t d;
  SOAC_HD float operator()(std::int64_t s, std::int64_t j) const {
    const float v = rows[s * d + j];
    return v * v;
  }
};

// segreduce over one chunk's rows of the GEMM result (dots = -2 X C^T): the nearest centroid.
struct gemm_nearest {
  const float* dots;
  const float* cnorm;
  std::int64_t k;
  SOAC_HD nearest operator()(std::int64_t q, std::int64_t c) const { return {cnorm[c] + dots[q * k + c], std::int32_t(c)}; }
};

// segreduce, one segment: the assignment's objective and the points whose cluster changed.
struct summarize_points {
  const nearest* now;
  const nearest* before;
  const float* xnorm;  // gemm: |x|^2, which the assignment's distances leave out; else null
  SOAC_HD summary operator()(std::int64_t, std::int64_t p) const {
    const double dist = double(now[p].distance) + (xnorm ? double(xnorm[p]) : 0.0);
    return {dist, now[p].index != before[p].index ? 1 : 0};
  }
};

// scatter: the squared distance of every point to its cluster's centroid (the final objective).
struct assigned_distance {
  const float* x;
  const float* centroids;
  const nearest* best;
  std::int64_t d;
  SOAC_HD write_at<std::int64_t, nearest> operator()(std::int64_t p) const {
    const std::int32_t c = best[p].index;
    return {p, nearest{squared_distance(x + p * d, centroids + std::int64_t(c) * d, d), c}};
  }
};

// hist_fused, flattened sums: element (p, j) of the points counts p once (at j = 0) and adds
// x[p][j] to float bin c * d + j, so one kernel serves every d.
struct flat_updates {
  const float* x;
  const nearest* best;
  index_split split;
  SOAC_HD auto operator()(std::int64_t e) const {
    const std::int64_t p = split.row(e), j = e - p * split.d;
    const std::int64_t c = best[p].index;
    return fused_updates{bin_value<int>{j == 0 ? c : -1, 1}, bin_value<float>{c * split.d + j, x[e]}};
  }
};

// hist_fused, vector sums (SC20's map (+) bins): element (p, b) adds columns [W b, W b + W) of
// point p to vector bin c * blocks + b, zeros past d.
template <int W>
struct block_updates {
  const float* x;
  const nearest* best;
  std::int64_t d;
  index_split split;  // by the number of blocks per point
  SOAC_HD auto operator()(std::int64_t e) const {
    const std::int64_t blocks = split.d;
    const std::int64_t p = split.row(e), b = e - p * blocks;
    const std::int64_t c = best[p].index;
    vec<float, W> v;
    for (int t = 0; t < W; ++t) {
      const std::int64_t j = b * W + t;
      v[t] = j < d ? x[p * d + j] : 0.f;
    }
    return fused_updates{bin_value<int>{b == 0 ? c : -1, 1}, bin_value<vec<float, W>>{c * blocks + b, v}};
  }
};

// The sums as finalize reads them: element (c, j) of k x d float sums stored with strides
// (flattened [c][j], or one histogram per column [j][c]), or of vector bins of W columns.
struct strided_sums {
  const float* sums;
  std::int64_t c_stride, j_stride;
  SOAC_HD float operator()(std::int64_t c, std::int64_t j) const { return sums[c * c_stride + j * j_stride]; }
};
template <int W>
struct vector_sums {
  const vec<float, W>* sums;
  std::int64_t blocks;  // vectors per cluster
  SOAC_HD float operator()(std::int64_t c, std::int64_t j) const { return sums[c * blocks + j / W][int(j % W)]; }
};

// scatter over k * d: the new centroids, sums / counts; an empty cluster keeps its centroid.
template <class Sums>
struct finalize_centroids {
  Sums sums;
  const int* counts;
  const float* old;
  index_split split;  // by d
  SOAC_HD write_at<std::int64_t, float> operator()(std::int64_t e) const {
    const std::int64_t c = split.row(e), j = e - c * split.d;
    const int count = counts[c];
    return {e, count > 0 ? sums(c, j) / float(count) : old[e]};
  }
};

// hist: the counts alone (k int bins), one element per point.
struct member_counts {
  const nearest* best;
  SOAC_HD bin_value<int> operator()(std::int64_t p) const { return {best[p].index, 1}; }
};

// hist, the sums alone, flattened into float bin c * d + j, over the elements in the layout's
// order: rows (element p * d + j of x) or columns (element j * n + p of the feature-major copy).
struct layout_sums {
  const float* values;         // x or its feature-major copy
  const std::int32_t* member;  // columns: the memberships as int32; rows: null (best is read)
  const nearest* best;
  index_split split;  // rows: by d; columns: by n
  std::int64_t d;
  SOAC_HD bin_value<float> operator()(std::int64_t e) const {
    const std::int64_t r = split.row(e), t = e - r * split.d;
    const std::int64_t c = member ? std::int64_t(member[t]) : std::int64_t(best[r].index);
    return {c * d + (member ? r : t), values[e]};
  }
};

// hist_batched over the feature-major copy, each feature's n points in `parts` parts of `seg`:
// histogram j * parts + t holds the k sums of part t of feature j (bin c), so a thread-private
// copy is k floats; finalize adds the parts (see column_parts).
struct column_sums {
  const float* xt;
  const std::int32_t* member;
  std::int64_t n, parts;
  index_split by_seg;     // by the part's length
  fast_divisor by_parts;  // histograms: d * parts < 2^32 (the centroids of d features fit shared memory)
  SOAC_HD bin_value<float> operator()(std::int64_t i) const {
    const std::int64_t h = by_seg.row(i), r = i - h * by_seg.d;
    const std::int64_t j = std::int64_t(by_parts.divide(std::uint32_t(h))), t = h - j * parts;
    const std::int64_t p = t * by_seg.d + r;
    return p < n ? bin_value<float>{member[p], xt[j * n + p]} : bin_value<float>{-1, 0.f};
  }
};

// finalize's view of column_sums' histograms: the parts of (c, j) added in order.
struct part_sums {
  const float* sums;
  std::int64_t k, parts;
  SOAC_HD float operator()(std::int64_t c, std::int64_t j) const {
    float acc = 0.f;
    for (std::int64_t t = 0; t < parts; ++t) acc += sums[(j * parts + t) * k + c];
    return acc;
  }
};

// Parts per feature for column_sums. The thread-private batched kernel runs one 1024-thread
// block per SM (its plan on the H100) and splits a histogram over K = ceil(SMs / histograms)
// blocks, so d = 34 features make 136 blocks on 132 SMs, and 4 of them a second wave that doubles
// the time. This picks the parts whose waves of blocks cost least, a block costing its elements
// plus a fixed set-up and fold worth kmeans_tuning::batched_block_elements.
std::int64_t column_parts(std::int64_t n, std::int64_t d, std::int64_t sms);

struct membership_of {
  const nearest* best;
  SOAC_HD write_at<std::int64_t, std::int32_t> operator()(std::int64_t p) const { return {p, best[p].index}; }
};

// ---- segreduce variant (FHPC17) ------------------------------------------------------------------

struct membership_keys {
  const nearest* best;
  SOAC_HD auto operator()(std::int64_t p) const {
    return writes(write_at<std::int64_t, std::uint32_t>{p, std::uint32_t(best[p].index)},
                  write_at<std::int64_t, std::uint32_t>{p, std::uint32_t(p)});
  }
};

// FHPC17's counts: segment c holds the one-hot column member[p] == c, k regular segments of n.
struct cluster_indicator {
  const nearest* best;
  SOAC_HD int operator()(std::int64_t c, std::int64_t p) const { return best[p].index == c ? 1 : 0; }
};

// The sums as regular segments: with the points grouped by cluster (perm, sorted by membership),
// segment c * d + j holds coordinate j of cluster c's points, padded with zeros to the largest
// cluster so that every segment has the same length (the core's segreduce is regular).
struct padded_sum {
  const float* x;
  const std::uint32_t* perm;
  const int* offsets;
  const int* counts;
  index_split split;  // by d
  SOAC_HD float operator()(std::int64_t s, std::int64_t t) const {
    const std::int64_t c = split.row(s), j = s - c * split.d;
    return t < counts[c] ? x[std::int64_t(perm[offsets[c] + t]) * split.d + j] : 0.f;
  }
};

// ---- k-means++ (Arthur and Vassilvitskii 2007), on the core so both backends run it ---------

struct copy_point {
  const float* x;
  const std::int64_t* chosen;
  std::int64_t t, d;
  SOAC_HD write_at<std::int64_t, float> operator()(std::int64_t j) const { return {t * d + j, x[chosen[t] * d + j]}; }
};

// D(p) = min(D(p), |x_p - newest centre|^2).
struct nearest_seed_distance {
  const float* x;
  const float* centre;
  const float* dist;
  std::int64_t d;
  bool first;
  SOAC_HD write_at<std::int64_t, float> operator()(std::int64_t p) const {
    const float v = squared_distance(x + p * d, centre, d);
    return {p, first || v < dist[p] ? v : dist[p]};
  }
};

struct as_double {
  const float* v;
  SOAC_HD double operator()(std::int64_t i) const { return double(v[i]); }
};

// The next centre: the first point whose inclusive prefix of D exceeds u * sum(D), so point p is
// drawn with probability D(p) / sum(D). With every D zero (every point is a centre) it is the
// point at u * n.
struct draw_seed {
  const double* prefix;
  const float* dist;
  std::int64_t n, slot;
  double u;
  SOAC_HD write_at<std::int64_t, std::int64_t> operator()(std::int64_t) const {
    const double total = prefix[n - 1];
    if (!(total > 0)) return {slot, std::min<std::int64_t>(n - 1, std::int64_t(u * double(n)))};
    const double target = u * total;
    std::int64_t lo = 0, hi = n - 1;
    while (lo < hi) {
      const std::int64_t mid = lo + (hi - lo) / 2;
      if (prefix[mid] > target) hi = mid;
      else lo = mid + 1;
    }
    while (lo > 0 && !(dist[lo] > 0)) --lo;  // rounding put the target past the end
    return {slot, lo};
  }
};

// ---- Rodinia's structure --------------------------------------------------------------------

// Rodinia's invert_mapping: the points transposed (feature-major), so that the membership
// kernel's threads read consecutive addresses.
struct transpose_points {
  const float* x;
  index_split split;  // by d
  std::int64_t n;
  SOAC_HD write_at<std::int64_t, float> operator()(std::int64_t e) const {
    const std::int64_t p = split.row(e), j = e - p * split.d;
    return {j * n + p, x[e]};
  }
};

// Rodinia's kmeansPoint: a thread per point, distances as a plain sum over the transposed
// features. Rodinia keeps the centroids in constant memory (sized for 32 x 34, so larger k * d
// overflows it unchecked); here they are read through the read-only cache, any size. Rodinia
// starts from FLT_MAX and index -1, which leaves -1 (and an out-of-bounds host update) when every
// distance overflows; this starts from infinity and centroid 0.
SOAC_HD inline std::int32_t rodinia_nearest(const float* features_t, std::int64_t n, std::int64_t p, std::int64_t d,
                                            const float* centroids, std::int64_t k) {
  float min_dist = cuda::std::numeric_limits<float>::infinity();
  std::int32_t index = 0;
  for (std::int64_t c = 0; c < k; ++c) {
    float ans = 0.f;
    for (std::int64_t j = 0; j < d; ++j) {
      const float diff = features_t[j * n + p] - centroids[c * d + j];
      ans += diff * diff;
    }
    if (ans < min_dist) min_dist = ans, index = std::int32_t(c);
  }
  return index;
}

constexpr int rodinia_block_threads = 256;  // Rodinia: 16 x 16 threads per block

__global__ void __launch_bounds__(rodinia_block_threads)
    rodinia_membership_kernel(const float* __restrict__ features_t, std::int64_t n, std::int64_t d,
                              const float* __restrict__ centroids, std::int64_t k, std::int32_t* membership) {
  const std::int64_t p = std::int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (p < n) membership[p] = rodinia_nearest(features_t, n, p, d, centroids, k);
}

// ---- Direct assignment ----------------------------------------------------------------------

constexpr int assign_block_threads = 256;
// Values of its point each lane holds in registers: points up to 32 x 16 = 512 features stay in
// registers; longer ones are re-read (through L1) for every centroid.
constexpr int assign_lane_values = 16;

// Lanes per point: the fewest (a power of two up to a warp) whose registers hold the point.
int assign_lanes(std::int64_t d) {
  int lanes = 1;
  while (lanes < 32 && std::int64_t(lanes) * assign_lane_values < d) lanes *= 2;
  return lanes;
}

// A group of `lanes` lanes per point; lane s holds features s, s + lanes, ... and the group sums
// its partial distances with butterfly shuffles. Every warp runs its loop the same number of
// times (a point past n is computed on the last point and not stored), so the shuffles always
// have all 32 lanes.
__global__ void __launch_bounds__(assign_block_threads)
    assign_direct_kernel(const float* __restrict__ x, std::int64_t n, std::int64_t d, const float* __restrict__ centroids,
                         std::int64_t k, int lanes, nearest* __restrict__ best) {
  const int lane = int(threadIdx.x & 31u);
  const int sub = lane & (lanes - 1);
  const int per_warp = 32 / lanes;
  const std::int64_t warp = (std::int64_t(blockIdx.x) * blockDim.x + threadIdx.x) >> 5;
  const std::int64_t warps = (std::int64_t(gridDim.x) * blockDim.x) >> 5;
  const bool in_registers = d <= std::int64_t(lanes) * assign_lane_values;
  for (std::int64_t first = warp * per_warp; first < n; first += warps * per_warp) {
    const std::int64_t p = first + lane / lanes;
    const float* xp = x + (p < n ? p : n - 1) * d;
    float xr[assign_lane_values];
#pragma unroll
    for (int r = 0; r < assign_lane_values; ++r) {
      const std::int64_t j = std::int64_t(r) * lanes + sub;
      xr[r] = in_registers && j < d ? __ldg(xp + j) : 0.f;
    }
    float best_dist = cuda::std::numeric_limits<float>::infinity();
    std::int32_t best_index = 0;
    for (std::int64_t c = 0; c < k; ++c) {
      const float* cp = centroids + c * d;
      float acc = 0.f;
      if (in_registers) {
#pragma unroll
        for (int r = 0; r < assign_lane_values; ++r) {
          const std::int64_t j = std::int64_t(r) * lanes + sub;
          if (j < d) {
            const float diff = xr[r] - __ldg(cp + j);
            acc = fmaf(diff, diff, acc);
          }
        }
      } else {
        for (std::int64_t j = sub; j < d; j += lanes) {
          const float diff = __ldg(xp + j) - __ldg(cp + j);
          acc = fmaf(diff, diff, acc);
        }
      }
      for (int offset = lanes >> 1; offset > 0; offset >>= 1) acc += __shfl_xor_sync(0xffffffffu, acc, offset);
      if (acc < best_dist) best_dist = acc, best_index = std::int32_t(c);
    }
    if (p < n && sub == 0) best[p] = {best_dist, best_index};
  }
}

// ---- Direct assignment over the feature-major copy (small k) ---------------------------------

// Each lane of a warp takes one of 32 / S points and every S-th feature of it (S slices), reading
// the feature-major copy: a warp's load is S runs of 32 / S consecutive floats (whole 32-byte
// sectors for S <= 4), so the points stream from DRAM once, eight loads in flight per lane. Each
// lane keeps a running distance to every centroid in registers (KMax of them); the centroids sit
// in shared memory as [feature][KMax] (zero past k), KMax / 4 vector loads per feature; the
// slices' partial distances meet by shuffles. Warps stride over the points (a grid of resident
// blocks loads the centroids once each).
constexpr int columns_block = 256;
constexpr int columns_max_k = 16;
constexpr std::size_t columns_shared_bytes = 48 * 1024;  // the centroids' copy, without opting in

constexpr int columns_kmax(std::int64_t k) { return k <= 8 ? 8 : columns_max_k; }
bool columns_fit(std::int64_t d, std::int64_t k) {
  return k <= columns_max_k && double(d) * columns_kmax(k) * sizeof(float) <= double(columns_shared_bytes);
}

// acc[i] += (x - c_i)^2 for the four centroids' coordinates in c.
__device__ __forceinline__ void add_squares(float x, const float4& c, float* acc) {
  const float e0 = x - c.x, e1 = x - c.y, e2 = x - c.z, e3 = x - c.w;
  acc[0] = fmaf(e0, e0, acc[0]);
  acc[1] = fmaf(e1, e1, acc[1]);
  acc[2] = fmaf(e2, e2, acc[2]);
  acc[3] = fmaf(e3, e3, acc[3]);
}

template <int KMax, int S>
__global__ void __launch_bounds__(columns_block)
    assign_columns_kernel(const float* __restrict__ xt, std::int64_t n, std::int64_t d, const float* __restrict__ centroids,
                          int k, nearest* __restrict__ best, std::int32_t* __restrict__ member) {
  extern __shared__ __align__(16) float cen[];  // d x KMax
  for (std::int64_t i = threadIdx.x; i < d * KMax; i += blockDim.x) {
    const std::int64_t j = i / KMax;
    const int c = int(i - j * KMax);
    cen[i] = c < k ? centroids[std::int64_t(c) * d + j] : 0.f;
  }
  __syncthreads();
  constexpr int per_warp = 32 / S;
  const int lane = int(threadIdx.x & 31u), s = lane / per_warp, q = lane % per_warp;
  const std::int64_t warp = (std::int64_t(blockIdx.x) * blockDim.x + threadIdx.x) >> 5;
  const std::int64_t warps = (std::int64_t(gridDim.x) * blockDim.x) >> 5;
  for (std::int64_t first = warp * per_warp; first < n; first += warps * per_warp) {  // the same trips for a whole warp
    const std::int64_t p = first + q;
    const float* col = xt + (p < n ? p : n - 1);
    float acc[KMax];
#pragma unroll
    for (int c = 0; c < KMax; ++c) acc[c] = 0.f;
    const auto add = [&](float x, std::int64_t j) {
      const float4* cj = reinterpret_cast<const float4*>(cen + j * KMax);
#pragma unroll
      for (int v = 0; v < KMax / 4; ++v) add_squares(x, cj[v], acc + 4 * v);
    };
    std::int64_t j = s;
    for (; j + 7 * S < d; j += 8 * S) {
      float x[8];
#pragma unroll
      for (int u = 0; u < 8; ++u) x[u] = __ldg(col + (j + u * S) * n);
#pragma unroll
      for (int u = 0; u < 8; ++u) add(x[u], j + u * S);
    }
    for (; j < d; j += S) add(__ldg(col + j * n), j);
#pragma unroll
    for (int offset = per_warp; offset < 32; offset <<= 1)
#pragma unroll
      for (int c = 0; c < KMax; ++c) acc[c] += __shfl_xor_sync(0xffffffffu, acc[c], offset);
    if (p >= n || s != 0) continue;
    float best_dist = cuda::std::numeric_limits<float>::infinity();
    std::int32_t best_index = 0;
#pragma unroll
    for (int c = 0; c < KMax; ++c)
      if (c < k && acc[c] < best_dist) best_dist = acc[c], best_index = c;
    best[p] = {best_dist, best_index};
    member[p] = best_index;
  }
}

// ---- Assignment and update in one pass (small k and d) -----------------------------------------

// SC20's fused update with the assignment in the same pass over the row-major points, where the
// sums fit shared memory: S lanes a point, lane s holding its features s, s + S, ... (at most
// fused_features) in registers; the lanes' partial distances to the k <= 8 centroids meet by
// shuffles, and each lane adds its features to its own copy of the k x d sums in shared memory
// (a private histogram per lane: plain adds at the point's cluster, no atomics, no conflicts).
// The copies are folded once per block into the device's totals (one atomic per block and bin).
// The points are read once per iteration instead of twice (assignment, then update), with no
// membership array between.
constexpr int fused_block = 256;
constexpr int fused_kmax = 8;
constexpr int fused_features = 8;  // per lane
constexpr int fused_max_slices = 32;

bool fused_fit(std::int64_t d, std::int64_t k) {
  return k >= 1 && k <= fused_kmax && d >= 1 && d <= std::int64_t(fused_max_slices) * fused_features;
}
// Lanes per point: the fewest of 4, 8 and 32 whose registers hold the point.
int fused_slices(std::int64_t d) { return d <= 4 * fused_features ? 4 : d <= 8 * fused_features ? 8 : 32; }

// The shared memory of one block. A lane's copy of the sums is k rows of d padded to a multiple of
// 32 floats, and the copies of a warp's points lie S floats apart modulo 32, so that a warp's adds
// (lane q * S + s at column s + S f of some row of copy q) fall in 32 different banks.
struct fused_layout {
  int slices, k;
  std::int64_t d;
  static constexpr int warps = fused_block / 32;
  SOAC_HD std::int64_t padded() const { return (d + 31) / 32 * 32; }
  SOAC_HD std::int64_t copy_stride() const { return k * padded() + slices; }
  SOAC_HD std::int64_t copies() const { return std::int64_t(warps) * (32 / slices); }
  // Floats: the centroids (two halves of 4 clusters, [feature][4]), then the copies.
  SOAC_HD std::int64_t centroid_floats() const { return 2 * std::int64_t(slices) * fused_features * 4; }
  std::size_t bytes() const {
    return sizeof(float) * std::size_t(centroid_floats() + copies() * copy_stride()) + sizeof(int) * std::size_t(copies() * fused_kmax) +
           (sizeof(double) + sizeof(unsigned long long)) * warps;
  }
};

template <int S>
__global__ void __launch_bounds__(fused_block)
    assign_update_kernel(const float* __restrict__ x, std::int64_t n, std::int64_t d, const float* __restrict__ centroids, int k,
                         const nearest* __restrict__ before, nearest* __restrict__ best, int* __restrict__ counts,
                         float* __restrict__ sums, summary* __restrict__ report) {
  constexpr int K = fused_kmax, F = fused_features, per_warp = 32 / S, warps = fused_layout::warps;
  const fused_layout layout{S, k, d};
  const std::int64_t padded = layout.padded(), stride = layout.copy_stride(), copies = layout.copies();
  extern __shared__ __align__(16) float shared[];
  float* cen = shared;  // [half][feature][4]: zero past d and k, so padding lanes add nothing
  float* copy_sums = cen + layout.centroid_floats();
  int* copy_counts = reinterpret_cast<int*>(copy_sums + copies * stride);  // [copy][K]
  double* warp_objective = reinterpret_cast<double*>(copy_counts + copies * K);
  unsigned long long* warp_changed = reinterpret_cast<unsigned long long*>(warp_objective + warps);
  for (int i = int(threadIdx.x); i < 2 * S * F * 4; i += blockDim.x) {
    const int half = i / (S * F * 4), j = (i / 4) % (S * F), c = 4 * half + i % 4;
    cen[i] = j < d && c < k ? centroids[std::int64_t(c) * d + j] : 0.f;
  }
  for (std::int64_t i = threadIdx.x; i < copies * stride; i += blockDim.x) copy_sums[i] = 0.f;
  for (std::int64_t i = threadIdx.x; i < copies * K; i += blockDim.x) copy_counts[i] = 0;
  __syncthreads();

  const int rounds = int((d + S - 1) / S);  // features a lane holds, at most F
  const int lane = int(threadIdx.x & 31u), q = lane / S, s = lane % S, warp_in_block = int(threadIdx.x >> 5);
  float* my_sums = copy_sums + (warp_in_block * per_warp + q) * stride + s;
  int* my_counts = copy_counts + (warp_in_block * per_warp + q) * K;
  const float4* cen_low = reinterpret_cast<const float4*>(cen) + s;
  const float4* cen_high = cen_low + S * F;
  const std::int64_t warp = (std::int64_t(blockIdx.x) * blockDim.x + threadIdx.x) >> 5;
  const std::int64_t step = ((std::int64_t(gridDim.x) * blockDim.x) >> 5) * per_warp;
  const auto load = [&](std::int64_t first, float (&v)[F]) {
    const std::int64_t p = first + q < n ? first + q : n - 1;  // past n: the last point, not kept
    const float* row = x + p * d + s;
#pragma unroll
    for (int f = 0; f < F; ++f) {
      if (f >= rounds) break;
      v[f] = s + f * S < d ? __ldg(row + f * S) : 0.f;
    }
  };
  double objective = 0;
  unsigned long long changed = 0;
  float v[F] = {}, ahead[F] = {};
  std::int64_t first = warp * per_warp;
  if (first < n) load(first, v);
  for (; first < n; first += step) {  // the same trips for a whole warp
    if (first + step < n) load(first + step, ahead);  // the next trip's loads in flight meanwhile
    float acc[K] = {};
#pragma unroll
    for (int f = 0; f < F; ++f) {
      if (f >= rounds) break;
      add_squares(v[f], cen_low[f * S], acc);
      if (k > 4) add_squares(v[f], cen_high[f * S], acc + 4);
    }
#pragma unroll
    for (int offset = 1; offset < S; offset <<= 1)
#pragma unroll
      for (int c = 0; c < K; ++c)
        if (c < k) acc[c] += __shfl_xor_sync(0xffffffffu, acc[c], offset);
    float best_dist = cuda::std::numeric_limits<float>::infinity();
    int best_index = 0;
#pragma unroll
    for (int c = 0; c < K; ++c)
      if (c < k && acc[c] < best_dist) best_dist = acc[c], best_index = c;
    const std::int64_t p = first + q;
    if (p < n) {
      float* row_sums = my_sums + best_index * padded;
#pragma unroll
      for (int f = 0; f < F; ++f) {
        if (f >= rounds) break;
        row_sums[f * S] += v[f];
      }
      if (s == 0) {
        ++my_counts[best_index];
        objective += best_dist;
        changed += before[p].index != best_index;
        best[p] = {best_dist, best_index};
      }
    }
#pragma unroll
    for (int f = 0; f < F; ++f) v[f] = ahead[f];
  }
#pragma unroll
  for (int offset = 1; offset < 32; offset <<= 1) {
    objective += __shfl_xor_sync(0xffffffffu, objective, offset);
    changed += __shfl_xor_sync(0xffffffffu, changed, offset);
  }
  if (lane == 0) warp_objective[warp_in_block] = objective, warp_changed[warp_in_block] = changed;
  __syncthreads();

  // The block's copies folded, one atomic per bin.
  for (std::int64_t i = threadIdx.x; i < k * d; i += blockDim.x) {
    const std::int64_t c = i / d, at = c * padded + (i - c * d);
    float total = 0.f;
    for (std::int64_t t = 0; t < copies; ++t) total += copy_sums[t * stride + at];
    atomicAdd(sums + i, total);
  }
  if (threadIdx.x < unsigned(k)) {
    int total = 0;
    for (std::int64_t t = 0; t < copies; ++t) total += copy_counts[t * K + threadIdx.x];
    atomicAdd(counts + threadIdx.x, total);
  }
  if (threadIdx.x == 0) {
    double o = 0;
    unsigned long long c = 0;
    for (int w = 0; w < warps; ++w) o += warp_objective[w], c += warp_changed[w];
    atomicAdd(&report->objective, o);
    atomicAdd(reinterpret_cast<unsigned long long*>(&report->changed), c);
  }
}

// ---- cuBLAS ---------------------------------------------------------------------------------

void check_cublas(cublasStatus_t status, const char* call, const char* file, int line) {
  if (status == CUBLAS_STATUS_SUCCESS) return;
  const std::string where = std::string(file) + ":" + std::to_string(line);
  if (status == CUBLAS_STATUS_ALLOC_FAILED)
    throw resource_error(std::string(call) + " at " + where + ": cuBLAS could not allocate memory");
  throw cuda_error(int(status), call, where, cublasGetStatusString(status));
}
#define KMEANS_CUBLAS_CHECK(call) check_cublas((call), #call, __FILE__, __LINE__)

// A cuBLAS handle owned by one clustering, on the context's stream. FP32 SGEMM: CUBLAS_DEFAULT_MATH
// computes with FP32 inputs and FP32 accumulation (TF32 tensor cores only under
// CUBLAS_TF32_TENSOR_OP_MATH, BF16x9 emulation only under its own mode), and keeps cuBLAS's
// fastest FP32 kernels, which CUBLAS_PEDANTIC_MATH may give up. The validator's bound holds for
// any summation order, so nothing more is needed for the memberships to check.
class blas_handle {
 public:
  blas_handle(const context& ctx, bool tf32) {
    ctx.activate();
    KMEANS_CUBLAS_CHECK(cublasCreate(&handle_));
    KMEANS_CUBLAS_CHECK(cublasSetStream(handle_, ctx.stream()));
    KMEANS_CUBLAS_CHECK(cublasSetMathMode(handle_, tf32 ? CUBLAS_TF32_TENSOR_OP_MATH : CUBLAS_DEFAULT_MATH));
  }
  ~blas_handle() {
    if (handle_) cublasDestroy(handle_);
  }
  blas_handle(const blas_handle&) = delete;
  blas_handle& operator=(const blas_handle&) = delete;
  cublasHandle_t get() const { return handle_; }

 private:
  cublasHandle_t handle_ = nullptr;
};

// ---- Plans: what `--variant NAME,KEY=VALUE,...` chooses -------------------------------------

enum class update_kind { hist, segreduce, rodinia };
enum class distance_kind { automatic, direct, gemm };
enum class layout_kind { automatic, rows, columns };
enum class sums_kind { automatic, flat, vec4, split, batched, fused };
enum class init_kind { first, kmeanspp };

constexpr int vector_width = 4;

namespace kmeans_tuning {
// gemm from this many centroids on: SGEMM writes and reads the distance matrix, while the direct
// kernels read the points once; direct wins at k = 5, gemm by far at k = 1024 (k between 16 and 32
// is not measured; docs/tuning/kmeans.md).
inline constexpr std::int64_t gemm_min_k = 32;
// Points beyond what the direct kernel holds in registers (32 lanes x 16) re-read per centroid.
inline constexpr std::int64_t gemm_min_d = 513;
// gemm: chunks of points whose distance matrix takes at most this many bytes (and a sixteenth of
// the device's memory): big SGEMMs fill the GPU's last wave better than chunks whose matrix stays
// in L2 for the argmin (docs/tuning/kmeans.md).
inline constexpr double chunk_max_bytes = double(std::size_t{1} << 30);
// The host backend's chunk: 16 MiB of distances.
inline constexpr std::size_t host_chunk_bytes = std::size_t{16} << 20;
// column_parts: a block's set-up (its 1024 private copies) and fold, in elements of work: an
// estimate from a block's read rate, not yet measured.
inline constexpr double batched_block_elements = 8192;
// The feature-major copy (layout=columns) only where it takes at most this fraction of the
// device's memory (it doubles the points' footprint).
inline constexpr double columns_memory_fraction = 0.25;
}  // namespace kmeans_tuning

struct kmeans_plan {
  update_kind update = update_kind::hist;
  distance_kind distances = distance_kind::automatic;
  layout_kind layout = layout_kind::automatic;
  sums_kind sums = sums_kind::automatic;
  std::int64_t chunk = 0;  // gemm: points per SGEMM; 0: from L2
  bool tf32 = false;
  hist_options hist;
  std::vector<std::string> hist_keys;  // the hist options given (checked against the sums)
  std::string variant;  // as given (for the result)

  std::string describe() const {
    std::ostringstream s;
    s << (update == update_kind::hist ? "hist" : update == update_kind::segreduce ? "segreduce" : "rodinia");
    if (update == update_kind::rodinia) return s.str() + " (thread-per-point membership, host update)";
    s << ", " << (distances == distance_kind::gemm ? "gemm" : "direct") << " distances";
    if (distances == distance_kind::gemm) s << " (" << chunk << " points per SGEMM, " << (tf32 ? "TF32" : "FP32") << ")";
    s << ", " << (layout == layout_kind::columns ? "feature-major points" : "row-major points");
    if (update == update_kind::hist) {
      switch (sums) {
        case sums_kind::vec4: s << ", vec4 elementwise sums (hist_fused)"; break;
        case sums_kind::split: s << ", counts and flattened float sums as two hist calls"; break;
        case sums_kind::batched: s << ", counts (hist) and a histogram of k sums per feature (hist_batched)"; break;
        case sums_kind::fused: s << ", assignment, counts, sums, changes and objective in one pass (thread-private sums)"; break;
        default: s << ", flattened float sums (hist_fused)"; break;
      }
    }
    return s.str();
  }
};

distance_kind parse_distances(std::string_view v) {
  if (v == "auto") return distance_kind::automatic;
  if (v == "direct") return distance_kind::direct;
  if (v == "gemm") return distance_kind::gemm;
  throw usage_error("kmeans: distances must be auto, direct or gemm, not '" + std::string(v) + "'");
}

kmeans_plan parse_variant(const std::string& text) {
  kmeans_plan plan;
  plan.variant = text.empty() ? "hist" : text;
  const std::size_t comma = text.find(',');
  const std::string name = text.substr(0, comma);
  if (name.empty() || name == "hist") plan.update = update_kind::hist;
  else if (name == "segreduce") plan.update = update_kind::segreduce;
  else if (name == "rodinia") plan.update = update_kind::rodinia;
  else throw usage_error("kmeans: unknown variant '" + name + "' (known: hist, segreduce, rodinia)");
  if (comma == std::string::npos) return plan;
  if (plan.update == update_kind::rodinia) throw usage_error("kmeans: the rodinia variant takes no settings (got '" + text + "')");
  std::string_view rest = std::string_view(text).substr(comma + 1);
  while (!rest.empty()) {
    const std::size_t next = rest.find(',');
    const std::string_view item = rest.substr(0, next);
    rest = next == std::string_view::npos ? std::string_view{} : rest.substr(next + 1);
    const std::size_t eq = item.find('=');
    if (eq == std::string_view::npos || eq == 0) throw usage_error("kmeans: variant setting '" + std::string(item) + "' is not KEY=VALUE");
    const std::string_view key = item.substr(0, eq), value = item.substr(eq + 1);
    if (key == "distances") {
      plan.distances = parse_distances(value);
    } else if (key == "layout") {
      if (value == "auto") plan.layout = layout_kind::automatic;
      else if (value == "rows") plan.layout = layout_kind::rows;
      else if (value == "columns") plan.layout = layout_kind::columns;
      else throw usage_error("kmeans: layout must be auto, rows or columns, not '" + std::string(value) + "'");
    } else if (key == "chunk") {
      const auto v = parse_number("chunk", value);
      if (!v.is_number_integer() || v.get<std::int64_t>() < 0) throw usage_error("kmeans: chunk must be a count of points (0: the default)");
      plan.chunk = v.get<std::int64_t>();
    } else if (key == "math") {
      if (value != "fp32" && value != "tf32") throw usage_error("kmeans: math must be fp32 or tf32, not '" + std::string(value) + "'");
      plan.tf32 = value == "tf32";
    } else if (key == "sums" && plan.update == update_kind::hist) {
      if (value == "auto") plan.sums = sums_kind::automatic;
      else if (value == "flat") plan.sums = sums_kind::flat;
      else if (value == "vec4") plan.sums = sums_kind::vec4;
      else if (value == "split") plan.sums = sums_kind::split;
      else if (value == "batched") plan.sums = sums_kind::batched;
      else if (value == "fused") plan.sums = sums_kind::fused;
      else throw usage_error("kmeans: sums must be auto, flat, vec4, split, batched or fused, not '" + std::string(value) + "'");
    } else if (plan.update == update_kind::hist && key != "RF" && key != "atomic") {
      try {
        set_hist_option(plan.hist, key, value);  // strategy, M, and for split or batched sums the others
      } catch (const usage_error& e) {
        // An unknown key is kmeans' to name; a hist option's bad value keeps hist's own message.
        if (!std::string_view(e.what()).starts_with("hist: unknown setting")) throw usage_error(std::string("kmeans: ") + e.what());
        throw usage_error("kmeans: the hist variant takes distances, layout, chunk, math, sums and the hist options, not '" +
                          std::string(key) + "=" + std::string(value) + "'");
      }
      check_hist_options(plan.hist);
      plan.hist_keys.emplace_back(key);
    } else {
      throw usage_error("kmeans: the " + name + " variant takes distances, layout, chunk, math" +
                        (plan.update == update_kind::hist ? ", sums and the hist options" : "") + ", not '" + std::string(key) + "'");
    }
  }
  return plan;
}

std::int64_t column_parts(std::int64_t n, std::int64_t d, std::int64_t sms) {
  std::int64_t best = 1;
  double best_cost = 0;
  for (std::int64_t parts = 1; parts <= 64 && parts <= n; ++parts) {
    const std::int64_t hists = d * parts, split = std::max<std::int64_t>(1, (sms + hists - 1) / hists);
    const std::int64_t waves = (hists * split + sms - 1) / sms;
    const double cost = double(waves) * (double(n) / double(parts * split) + kmeans_tuning::batched_block_elements);
    if (parts == 1 || cost < best_cost) best = parts, best_cost = cost;
  }
  return best;
}

// sums=batched's parts per feature on ctx (host: a few, which the tests cover).
std::int64_t batched_parts(const context& ctx, std::int64_t n, std::int64_t d) {
  return ctx.is_cuda() ? column_parts(n, d, ctx.props().sm_count) : std::min<std::int64_t>(3, n);
}

// Auto choices that depend on the data and the device.
void resolve_plan(kmeans_plan& plan, const context& ctx, std::int64_t n, std::int64_t d, std::int64_t k) {
  if (plan.distances == distance_kind::automatic)
    plan.distances = k >= kmeans_tuning::gemm_min_k || (d >= kmeans_tuning::gemm_min_d && k > 1) ? distance_kind::gemm
                                                                                                    : distance_kind::direct;
  // Small k and d: the assignment and the whole update in one pass over the row-major points,
  // faster than the columns kernel and a histogram per feature (docs/tuning/kmeans.md).
  if (plan.sums == sums_kind::automatic && plan.update == update_kind::hist && plan.distances == distance_kind::direct &&
      plan.layout != layout_kind::columns && plan.hist_keys.empty() && fused_fit(d, k))
    plan.sums = sums_kind::fused;
  if (plan.sums == sums_kind::fused) {
    if (plan.distances != distance_kind::direct) throw usage_error("kmeans: sums=fused computes its own distances (distances=direct)");
    if (plan.layout == layout_kind::columns) throw usage_error("kmeans: sums=fused reads the row-major points (layout=rows)");
    if (!fused_fit(d, k))
      throw usage_error("kmeans: sums=fused holds at most " + std::to_string(fused_kmax) + " clusters of " +
                        std::to_string(fused_max_slices * fused_features) + " features (here k = " + std::to_string(k) +
                        ", d = " + std::to_string(d) + ")");
    if (!plan.hist_keys.empty()) throw usage_error("kmeans: sums=fused is its own kernel and takes no hist options, not '" + plan.hist_keys.front() + "'");
    plan.layout = layout_kind::rows;
  }
  if (plan.layout == layout_kind::automatic) {
    const double copy_bytes = 4.0 * double(n) * double(d);
    const bool room = !ctx.is_cuda() || copy_bytes <= kmeans_tuning::columns_memory_fraction * double(ctx.props().global_bytes);
    plan.layout = room && plan.distances == distance_kind::direct && columns_fit(d, k) ? layout_kind::columns : layout_kind::rows;
  }
  if (plan.sums == sums_kind::automatic) {
    // Feature-major points: a histogram of k sums per feature with a private copy per thread
    // (plain adds; shared float atomics are compare-and-swap loops, ATOMS.CAST.SPIN, on sm_90).
    plan.sums = plan.layout == layout_kind::columns ? sums_kind::batched : sums_kind::flat;
    if (plan.sums == sums_kind::batched && std::find(plan.hist_keys.begin(), plan.hist_keys.end(), "private") == plan.hist_keys.end() &&
        std::find(plan.hist_keys.begin(), plan.hist_keys.end(), "M") == plan.hist_keys.end())
      plan.hist.thread_private = hist_toggle::on;
  }
  if (plan.update != update_kind::hist) plan.sums = sums_kind::flat;  // (the segreduce update has its own sums)
  if (plan.sums == sums_kind::batched && plan.layout != layout_kind::columns)
    throw usage_error("kmeans: sums=batched needs layout=columns (a histogram per feature of the feature-major points)");
  if (plan.sums == sums_kind::flat || plan.sums == sums_kind::vec4)
    for (const auto& key : plan.hist_keys)
      if (key != "strategy" && key != "M")
        throw usage_error("kmeans: the fused sums (flat, vec4) take strategy and M of the hist options, not '" + key + "'");
  if (plan.distances == distance_kind::gemm && plan.chunk == 0) {
    const double bytes = ctx.is_cuda() ? std::min(kmeans_tuning::chunk_max_bytes, double(ctx.props().global_bytes) / 16)
                                       : double(kmeans_tuning::host_chunk_bytes);
    plan.chunk = std::max<std::int64_t>(1, std::int64_t(bytes / (4.0 * double(k))));
  }
  plan.chunk = std::min(plan.chunk, n);
  if (plan.tf32 && plan.distances != distance_kind::gemm) throw usage_error("kmeans: math=tf32 applies to gemm distances only");
}

// ---- Small helpers over both backends -------------------------------------------------------

template <class T>
void fill_zero(context& ctx, span<T> s) {
  ctx.fill_zero(s.data(), s.size_bytes());
}

template <class T>
void copy_within(context& ctx, span<T> to, span<const T> from) {
  ctx.copy_within(to.data(), from.data(), from.size_bytes());
}

// ---- The clustering -------------------------------------------------------------------------

// init=first takes Rodinia's initial centroids (validate::rodinia_initial_point): the first k
// points, unless k > n / 2.
bool first_k_are_rodinias(std::int64_t n, std::int64_t k) { return validate::rodinia_initial_point(n, k - 1) == k - 1; }

std::vector<float> rodinia_initial_centroids(std::span<const float> x, std::int64_t n, std::int64_t d, std::int64_t k) {
  std::vector<float> c(static_cast<std::size_t>(k * d));
  for (std::int64_t i = 0; i < k; ++i) {
    const auto from = x.begin() + validate::rodinia_initial_point(n, i) * d;
    std::copy(from, from + d, c.begin() + i * d);
  }
  return c;
}

struct kmeans_config {
  std::int64_t k = 5;
  validate::kmeans_stop_rule stop;
  init_kind init = init_kind::first;
  std::uint64_t seed = 1;
};

struct step_report {
  std::int64_t changed = 0;
  double objective = std::numeric_limits<double>::quiet_NaN();  // of this step's assignment
};

struct clustering {
  std::vector<float> centroids, initial_centroids;
  std::vector<std::int32_t> membership, first_membership;
  std::vector<std::int64_t> changed;
  std::vector<double> objectives;
  std::int64_t iterations = 0;
  double objective = 0;  // of the final centroids and memberships
  double ms = 0;         // initialisation and iterations
};

// Iterations' reports (changes and objective) read back without stalling the stream: the copy of
// a slot is queued after the iteration's kernels and waited for through its event, into pinned
// memory (cuda); on the host backend the copy is done at once.
class report_slots {
 public:
  explicit report_slots(const context& ctx) : cuda_(ctx.is_cuda()) {
    if (!cuda_) return;
    ctx.activate();
    events_.emplace_back();
    events_.emplace_back();
    void* p = nullptr;
    SOAC_CUDA_CHECK(cudaMallocHost(&p, sizeof(summary) * 2));
    pinned_ = static_cast<summary*>(p);
  }
  ~report_slots() {
    for (const auto& e : events_) cudaEventSynchronize(e.get());  // no copy into pinned_ outlives it
    if (pinned_) cudaFreeHost(pinned_);
  }
  report_slots(const report_slots&) = delete;
  report_slots& operator=(const report_slots&) = delete;

  // Queues (cuda) the copy of `from` (the backend's memory) into slot `slot` after the work queued so far.
  void start(const context& ctx, const summary* from, int slot) {
    if (!cuda_) {
      host_[slot] = *from;
      return;
    }
    SOAC_CUDA_CHECK(cudaMemcpyAsync(pinned_ + slot, from, sizeof(summary), cudaMemcpyDeviceToHost, ctx.stream()));
    SOAC_CUDA_CHECK(cudaEventRecord(events_[slot].get(), ctx.stream()));
  }
  summary wait(int slot) {
    if (!cuda_) return host_[slot];
    SOAC_CUDA_CHECK(cudaEventSynchronize(events_[slot].get()));
    return pinned_[slot];
  }

 private:
  bool cuda_;
  summary* pinned_ = nullptr;
  std::vector<cuda_event> events_;  // one per slot (cuda)
  summary host_[2] = {};
};

// One dataset on one context with one plan: the device state of Lloyd's iterations.
class kmeans_engine {
 public:
  // parts: sums=batched's parts per feature, 0 to choose (column_parts); several ranks pass one
  // count to all, so that their sums arrays have one layout for the all-reduce.
  kmeans_engine(context& ctx, const kmeans_points& pts, std::int64_t k, kmeans_plan plan, std::int64_t parts = 0)
      : ctx_(ctx), n_(pts.n), d_(pts.d), k_(k), plan_(std::move(plan)), host_x_(pts.features) {
    resolve_plan(plan_, ctx, n_, d_, k_);
    x_ = buffer<float>(ctx, std::span<const float>(pts.features));
    const std::size_t kd = std::size_t(k_ * d_);
    centroids_ = buffer<float>(ctx, kd);
    next_ = buffer<float>(ctx, kd);
    initial_ = buffer<float>(ctx, kd);
    if (plan_.update == update_kind::rodinia || columns()) {
      // The feature-major copy (Rodinia's invert_mapping), made once.
      features_t_ = buffer<float>(ctx, std::size_t(n_ * d_));
      scatter(ctx, n_ * d_, transpose_points{x_.data(), index_split(d_, n_ * d_), n_}, features_t_);
    }
    if (columns()) member_ = buffer<std::int32_t>(ctx, std::size_t(n_));
    if (plan_.update == update_kind::rodinia) {
      membership_dev_ = buffer<std::int32_t>(ctx, std::size_t(n_));
      host_centroids_.resize(kd);
      host_next_.resize(kd);
      host_membership_.resize(std::size_t(n_));
      host_previous_.resize(std::size_t(n_));
      host_sums_.resize(kd);
      host_counts_.resize(std::size_t(k_));
    }
    best_ = buffer<nearest>(ctx, std::size_t(n_));
    previous_ = buffer<nearest>(ctx, std::size_t(n_));
    first_ = buffer<nearest>(ctx, std::size_t(n_));
    summary_ = buffer<summary>(ctx, 2);  // a slot per iteration's parity (see iterate)
    reports_ = std::make_unique<report_slots>(ctx);
    if (plan_.update != update_kind::rodinia) {
      counts_ = buffer<int>(ctx, std::size_t(k_));
      if (plan_.update == update_kind::hist && plan_.sums == sums_kind::batched)
        parts_ = parts > 0 ? parts : batched_parts(ctx, n_, d_);
      if (plan_.update == update_kind::hist && plan_.sums == sums_kind::vec4)
        sums4_ = buffer<vec<float, vector_width>>(ctx, std::size_t(k_ * blocks()));
      else
        sums_ = buffer<float>(ctx, kd * std::size_t(parts_));
    }
    if (plan_.update == update_kind::segreduce) {
      keys_ = buffer<std::uint32_t>(ctx, std::size_t(n_));
      perm_ = buffer<std::uint32_t>(ctx, std::size_t(n_));
      offsets_ = buffer<int>(ctx, std::size_t(k_));
    }
    if (fused()) {
      const int slices = fused_slices(d_);
      update_plan_ = ctx.is_cuda() ? "one kernel, " + std::to_string(slices) + " lanes a point, a copy of the sums per lane in " +
                                         std::to_string(fused_layout{slices, int(k_), d_}.bytes() / 1024) + " KiB of shared memory a block"
                                   : "one pass (host)";
    }
    if (plan_.update != update_kind::rodinia && plan_.distances == distance_kind::gemm) {
      xnorm_ = buffer<float>(ctx, std::size_t(n_));
      cnorm_ = buffer<float>(ctx, std::size_t(k_));
      dots_ = buffer<float>(ctx, std::size_t(plan_.chunk * k_));
      segreduce(ctx, n_, d_, row_squared_norm{x_.data(), d_}, xnorm_.view(), plus<float>{});
      if (ctx.is_cuda()) blas_.emplace(ctx, plan_.tf32);
    }
  }

  const kmeans_plan& plan() const { return plan_; }

  // Initial centroids and no previous memberships (every point changes in the first iteration).
  void initialize(init_kind init, std::uint64_t seed) {
    if (init == init_kind::kmeanspp) seed_kmeanspp(seed);
    else if (first_k_are_rodinias(n_, k_)) copy_within(ctx_, centroids_.view(), span<const float>(x_.data(), std::size_t(k_ * d_)));
    else centroids_.copy_from(rodinia_initial_centroids(host_x_, n_, d_, k_));
    if (plan_.update == update_kind::rodinia) {
      centroids_.copy_to(host_centroids_);
      std::fill(host_previous_.begin(), host_previous_.end(), -1);
    } else {
      fill(ctx_, previous_, nearest{0.f, -1});
    }
  }

  // One iteration. advance: read its report, keep its centroids and memberships (else, for
  // timing, the next call repeats the same iteration and nothing waits for the device except
  // what the variant itself must wait for).
  step_report step(bool advance, bool want_objective) {
    if (plan_.update == update_kind::rodinia) return rodinia_step(advance, want_objective);
    queue_iteration(0);
    step_report rep;
    if (!advance) return rep;
    const summary s = summary_.to_vector()[0];
    rep.changed = s.changed;
    rep.objective = s.objective;
    best_.swap(previous_);
    centroids_.swap(next_);
    return rep;
  }

  // Initialisation and Lloyd's iterations until convergence (what `soac bench` times as the whole
  // clustering); progress, when given, sees every step with its objective. Returns the iterations.
  std::int64_t iterate(const kmeans_config& cfg, const std::function<void(std::int64_t, const step_report&)>& progress,
                       clustering* record = nullptr) {
    initialize(cfg.init, cfg.seed);
    copy_within(ctx_, initial_.view(), span<const float>(centroids_.data(), centroids_.size()));
    std::int64_t iterations = 0;
    const auto report = [&](std::int64_t it, const step_report& rep) {
      iterations = it;
      if (record) record->changed.push_back(rep.changed), record->objectives.push_back(rep.objective);
      if (progress) progress(it, rep);
      return cfg.stop.converged(rep.changed, n_);
    };
    if (plan_.update == update_kind::rodinia) {
      for (std::int64_t it = 1; it <= cfg.stop.max_iterations; ++it) {
        const step_report rep = step(true, bool(progress));
        if (it == 1) keep_first_membership();
        if (report(it, rep)) break;
      }
      return iterations;
    }
    // Iteration it + 1 is queued before iteration it's report is read, so the device does not
    // wait for the host between iterations; once iteration it converged, the one ahead is undone:
    // it wrote only the swapped buffers and scratch.
    queue_step(1);
    keep_first_membership();
    for (std::int64_t it = 1; it <= cfg.stop.max_iterations; ++it) {
      const bool ahead = it < cfg.stop.max_iterations;
      if (ahead) queue_step(it + 1);
      const summary s = reports_->wait(int(it % 2));
      if (report(it, {s.changed, s.objective})) {
        if (ahead) undo_step();
        break;
      }
    }
    return iterations;
  }

  // iterate(), timed, and its results copied back with the final objective.
  clustering cluster(const kmeans_config& cfg, const std::function<void(std::int64_t, const step_report&)>& progress) {
    clustering out;
    const auto t0 = std::chrono::steady_clock::now();
    out.iterations = iterate(cfg, progress, &out);
    ctx_.synchronize();
    out.ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    out.initial_centroids = initial_.to_vector();
    out.centroids = centroids();
    out.membership = membership();
    out.first_membership = plan_.update == update_kind::rodinia ? host_first_ : indices_of(first_);
    out.objective = final_objective();
    return out;
  }

  // The parts of step() on their own, for `soac bench kmeans --set parts=1` (each repeats its
  // part of the iteration that step(false, ...) would run; call after initialize() and a step).
  void summarize(int slot = 0) {
    segreduce(ctx_, 1, n_, summarize_points{best_.data(), previous_.data(), xnorm_.empty() ? nullptr : xnorm_.data()},
              span<summary>(summary_.data() + slot, 1), summary_op{});
  }
  void assign() {
    if (plan_.distances == distance_kind::gemm) {
      assign_gemm();
    } else if (columns() && columns_fit(d_, k_)) {
      assign_columns();
      return;
    } else {
      assign_direct();
    }
    if (columns()) scatter(ctx_, n_, membership_of{best_.data()}, member_);  // what the column sums read
  }
  // sums=fused: the assignment, the counts and sums (left for finalize_hist) and the report in
  // slot `slot`, in one pass over the points.
  void assign_and_update(int slot) {
    fill_zero(ctx_, counts_.view());
    fill_zero(ctx_, sums_.view());
    summary* report = summary_.data() + slot;
    fill_zero(ctx_, span<summary>(report, 1));
    const float* x = x_.data();
    const float* c = centroids_.data();
    const nearest* before = previous_.data();
    nearest* best = best_.data();
    int* counts = counts_.data();
    float* sums = sums_.data();
    const std::int64_t n = n_, d = d_, k = k_;
    if (ctx_.is_cuda()) {
      ctx_.activate();
      const int slices = fused_slices(d);
      const std::size_t bytes = fused_layout{slices, int(k), d}.bytes();
      const auto launch = [&](auto kernel, int per_warp) {
        const int per_sm = detail::resident_blocks(kernel, fused_block, bytes, "assign_update_kernel");
        const std::int64_t grid = std::clamp<std::int64_t>(detail::ceil_div(n, std::int64_t(fused_block / 32 * per_warp)), 1,
                                                           std::int64_t(ctx_.props().sm_count) * per_sm);
        kernel<<<unsigned(grid), fused_block, bytes, ctx_.stream()>>>(x, n, d, c, int(k), before, best, counts, sums, report);
        SOAC_CHECK_LAUNCH("assign_update_kernel");
      };
      if (slices == 4) launch(assign_update_kernel<4>, 8);
      else if (slices == 8) launch(assign_update_kernel<8>, 4);
      else launch(assign_update_kernel<32>, 1);
      return;
    }
#pragma omp parallel
    {
      std::vector<float> my_sums(std::size_t(k * d), 0.f);
      std::vector<int> my_counts(std::size_t(k), 0);
      summary mine = summary_op::identity();
#pragma omp for schedule(static) nowait
      for (std::int64_t p = 0; p < n; ++p) {
        nearest b = nearest_op::identity();
        for (std::int64_t j = 0; j < k; ++j) b = nearest_op{}(b, nearest{squared_distance(x + p * d, c + j * d, d), std::int32_t(j)});
        best[p] = b;
        ++my_counts[std::size_t(b.index)];
        for (std::int64_t j = 0; j < d; ++j) my_sums[std::size_t(b.index * d + j)] += x[p * d + j];
        mine = summary_op{}(mine, summary{b.distance, before[p].index != b.index ? 1 : 0});
      }
#pragma omp critical
      {
        for (std::int64_t i = 0; i < k * d; ++i) sums[i] += my_sums[std::size_t(i)];
        for (std::int64_t i = 0; i < k; ++i) counts[i] += my_counts[std::size_t(i)];
        *report = summary_op{}(*report, mine);
      }
    }
  }
  void update() {
    if (plan_.update == update_kind::hist) {
      update_hist();
      finalize_hist();
    } else {
      update_segreduce();
    }
  }
  // gemm distances: the SGEMMs alone, and the argmins alone (of the last chunk's distances).
  void gemm_products() {
    for (std::int64_t p0 = 0; p0 < n_; p0 += plan_.chunk) negative_dots(p0, std::min(plan_.chunk, n_ - p0));
  }
  void gemm_argmins() {
    for (std::int64_t p0 = 0; p0 < n_; p0 += plan_.chunk) chunk_argmin(p0, std::min(plan_.chunk, n_ - p0));
  }

  // ---- Several ranks (ranked_kmeans): each rank's engine holds its shard of the points, and an
  // iteration is its partials on every rank, their all-reduce, then its end on every rank.

  // Starts from the given centroids (replicated on every rank), no previous memberships.
  void start_from(std::span<const float> centroids) {
    centroids_.copy_from(centroids);
    initial_.copy_from(centroids);
    fill(ctx_, previous_, nearest{0.f, -1});
  }
  // The iteration up to its counts and sums of this rank's points (summary in slot 0).
  void queue_partials() {
    if (fused()) {
      assign_and_update(0);
      return;
    }
    assign();
    summarize(0);
    update_hist();
  }
  // What the ranks all-reduce (sum) between queue_partials and finish_partials.
  struct partial_arrays {
    int* counts;
    std::size_t count_bins;
    float* sums;
    std::size_t sum_values;
    summary* report;
  };
  partial_arrays partials() {
    if (plan_.update != update_kind::hist) throw usage_error("kmeans: several ranks need the hist update");
    const bool vec = plan_.sums == sums_kind::vec4;
    return {counts_.data(), counts_.size(), vec ? &sums4_.data()->v[0] : sums_.data(),
            vec ? sums4_.size() * vector_width : sums_.size(), summary_.data()};
  }
  // The centroids from the reduced counts and sums; this iteration's results made current.
  void finish_partials(bool first_iteration) {
    finalize_hist();
    best_.swap(previous_);
    centroids_.swap(next_);
    if (first_iteration) keep_first_membership();
  }
  summary reduced_report() const { return summary_.to_vector()[0]; }
  std::vector<std::int32_t> first_membership() const { return indices_of(first_); }

  // The objective of the current centroids and memberships (after iterate()).
  double objective() { return final_objective(); }

  // What the last update's primitives chose (hist_fused's plan, or the segreduce calls').
  const std::string& update_plan() const { return update_plan_; }

  std::vector<float> centroids() const {
    if (plan_.update == update_kind::rodinia) return host_centroids_;
    return centroids_.to_vector();
  }
  std::vector<std::int32_t> membership() const {
    if (plan_.update == update_kind::rodinia) return host_previous_;
    return indices_of(previous_);
  }

 private:
  std::int64_t blocks() const { return (d_ + vector_width - 1) / vector_width; }

  static std::vector<std::int32_t> indices_of(const buffer<nearest>& b) {
    const auto v = b.to_vector();
    std::vector<std::int32_t> out(v.size());
    for (std::size_t i = 0; i < v.size(); ++i) out[i] = v[i].index;
    return out;
  }

  void keep_first_membership() {
    if (plan_.update == update_kind::rodinia) host_first_ = host_previous_;
    else copy_within(ctx_, first_.view(), span<const nearest>(previous_.data(), previous_.size()));
  }

  bool columns() const { return plan_.update != update_kind::rodinia && plan_.layout == layout_kind::columns; }
  bool fused() const { return plan_.update == update_kind::hist && plan_.sums == sums_kind::fused; }

  // One iteration up to its new centroids (in next_), its report in summary slot `slot`.
  void queue_iteration(int slot) {
    if (fused()) {
      assign_and_update(slot);
      finalize_hist();
      return;
    }
    assign();
    summarize(slot);
    update();
  }

  // One iteration queued, its report's copy started in slot it % 2, its results made current.
  void queue_step(std::int64_t it) {
    const int slot = int(it % 2);
    queue_iteration(slot);
    reports_->start(ctx_, summary_.data() + slot, slot);
    best_.swap(previous_);
    centroids_.swap(next_);
  }
  void undo_step() {
    best_.swap(previous_);
    centroids_.swap(next_);
  }

  // ---- assignment

  void assign_direct() {
    const float* x = x_.data();
    const float* c = centroids_.data();
    nearest* best = best_.data();
    const std::int64_t n = n_, d = d_, k = k_;
    if (ctx_.is_cuda()) {
      ctx_.activate();
      const int lanes = assign_lanes(d);
      const std::int64_t per_block = assign_block_threads / lanes;
      const int per_sm = detail::resident_blocks(assign_direct_kernel, assign_block_threads, 0, "assign_direct_kernel");
      const std::int64_t grid = std::clamp<std::int64_t>(detail::ceil_div(n, per_block), 1, std::int64_t(ctx_.props().sm_count) * per_sm);
      assign_direct_kernel<<<unsigned(grid), assign_block_threads, 0, ctx_.stream()>>>(x, n, d, c, k, lanes, best);
      SOAC_CHECK_LAUNCH("assign_direct_kernel");
      return;
    }
#pragma omp parallel for schedule(static)
    for (std::int64_t p = 0; p < n; ++p) {
      nearest b = nearest_op::identity();
      for (std::int64_t j = 0; j < k; ++j) b = nearest_op{}(b, nearest{squared_distance(x + p * d, c + j * d, d), std::int32_t(j)});
      best[p] = b;
    }
  }

  // The columns kernel (a register per centroid, KMax of them) on the feature-major copy; the
  // host runs the same rule point by point.
  void assign_columns() {
    const float* xt = features_t_.data();
    const float* c = centroids_.data();
    nearest* best = best_.data();
    std::int32_t* member = member_.data();
    const std::int64_t n = n_, d = d_, k = k_;
    if (ctx_.is_cuda()) {
      ctx_.activate();
      // Slices: enough lanes for four rounds of the resident ones, so the last round's idle lanes
      // are few.
      const std::int64_t lanes = 4 * std::int64_t(ctx_.props().sm_count) * ctx_.props().max_threads_per_sm;
      const int slices = n >= lanes || d < 2 ? 1 : 2 * n >= lanes || d < 4 ? 2 : 4;
      const std::size_t bytes = std::size_t(d * columns_kmax(k)) * sizeof(float);
      auto launch = [&](auto kernel, int per_warp) {
        const int per_sm = detail::resident_blocks(kernel, columns_block, bytes, "assign_columns_kernel");
        const std::int64_t grid = std::clamp<std::int64_t>(detail::ceil_div(n, std::int64_t(columns_block / 32 * per_warp)), 1,
                                                           std::int64_t(ctx_.props().sm_count) * per_sm);
        kernel<<<unsigned(grid), columns_block, bytes, ctx_.stream()>>>(xt, n, d, c, int(k), best, member);
        SOAC_CHECK_LAUNCH("assign_columns_kernel");
      };
      const bool small = columns_kmax(k) == 8;
      if (slices == 1) small ? launch(assign_columns_kernel<8, 1>, 32) : launch(assign_columns_kernel<columns_max_k, 1>, 32);
      else if (slices == 2) small ? launch(assign_columns_kernel<8, 2>, 16) : launch(assign_columns_kernel<columns_max_k, 2>, 16);
      else small ? launch(assign_columns_kernel<8, 4>, 8) : launch(assign_columns_kernel<columns_max_k, 4>, 8);
      return;
    }
#pragma omp parallel for schedule(static)
    for (std::int64_t p = 0; p < n; ++p) {
      nearest b = nearest_op::identity();
      for (std::int64_t j = 0; j < k; ++j) {
        float acc = 0.f;
        for (std::int64_t f = 0; f < d; ++f) {
          const float diff = xt[f * n + p] - c[j * d + f];
          acc = fmaf(diff, diff, acc);
        }
        b = nearest_op{}(b, nearest{acc, std::int32_t(j)});
      }
      best[p] = b;
      member[p] = b.index;
    }
  }

  void assign_gemm() {
    segreduce(ctx_, k_, d_, row_squared_norm{centroids_.data(), d_}, cnorm_.view(), plus<float>{});
    for (std::int64_t p0 = 0; p0 < n_; p0 += plan_.chunk) {
      const std::int64_t rows = std::min(plan_.chunk, n_ - p0);
      negative_dots(p0, rows);
      chunk_argmin(p0, rows);
    }
  }

  void chunk_argmin(std::int64_t p0, std::int64_t rows) {
    segreduce(ctx_, rows, k_, gemm_nearest{dots_.data(), cnorm_.data(), k_}, span<nearest>(best_.data() + p0, std::size_t(rows)),
              nearest_op{});
  }

  // dots[q * k + c] = -2 x_{p0+q} . c_c for the chunk's rows.
  void negative_dots(std::int64_t p0, std::int64_t rows) {
    const float* x = x_.data() + p0 * d_;
    if (blas_) {
      // Column-major view: C is d x k, the chunk is d x rows; dots (k x rows) = -2 C^T X.
      const float alpha = -2.f, beta = 0.f;
      KMEANS_CUBLAS_CHECK(cublasSgemm(blas_->get(), CUBLAS_OP_T, CUBLAS_OP_N, int(k_), int(rows), int(d_), &alpha,
                                      centroids_.data(), int(d_), x, int(d_), &beta, dots_.data(), int(k_)));
      return;
    }
    const float* c = centroids_.data();
    float* dots = dots_.data();
    const std::int64_t d = d_, k = k_;
#pragma omp parallel for schedule(static)
    for (std::int64_t q = 0; q < rows; ++q)
      for (std::int64_t j = 0; j < k; ++j) {
        float acc = 0.f;
        for (std::int64_t i = 0; i < d; ++i) acc = fmaf(x[q * d + i], c[j * d + i], acc);
        dots[q * k + j] = -2.f * acc;
      }
  }

  // ---- update

  void update_hist() {
    fill_zero(ctx_, counts_.view());
    hist_plan used;
    std::string what;
    switch (plan_.sums) {
      case sums_kind::vec4: {
        fill_zero(ctx_, sums4_.view());
        const std::int64_t elements = n_ * blocks();
        used = hist_fused(ctx_, plan_.hist, elements,
                          block_updates<vector_width>{x_.data(), best_.data(), d_, index_split(blocks(), elements)},
                          counts_.view(), plus<int>{}, sums4_.view(), elementwise<plus<float>, vector_width>{});
        update_plan_ = "hist_fused: " + used.describe();
        return;
      }
      case sums_kind::split:
      case sums_kind::batched: {
        const hist_plan counted = hist(ctx_, n_, member_counts{best_.data()}, counts_.view(), plus<int>{});
        fill_zero(ctx_, sums_.view());
        const std::int64_t total = n_ * d_;
        if (plan_.sums == sums_kind::batched) {
          const std::int64_t seg = detail::ceil_div(n_, parts_), hists = d_ * parts_;
          used = hist_batched(ctx_, plan_.hist, hists, seg,
                              column_sums{features_t_.data(), member_.data(), n_, parts_, index_split(seg, hists * seg),
                                          fast_divisor(std::uint32_t(parts_))},
                              sums_.view(), k_, plus<float>{});
        } else {
          const layout_sums f = columns() ? layout_sums{features_t_.data(), member_.data(), best_.data(), index_split(n_, total), d_}
                                          : layout_sums{x_.data(), nullptr, best_.data(), index_split(d_, total), d_};
          used = hist(ctx_, plan_.hist, total, f, sums_.view(), plus<float>{});
        }
        update_plan_ = "counts hist: " + counted.describe() + "; sums " +
                       (plan_.sums == sums_kind::batched ? "hist_batched (" + std::to_string(parts_) + " parts per feature)" : "hist") +
                       ": " + used.describe();
        return;
      }
      default: {
        fill_zero(ctx_, sums_.view());
        const std::int64_t total = n_ * d_;
        used = hist_fused(ctx_, plan_.hist, total, flat_updates{x_.data(), best_.data(), index_split(d_, total)}, counts_.view(),
                          plus<int>{}, sums_.view(), plus<float>{});
        update_plan_ = "hist_fused: " + used.describe();
      }
    }
  }

  // The new centroids from the counts and sums that update_hist left (several ranks: all-reduced).
  void finalize_hist() {
    if (plan_.sums == sums_kind::vec4) finalize(vector_sums<vector_width>{sums4_.data(), blocks()});
    else if (plan_.sums == sums_kind::batched) finalize(part_sums{sums_.data(), k_, parts_});
    else finalize(strided_sums{sums_.data(), d_, 1});
  }

  void update_segreduce() {
    scatter(ctx_, n_, membership_keys{best_.data()}, keys_, perm_);
    const sort_plan sorted = radix_sort(ctx_, keys_.view(), perm_.view());
    const segreduce_plan counted = segreduce(ctx_, k_, n_, cluster_indicator{best_.data()}, counts_.view(), plus<int>{});
    scan(ctx_, k_, from_array(counts_), offsets_.view(), plus<int>{}, scan_kind::exclusive);
    // The padding needs the largest cluster on the host: the variant's one wait per iteration.
    const auto host_counts = counts_.to_vector();
    const std::int64_t longest = *std::max_element(host_counts.begin(), host_counts.end());
    const segreduce_plan summed =
        segreduce(ctx_, k_ * d_, longest, padded_sum{x_.data(), perm_.data(), offsets_.data(), counts_.data(), index_split(d_, k_ * d_)},
                  sums_.view(), plus<float>{});
    finalize(strided_sums{sums_.data(), d_, 1});
    update_plan_ = "radix_sort: " + sorted.describe() + "; counts segreduce: " + counted.describe() + "; sums segreduce (" +
                   std::to_string(k_ * d_) + " segments of " + std::to_string(longest) + "): " + summed.describe();
  }

  template <class Sums>
  void finalize(Sums sums) {
    scatter(ctx_, k_ * d_, finalize_centroids<Sums>{sums, counts_.data(), centroids_.data(), index_split(d_, k_ * d_)}, next_);
  }

  // ---- Rodinia's iteration: membership on the device, the rest on the host

  step_report rodinia_step(bool advance, bool want_objective) {
    centroids_.copy_from(host_centroids_);  // Rodinia: cudaMemcpyToSymbol of the clusters
    if (ctx_.is_cuda()) {
      ctx_.activate();
      rodinia_membership_kernel<<<unsigned(detail::ceil_div(n_, rodinia_block_threads)), rodinia_block_threads, 0, ctx_.stream()>>>(
          features_t_.data(), n_, d_, centroids_.data(), k_, membership_dev_.data());
      SOAC_CHECK_LAUNCH("rodinia_membership_kernel");
    } else {
      const float* ft = features_t_.data();
      const float* c = centroids_.data();
      std::int32_t* m = membership_dev_.data();
      const std::int64_t n = n_, d = d_, k = k_;
#pragma omp parallel for schedule(static)
      for (std::int64_t p = 0; p < n; ++p) m[p] = rodinia_nearest(ft, n, p, d, c, k);
    }
    membership_dev_.copy_to(host_membership_);
    // kmeansCuda's host loop, one thread: changes, counts and sums.
    step_report rep;
    std::fill(host_sums_.begin(), host_sums_.end(), 0.f);
    std::fill(host_counts_.begin(), host_counts_.end(), 0);
    for (std::int64_t p = 0; p < n_; ++p) {
      const std::int32_t c = host_membership_[std::size_t(p)];
      ++host_counts_[std::size_t(c)];
      rep.changed += c != host_previous_[std::size_t(p)];
      const float* xp = host_x_.data() + p * d_;
      float* s = host_sums_.data() + std::int64_t(c) * d_;
      for (std::int64_t j = 0; j < d_; ++j) s[j] += xp[j];
    }
    for (std::int64_t c = 0; c < k_; ++c)
      for (std::int64_t j = 0; j < d_; ++j) {
        const std::size_t e = std::size_t(c * d_ + j);
        host_next_[e] = host_counts_[std::size_t(c)] > 0 ? host_sums_[e] / float(host_counts_[std::size_t(c)]) : host_centroids_[e];
      }
    if (want_objective) {
      rep.objective = 0;
      for (std::int64_t p = 0; p < n_; ++p)
        rep.objective += squared_distance(host_x_.data() + p * d_, host_centroids_.data() + host_membership_[std::size_t(p)] * d_, d_);
    }
    if (advance) {
      host_previous_.swap(host_membership_);
      host_centroids_.swap(host_next_);
    }
    return rep;
  }

  // ---- initialisation and the final objective

  void seed_kmeanspp(std::uint64_t seed) {
    constexpr std::uint64_t stream = 0x6b6d65616e732b2bull;  // "kmeans++"
    buffer<float> dist(ctx_, std::size_t(n_), lifetime::temporary);
    buffer<double> prefix(ctx_, std::size_t(n_), lifetime::temporary);
    buffer<std::int64_t> chosen(ctx_, std::size_t(k_), lifetime::temporary);
    const std::int64_t first = std::int64_t(datasets::random_below(datasets::random_word(seed, stream, 0), std::uint64_t(n_)));
    ctx_.copy_to_backend(chosen.data(), &first, sizeof first);
    for (std::int64_t t = 0; t < k_; ++t) {
      scatter(ctx_, d_, copy_point{x_.data(), chosen.data(), t, d_}, centroids_);
      if (t + 1 == k_) break;
      scatter(ctx_, n_, nearest_seed_distance{x_.data(), centroids_.data() + t * d_, dist.data(), d_, t == 0}, dist);
      scan(ctx_, n_, as_double{dist.data()}, prefix.view(), plus<double>{});
      scatter(ctx_, 1, draw_seed{prefix.data(), dist.data(), n_, t + 1, datasets::random_unit(seed, stream, std::uint64_t(t + 1))},
              chosen);
    }
  }

  double final_objective() {
    if (plan_.update == update_kind::rodinia) {
      // The memberships are on the host; the objective runs on the backend like the others'.
      std::vector<nearest> m(host_previous_.size());
      for (std::size_t p = 0; p < m.size(); ++p) m[p] = {0.f, host_previous_[p]};
      previous_.copy_from(m);
      centroids_.copy_from(host_centroids_);
    }
    scatter(ctx_, n_, assigned_distance{x_.data(), centroids_.data(), previous_.data(), d_}, best_);
    segreduce(ctx_, 1, n_, summarize_points{best_.data(), best_.data(), nullptr}, summary_.view(), summary_op{});
    return summary_.to_vector()[0].objective;
  }

  context& ctx_;
  std::int64_t n_, d_, k_;
  kmeans_plan plan_;
  const std::vector<float>& host_x_;
  buffer<float> x_, centroids_, next_;
  buffer<nearest> best_, previous_, first_;
  buffer<summary> summary_;
  std::unique_ptr<report_slots> reports_;
  buffer<int> counts_, offsets_;
  buffer<float> sums_;
  buffer<vec<float, vector_width>> sums4_;
  buffer<std::uint32_t> keys_, perm_;
  buffer<float> xnorm_, cnorm_, dots_;
  std::optional<blas_handle> blas_;
  buffer<float> initial_;
  std::int64_t parts_ = 1;  // sums=batched: parts of each feature's points (column_parts)
  std::string update_plan_;
  // rodinia
  buffer<float> features_t_;
  buffer<std::int32_t> membership_dev_, member_;  // member_: columns layout, the memberships as int32
  std::vector<float> host_centroids_, host_next_, host_sums_;
  std::vector<std::int32_t> host_membership_, host_previous_, host_first_;
  std::vector<int> host_counts_;
};

// ---- Several ranks ----------------------------------------------------------------------------

// Lloyd's iterations over the ranks of mc (several GPUs, or simulated host ranks): the points in
// contiguous shards (one engine per rank on its own copy of its shard), the centroids replicated;
// every iteration each rank assigns its points and computes its counts and sums, the counts, sums,
// changes and objective are all-reduced (sum; NCCL on cuda), and every rank moves the centroids
// alike, so the convergence test reads the all-reduced change count. One plan for all ranks
// (resolved for all n points on rank 0's device), so that the ranks' sums arrays agree; the hist
// update only (its counts and sums are what is reduced) and the first k points as the initial
// centroids (kmeans++ seeds over all points, which a shard does not hold).
class ranked_kmeans {
 public:
  ranked_kmeans(const multi_context& mc, const kmeans_points& pts, std::int64_t k, kmeans_plan plan, init_kind init) : mc_(mc), pts_(pts), k_(k) {
    const int R = mc.ranks();
    if (plan.update != update_kind::hist)
      throw usage_error("kmeans: several devices run the hist variant (its counts and sums are all-reduced), not '" + plan.variant + "'");
    if (init != init_kind::first) throw usage_error("kmeans: several devices start from init=first (kmeans++ seeds over all the points)");
    if (pts.n < R)
      throw usage_error("kmeans: " + std::to_string(R) + " ranks for " + std::to_string(pts.n) + " points (at most one rank per point)");
    resolve_plan(plan, mc.rank(0), pts.n, pts.d, k);
    shards_.resize(static_cast<std::size_t>(R));  // (the engines keep references to them)
    const std::int64_t parts = batched_parts(mc.rank(0), shard_of(pts.n, R, 0).size(), pts.d);
    for (int r = 0; r < R; ++r) {
      const shard s = shard_of(pts.n, R, r);
      auto& part = shards_[std::size_t(r)];
      part.n = s.size();
      part.d = pts.d;
      part.features.assign(pts.features.begin() + s.begin * pts.d, pts.features.begin() + s.end * pts.d);
      engines_.push_back(std::make_unique<kmeans_engine>(mc.rank(r), part, k, plan, parts));
    }
  }

  const kmeans_plan& plan() const { return engines_[0]->plan(); }

  // Lloyd's iterations from the first k points until convergence (what the scaling bench times).
  void iterate(const kmeans_config& cfg, const std::function<void(std::int64_t, const step_report&)>& progress, clustering* record) {
    const std::vector<float> initial = rodinia_initial_centroids(pts_.features, pts_.n, pts_.d, k_);
    for (auto& e : engines_) e->start_from(initial);
    const auto arrays = engines_[0]->partials();
    for (std::int64_t it = 1; it <= cfg.stop.max_iterations; ++it) {
      for (auto& e : engines_) e->queue_partials();
      sum_over_ranks([](const auto& a) -> void* { return a.counts; }, arrays.count_bins, reduce_type_of<int>());
      sum_over_ranks([](const auto& a) -> void* { return a.sums; }, arrays.sum_values, reduce_type::f32);
      sum_over_ranks([](const auto& a) -> void* { return &a.report->objective; }, 1, reduce_type::f64);
      sum_over_ranks([](const auto& a) -> void* { return &a.report->changed; }, 1, reduce_type_of<std::int64_t>());
      for (auto& e : engines_) e->finish_partials(it == 1);
      const summary s = engines_[0]->reduced_report();
      if (record) record->iterations = it, record->changed.push_back(s.changed), record->objectives.push_back(s.objective);
      if (progress) progress(it, {s.changed, s.objective});
      if (cfg.stop.converged(s.changed, pts_.n)) break;
    }
  }

  // iterate(), timed, and the results gathered from the ranks.
  clustering cluster(const kmeans_config& cfg, const std::function<void(std::int64_t, const step_report&)>& progress) {
    clustering out;
    const auto t0 = std::chrono::steady_clock::now();
    iterate(cfg, progress, &out);
    mc_.synchronize();
    out.ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    out.initial_centroids = rodinia_initial_centroids(pts_.features, pts_.n, pts_.d, k_);
    out.centroids = engines_[0]->centroids();
    for (auto& e : engines_) {
      const auto m = e->membership(), f = e->first_membership();
      out.membership.insert(out.membership.end(), m.begin(), m.end());
      out.first_membership.insert(out.first_membership.end(), f.begin(), f.end());
      out.objective += e->objective();  // each rank's points', added in rank order
    }
    return out;
  }

 private:
  template <class PointerOf>
  void sum_over_ranks(PointerOf pointer_of, std::size_t count, reduce_type type) {
    std::vector<void*> bufs;
    for (auto& e : engines_) bufs.push_back(pointer_of(e->partials()));
    mc_.all_reduce(bufs, count, type, reduce_op::sum);
  }

  const multi_context& mc_;
  const kmeans_points& pts_;
  std::int64_t k_;
  std::vector<kmeans_points> shards_;
  std::vector<std::unique_ptr<kmeans_engine>> engines_;
};

// ---- Datasets ---------------------------------------------------------------------------------

constexpr std::int64_t max_points = std::numeric_limits<std::int32_t>::max();
// n * d floats a dataset may hold: 64 GiB.
constexpr std::int64_t max_features = std::int64_t{1} << 34;

// A generated dataset: the generator's settings and the run settings it records (run's defaults).
struct kmeans_spec {
  std::int64_t n = 0, d = 0, blobs = 0;
  double spread = 0;
  kmeans_config run;
  bool whole = true;     // bench: also time the whole clustering
  bool parts = false;    // bench: also time each part of an iteration
  std::string variants;  // bench: variants timed per iteration besides rodinia, hist, segreduce
};

init_kind parse_init(const std::string& v) {
  if (v == "first") return init_kind::first;
  if (v == "kmeans++") return init_kind::kmeanspp;
  throw usage_error("kmeans: init must be first or kmeans++, not '" + v + "'");
}

std::string string_param(const nlohmann::json& params, const std::string& key) {
  if (!params.contains(key) || !params[key].is_string()) throw usage_error("parameter " + key + " must be a string");
  return params[key].get<std::string>();
}

// The run settings (k, the stopping rule, init, seed) from JSON values, for n points.
kmeans_config run_config_of(const nlohmann::json& values, std::int64_t n) {
  kmeans_config cfg;
  cfg.k = int_param(values, "k", 1, max_points);
  if (cfg.k > n) throw usage_error("kmeans: k = " + std::to_string(cfg.k) + " exceeds the " + std::to_string(n) + " points");
  // Rodinia takes any -t; a negative one never stops before the iteration limit.
  cfg.stop.threshold = real_param(values, "threshold", -1e18, 1e18);
  cfg.stop.threshold_fraction = real_param(values, "threshold_fraction", 0, 1);
  cfg.stop.max_iterations = int_param(values, "max_iterations", 1, 1'000'000'000);
  cfg.init = parse_init(string_param(values, "init"));
  if (values.contains("seed")) cfg.seed = std::uint64_t(int_param(values, "seed", 0, std::numeric_limits<std::int64_t>::max()));
  return cfg;
}

kmeans_spec spec_of(const nlohmann::json& params) {
  kmeans_spec s;
  s.n = int_param(params, "n", 1, max_points);
  s.d = int_param(params, "d", 1, max_features);
  s.blobs = int_param(params, "blobs", 0, 1 << 20);
  s.spread = real_param(params, "spread", 0, 1e6);
  s.run = run_config_of(params, s.n);
  s.whole = int_param(params, "whole", 0, 1) == 1;
  s.parts = int_param(params, "parts", 0, 1) == 1;
  s.variants = string_param(params, "variants");
  if (s.d > max_features / s.n)  // n x d itself may overflow 64 bits
    throw usage_error("kmeans: n x d = " + std::to_string(s.n) + " x " + std::to_string(s.d) + " features exceed the limit of 2^34");
  return s;
}

// Uniform features in [0, 1) (blobs = 0), or Gaussian blobs of different sizes: centres uniform in
// [0, 1)^d, standard deviation `spread`, blob b drawn with weight 1 + 3 u_b. Counter-based: the
// same seed gives the same points on any number of threads.
std::vector<float> generate_points(const kmeans_spec& s, std::uint64_t seed) {
  enum : std::uint64_t { features = 1, centres, weights, blob_of, noise };
  std::vector<float> x(static_cast<std::size_t>(s.n * s.d));
  float* out = x.data();
  const std::int64_t n = s.n, d = s.d;
  auto unit_float = [](std::uint64_t word) { return float(word >> 40) * 0x1.0p-24f; };  // exact, in [0, 1)
  if (s.blobs == 0) {
    const std::uint64_t key = datasets::stream_key(seed, features);
    SOAC_OMP_PARALLEL_FOR
    for (std::int64_t e = 0; e < n * d; ++e) out[e] = unit_float(datasets::keyed_word(key, std::uint64_t(e)));
    return x;
  }
  std::vector<double> centre(static_cast<std::size_t>(s.blobs * d)), cumulative(static_cast<std::size_t>(s.blobs));
  for (std::int64_t i = 0; i < s.blobs * d; ++i) centre[std::size_t(i)] = datasets::random_unit(seed, centres, std::uint64_t(i));
  double total = 0;
  for (std::int64_t b = 0; b < s.blobs; ++b) cumulative[std::size_t(b)] = total += 1 + 3 * datasets::random_unit(seed, weights, std::uint64_t(b));
  const double pi = 3.14159265358979323846, spread = s.spread;
  const std::int64_t blobs = s.blobs;
  const double* c = centre.data();
  const double* cum = cumulative.data();
  SOAC_OMP_PARALLEL_FOR
  for (std::int64_t p = 0; p < n; ++p) {
    const double u = datasets::random_unit(seed, blob_of, std::uint64_t(p)) * total;
    std::int64_t b = 0;
    while (b + 1 < blobs && cum[b] <= u) ++b;
    for (std::int64_t j = 0; j < d; ++j) {
      // Box-Muller from two uniforms of the point's coordinate.
      const std::uint64_t i = std::uint64_t(p * d + j);
      const double u1 = datasets::random_unit(seed, noise, 2 * i), u2 = datasets::random_unit(seed, noise, 2 * i + 1);
      const double z = std::sqrt(-2.0 * std::log1p(-u1)) * std::cos(2 * pi * u2);
      out[p * d + j] = float(c[b * d + j] + spread * z);
    }
  }
  return x;
}

struct loaded_points {
  kmeans_points pts;
  nlohmann::json params = nlohmann::json::object();  // a bundle's parameters (k, threshold, ...)
};

// A dataset bundle's features: an n x d float32 array.
std::pair<std::int64_t, std::int64_t> features_shape(const bundle& in) {
  const auto h = in.header("features");
  if (h.shape.size() != 2 || h.shape[0] < 1 || h.shape[1] < 1 || h.shape[0] > max_points)
    throw input_error(in.path_of("features").string() + ": features must be an n x d array with n in [1, 2^31) and d >= 1, not " +
                      datasets::shape_string(h.shape));
  return {h.shape[0], h.shape[1]};
}

constexpr const char* rodinia_kmeans = "Rodinia's kmeans";

// Rodinia's files are read as Rodinia reads them (datasets/rodinia_kmeans.hpp); what it reads
// leniently goes into `lenient` (or is refused when it is strict).
loaded_points load_points(const std::vector<std::filesystem::path>& inputs, const std::string& format, datasets::leniency& lenient) {
  if (inputs.size() != 1) throw usage_error("kmeans reads one input (-i), got " + std::to_string(inputs.size()));
  loaded_points out;
  if (format == "rodinia" || format == "rodinia-bin") {
    out.pts = format == "rodinia" ? datasets::read_rodinia_kmeans_text(inputs[0], lenient)
                                  : datasets::read_rodinia_kmeans_binary(inputs[0], lenient);
  } else {
    const auto in = find_app("kmeans").open_dataset(inputs[0]);
    std::tie(out.pts.n, out.pts.d) = features_shape(in);
    out.pts.features = in.read<float>("features");
    for (std::size_t i = 0; i < out.pts.features.size(); ++i)
      if (!std::isfinite(out.pts.features[i]))
        throw input_error(in.path_of("features").string() + ": feature " + std::to_string(i % std::size_t(out.pts.d)) + " of point " +
                          std::to_string(i / std::size_t(out.pts.d)) + " is not finite");
    out.params = in.params();
  }
  return out;
}

loaded_points load_points(const std::vector<std::filesystem::path>& inputs, const std::string& format) {
  datasets::leniency lenient;
  return load_points(inputs, format, lenient);
}

// Rodinia's defaults (kmeans -m 5 -n 5 -t 0.001), for files that carry none.
const nlohmann::json rodinia_defaults = {{"k", 5},
                                         {"threshold", validate::rodinia_threshold},
                                         {"threshold_fraction", 0},
                                         {"max_iterations", validate::rodinia_max_iterations},
                                         {"init", "first"}};

// A run setting: its --set value, or with "dataset" the dataset's parameter (Rodinia's default
// for Rodinia files and for bundles that lack it).
nlohmann::json setting_value(const nlohmann::json& settings, const nlohmann::json& dataset, const std::string& key) {
  const auto& v = settings.at(key);
  if (!v.is_string() || v.get<std::string>() != "dataset") return v;
  return dataset.contains(key) ? dataset[key] : rodinia_defaults[key];
}

kmeans_config config_of(const nlohmann::json& settings, const nlohmann::json& dataset, std::int64_t n) {
  nlohmann::json values = nlohmann::json::object();
  for (const char* key : {"k", "threshold", "threshold_fraction", "max_iterations", "seed"}) {
    const nlohmann::json v = setting_value(settings, dataset, key);
    values[key] = v.is_string() ? parse_number(key, v.get<std::string>()) : v;
  }
  const nlohmann::json init = setting_value(settings, dataset, "init");
  values["init"] = init.is_string() ? init.get<std::string>() : init.dump();
  return run_config_of(values, n);
}

// The run settings a dataset bundle records, as run takes them by default.
const nlohmann::json every_setting_from_dataset = {
    {"k", "dataset"}, {"threshold", "dataset"}, {"threshold_fraction", "dataset"}, {"max_iterations", "dataset"}, {"init", "dataset"}, {"seed", 1}};

// Rodinia's -r: the root of the mean squared distance of the points to their nearest final
// centroid, which the final memberships are once no point changed cluster.
double rmse_of(double objective, std::int64_t n) { return std::sqrt(objective / double(n)); }
std::string rodinia_rmse_text(double rmse) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.3f", rmse);  // Rodinia prints "Root Mean Squared Error: %.3f"
  return buf;
}

std::string init_name(init_kind i) { return i == init_kind::first ? "first" : "kmeans++"; }

// Rodinia's `-o` listing of the centroids.
std::string rodinia_listing(const std::vector<float>& centroids, std::int64_t k, std::int64_t d) {
  std::ostringstream s;
  s << "\n================= Centroid Coordinates =================\n";
  char buf[64];
  for (std::int64_t c = 0; c < k; ++c) {
    s << c << ":";
    for (std::int64_t j = 0; j < d; ++j) {
      std::snprintf(buf, sizeof buf, " %.2f", double(centroids[std::size_t(c * d + j)]));
      s << buf;
    }
    s << "\n\n";
  }
  return s.str();
}

class kmeans_app final : public app {
 public:
  kmeans_app() : app(describe()) {}

  // What `soac list` shows of the app and what its commands take.
  static app_info describe() {
    app_info a;
    a.name = "kmeans";
    a.summary = "k-means clustering (Lloyd): cuBLAS or direct distances, the update as one fused histogram of counts and sums "
                "(SC20 V-D1) or as segmented reductions (FHPC17 4), Rodinia's structure as the baseline";
    {
      auto p = [](std::int64_t n, std::int64_t d, std::int64_t k, std::int64_t blobs, double spread, int whole) {
        nlohmann::json params = {{"n", n},         {"d", d},         {"k", k},           {"blobs", blobs}, {"spread", spread},
                                  {"whole", whole}, {"parts", 0},     {"variants", ""}};
        params.update(rodinia_defaults);
        params["k"] = k;
        return params;
      };
      a.presets = {{"rodinia-204800", "Rodinia's 204800.txt shape: 204,800 x 34, k = 5, Gaussian blobs of different sizes",
                    p(204'800, 34, 5, 12, 0.25, 1)},
                   {"kdd", "Rodinia's kdd_cup shape: 494,019 x 34, k = 5, Gaussian blobs of different sizes", p(494'019, 34, 5, 12, 0.25, 1)},
                   {"paper-k1024", "SC20 V-D1: n = 100,000, d = 256, k = 1024, uniform features (bench: per iteration only)",
                    p(100'000, 256, 1024, 0, 0, 0)},
                   {"paper-k5", "SC20 V-D1: n = 100,000, d = 256, k = 5, uniform features (bench: per iteration only)",
                    p(100'000, 256, 5, 0, 0, 0)},
                   {"tiny", "3,000 x 6, k = 5, separated blobs (tests)", p(3000, 6, 5, 5, 0.05, 1)},
                   {"tiny-uniform", "2,000 x 16, k = 12, uniform features (tests)", p(2000, 16, 12, 0, 0, 1)}};
    }
    a.variants = {"hist", "segreduce", "rodinia"};
    a.variant_settings = "hist and segreduce: distances=auto|direct|gemm, layout=auto|rows|columns (feature-major copy of the points), "
                         "chunk=POINTS (per SGEMM; 0: up to 1 GiB of distances), math=fp32|tf32; hist also sums=auto|fused|flat|vec4|split|batched "
                         "(fused: assignment and update in one pass, k <= 8, d <= 256, the default there) "
                         "and the hist options (flat and vec4, one hist_fused call: strategy and M; split and batched: any, e.g. private=on). "
                         "E.g. hist,distances=gemm,sums=vec4";
    a.input_formats = {{"rodinia", "Rodinia's text points: a line per point, an integer id then the features (-i FILE)"},
                       {"rodinia-bin", "Rodinia's binary points (kmeans -b): int32 n, int32 d, n x d float32 (-i FILE)"}};
    a.expected_formats = {{"rodinia", "what Rodinia's kmeans prints with -o (its output, or the listing alone): the centroids, each coordinate "
                                      "within half its printed unit (%.2f) plus 1e-4 relative"}};
    a.run_settings = {{"k", "dataset", "clusters (Rodinia's -m/-n with one value); 'dataset': the bundle's k, 5 for Rodinia files"},
                      {"threshold", "dataset",
                       "Rodinia's -t: iterate while more than this many points change cluster (Rodinia's 0.001: until none does)"},
                      {"threshold_fraction", "dataset", "also stop once at most this fraction of the points changed cluster (0: off)"},
                      {"max_iterations", "dataset", "at most this many iterations (Rodinia's loop: 501)"},
                      {"init", "dataset", "initial centroids: first (Rodinia's: the first k points; for k > n/2 its swap loop's picks) or kmeans++"},
                      {"seed", 1, "random seed of kmeans++"},
                      strict_setting(rodinia_kmeans),
                      {"devices", "", "several GPUs: all or a list such as 0,1 (the host backend simulates that many ranks); "
                                      "the points sharded, the counts and sums all-reduced each iteration (hist variant, init=first)"}};
    a.scales_over_devices = true;
    a.bench_presets = {"paper-k1024", "paper-k5", "rodinia-204800", "kdd"};
    return a;
  }

  void check_params(const nlohmann::json& params) const override { spec_of(params); }
  // The features' shape, the manifest's n and d where it gives them, and the run settings it records.
  void check_dataset(const bundle& in) const override {
    const auto [n, d] = features_shape(in);
    for (const auto& [key, value] : {std::pair{"n", n}, std::pair{"d", d}})
      if (in.params().contains(key) && in.params()[key] != value)
        throw input_error(in.path_of("features").string() + ": shape " + datasets::shape_string(in.header("features").shape) +
                          ", but the manifest says " + key + " = " + in.params()[key].dump());
    config_of(every_setting_from_dataset, in.params(), n);
  }

  void generate(const gen_request& r) const override {
    const auto s = spec_of(r.params);
    require_host_memory(checked_bytes(std::uint64_t(s.n * s.d), sizeof(float), "kmeans: n x d"),
                        "kmeans: n x d = " + std::to_string(s.n * s.d) + " features");
    const auto x = generate_points(s, r.seed);
    if (r.format == "rodinia") return datasets::write_rodinia_kmeans_text(r.output, s.n, s.d, x);
    if (r.format == "rodinia-bin") return datasets::write_rodinia_kmeans_binary(r.output, s.n, s.d, x);
    datasets::bundle_writer out(r.output, "dataset", name());
    const std::int64_t shape[2] = {s.n, s.d};
    out.add("features", datasets::dtype::f32, shape, x.data());
    finish_dataset(out, r);
  }

  std::string run(context& ctx, const run_request& r) const override {
    const auto plan = parse_variant(r.variant);
    auto lenient = leniency_of(r.settings, rodinia_kmeans);
    const auto data = load_points(r.inputs, r.format, lenient);
    report_leniency(lenient);
    const auto cfg = config_of(r.settings, data.params, data.pts.n);
    const std::int64_t n = data.pts.n, d = data.pts.d;
    // --set devices=...: several ranks (ranked_kmeans); without it, one engine on ctx as always.
    const std::string devices = r.settings.value("devices", std::string());
    std::unique_ptr<multi_context> ranks;
    std::unique_ptr<kmeans_engine> engine;
    std::unique_ptr<ranked_kmeans> ranked;
    if (devices.empty()) {
      engine = std::make_unique<kmeans_engine>(ctx, data.pts, cfg.k, plan);
    } else {
      ranks = std::make_unique<multi_context>(ctx.which(), parse_devices(devices, ctx.which(), "--set devices"));
      ranked = std::make_unique<ranked_kmeans>(*ranks, data.pts, cfg.k, plan, cfg.init);
    }
    std::ostringstream msg;
    msg << "kmeans: " << n << " points x " << d << " features, k = " << cfg.k << " on " << (ranks ? ranks->describe() : ctx.describe());
    std::function<void(std::int64_t, const step_report&)> progress;
    if (r.verbose)
      progress = [&](std::int64_t it, const step_report& rep) {
        std::cout << "  iteration " << it << ": " << rep.changed << " of " << n << " points changed cluster ("
                  << std::setprecision(3) << 100.0 * double(rep.changed) / double(n) << "%), objective " << std::setprecision(10)
                  << rep.objective << std::endl;
      };
    const clustering res = engine ? engine->cluster(cfg, progress) : ranked->cluster(cfg, progress);
    const kmeans_plan used = engine ? engine->plan() : ranked->plan();
    const std::string update_plan = engine ? engine->update_plan() : std::string();
    msg << "\n  " << used.describe();

    datasets::bundle_writer out(r.output, "result", name());
    const std::int64_t kd[2] = {cfg.k, d};
    out.add("centroids", datasets::dtype::f32, kd, res.centroids.data());
    out.add("initial_centroids", datasets::dtype::f32, kd, res.initial_centroids.data());
    out.add<std::int32_t>("membership", res.membership);
    out.add<std::int32_t>("first_membership", res.first_membership);
    out.add<std::int64_t>("changed", res.changed);
    out.add_file("centroids.txt", rodinia_listing(res.centroids, cfg.k, d));
    out.params() = {{"n", n},
                    {"d", d},
                    {"k", cfg.k},
                    {"threshold", cfg.stop.threshold},
                    {"threshold_fraction", cfg.stop.threshold_fraction},
                    {"max_iterations", cfg.stop.max_iterations},
                    {"init", init_name(cfg.init)},
                    {"seed", cfg.seed},
                    {"format", r.format.empty() ? "bundle" : r.format},
                    {"dataset", data.params}};
    const auto& p = used;
    out.info() = {{"backend", std::string(to_string(ctx.which()))},
                  {"device", ranks ? ranks->describe() : ctx.props().name},
                  {"ranks", ranks ? ranks->ranks() : 1},
                  {"variant", p.variant},
                  {"plan", p.describe()},
                  {"distances", p.update == update_kind::rodinia || p.distances == distance_kind::direct ? "direct" : "gemm"},
                  {"tf32", p.tf32},
                  {"update_plan", update_plan},
                  {"iterations", res.iterations},
                  {"objective", res.objective},
                  {"rmse", rmse_of(res.objective, n)},
                  {"ms", res.ms},
                  {"ms_per_iteration", res.ms / double(std::max<std::int64_t>(res.iterations, 1))}};
    out.finish();
    msg << "\n  " << res.iterations << " iterations in " << res.ms << " ms (" << res.ms / double(std::max<std::int64_t>(res.iterations, 1))
        << " ms each, initialisation included), objective " << std::setprecision(10) << res.objective << ", RMSE "
        << rodinia_rmse_text(rmse_of(res.objective, n));
    if (r.verbose && !update_plan.empty()) msg << "\n  update: " << update_plan;
    return msg.str();
  }

  validate_report validate(const validate_request& r) const override {
    const auto data = load_points(r.inputs, r.format);
    const auto res = bundle::open(r.result, "result", name());
    const std::int64_t n = data.pts.n, d = data.pts.d;
    const auto& params = res.params();
    const auto& info = res.info();
    auto bad = [&](const std::string& what) { return input_error(res.dir().string() + ": " + what); };
    if (!params.contains("k") || !params["k"].is_number_integer() || !info.contains("objective") || !info["objective"].is_number() ||
        !info.contains("distances") || !info["distances"].is_string() || (info.contains("tf32") && !info["tf32"].is_boolean()) ||
        (info.contains("iterations") && !info["iterations"].is_number_integer()))
      throw bad("the manifest lacks k, objective, distances, tf32 or iterations of the right type (not a kmeans result?)");
    const std::int64_t k = params["k"].get<std::int64_t>();
    if (k < 1 || k > n) throw bad("k = " + std::to_string(k) + " does not fit the dataset's " + std::to_string(n) + " points");
    // The run's configuration, as its result recorded it (the reference repeats the run).
    const kmeans_config cfg = params_of_file(res.dir() / "manifest.json", [&] {
      nlohmann::json recorded = params;
      for (const auto& [key, value] : rodinia_defaults.items())
        if (!recorded.contains(key)) recorded[key] = value;
      return run_config_of(recorded, n);
    });
    const std::string init = init_name(cfg.init);
    const auto centroids = res.read<float>("centroids"), initial = res.read<float>("initial_centroids");
    const auto membership = res.read<std::int32_t>("membership"), first = res.read<std::int32_t>("first_membership");
    if (centroids.size() != std::size_t(k * d) || initial.size() != std::size_t(k * d))
      throw bad("centroids are not k x d = " + std::to_string(k) + " x " + std::to_string(d));
    if (membership.size() != std::size_t(n) || first.size() != std::size_t(n))
      throw bad("memberships do not hold the dataset's " + std::to_string(n) + " points");
    for (const auto* m : {&membership, &first})
      if (const auto out = std::find_if(m->begin(), m->end(), [&](std::int32_t c) { return c < 0 || c >= k; }); out != m->end())
        throw bad("point " + std::to_string(out - m->begin()) + " is in cluster " + std::to_string(*out) + ", outside [0, k)");
    if (!info["objective"].is_number()) throw bad("the objective is not a number");
    const auto form = info["distances"] == "gemm" ? validate::kmeans_form::gemm : validate::kmeans_form::direct;
    const bool tf32 = info.value("tf32", false);
    const auto& x = data.pts.features;
    std::ostringstream detail;
    bool ok = true;

    // The initial centroids: Rodinia's pick, or (kmeans++) points of the dataset.
    std::int64_t foreign = 0;
    if (cfg.init == init_kind::first) {
      const auto expected = rodinia_initial_centroids(x, n, d, k);
      foreign = std::memcmp(initial.data(), expected.data(), initial.size() * sizeof(float)) == 0 ? 0 : k;
    } else {
      std::unordered_map<std::string, int> rows;
      for (std::int64_t p = 0; p < n; ++p) rows.emplace(std::string(reinterpret_cast<const char*>(x.data() + p * d), std::size_t(d) * 4), 0);
      for (std::int64_t c = 0; c < k; ++c)
        foreign += !rows.count(std::string(reinterpret_cast<const char*>(initial.data() + c * d), std::size_t(d) * 4));
    }
    ok &= foreign == 0;
    detail << "\n  initial centroids (" << init << "): " << (foreign ? std::to_string(foreign) + " of them are not the dataset's points" : "as expected");

    // One iteration from the initial centroids.
    const auto first_check = validate::check_kmeans_membership(x, n, d, initial, k, first, form, tf32);
    ok &= first_check.rep.ok();
    detail << "\n  first iteration's memberships: " << first_check.rep.describe("memberships") << " (" << first_check.near_ties
           << " near-ties within the float bound of the " << (form == validate::kmeans_form::gemm ? "GEMM" : "direct") << " form)";

    // The final update: every centroid the mean of its cluster.
    std::int64_t empty = 0;
    const auto means = validate::check_kmeans_means(x, n, d, k, membership, centroids, &empty);
    ok &= means.ok();
    detail << "\n  final centroids: " << means.describe("coordinates of non-empty clusters' centroids") << " (" << empty
           << " empty clusters keep their previous centroid, not checked)";

    // The reported objective is the final state's.
    const double reported = info["objective"].get<double>();
    const double own = validate::kmeans_objective(x, n, d, centroids.data(), std::span<const std::int32_t>(membership));
    const double own_tolerance = validate::gamma_bound(double(d + 2)) + validate::gamma_bound(double(n), 0x1.0p-53);
    const bool own_ok = std::fabs(reported - own) <= own_tolerance * own;
    ok &= own_ok;
    detail << "\n  reported objective " << std::setprecision(10) << reported << (own_ok ? " agrees with" : " DIFFERS from")
           << " its recomputation " << own << " (relative tolerance " << std::setprecision(3) << own_tolerance << ")";

    // The whole run against the reference's from the same initial centroids.
    const std::int64_t iterations = info.value("iterations", std::int64_t(0));
    const double cost = double(n) * double(k) * double(d) * double(std::max<std::int64_t>(iterations, 1) + 1);
    std::string verdict;
    if (cost > reference_budget) {
      detail << "\n  reference run skipped: about " << std::setprecision(3) << cost << " distance terms, beyond the validator's "
             << reference_budget;
    } else {
      const auto ref = validate::kmeans_reference(x, n, d, k, initial, cfg.stop);
      const double tolerance = validate::objective_tolerance(d);
      const double rel = std::fabs(reported - ref.objective) / std::max(ref.objective, std::numeric_limits<double>::min());
      const bool ref_ok = rel <= tolerance;
      ok &= ref_ok;
      detail << "\n  objective " << std::setprecision(10) << reported << " vs the reference's " << ref.objective << ": relative difference "
             << std::setprecision(3) << rel << (ref_ok ? " <= " : " > ") << tolerance << "; " << iterations << " iterations, the reference "
             << ref.iterations;
      std::int64_t moved = 0;
      for (std::int64_t p = 0; p < n; ++p) moved += membership[std::size_t(p)] != ref.membership[std::size_t(p)];
      detail << "\n  final memberships: ";
      if (moved == 0) detail << "equal to the reference's for all " << n << " points";
      else
        detail << moved << " of " << n << " differ from the reference's (a near-tie rounded the other way leads the iterations "
               << "elsewhere; the objective above decides)";
    }
    std::ostringstream head;
    head << (ok ? "k-means result agrees with the double-precision reference" : "k-means result does not validate") << " (n = " << n
         << ", d = " << d << ", k = " << k << ", " << iterations << " iterations)";
    return {ok, head.str() + detail.str()};
  }


  // Rodinia prints each centroid coordinate with %.2f: ours must round near it, within half the
  // printed unit and 1e-4 relative for sums of a cluster's floats in another order.
  validate_report compare(const compare_request& r) const override {
    const auto res = bundle::open(r.result, "result", name());
    const auto shape = res.header("centroids").shape;
    if (shape.size() != 2) throw input_error(res.path_of("centroids").string() + ": not a k x d array");
    const auto ours = res.read<float>("centroids");
    const auto theirs = datasets::read_rodinia_centroids(r.expected);
    std::ostringstream s;
    if (theirs.k != shape[0] || theirs.d != shape[1]) {
      s << r.expected.filename().string() << " lists " << theirs.k << " centroids of " << theirs.d << " coordinates, the result "
        << shape[0] << " of " << shape[1];
      return {false, s.str()};
    }
    std::int64_t beyond = 0, worst = 0;
    double worst_excess = -std::numeric_limits<double>::infinity();
    for (std::size_t i = 0; i < ours.size(); ++i) {
      const double tolerance = 0.005 + 1e-4 * std::max(std::fabs(double(ours[i])), std::fabs(theirs.values[i]));
      const double excess = std::fabs(double(ours[i]) - theirs.values[i]) - tolerance;
      beyond += excess > 0;
      if (excess > worst_excess) worst_excess = excess, worst = std::int64_t(i);
    }
    const std::int64_t d = theirs.d;
    s << (beyond == 0 ? "all " + std::to_string(ours.size()) + " centroid coordinates agree with"
                      : std::to_string(beyond) + " of " + std::to_string(ours.size()) + " centroid coordinates differ from")
      << " Rodinia's printed ones (" << theirs.k << " centroids of " << d << "); the largest difference at centroid " << worst / d
      << " coordinate " << worst % d << ": " << std::setprecision(9) << ours[std::size_t(worst)] << " here, "
      << theirs.values[std::size_t(worst)] << " printed";
    return {beyond == 0, s.str()};
  }

  // Distance terms (n k d per iteration) the validator's full reference run may take: a minute
  // or so on two cores; beyond it (paper-k1024) the other checks still run.
  static constexpr double reference_budget = 3e10;

  // ---- bench

  struct bench_input {
    std::string name;
    kmeans_points pts;
    kmeans_config cfg;
    bool whole = true;
    bool parts = false;
    std::vector<std::string> extra;  // variants timed per iteration beside the three
    nlohmann::json params;
  };

  static std::vector<std::string> split_variants(const std::string& list) {
    std::vector<std::string> out;
    if (list == "none") return out;
    std::string_view rest = list;
    while (!rest.empty()) {
      const std::size_t semi = rest.find(';');
      if (semi != 0) out.emplace_back(rest.substr(0, semi));
      rest = semi == std::string_view::npos ? std::string_view{} : rest.substr(semi + 1);
    }
    for (const auto& v : out) parse_variant(v);  // a bad one fails before any run
    return out;
  }

  // The forced shapes timed per iteration by default: the other distance form, and the update as
  // separate passes (where the default is the one-pass kernel: the feature-major points with a
  // histogram per feature), row-major points with SC20's fused histogram (where the default is
  // feature-major) or vector sums.
  static std::vector<std::string> default_extra(const context& ctx, const kmeans_points& pts, std::int64_t k) {
    kmeans_plan auto_plan;
    resolve_plan(auto_plan, ctx, pts.n, pts.d, k);
    std::vector<std::string> extra = {auto_plan.distances == distance_kind::gemm ? "hist,distances=direct" : "hist,distances=gemm"};
    if (auto_plan.sums == sums_kind::fused) {
      if (columns_fit(pts.d, k)) extra.emplace_back("hist,layout=columns");
      extra.emplace_back("hist,layout=rows,sums=flat");
    } else {
      extra.push_back(auto_plan.layout == layout_kind::columns ? "hist,layout=rows" : "hist,sums=vec4");
    }
    return extra;
  }


  // `soac bench kmeans --devices`: the issue's size, n = 10^7 points x d = 256, k = 1024 (uniform
  // like paper-k1024, 100x its points), `max_iterations` iterations (5) per timed run with
  // threshold -1 (never converged) so that every run does the same work; --set n=..., d=..., k=... change it.
  void bench_scaling(const context& ctx, const bench_request& r, bench::suite& suite) const {
    std::map<std::string, std::string> overrides = {{"n", "1e7"}, {"max_iterations", "5"}, {"threshold", "-1"}};
    for (const auto& [key, value] : r.overrides) overrides[key] = value;
    const auto params = resolve_params("paper-k1024", overrides);
    const auto s = spec_of(params);
    const auto devices = parse_devices(r.devices, ctx.which());
    // The points, and every shard's copy of them (host memory), before generating any.
    require_host_memory(checked_bytes(checked_bytes(std::uint64_t(s.n), std::uint64_t(s.d), "kmeans: n x d"), 2 * sizeof(float), "kmeans: n x d"),
                        "kmeans --devices: the points and the ranks' copies of their shards");
    const kmeans_points pts{s.n, s.d, generate_points(s, r.seed)};
    const kmeans_config& cfg = s.run;
    suite.expect_cases(1);
    suite.begin_case("scaling: n = " + std::to_string(s.n) + ", d = " + std::to_string(s.d) + ", k = " + std::to_string(cfg.k) + ", " +
                         std::to_string(cfg.stop.max_iterations) + " iterations",
                     params, 4.0 * double(s.n) * double(s.d) * double(cfg.stop.max_iterations));
    measure_scaling(suite, ctx.which(), devices, [&](const multi_context& mc) {
      const auto ranked = std::make_shared<ranked_kmeans>(mc, pts, cfg.k, parse_variant(""), cfg.init);
      return std::function<void()>([ranked, &cfg] { ranked->iterate(cfg, {}, nullptr); });
    });
  }

  void bench(context& ctx, const bench_request& r, bench::suite& suite) const override {
    if (!r.devices.empty()) return bench_scaling(ctx, r, suite);
    std::vector<bench_input> inputs;
    if (!r.inputs.empty()) {
      // Files: Rodinia's defaults unless --set k=..., threshold=..., threshold_fraction=...,
      // max_iterations=..., init=..., whole=0|1, variants=...
      nlohmann::json settings = every_setting_from_dataset;
      bool whole = true, parts = false;
      std::string variants;
      for (const auto& [key, value] : r.overrides) {
        if (settings.contains(key)) settings[key] = value;
        else if (key == "whole") whole = value != "0";
        else if (key == "parts") parts = value != "0";
        else if (key == "variants") variants = value;
        else
          throw usage_error("kmeans bench -i: unknown setting '" + key +
                            "' (k, threshold, threshold_fraction, max_iterations, init, seed, whole, parts, variants)");
      }
      for (const auto& file : r.inputs) {
        bench_input in;
        in.name = file.filename().string();
        in.pts = load_points({file}, r.format).pts;
        in.cfg = config_of(settings, nlohmann::json::object(), in.pts.n);
        in.whole = whole;
        in.parts = parts;
        in.extra = variants.empty() ? default_extra(ctx, in.pts, in.cfg.k) : split_variants(variants);
        in.params = {{"file", file.string()}, {"n", in.pts.n}, {"d", in.pts.d}, {"k", in.cfg.k}};
        inputs.push_back(std::move(in));
      }
    } else {
      for (const auto& preset_name : r.presets.empty() ? bench_presets() : r.presets) {
        const auto params = resolve_params(preset_name, r.overrides);
        const auto s = spec_of(params);
        bench_input in;
        in.name = preset_name;
        in.pts = {s.n, s.d, generate_points(s, r.seed)};
        in.cfg = s.run;
        in.whole = s.whole;
        in.parts = s.parts;
        in.extra = s.variants.empty() ? default_extra(ctx, in.pts, s.run.k) : split_variants(s.variants);
        in.params = params;
        inputs.push_back(std::move(in));
      }
    }
    int cases = 0;
    for (const auto& in : inputs) cases += in.whole ? 2 : 1;
    suite.expect_cases(cases);
    for (const auto& in : inputs) bench_input_cases(ctx, in, suite);
  }

  // The parts of one iteration of a soac variant, each repeated on its own (the engine holds the
  // state of a step): where the time goes.
  static void bench_parts(const std::string& name, kmeans_engine& e, bench::suite& suite) {
    const std::string at = name + " [";
    if (e.plan().distances == distance_kind::gemm) {
      suite.measure(at + "SGEMMs]", bench::role::soac, [&] { e.gemm_products(); });
      suite.measure(at + "argmins]", bench::role::soac, [&] { e.gemm_argmins(); });
    }
    if (e.plan().sums == sums_kind::fused) {
      suite.measure(at + "assignment and update pass]", bench::role::soac, [&] { e.assign_and_update(0); });
      return;
    }
    suite.measure(at + "assignment]", bench::role::soac, [&] { e.assign(); });
    suite.measure(at + "changes and objective]", bench::role::soac, [&] { e.summarize(); });
    suite.measure(at + "update]", bench::role::soac, [&] { e.update(); });
  }

  void bench_input_cases(context& ctx, const bench_input& in, bench::suite& suite) const {
    std::vector<std::string> names = {"rodinia", "hist", "segreduce"};
    names.insert(names.end(), in.extra.begin(), in.extra.end());
    std::vector<std::unique_ptr<kmeans_engine>> engines;
    for (const auto& v : names) engines.push_back(std::make_unique<kmeans_engine>(ctx, in.pts, in.cfg.k, parse_variant(v)));
    auto role_of = [](const std::string& v) { return v == "rodinia" ? bench::role::baseline : bench::role::soac; };
    const double points_bytes = double(in.pts.n) * double(in.pts.d) * sizeof(float);

    // One iteration from the initial centroids (every point changes cluster), repeated.
    suite.begin_case(in.name + ": one iteration", in.params, points_bytes);
    for (std::size_t v = 0; v < names.size(); ++v) {
      kmeans_engine& e = *engines[v];
      e.initialize(in.cfg.init, in.cfg.seed);
      suite.measure(names[v], role_of(names[v]), [&] { e.step(false, false); });
      suite.annotate(e.plan().describe() + (e.update_plan().empty() ? "" : "; " + e.update_plan()));
      if (in.parts && names[v] != "rodinia") bench_parts(names[v], e, suite);
    }
    if (!in.whole) return;

    // The whole clustering: initialisation and every iteration with its convergence test.
    std::int64_t iterations = 0;
    double reference_objective = 0;
    std::vector<std::pair<std::int64_t, double>> outcome(3);
    for (std::size_t v = 0; v < 3; ++v) {
      outcome[v].first = engines[v]->iterate(in.cfg, {});
      outcome[v].second = engines[v]->objective();
    }
    iterations = outcome[1].first;
    reference_objective = outcome[0].second;
    suite.begin_case(in.name + ": whole clustering", in.params, points_bytes * double(iterations));
    for (std::size_t v = 0; v < 3; ++v) {
      kmeans_engine& e = *engines[v];
      suite.measure(names[v], role_of(names[v]), [&] { e.iterate(in.cfg, {}); });
      const double ms = suite.cases().back().variants.back().time.median_ms;
      std::ostringstream note;
      note << outcome[v].first << " iterations, " << std::setprecision(4) << ms / double(outcome[v].first) << " ms each, objective "
           << std::setprecision(10) << outcome[v].second;
      const double rel = std::fabs(outcome[v].second - reference_objective) / std::max(reference_objective, 1e-300);
      if (rel > validate::objective_tolerance(in.pts.d))
        note << " (DIFFERS from rodinia's by " << std::setprecision(3) << rel << " relative)";
      suite.annotate(note.str());
    }
  }
};

}  // namespace
}  // namespace soac::apps

SOAC_REGISTER_APP(soac::apps::kmeans_app)
