// Sequential references for tpacf (Parboil's two-point angular correlation): the pair counts of
// DD (data pairs i < j), DR (every data x random pair) and RR (random pairs i < j), summed over the
// random sets, in 22 bins of angular distance (bin 0: under 1 arcminute; bin k: between the
// boundaries k - 1 and k, 5 per decade; bin 21: beyond 10,000 arcminutes).
//
// Two references from the same unit vectors (single precision, as Parboil converts them):
// - `parboil`: Parboil's sequential program exactly: the dot product in float with every product
//   and sum rounded (no fused multiply-add), its binary search over the 21 boundaries rounded to
//   float. A GPU result computed the same way must match it in every counter.
// - `exact`: the dot product in double from the same floats and the boundaries in double. It
//   differs from `parboil` only for pairs whose float dot product lands on the other side of a
//   float-rounded boundary; Parboil's own comparison (tools/compare-output) allows for that with
//   per-bin tolerances, which check_parboil_tolerances applies.
// The loops run in parallel over the first point of each pair (OpenMP, when enabled), each thread
// counting into its own counters: integer sums, so the result does not depend on the threads.
#pragma once

#include <array>
#include <cmath>
#include <cstdint>
#include <span>
#include <sstream>
#include <string>
#include <vector>

#include "validate/report.hpp"

namespace soac::validate::tpacf {

inline constexpr int counters = 22;  // bins 0 .. 21
inline constexpr int boundaries = 21;
using counts = std::array<std::uint64_t, counters>;

struct points {
  std::span<const float> x, y, z;
  std::size_t size() const { return x.size(); }
};

struct pair_counts {
  counts dd{}, dr{}, rr{};
};

// Parboil's boundaries: cos(10^(k / 5) arcminutes), k = 0 .. 20, as its expression computes them
// (pow(10, log10(1) + k / 5) / 60 * pi / 180 in double).
inline double boundary(int k) { return std::cos(std::pow(10.0, std::log10(1.0) + k * 1.0 / 5) / 60.0 * M_PI / 180.0); }

// Parboil's doCompute for one pair: the bin of a float dot product by binary search over the
// float boundaries (decreasing).
inline int parboil_bin(float dot, const float* binb) {
  int min = 0, max = boundaries - 1;
  while (max > min + 1) {
    const int k = (min + max) / 2;
    if (dot >= binb[k]) max = k;
    else min = k;
  }
  if (dot >= binb[min]) return min;
  if (dot < binb[max]) return max + 1;
  return max;
}

// The bin of an exact dot product: how many boundaries exceed it.
inline int exact_bin(double dot, const double* bounds) {
  int bin = 0;
  while (bin < boundaries && bounds[bin] > dot) ++bin;
  return bin;
}

// Both references for pairs (a[i], b[j]): every pair, or with `self` (b is a) i < j only.
inline void count_pairs(const points& a, const points& b, bool self, counts& parboil, counts& exact) {
  float binb[boundaries];
  double bounds[boundaries];
  for (int k = 0; k < boundaries; ++k) bounds[k] = boundary(k), binb[k] = float(bounds[k]);
  const auto n = static_cast<std::int64_t>(a.size());
#ifdef _OPENMP
#pragma omp parallel
#endif
  {
    counts mine_f{}, mine_d{};
#ifdef _OPENMP
#pragma omp for schedule(dynamic, 16)
#endif
    for (std::int64_t i = 0; i < n; ++i) {
      const float xi = a.x[i], yi = a.y[i], zi = a.z[i];
      for (std::size_t j = self ? std::size_t(i) + 1 : 0; j < b.size(); ++j) {
        // Each product and sum rounded on its own, as Parboil's x86-64 build computes them.
        const float px = xi * b.x[j], py = yi * b.y[j], pz = zi * b.z[j];
        const float dot = (px + py) + pz;
        ++mine_f[std::size_t(parboil_bin(dot, binb))];
        const double exact_dot = double(xi) * b.x[j] + double(yi) * b.y[j] + double(zi) * b.z[j];
        ++mine_d[std::size_t(exact_bin(exact_dot, bounds))];
      }
    }
#ifdef _OPENMP
#pragma omp critical
#endif
    for (int k = 0; k < counters; ++k) parboil[std::size_t(k)] += mine_f[std::size_t(k)], exact[std::size_t(k)] += mine_d[std::size_t(k)];
  }
}

// DD, DR and RR summed over the random sets, by both references.
inline void reference_counts(const points& data, std::span<const points> randoms, pair_counts& parboil, pair_counts& exact) {
  parboil = exact = {};
  count_pairs(data, data, true, parboil.dd, exact.dd);
  for (const auto& r : randoms) {
    count_pairs(data, r, false, parboil.dr, exact.dr);
    count_pairs(r, r, true, parboil.rr, exact.rr);
  }
}

// Every counter of every kind equal.
inline report compare_exactly(const pair_counts& expected, const pair_counts& got) {
  report r;
  const char* names[3] = {"DD", "DR", "RR"};
  const counts* e[3] = {&expected.dd, &expected.dr, &expected.rr};
  const counts* g[3] = {&got.dd, &got.dr, &got.rr};
  for (int kind = 0; kind < 3; ++kind)
    for (int k = 0; k < counters; ++k) {
      ++r.checked;
      const auto want = (*e[kind])[std::size_t(k)], have = (*g[kind])[std::size_t(k)];
      if (want != have)
        r.mismatch(std::string(names[kind]) + " bin " + std::to_string(k) + ": " + std::to_string(have) + ", expected " +
                   std::to_string(want));
    }
  return r;
}

// The 60 numbers of the result file, in its order.
inline std::vector<double> parboil_printed(const pair_counts& p) {
  std::vector<double> out;
  for (int k = 1; k + 1 < counters; ++k)
    for (const auto* c : {&p.dd, &p.dr, &p.rr}) out.push_back(double((*c)[std::size_t(k)]));
  return out;
}

// Where the i-th number of the result file belongs: "DR bin 20".
inline std::string parboil_printed_name(std::size_t i) {
  const char* kinds[3] = {"DD", "DR", "RR"};
  return std::string(kinds[i % 3]) + " bin " + std::to_string(i / 3 + 1);
}

// Parboil's tools/compare-output: the 60 numbers of its result file (bins 1 .. 20, DD DR RR
// each) compared in groups, a number failing when it differs from the reference by more than
// both the group's relative tolerance (of the reference) and its absolute one; and the total of
// the result may fall short of the reference's by at most 0.01%. The first bins hold the fewest
// pairs and the ones nearest a float's resolution of the dot product (1 arcminute is a dot
// product 4e-8 below 1, under one float step there), hence the loose tolerances there.
inline report check_parboil_printed(std::span<const double> ref, std::span<const double> cmp) {
  struct group {
    int end;
    double rel, abs;
  };
  constexpr group groups[] = {{3, 0.10, 3}, {6, 0.35, 20}, {9, 0.05, 10}, {12, 0.02, 10},
                              {21, 0.01, 10}, {32, 0.001, 10}, {60, 0.001, 10000}};
  report r;
  int at = 0;
  double ref_total = 0, cmp_total = 0;
  for (const auto& g : groups)
    for (; at < g.end; ++at) {
      ++r.checked;
      ref_total += ref[std::size_t(at)];
      cmp_total += cmp[std::size_t(at)];
      const double diff = std::fabs(ref[std::size_t(at)] - cmp[std::size_t(at)]);
      if (diff > g.rel * ref[std::size_t(at)] && diff > g.abs) {
        std::ostringstream s;
        s << parboil_printed_name(std::size_t(at)) << ": " << cmp[std::size_t(at)] << ", reference " << ref[std::size_t(at)]
          << " (beyond " << g.rel * 100 << "% and " << g.abs << ")";
        r.mismatch(s.str());
      }
    }
  ++r.checked;
  if (ref_total - cmp_total > 0.0001 * ref_total) {
    std::ostringstream s;
    s << "total " << cmp_total << " falls short of the reference's " << ref_total << " by more than 0.01%";
    r.mismatch(s.str());
  }
  return r;
}

inline report check_parboil_tolerances(const pair_counts& reference, const pair_counts& got) {
  return check_parboil_printed(parboil_printed(reference), parboil_printed(got));
}

}  // namespace soac::validate::tpacf
