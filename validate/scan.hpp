// Sequential reference for scan and segscan: one left-to-right loop, the definition itself.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "validate/report.hpp"

namespace soac::validate {

// flags empty: one segment. Exclusive output is op's identity at each segment start.
template <class Op, class T = typename Op::value_type>
std::vector<T> scan_reference(std::span<const T> in, std::span<const unsigned char> flags, Op op, bool inclusive) {
  std::vector<T> out(in.size());
  T acc = Op::identity();
  for (std::size_t i = 0; i < in.size(); ++i) {
    if (!flags.empty() && flags[i]) acc = Op::identity();
    if (inclusive) {
      acc = op(acc, in[i]);
      out[i] = acc;
    } else {
      out[i] = acc;
      acc = op(acc, in[i]);
    }
  }
  return out;
}

// Element-wise comparison; `close(a, b)` decides equality (exact for integers, a tolerance for
// floating-point sums whose association order differs between implementations).
template <class T, class Close>
report compare(std::span<const T> expected, std::span<const T> result, Close close) {
  report r;
  r.checked = static_cast<std::int64_t>(expected.size());
  if (expected.size() != result.size()) {
    r.mismatch("result has " + std::to_string(result.size()) + " elements, expected " + std::to_string(expected.size()));
    return r;
  }
  for (std::size_t i = 0; i < expected.size(); ++i)
    if (!close(expected[i], result[i]))
      r.mismatch("element " + std::to_string(i) + " is " + std::to_string(result[i]) + ", expected " +
                 std::to_string(expected[i]));
  return r;
}

}  // namespace soac::validate
