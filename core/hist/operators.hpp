// Operators of the SC20 benchmarks that other apps reuse: saturating addition (Parboil histo's
// 8-bit counters, the 24-bit CAS benchmark). arg_max is in the shared set (core/operators.hpp).
#pragma once

#include <cstdint>

#include <cuda/std/limits>

#include "core/hd.hpp"
#include "core/operators.hpp"

namespace soac {

// min(a + b, 2^Bits - 1) on unsigned values below 2^Bits: not a hardware atomic, so CAS.
template <class T, int Bits>
struct saturating_plus {
  static_assert(Bits < int(sizeof(T) * 8), "saturating_plus needs a value type wider than Bits");
  using value_type = T;
  static constexpr bool commutative = true;
  static constexpr T max_value = T((T(1) << Bits) - 1);
  SOAC_HD static constexpr T identity() { return T(0); }
  SOAC_HD constexpr T operator()(T a, T b) const { return T(a + b) > max_value ? max_value : T(a + b); }
};

}  // namespace soac
