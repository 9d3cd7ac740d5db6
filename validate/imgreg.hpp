// Sequential references of the imgreg app: a float-valued histogram summed in double, compared
// with a float result, and a recovered rigid transform compared with the generator's truth.
//
// The histogram's tolerance. The app computes every update's value (a product of two cubic
// B-spline weights) with the same float operations on the device and in this reference (every
// operation rounded on its own: no fused multiply-add the compiler could form on one side only),
// so the weights agree bit for bit. Summed in float, only the order of the additions differs:
// whatever that order (the atomics leave it open), a float sum of n non-negative terms is within
// (n - 1) u of their exact sum, u = 2^-24 (Higham, Accuracy and Stability of Numerical
// Algorithms, 4.2), and the reference sums in double, so bin b must lie within (n_b + 1) u ref_b.
// Summed in fixed point (integers counting quanta q = 2^-s, see fixed_point_shift), each update
// is the exact product rounded to the nearest quantum, within q / 2 of it and so within
// q / 2 + u w of the float product the reference adds; the integer sum is exact, and its
// conversion to float rounds once more (u of the bin). So bin b must lie within
// n_b q / 2 + (n_b + 1) u ref_b: a bound, not an estimate (rounding errors of random weights
// mostly cancel: about sqrt(n_b / 12) q in practice).
#pragma once

#include <cmath>
#include <cstdint>
#include <sstream>
#include <string>
#include <vector>

#include "validate/report.hpp"

namespace soac::validate {

// A histogram of float values summed in double, with the number of updates per bin.
struct float_histogram {
  std::vector<double> sum;
  std::vector<std::int64_t> updates;
  explicit float_histogram(std::size_t bins) : sum(bins, 0.0), updates(bins, 0) {}
  void add(std::int64_t bin, float value) {
    if (bin < 0 || bin >= std::int64_t(sum.size())) return;
    sum[std::size_t(bin)] += double(value);
    ++updates[std::size_t(bin)];
  }
};

// The fixed-point histogram's shift s (quanta of 2^-s) for histograms of `pixels` pixels summed
// in unsigned 32-bit integers: the largest s <= 22 for which no bin can overflow. A pixel adds at
// most one update to a bin, of at most 4/9 (two B-spline weights of at most 2/3 each; 0.4445
// leaves room for their float rounding) rounded to the nearest quantum, so a bin stays below
// pixels (0.4445 2^s + 1/2) < 2^32. (s <= 22 keeps every product below 2^22 quanta, where the
// app's rounding works; paper-2m's 2M pixels give s = 12, paper-8m's 8M s = 10.)
inline int fixed_point_shift(std::int64_t pixels) {
  int s = 22;
  while (s > 0 && double(pixels) * (0.4445 * std::ldexp(1.0, s) + 0.5) >= 4294967296.0) --s;
  return s;
}

// Bin b's bound: n_b quantum / 2 + (n_b + 1) u ref_b (quantum 0 for float sums).
inline double bin_tolerance(const float_histogram& expected, std::size_t b, double quantum) {
  constexpr double u = 1.0 / (1 << 24);
  const double n = double(expected.updates[b]);
  return n * quantum / 2 + (n + 1) * u * expected.sum[b];
}

// Every bin within bin_tolerance of the reference (values must be
// non-negative, as B-spline weights are); quantum 0 for float sums.
inline report compare_float_histogram(const float_histogram& expected, const std::vector<float>& got, double quantum = 0) {
  report r;
  if (got.size() != expected.sum.size()) {
    r.checked = 1;
    r.mismatch("histogram has " + std::to_string(got.size()) + " bins, expected " + std::to_string(expected.sum.size()));
    return r;
  }
  r.checked = std::int64_t(got.size());
  for (std::size_t b = 0; b < got.size(); ++b) {
    const double tol = bin_tolerance(expected, b, quantum);
    const double err = std::fabs(double(got[b]) - expected.sum[b]);
    if (err <= tol) continue;  // also false for NaN
    std::ostringstream s;
    s << "bin " << b << ": expected " << expected.sum[b] << " (" << expected.updates[b] << " updates), got " << got[b]
      << " (tolerance " << tol << ")";
    r.mismatch(s.str());
  }
  return r;
}

// A rigid transform: translation in pixels, rotation in degrees.
struct rigid_transform {
  double tx = 0, ty = 0, angle_deg = 0;
};

// The recovered transform against the truth: translation within max_px (Euclidean), angle within
// max_deg.
inline report compare_transform(const rigid_transform& truth, const rigid_transform& got, double max_px, double max_deg) {
  report r;
  r.checked = 2;
  const double dt = std::hypot(got.tx - truth.tx, got.ty - truth.ty), da = std::fabs(got.angle_deg - truth.angle_deg);
  std::ostringstream s;
  s << "(" << got.tx << ", " << got.ty << ") px, " << got.angle_deg << " deg; truth (" << truth.tx << ", " << truth.ty
    << ") px, " << truth.angle_deg << " deg";
  if (!(dt <= max_px)) r.mismatch("translation off by " + std::to_string(dt) + " px (at most " + std::to_string(max_px) + "): " + s.str());
  if (!(da <= max_deg))
    r.mismatch("rotation off by " + std::to_string(da) + " deg (at most " + std::to_string(max_deg) + "): " + s.str());
  return r;
}

}  // namespace soac::validate
