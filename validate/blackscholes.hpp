// Sequential reference for European option prices (the blackscholes app's ZOne form): the
// Black-Scholes formula in double precision from the same float inputs,
//   d1 = (ln(S/X) + (r + v^2/2) T) / (v sqrt T),  d2 = d1 - v sqrt T,  N(d) = erfc(-d / sqrt 2) / 2,
//   call = S N(d1) - X e^(-rT) N(d2),  put = X e^(-rT) N(-d2) - S N(-d1).
//
// Tolerance of a float32 price: |got - reference| <= price_tolerance * (S + X). The inputs are the
// same floats, so only the float evaluation errs (each float operation within a few ulps,
// 2^-23 ~ 1.2e-7). With the generator's ranges (S in [5, 30], X in [1, 100], T in [0.25, 10],
// r in [0.01, 0.05], v in [0.1, 0.5]), the numerator of d1 is off by ~1e-7 (ln(S/X)) plus ~2e-7
// ((r + v^2/2) T <= 1.75); divided by v sqrt T, d1 and d2 are off by at most ~2e-6 (the small T
// where v sqrt T = 0.05 also makes the second term tiny), N (slope <= 0.4) by < 1e-6, and a
// price, a difference of two terms bounded by S and X, by < 1e-6 (S + X) plus a few ulps of it.
// 5e-6 leaves a factor 5 over that bound; 2^24 random options on the host backend show 1.9e-7.
// A wrong formula, input or element is off by orders of magnitude more.
#pragma once

#include <cmath>
#include <cstdint>
#include <span>
#include <sstream>
#include <string>

#include "validate/report.hpp"

namespace soac::validate {

inline constexpr double price_tolerance = 5e-6;

struct option_price {
  double call = 0, put = 0;
};

inline option_price blackscholes_reference(double S, double X, double T, double r, double v) {
  const double sqrt_t = std::sqrt(T);
  const double d1 = (std::log(S / X) + (r + 0.5 * v * v) * T) / (v * sqrt_t), d2 = d1 - v * sqrt_t;
  const auto N = [](double d) { return 0.5 * std::erfc(-d / std::sqrt(2.0)); };
  const double discounted = X * std::exp(-r * T);
  return {S * N(d1) - discounted * N(d2), discounted * N(-d2) - S * N(-d1)};
}

// Adds elements [first, first + n) of a float result to `rep`, tracking the largest error seen
// relative to S + X in `worst`.
inline void check_prices(report& rep, double& worst, std::int64_t first, std::span<const float> S, std::span<const float> X,
                         std::span<const float> T, std::span<const float> r, std::span<const float> v,
                         std::span<const float> call, std::span<const float> put) {
  for (std::size_t i = 0; i < S.size(); ++i) {
    const option_price ref = blackscholes_reference(S[i], X[i], T[i], r[i], v[i]);
    const double scale = double(S[i]) + double(X[i]);
    const auto error_of = [&](float got, double expected) {
      return same_non_finite(got, expected) ? 0.0 : std::fabs(got - expected) / scale;
    };
    const double e = std::max(error_of(call[i], ref.call), error_of(put[i], ref.put));
    if (!(e <= worst)) worst = std::isnan(e) ? INFINITY : e;
    rep.checked += 1;
    if (e <= price_tolerance) continue;
    std::ostringstream s;
    s << "option " << first + std::int64_t(i) << " (S " << S[i] << ", X " << X[i] << ", T " << T[i] << ", r " << r[i]
      << ", v " << v[i] << "): call " << call[i] << ", put " << put[i] << ", expected " << ref.call << ", " << ref.put;
    rep.mismatch(s.str());
  }
}

}  // namespace soac::validate
