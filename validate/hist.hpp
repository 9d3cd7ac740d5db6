// Sequential reference for hist: the paper's Fig 1b loop over (bin, value) arrays, and the
// comparisons (exact for integers and exact operators, relative tolerance for float sums).
#pragma once

#include <cmath>
#include <cstdint>
#include <functional>
#include <span>
#include <sstream>
#include <string>
#include <vector>

#include "validate/report.hpp"

namespace soac::validate {

// histo[bins[i]] = op(histo[bins[i]], values[i]) for every i with 0 <= bins[i] < histo.size().
template <class I, class V, class Op>
void hist_reference(std::vector<V>& histo, std::span<const I> bins, std::span<const V> values, Op op) {
  const auto H = static_cast<std::int64_t>(histo.size());
  for (std::size_t i = 0; i < bins.size(); ++i) {
    const auto b = static_cast<std::int64_t>(bins[i]);
    if (b >= 0 && b < H) histo[std::size_t(b)] = op(histo[std::size_t(b)], values[i]);
  }
}

// Element-by-element comparison; `same` decides equality, `show` prints a value.
template <class V, class Same, class Show>
report compare_bins(const std::vector<V>& expected, const std::vector<V>& got, Same same, Show show) {
  report r;
  if (expected.size() != got.size()) {
    r.checked = 1;
    r.mismatch("histogram has " + std::to_string(got.size()) + " bins, expected " + std::to_string(expected.size()));
    return r;
  }
  r.checked = static_cast<std::int64_t>(expected.size());
  for (std::size_t b = 0; b < expected.size(); ++b) {
    if (same(expected[b], got[b])) continue;
    std::ostringstream s;
    s << "bin " << b << ": expected " << show(expected[b]) << ", got " << show(got[b]);
    r.mismatch(s.str());
  }
  return r;
}

template <class V>
report compare_exact(const std::vector<V>& expected, const std::vector<V>& got) {
  return compare_bins(expected, got, [](const V& a, const V& b) { return a == b; }, [](const V& v) { return v; });
}

// |got - expected| <= rel * sum_abs + abs_tol, where sum_abs bounds the rounding of a sum taken in
// another order (pass the bin's sum of |values|, or |expected| when values share a sign).
template <class V>
report compare_close(const std::vector<V>& expected, const std::vector<V>& got, const std::vector<double>& magnitude,
                     double rel, double abs_tol) {
  report r;
  r.checked = static_cast<std::int64_t>(expected.size());
  if (expected.size() != got.size() || magnitude.size() != expected.size()) {
    r.mismatch("histogram size differs from the reference");
    return r;
  }
  for (std::size_t b = 0; b < expected.size(); ++b) {
    const double e = double(expected[b]), g = double(got[b]);
    if (std::fabs(g - e) <= rel * magnitude[b] + abs_tol) continue;
    std::ostringstream s;
    s << "bin " << b << ": expected " << e << ", got " << g << " (tolerance " << rel * magnitude[b] + abs_tol << ")";
    r.mismatch(s.str());
  }
  return r;
}

}  // namespace soac::validate
