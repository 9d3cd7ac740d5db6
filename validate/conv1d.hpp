// Sequential reference for the 1-D convolution of the conv1d app: out[i] = sum over k of
// w[k] x[i + k - r] for 2r + 1 weights, elements outside the array counting 0, in double.
//
// Tolerance: the float32 result of 2r + 1 products summed in float is within
// (2r + 1) 2^-24 sum_k |w[k] x[i + k - r]| of the exact value (each addition and product rounds
// once; fused multiply-adds only round less), so |got - reference| <= 1e-5 sum_k |w x| holds for
// up to 167 taps (the app takes at most 65).
#pragma once

#include <cmath>
#include <cstdint>
#include <span>
#include <sstream>

#include "validate/report.hpp"

namespace soac::validate {

inline constexpr double conv_tolerance = 1e-5;

// Checks out[j] for j in [first, first + out.size()); `x` holds elements [x_first, x_first + x.size())
// and must cover first - r .. first + out.size() - 1 + r wherever those lie inside [0, n).
inline void check_conv1d(report& rep, std::span<const float> w, std::span<const float> x, std::int64_t x_first, std::int64_t n,
                         std::int64_t first, std::span<const float> out) {
  const auto r = std::int64_t(w.size() / 2);
  for (std::size_t j = 0; j < out.size(); ++j) {
    const std::int64_t i = first + std::int64_t(j);
    double sum = 0, magnitude = 0;
    for (std::int64_t k = 0; k < std::int64_t(w.size()); ++k) {
      const std::int64_t at = i + k - r;
      if (at < 0 || at >= n) continue;
      const double term = double(w[std::size_t(k)]) * double(x[std::size_t(at - x_first)]);
      sum += term;
      magnitude += std::fabs(term);
    }
    rep.checked += 1;
    if (std::fabs(double(out[j]) - sum) <= conv_tolerance * magnitude || same_non_finite(out[j], sum)) continue;
    std::ostringstream s;
    s << "element " << i << ": expected " << sum << ", got " << out[j] << " (tolerance " << conv_tolerance * magnitude << ")";
    rep.mismatch(s.str());
  }
}

}  // namespace soac::validate
