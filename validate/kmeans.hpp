// Sequential reference for k-means (Lloyd's algorithm in double precision) and the checks of a
// float32 result against it. Rounding makes bit-exact agreement impossible (and on uniform data
// near-ties between the two nearest centroids are frequent), so every check states the bound it
// allows and derives it from float32 rounding of the formula the run used:
//   gamma(m) = m u / (1 - m u), u = 2^-24, bounds the relative error of a sum of m rounded terms
//   in any order (Higham, Accuracy and Stability of Numerical Algorithms, 3.1), which covers
//   atomic, shuffle and cuBLAS orders alike.
// - memberships: m[p] matches when it is the reference's nearest centroid (lowest index on ties),
//   or when its exact distance exceeds the nearest's by at most e(p, m) + e(p, best), e being the
//   largest error the run's float distance can have: gamma(d+2) D(p, c) for the direct sum of
//   squared differences, (gamma(d+2) + 2 u_in)(|x| + |c|)^2 for the GEMM form |c|^2 - 2 x.c
//   (u_in = 2^-11 when TF32 rounds the GEMM's inputs, else 0). Such near-ties are counted.
// - centroids: each coordinate of a non-empty cluster's centroid is the float sum of its count
//   points' coordinates in some order, divided by the count: within gamma(count + 2) sum|x| /
//   count of the exact mean.
// - objective: the float distance of each point errs by at most gamma(d+2) relative and the
//   double sum adds nothing that matters, so the reported objective of the result's own final
//   state is within gamma(d+2) (relative) of its double recomputation; against the reference's
//   run, 1e-4 relative (see objective_tolerance).
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <span>
#include <sstream>
#include <string>
#include <vector>

#include "validate/report.hpp"

namespace soac::validate {

inline constexpr double float_unit_roundoff = 0x1.0p-24;
inline constexpr double tf32_unit_roundoff = 0x1.0p-11;

inline double gamma_bound(double m, double u = float_unit_roundoff) { return m * u / (1 - m * u); }

enum class kmeans_form { direct, gemm };

template <class C>
double squared_distance(const float* x, const C* c, std::int64_t d) {
  double s = 0;
  for (std::int64_t j = 0; j < d; ++j) {
    const double diff = double(x[j]) - double(c[j]);
    s += diff * diff;
  }
  return s;
}

template <class C>
double squared_norm(const C* v, std::int64_t d) {
  double s = 0;
  for (std::int64_t j = 0; j < d; ++j) s += double(v[j]) * double(v[j]);
  return s;
}

// The nearest centroid of every point in double precision, the lowest index on ties.
template <class C>
std::vector<std::int32_t> kmeans_assign(std::span<const float> x, std::int64_t n, std::int64_t d, const C* centroids,
                                        std::int64_t k) {
  std::vector<std::int32_t> m(static_cast<std::size_t>(n));
#pragma omp parallel for schedule(static)
  for (std::int64_t p = 0; p < n; ++p) {
    double best = std::numeric_limits<double>::infinity();
    std::int32_t index = 0;
    for (std::int64_t c = 0; c < k; ++c) {
      const double dist = squared_distance(x.data() + p * d, centroids + c * d, d);
      if (dist < best) best = dist, index = std::int32_t(c);
    }
    m[std::size_t(p)] = index;
  }
  return m;
}

// Sum over points of the squared distance to the centroid of their cluster.
template <class C>
double kmeans_objective(std::span<const float> x, std::int64_t n, std::int64_t d, const C* centroids,
                        std::span<const std::int32_t> membership) {
  double total = 0;
#pragma omp parallel for schedule(static) reduction(+ : total)
  for (std::int64_t p = 0; p < n; ++p)
    total += squared_distance(x.data() + p * d, centroids + std::int64_t(membership[std::size_t(p)]) * d, d);
  return total;
}

// Rodinia kmeans' defaults: -t 0.001 compared with a count of points, so it iterates until no point
// changes cluster; its do-while tests `loop++ < 500` after each iteration, so 501 run at most.
inline constexpr double rodinia_threshold = 0.001;
inline constexpr std::int64_t rodinia_max_iterations = 501;

// When Lloyd's iterations stop: after max_iterations, or after an iteration in which at most
// `threshold` points (Rodinia's rule) or at most threshold_fraction * n points changed cluster.
struct kmeans_stop_rule {
  double threshold = rodinia_threshold;
  double threshold_fraction = 0;
  std::int64_t max_iterations = rodinia_max_iterations;

  bool converged(std::int64_t changed, std::int64_t n) const {
    return double(changed) <= threshold || double(changed) <= threshold_fraction * double(n);
  }
};

// The point Rodinia takes as initial centroid i of n points: its loop picks initial[i] and swaps it
// with the last unpicked entry, so centroid i is point i while i <= (n - 1) / 2, and beyond that
// point n - 1 - i (k > n / 2 repeats points).
inline std::int64_t rodinia_initial_point(std::int64_t n, std::int64_t i) { return 2 * i <= n - 1 ? i : n - 1 - i; }

struct kmeans_run {
  std::vector<double> centroids;           // k * d, after the last update
  std::vector<std::int32_t> membership;    // n, from the last assignment
  std::vector<std::int32_t> first_membership;
  std::vector<std::int64_t> changed;       // per iteration
  std::int64_t iterations = 0;
  double objective = 0;                    // of the final centroids and memberships
};

// Lloyd's algorithm from `initial` (k * d): assign every point to its nearest centroid, move every
// non-empty cluster's centroid to the mean of its points (an empty one keeps its centroid), until
// `stop` says so (every point changes in the first iteration).
inline kmeans_run kmeans_reference(std::span<const float> x, std::int64_t n, std::int64_t d, std::int64_t k,
                                   std::span<const float> initial, const kmeans_stop_rule& stop) {
  kmeans_run run;
  run.centroids.assign(initial.begin(), initial.end());
  std::vector<std::int32_t> previous(static_cast<std::size_t>(n), -1);
  for (std::int64_t it = 1; it <= stop.max_iterations; ++it) {
    run.membership = kmeans_assign(x, n, d, run.centroids.data(), k);
    if (it == 1) run.first_membership = run.membership;
    std::int64_t changed = 0;
    for (std::int64_t p = 0; p < n; ++p) changed += run.membership[std::size_t(p)] != previous[std::size_t(p)];
    std::vector<double> sums(static_cast<std::size_t>(k * d), 0.0);
    std::vector<std::int64_t> counts(static_cast<std::size_t>(k), 0);
    for (std::int64_t p = 0; p < n; ++p) {
      const std::int64_t c = run.membership[std::size_t(p)];
      ++counts[std::size_t(c)];
      for (std::int64_t j = 0; j < d; ++j) sums[std::size_t(c * d + j)] += x[std::size_t(p * d + j)];
    }
    for (std::int64_t c = 0; c < k; ++c)
      if (counts[std::size_t(c)] > 0)
        for (std::int64_t j = 0; j < d; ++j)
          run.centroids[std::size_t(c * d + j)] = sums[std::size_t(c * d + j)] / double(counts[std::size_t(c)]);
    run.changed.push_back(changed);
    run.iterations = it;
    previous = run.membership;
    if (stop.converged(changed, n)) break;
  }
  run.objective = kmeans_objective(x, n, d, run.centroids.data(), std::span<const std::int32_t>(run.membership));
  return run;
}

struct membership_check {
  report rep;
  std::int64_t near_ties = 0;  // accepted memberships other than the reference's nearest
};

// Checks memberships computed from `centroids` (float, k * d) by a run of the given form.
inline membership_check check_kmeans_membership(std::span<const float> x, std::int64_t n, std::int64_t d,
                                                std::span<const float> centroids, std::int64_t k,
                                                std::span<const std::int32_t> got, kmeans_form form, bool tf32 = false) {
  membership_check out;
  out.rep.checked = n;
  const double g = gamma_bound(double(d + 2));
  const double input_rounding = tf32 ? 2 * tf32_unit_roundoff : 0.0;
  // The double evaluation's own error, negligible next to float's but counted.
  const double g_double = gamma_bound(double(d + 2), 0x1.0p-53);
  std::vector<double> cnorm(static_cast<std::size_t>(k));
  for (std::int64_t c = 0; c < k; ++c) cnorm[std::size_t(c)] = std::sqrt(squared_norm(centroids.data() + c * d, d));
  auto error_of = [&](double dist, double xnorm, std::int64_t c) {
    const double scale = (xnorm + cnorm[std::size_t(c)]) * (xnorm + cnorm[std::size_t(c)]);
    return (form == kmeans_form::direct ? g * dist : (g + input_rounding) * scale) + g_double * scale;
  };
  std::vector<std::int64_t> bad;
  std::int64_t near = 0;
#pragma omp parallel for schedule(static) reduction(+ : near)
  for (std::int64_t p = 0; p < n; ++p) {
    const float* xp = x.data() + p * d;
    const std::int64_t m = got[std::size_t(p)];
    double best = std::numeric_limits<double>::infinity();
    std::int64_t b = 0;
    for (std::int64_t c = 0; c < k; ++c) {
      const double dist = squared_distance(xp, centroids.data() + c * d, d);
      if (dist < best) best = dist, b = c;
    }
    if (m == b) continue;
    bool accepted = false;
    if (m >= 0 && m < k) {
      const double xnorm = std::sqrt(squared_norm(xp, d));
      const double dm = squared_distance(xp, centroids.data() + m * d, d);
      accepted = dm - best <= error_of(dm, xnorm, m) + error_of(best, xnorm, b);
    }
    if (accepted) {
      ++near;
    } else {
#pragma omp critical(kmeans_membership_bad)
      bad.push_back(p);
    }
  }
  out.near_ties = near;
  std::sort(bad.begin(), bad.end());
  for (const auto p : bad) {
    const float* xp = x.data() + p * d;
    const std::int64_t m = got[std::size_t(p)];
    const auto ref = kmeans_assign(std::span<const float>(xp, std::size_t(d)), 1, d, centroids.data(), k)[0];
    std::ostringstream s;
    s << "point " << p << ": cluster " << m << ", the nearest is " << ref << " (squared distance "
      << squared_distance(xp, centroids.data() + std::int64_t(ref) * d, d);
    if (m >= 0 && m < k) s << ", cluster " << m << " at " << squared_distance(xp, centroids.data() + m * d, d);
    else s << ", cluster " << m << " does not exist";
    s << ")";
    out.rep.mismatch(s.str());
  }
  return out;
}

// Checks that every non-empty cluster's centroid is the mean of its points (see the header).
inline report check_kmeans_means(std::span<const float> x, std::int64_t n, std::int64_t d, std::int64_t k,
                                 std::span<const std::int32_t> membership, std::span<const float> centroids,
                                 std::int64_t* empty_clusters = nullptr) {
  report rep;
  std::vector<double> sums(static_cast<std::size_t>(k * d), 0.0), magnitude(static_cast<std::size_t>(k * d), 0.0);
  std::vector<std::int64_t> counts(static_cast<std::size_t>(k), 0);
  for (std::int64_t p = 0; p < n; ++p) {
    const std::int64_t c = membership[std::size_t(p)];
    if (c < 0 || c >= k) {
      rep.checked = 1;
      rep.mismatch("point " + std::to_string(p) + " has cluster " + std::to_string(c) + ", outside [0, " + std::to_string(k) + ")");
      return rep;
    }
    ++counts[std::size_t(c)];
    for (std::int64_t j = 0; j < d; ++j) {
      const double v = x[std::size_t(p * d + j)];
      sums[std::size_t(c * d + j)] += v;
      magnitude[std::size_t(c * d + j)] += std::fabs(v);
    }
  }
  std::int64_t empty = 0;
  for (std::int64_t c = 0; c < k; ++c) {
    const auto count = counts[std::size_t(c)];
    if (count == 0) {
      ++empty;
      continue;
    }
    const double g = gamma_bound(double(count + 2));
    for (std::int64_t j = 0; j < d; ++j) {
      const std::size_t e = std::size_t(c * d + j);
      ++rep.checked;
      const double mean = sums[e] / double(count);
      const double bound = g * magnitude[e] / double(count) + std::numeric_limits<float>::denorm_min();
      if (std::fabs(double(centroids[e]) - mean) > bound) {
        std::ostringstream s;
        s << "centroid " << c << " coordinate " << j << " is " << centroids[e] << ", the mean of its " << count
          << " points is " << mean << " (allowed error " << bound << ")";
        rep.mismatch(s.str());
      }
    }
  }
  if (empty_clusters) *empty_clusters = empty;
  return rep;
}

// The relative difference allowed between a run's final objective and the reference's: the float
// distances err by at most gamma(d+2); the centroids' float sums move the objective only to
// second order (the reference's centroid is the exact mean, where the objective's gradient in
// the centroid vanishes): count |dc|^2 per cluster, about n u^2 relative for rounding that grows
// like sqrt(count) u (1e-9 at a million points). 1e-4 leaves orders of magnitude for that, and
// still fails a run that converged elsewhere after a different trajectory.
inline double objective_tolerance(std::int64_t d) { return 1e-4 + 2 * gamma_bound(double(d + 2)); }

}  // namespace soac::validate
