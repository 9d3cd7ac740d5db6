// Operators of the FHPC17 microbenchmarks that the shared operator set (core/operators.hpp, which
// has arg_max) lacks: the maximum subarray sum of Fig 12.
#pragma once

#include <cstdint>

#include <cuda/std/limits>

#include "core/hd.hpp"
#include "core/operators.hpp"

namespace soac {

// FHPC17 Fig 12's quad: best subarray sum, best prefix, best suffix, total (empty subarrays allowed).
template <class T>
struct mss_quad {
  T best, prefix, suffix, total;
  friend SOAC_HD constexpr bool operator==(const mss_quad& a, const mss_quad& b) {
    return a.best == b.best && a.prefix == b.prefix && a.suffix == b.suffix && a.total == b.total;
  }
};

// Fig 12's redop: associative, not commutative (the order of the elements matters).
template <class T>
struct max_subarray {
  using value_type = mss_quad<T>;
  static constexpr bool commutative = false;
  SOAC_HD static constexpr T max2(T a, T b) { return a < b ? b : a; }
  SOAC_HD static constexpr value_type identity() { return {T(0), T(0), T(0), T(0)}; }
  SOAC_HD constexpr value_type operator()(const value_type& x, const value_type& y) const {
    return {max2(x.best, max2(y.best, x.suffix + y.prefix)), max2(x.prefix, x.total + y.prefix),
            max2(y.suffix, x.suffix + y.total), x.total + y.total};
  }
  // Fig 12's mapop: the quad of one element.
  SOAC_HD static constexpr value_type lift(T x) {
    const T p = max2(x, T(0));
    return {p, p, p, x};
  }
};

}  // namespace soac
