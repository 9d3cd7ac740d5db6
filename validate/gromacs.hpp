// Sequential reference of the gromacs app: loop inl1100 of 435.gromacs (Lennard-Jones + Coulomb
// between every listed pair, no cut-off inside the loop) in double precision, and the comparison
// of a float result with it.
//
// The tolerance. A float result differs from the exact sums of the loop in two ways:
//  * each pair's contribution is computed in float: about 55 roundings' worth in the worst case
//    (rinv^6 and rinv^12 compound the error of rinv, and the terms 12*vnb12 - 6*vnb6 + vcoul
//    may cancel), i.e. at most 64 u * T for T the contribution computed with absolute values
//    (|12 vnb12| + |6 vnb6| + |vcoul|) * rinvsq * |d|, u = 2^-24;
//  * the contributions are added in float in an order that the atomics leave open; whatever the
//    order (or tree) of a sum of n terms, its rounding error is at most (n - 1) u times the sum of
//    the terms' magnitudes (Higham, Accuracy and Stability of Numerical Algorithms, 4.2).
// So each accumulated vector (a particle's force, a shift force) or energy must lie within
// (n + 64) u * S of the reference, n its number of contributions and S the sum of their T: a
// first-order bound that holds for any summation order, and is also the floor where a force
// nearly cancels (S does not vanish with the force). The reference takes the shifted i position
// ix = shiftvec + pos[i] rounded to float as the loop computes it: it is the loop's own input to
// the distance, and rounding it is no part of any summation (in a box of L nm it moves ix by up
// to L u, which a pair at distance r turns into a relative force error of 13 L u / r).
#pragma once

#include <cmath>
#include <cstdint>
#include <span>
#include <sstream>
#include <string>
#include <vector>

#include "validate/report.hpp"

namespace soac::validate {

struct inl1100_input {
  std::span<const float> pos, charge, nbfp, shiftvec;
  std::span<const float> faction;  // the forces are added to it (3P); empty: 0
  std::span<const std::int32_t> type, iinr, shift, gid, jindex, jjnr;
  int ntype = 0, energy_groups = 0;
  float facel = 0;
};

// Each accumulated value of the loop in double, with the magnitude S and count n of its
// contributions (per 3-vector for forces).
struct inl1100_sums {
  std::vector<double> faction, fshift, Vc, Vnb;
  std::vector<double> faction_scale, fshift_scale, Vc_scale, Vnb_scale;
  std::vector<std::int64_t> faction_terms, fshift_terms, Vc_terms, Vnb_terms;
};

// The loop exactly as the issue and the paper state it (indexes must be valid: the app checks
// them when it reads a dataset).
inline inl1100_sums inl1100_reference(const inl1100_input& in) {
  const std::size_t P = in.charge.size(), nshift = in.shiftvec.size() / 3, G = std::size_t(in.energy_groups);
  inl1100_sums r;
  r.faction.assign(3 * P, 0.0);
  r.fshift.assign(3 * nshift, 0.0);
  r.Vc.assign(G, 0.0);
  r.Vnb.assign(G, 0.0);
  r.faction_scale.assign(P, 0.0);
  r.fshift_scale.assign(nshift, 0.0);
  r.Vc_scale.assign(G, 0.0);
  r.Vnb_scale.assign(G, 0.0);
  r.faction_terms.assign(P, 0);
  // A starting faction is one more term of each particle's sum.
  if (!in.faction.empty())
    for (std::size_t p = 0; p < P; ++p) {
      double norm = 0;
      for (int c = 0; c < 3; ++c) r.faction[3 * p + c] = in.faction[3 * p + c], norm += double(in.faction[3 * p + c]) * in.faction[3 * p + c];
      r.faction_scale[p] = std::sqrt(norm);
      r.faction_terms[p] = 1;
    }
  r.fshift_terms.assign(nshift, 0);
  r.Vc_terms.assign(G, 0);
  r.Vnb_terms.assign(G, 0);
  for (std::size_t n = 0; n + 1 < in.jindex.size(); ++n) {
    const std::size_t i = std::size_t(in.iinr[n]), s = std::size_t(in.shift[n]), g = std::size_t(in.gid[n]);
    double ix[3];
    for (int c = 0; c < 3; ++c) ix[c] = double(in.shiftvec[3 * s + c] + in.pos[3 * i + c]);  // float, as the loop
    const double iq = double(in.facel) * double(in.charge[i]);
    const std::size_t row = std::size_t(in.ntype) * std::size_t(in.type[i]);
    double fi[3] = {0, 0, 0}, vctot = 0, vnbtot = 0, fi_scale = 0, vc_scale = 0, vnb_scale = 0;
    for (std::int64_t k = in.jindex[n]; k < in.jindex[n + 1]; ++k) {
      const std::size_t j = std::size_t(in.jjnr[std::size_t(k)]);
      double d[3];
      for (int c = 0; c < 3; ++c) d[c] = ix[c] - double(in.pos[3 * j + c]);
      const double rsq = d[0] * d[0] + d[1] * d[1] + d[2] * d[2];
      const double rinv = 1.0 / std::sqrt(rsq), rinvsq = rinv * rinv;
      const double c6 = in.nbfp[2 * (row + std::size_t(in.type[j]))], c12 = in.nbfp[2 * (row + std::size_t(in.type[j])) + 1];
      const double rinvsix = rinvsq * rinvsq * rinvsq;
      const double vnb6 = c6 * rinvsix, vnb12 = c12 * rinvsix * rinvsix;
      const double vcoul = iq * double(in.charge[j]) * rinv;
      const double fs = (12.0 * vnb12 - 6.0 * vnb6 + vcoul) * rinvsq;
      const double magnitude = (std::fabs(12.0 * vnb12) + std::fabs(6.0 * vnb6) + std::fabs(vcoul)) * rinvsq * std::sqrt(rsq);
      for (int c = 0; c < 3; ++c) {
        const double t = fs * d[c];
        r.faction[3 * j + c] -= t;
        fi[c] += t;
      }
      r.faction_scale[j] += magnitude;
      ++r.faction_terms[j];
      fi_scale += magnitude;
      vctot += vcoul;
      vnbtot += vnb12 - vnb6;
      vc_scale += std::fabs(vcoul);
      vnb_scale += std::fabs(vnb12) + std::fabs(vnb6);
    }
    const std::int64_t terms = in.jindex[n + 1] - in.jindex[n];
    for (int c = 0; c < 3; ++c) {
      r.faction[3 * i + c] += fi[c];
      r.fshift[3 * s + c] += fi[c];
    }
    r.faction_scale[i] += fi_scale;
    r.faction_terms[i] += terms;
    r.fshift_scale[s] += fi_scale;
    r.fshift_terms[s] += terms;
    r.Vc[g] += vctot;
    r.Vnb[g] += vnbtot;
    r.Vc_scale[g] += vc_scale;
    r.Vnb_scale[g] += vnb_scale;
    r.Vc_terms[g] += terms;
    r.Vnb_terms[g] += terms;
  }
  return r;
}

// The bound of the header comment: (n + 64) u S.
inline double inl1100_tolerance(double scale, std::int64_t terms) {
  constexpr double u = 1.0 / (1 << 24);
  return double(terms + 64) * u * scale;
}

// Compares `got` (width values per entry: 3 for force vectors, 1 for energies) with `expected`
// entry by entry, the difference measured by its Euclidean norm.
inline report compare_inl1100(const std::string& what, const std::vector<double>& expected, const std::vector<double>& scale,
                              const std::vector<std::int64_t>& terms, std::span<const float> got, int width) {
  report r;
  const std::size_t entries = scale.size();
  if (got.size() != entries * std::size_t(width)) {
    r.checked = 1;
    r.mismatch(what + " holds " + std::to_string(got.size()) + " values, expected " +
               std::to_string(entries * std::size_t(width)));
    return r;
  }
  r.checked = std::int64_t(entries);
  for (std::size_t e = 0; e < entries; ++e) {
    double err = 0;
    for (int c = 0; c < width; ++c) {
      const double g = got[e * width + c], x = expected[e * width + c];
      if (same_non_finite(g, x)) continue;
      err += (g - x) * (g - x);
    }
    err = std::sqrt(err);
    const double tol = inl1100_tolerance(scale[e], terms[e]);
    if (err <= tol) continue;  // also false for NaN
    std::ostringstream s;
    s << what << "[" << e << "]: off by " << err << " (tolerance " << tol << "), expected";
    for (int c = 0; c < width; ++c) s << " " << expected[e * width + c];
    s << ", got";
    for (int c = 0; c < width; ++c) s << " " << got[e * width + c];
    r.mismatch(s.str());
  }
  return r;
}

}  // namespace soac::validate
