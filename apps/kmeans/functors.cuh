// The values, operators and functors the k-means app gives the core (the clustering's update,
// the segreduce variant, k-means++ seeding, Rodinia's transposition).
// A part of the kmeans app's one translation unit (apps/kmeans/kmeans_app.cu includes them in order:
// functors, kernels, plan, engine, files).
#pragma once

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

}  // namespace
}  // namespace soac::apps
