// Sequential reference for segreduce: every segment folded left to right from the identity.
#pragma once

#include <cmath>
#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <vector>

#include "validate/report.hpp"

namespace soac::validate {

template <class Op, class F>
std::vector<typename Op::value_type> segreduce_reference(std::int64_t m, std::int64_t n, F f, Op op = {}) {
  using T = typename Op::value_type;
  std::vector<T> out(static_cast<std::size_t>(m));
  for (std::int64_t s = 0; s < m; ++s) {
    T acc = Op::identity();
    for (std::int64_t j = 0; j < n; ++j) acc = op(acc, static_cast<T>(f(s, j)));
    out[static_cast<std::size_t>(s)] = acc;
  }
  return out;
}

// Compares per segment with `same(expected, got)`; `show` describes a value for the report.
template <class T, class Same, class Show>
report check_segreduce(std::span<const T> expected, std::span<const T> result, Same same, Show show) {
  report r;
  r.checked = static_cast<std::int64_t>(expected.size());
  if (result.size() != expected.size()) {
    r.mismatch("result has " + std::to_string(result.size()) + " segments, expected " + std::to_string(expected.size()));
    return r;
  }
  for (std::size_t s = 0; s < expected.size(); ++s)
    if (!same(expected[s], result[s]))
      r.mismatch("segment " + std::to_string(s) + " is " + show(result[s]) + ", expected " + show(expected[s]));
  return r;
}

// Exact comparison (integers, index of max, maximum subarray sum).
template <class T, class Show>
report check_segreduce_exact(std::span<const T> expected, std::span<const T> result, Show show) {
  return check_segreduce<T>(expected, result, [](const T& a, const T& b) { return a == b; }, show);
}

// Floating-point sums combined in a different order: |got - expected| <= rel * sum of |terms|
// would be exact, but the reference does not keep that; rel * max(1, |expected|) is used, with
// rel = 1e-9 for double sums of up to 2^26 terms of one sign (summation error ~ n * eps).
inline report check_segreduce_close(std::span<const double> expected, std::span<const double> result, double rel = 1e-9) {
  return check_segreduce<double>(
      expected, result,
      [rel](double a, double b) { return std::abs(a - b) <= rel * std::max(1.0, std::abs(a)); },
      [](double v) { return std::to_string(v); });
}

}  // namespace soac::validate
