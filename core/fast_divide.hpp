// Division and remainder of 32-bit unsigned values by a divisor fixed at run time, as one
// multiply-high and a few shifts and adds (Granlund and Montgomery, "Division by invariant integers
// using multiplication", 1994, Fig. 4.1). GPUs have no integer divider: n / d with a run-time d
// is a ~20-instruction sequence, which issue-bound kernels (a histogram's bin function, the
// bucket of an update) pay on every element. Exact for every n and every d >= 1.
#pragma once

#include <cstdint>
#include <stdexcept>

#include "core/hd.hpp"

namespace soac {

class fast_divisor {
 public:
  fast_divisor() : fast_divisor(1) {}
  explicit fast_divisor(std::uint32_t d) : d_(d) {
    if (d == 0) throw std::invalid_argument("fast_divisor: division by zero");
    unsigned l = 0;  // ceil(log2 d)
    while (l < 32 && (std::uint64_t{1} << l) < d) ++l;
    // m = floor(2^32 * (2^l - d) / d) + 1; 2^l - d < d, so the product fits 64 bits and m 32.
    multiplier_ = std::uint32_t((((std::uint64_t{1} << l) - d) << 32) / d + 1);
    shift1_ = l < 1 ? l : 1;
    shift2_ = l > 1 ? l - 1 : 0;
  }

  SOAC_HD std::uint32_t divisor() const { return d_; }

  SOAC_HD std::uint32_t divide(std::uint32_t n) const {
    const std::uint32_t t = multiply_high(multiplier_, n);
    return (t + ((n - t) >> shift1_)) >> shift2_;
  }
  SOAC_HD std::uint32_t remainder(std::uint32_t n) const { return n - divide(n) * d_; }

 private:
  SOAC_HD static std::uint32_t multiply_high(std::uint32_t a, std::uint32_t b) {
#if defined(__CUDA_ARCH__)
    return __umulhi(a, b);
#else
    return std::uint32_t((std::uint64_t{a} * b) >> 32);
#endif
  }

  std::uint32_t d_ = 1, multiplier_ = 0;
  unsigned shift1_ = 0, shift2_ = 0;
};

}  // namespace soac
