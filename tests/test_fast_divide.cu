// fast_divisor: quotient and remainder by multiplication, exact for every numerator and divisor,
// checked against the hardware's / and % on both backends (the device takes __umulhi).
#include <cstdint>
#include <limits>
#include <random>
#include <stdexcept>
#include <vector>

#include <gtest/gtest.h>

#include "core/buffer.hpp"
#include "core/cuda_check.hpp"
#include "core/fast_divide.hpp"
#include "core/launch.cuh"
#include "tests/backend_fixture.hpp"

namespace {

using namespace soac;
using soac::testing::backend_test;
using u32 = std::uint32_t;

struct division_case {
  fast_divisor d;
  u32 n;
};

__global__ void divide_kernel(const division_case* cases, std::int64_t count, u32* quotients, u32* remainders) {
  const std::int64_t i = std::int64_t{blockIdx.x} * blockDim.x + threadIdx.x;
  if (i < count) quotients[i] = cases[i].d.divide(cases[i].n), remainders[i] = cases[i].d.remainder(cases[i].n);
}

// Divisors where the multiplier's rounding is tightest (powers of two and their neighbours, the
// top of the range) and random ones; numerators at the edges of each quotient and random ones.
std::vector<division_case> cases() {
  std::mt19937 rng(12345);
  std::vector<u32> divisors;
  for (u32 d = 1; d <= 2048; ++d) divisors.push_back(d);
  for (int k = 11; k < 32; ++k)
    for (int delta : {-1, 0, 1}) divisors.push_back(u32((std::int64_t{1} << k) + delta));
  for (u32 d : {u32{24576}, u32{49152}, u32{3} << 30, std::numeric_limits<u32>::max() - 1, std::numeric_limits<u32>::max()})
    divisors.push_back(d);
  for (int k = 0; k < 2000; ++k) divisors.push_back(std::max<u32>(1, rng() >> (rng() % 32)));
  const u32 top = std::numeric_limits<u32>::max();
  std::vector<division_case> out;
  for (u32 d : divisors) {
    const fast_divisor fd(d);
    for (u32 n : {u32{0}, u32{1}, d - 1, d, d + 1, top, top - 1, top - d, top - d + 1, top / d * d, top / d * d - 1})
      out.push_back({fd, n});
    for (int k = 0; k < 64; ++k) out.push_back({fd, u32(rng())});
  }
  return out;
}

class FastDivide : public backend_test {};

TEST_P(FastDivide, MatchesHardwareDivision) {
  const auto all = cases();
  std::vector<u32> q(all.size()), r(all.size());
  if (ctx().is_cuda()) {
    buffer<division_case> d_cases(ctx(), std::span<const division_case>(all));
    buffer<u32> d_q(ctx(), all.size()), d_r(ctx(), all.size());
    const auto count = std::int64_t(all.size());
    divide_kernel<<<unsigned((count + 255) / 256), 256, 0, ctx().stream()>>>(d_cases.data(), count, d_q.data(), d_r.data());
    SOAC_CHECK_LAUNCH("divide_kernel");
    q = d_q.to_vector(), r = d_r.to_vector();
  } else {
    for (std::size_t i = 0; i < all.size(); ++i) q[i] = all[i].d.divide(all[i].n), r[i] = all[i].d.remainder(all[i].n);
  }
  int wrong = 0;
  for (std::size_t i = 0; i < all.size() && wrong < 10; ++i) {
    const u32 n = all[i].n, d = all[i].d.divisor();
    if (q[i] != n / d || r[i] != n % d) {
      ++wrong;
      ADD_FAILURE() << n << " / " << d << ": got " << q[i] << " rem " << r[i] << ", expected " << n / d << " rem " << n % d;
    }
  }
}

TEST(FastDivideHost, ZeroDivisorThrows) { EXPECT_THROW(fast_divisor(0), std::invalid_argument); }

SOAC_INSTANTIATE_BACKENDS(FastDivide);

}  // namespace
