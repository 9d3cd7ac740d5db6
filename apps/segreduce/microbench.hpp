// The element functions of the FHPC17 microbenchmarks (section 3.2), shared by the segreduce app
// and its tests: f(segment, j) for segmented sum, index of max and maximum subarray sum over a
// row-major m x n int32 array, and Fig 14's Black-Scholes pricing computed from (segment, day)
// with its per-option rates and volatilities (also the blackscholes app's FHPC17 form).
#pragma once

#include <cmath>
#include <cstdint>
#include <utility>
#include <vector>

#include "apps/int32_sums.hpp"
#include "core/hd.hpp"
#include "core/segreduce/operators.hpp"
#include "datasets/random.hpp"

namespace soac::apps::segreduce_bench {

struct row_element {
  const std::int32_t* data;
  std::int64_t n;
  SOAC_HD std::int32_t operator()(std::int64_t s, std::int64_t j) const { return data[s * n + j]; }
};

// Fig 10: the element paired with its index (the fused iota).
struct indexed_element {
  const std::int32_t* data;
  std::int64_t n;
  SOAC_HD indexed<std::int32_t, std::int32_t> operator()(std::int64_t s, std::int64_t j) const {
    return {data[s * n + j], static_cast<std::int32_t>(j)};
  }
};

// Fig 12: mapop, one element's quad.
struct mss_element {
  const std::int32_t* data;
  std::int64_t n;
  SOAC_HD mss_quad<std::int32_t> operator()(std::int64_t s, std::int64_t j) const {
    return max_subarray<std::int32_t>::lift(data[s * n + j]);
  }
};

// The first segment of a row-major m x n array whose sums overflow int32 (apps/int32_sums.hpp):
// any subset's for the sum, consecutive runs' for the maximum subarray sum; -1 if none.
inline std::int64_t first_int32_overflow(const std::int32_t* data, std::int64_t m, std::int64_t n, bool contiguous_runs) {
  std::int64_t first = m;  // none yet
#pragma omp parallel for schedule(static) reduction(min : first)
  for (std::int64_t s = 0; s < m; ++s) {
    const bool fits = contiguous_runs ? consecutive_sums_fit_int32(data + s * n, n) : any_sums_fit_int32(data + s * n, n);
    if (!fits) first = s < first ? s : first;
  }
  return first < m ? first : -1;
}

// Fig 14: the price of option s on day j of `days` (calls on even days, puts on odd), from the
// option's risk-free rate r[s] and volatility v[s]. Compute-bound: two exp, a log, a sqrt.
struct blackscholes_day {
  static constexpr bool compute_bound = true;  // soac::declares_compute_bound: segreduce favours threads
  const double* rate;
  const double* volatility;
  std::int64_t days;

  SOAC_HD static double horner(double x) {
    const double c1 = 0.31938153, c2 = -0.356563782, c3 = 1.781477937, c4 = -1.821255978, c5 = 1.330274429;
    return x * (c1 + x * (c2 + x * (c3 + x * (c4 + x * c5))));
  }
  SOAC_HD static double cnd(double d) {
    const double k = 1.0 / (1.0 + 0.2316419 * fabs(d));
    const double c = 0.39894228040143267793994605993438 * exp(-0.5 * d * d) * horner(k);
    return 0.0 < d ? 1.0 - c : c;
  }
  SOAC_HD double operator()(std::int64_t s, std::int64_t day) const {
    const double r = rate[s], v = volatility[s];
    const bool call = day % 2 == 0;
    const double price = 58.0 + 4.0 * double(1 + day) / double(days);
    const double strike = 65.0;
    const double years = double(1 + day) / 365.0;
    const double v_sqrt_t = v * sqrt(years);
    const double d1 = (log(price / strike) + (r + 0.5 * v * v) * years) / v_sqrt_t;
    const double d2 = d1 - v_sqrt_t;
    const double cnd_d1 = cnd(d1), cnd_d2 = cnd(d2);
    const double x_exp_rt = strike * exp(-r * years);
    return call ? price * cnd_d1 - x_exp_rt * cnd_d2 : x_exp_rt * (1.0 - cnd_d2) - price * (1.0 - cnd_d1);
  }
};

// One risk-free rate in [0.01, 0.05) and volatility in [0.1, 0.5) per option (segment).
inline std::pair<std::vector<double>, std::vector<double>> blackscholes_options(std::int64_t m, std::uint64_t seed) {
  std::vector<double> r(static_cast<std::size_t>(m)), v(static_cast<std::size_t>(m));
  for (std::int64_t s = 0; s < m; ++s) {
    r[std::size_t(s)] = 0.01 + 0.04 * datasets::random_unit(seed, 1, std::uint64_t(s));
    v[std::size_t(s)] = 0.1 + 0.4 * datasets::random_unit(seed, 2, std::uint64_t(s));
  }
  return {std::move(r), std::move(v)};
}

}  // namespace soac::apps::segreduce_bench
