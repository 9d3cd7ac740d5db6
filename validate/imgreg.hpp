// Sequential references of the imgreg app: a float-valued histogram summed in double, compared
// with a float result, and a recovered rigid transform compared with the generator's truth.
//
// The histogram's tolerance. The app computes every update's value (a product of two cubic
// B-spline weights) with the same float operations on the device and in this reference (every
// operation rounded on its own: no fused multiply-add the compiler could form on one side only),
// so the values agree bit for bit and only the order of the float additions differs. Whatever
// that order (the atomics leave it open), a float sum of n non-negative terms is within
// (n - 1) u of their exact sum, u = 2^-24 (Higham, Accuracy and Stability of Numerical
// Algorithms, 4.2); the reference sums in double, so bin b must lie within (n_b + 1) u ref_b.
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

// Every bin within (n_b + 1) u ref_b of the reference (values must be non-negative, as B-spline
// weights are).
inline report compare_float_histogram(const float_histogram& expected, const std::vector<float>& got) {
  report r;
  if (got.size() != expected.sum.size()) {
    r.checked = 1;
    r.mismatch("histogram has " + std::to_string(got.size()) + " bins, expected " + std::to_string(expected.sum.size()));
    return r;
  }
  r.checked = std::int64_t(got.size());
  constexpr double u = 1.0 / (1 << 24);
  for (std::size_t b = 0; b < got.size(); ++b) {
    const double tol = double(expected.updates[b] + 1) * u * expected.sum[b];
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
