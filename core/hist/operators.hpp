// Operators of the SC20 benchmarks that other apps reuse: saturating addition (Parboil histo's
// 8-bit counters, the 24-bit CAS benchmark) and argmax over (value, index) pairs.
#pragma once

#include <cstdint>

#include <cuda/std/limits>

#include "core/hd.hpp"

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

template <class V>
struct indexed {
  V value;
  std::uint32_t index;
};

// The larger value wins; ties go to the lower index. 8 bytes with a 32-bit V, so the trait picks
// a 64-bit CAS; larger V falls to the lock path.
template <class V>
struct arg_max {
  using value_type = indexed<V>;
  static constexpr bool commutative = true;
  // For hist's global model (hist_tuning::u): once a bin holds a large value most updates lose
  // and leave after one read, so threads sharing a sub-histogram barely contend. Large enough for
  // one sub-histogram at any RF (measured on the H100, 50M elements, 48K bins, RF = 63: M = 1
  // 296 us, the M = 4 that u = 64 gave 330 us), which also spares the RF inspector.
  static constexpr double hist_contention_tolerance = 1e9;
  SOAC_HD static constexpr value_type identity() { return {cuda::std::numeric_limits<V>::lowest(), 0xffffffffu}; }
  SOAC_HD constexpr value_type operator()(value_type a, value_type b) const {
    if (a.value != b.value) return a.value > b.value ? a : b;
    return a.index < b.index ? a : b;
  }
};

}  // namespace soac
