// Binning tpacf's pairs: Parboil's 21 boundaries of angular distance and a lookup table that puts
// a float dot product in the same bin as Parboil's binary search over them, with one load.
#pragma once

#include <algorithm>
#include <bit>
#include <cmath>
#include <stdexcept>
#include <string>
#include <vector>

#include <cuda_runtime.h>

#include "core/hd.hpp"

namespace soac::apps::tpacf {

inline constexpr int counters = 22;  // bins 0 .. 21
inline constexpr int boundaries = 21;

// Parboil's boundaries, cos(10^(k/5) arcminutes), rounded to float as Parboil stores them.
struct boundaries_f {
  float b[boundaries];
  boundaries_f() {
    for (int k = 0; k < boundaries; ++k)
      b[k] = float(std::cos(std::pow(10, std::log10(1.0) + k * 1.0 / 5) / 60.0 * M_PI / 180.0));
  }
};

// A pair's dot product as Parboil's sequential program computes it: each product and each sum
// rounded to float. (The device would otherwise contract them into fused multiply-adds; the host
// build targets x86-64 without FMA, so its plain expression rounds each step.)
SOAC_HD inline float pair_dot(const float4& a, const float4& b) {
#ifdef __CUDA_ARCH__
  return __fadd_rn(__fadd_rn(__fmul_rn(a.x, b.x), __fmul_rn(a.y, b.y)), __fmul_rn(a.z, b.z));
#else
  const float px = a.x * b.x, py = a.y * b.y, pz = a.z * b.z;
  return (px + py) + pz;
#endif
}

// The bin of a float dot product d with one table lookup instead of a binary search: bin(d) = how
// many boundaries exceed d. Cells split u = 1 - d (rounded to float, which is exact for d >= 0.5
// and monotone everywhere) by its exponent and two leading mantissa bits, so cells grow with u.
// A boundary whose u lies in a lower cell than d's exceeds d (counted); one in a higher cell lies
// below d (not counted). So bin(d) = base(cell) + [the boundary in d's own cell, if any, exceeds
// d], where base(cell) counts the boundaries of the lower cells. Consecutive boundaries' u differ
// by a factor of 1.5 or more and a cell spans at most 1.25, so a cell holds at most one boundary
// (make_cells checks it); an entry holds base and that boundary, or -infinity where the cell holds
// none (then the comparison is false, as it must be).
struct alignas(8) bin_cell {
  int base;
  float boundary;
};
inline constexpr int cell_mantissa_bits = 2;
inline constexpr int cell_first_exponent = -24;  // u >= 2^-24 for every float d < 1
inline constexpr int cells = (1 - cell_first_exponent + 1) << cell_mantissa_bits;  // exponents -24 .. 1 (u < 4)
// A float's bits shifted right to its exponent and two mantissa bits, for the first cell.
inline constexpr int first_cell_key = (127 + cell_first_exponent) << cell_mantissa_bits;

// The cell of u = 1 - d: its exponent and leading mantissa bits, clamped to the table. Zero and
// negative u (d >= 1) clamp to cell 0, where no boundary exceeds d; |d| <= 1 + a few float steps
// for unit vectors, so u < 4 and the upper clamp only keeps any float inside the table.
SOAC_HD inline int cell_of(float u) {
#ifdef __CUDA_ARCH__
  const int bits = __float_as_int(u);
  const int key = min(max(bits >> (23 - cell_mantissa_bits), first_cell_key), first_cell_key + cells - 1);
#else
  const int bits = std::bit_cast<int>(u);
  const int key = std::min(std::max(bits >> (23 - cell_mantissa_bits), first_cell_key), first_cell_key + cells - 1);
#endif
  return key - first_cell_key;
}

SOAC_HD inline int bin_of(float d, const bin_cell* table) {
  const bin_cell e = table[cell_of(1.0f - d)];
  return e.base + (e.boundary > d);
}

// The table, its bins counted from `first_bin` (so one table per kind of pair puts its bins
// after the other kinds' without an addition per pair).
inline std::vector<bin_cell> make_cells(const boundaries_f& bf, int first_bin = 0) {
  std::vector<int> owner(cells, -1);
  for (int k = 0; k < boundaries; ++k) {
    const int c = cell_of(1.0f - bf.b[k]);
    if (owner[std::size_t(c)] >= 0)
      throw std::logic_error("tpacf: boundaries " + std::to_string(owner[std::size_t(c)]) + " and " + std::to_string(k) +
                             " share a cell of the bin table");
    owner[std::size_t(c)] = k;
  }
  std::vector<bin_cell> table(cells);
  int below = first_bin;  // boundaries in lower cells
  for (int c = 0; c < cells; ++c) {
    table[std::size_t(c)] = {below, owner[std::size_t(c)] >= 0 ? bf.b[owner[std::size_t(c)]] : -INFINITY};
    if (owner[std::size_t(c)] >= 0) ++below;
  }
  return table;
}

}  // namespace soac::apps::tpacf
