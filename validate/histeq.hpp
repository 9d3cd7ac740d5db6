// Sequential reference for histogram equalisation of one 8-bit grey frame (the histeq app): the
// histogram, its cumulative distribution cdf, cdf_min = the cdf at the darkest pixel present, and
// each value v mapped to round(255 (cdf[v] - cdf_min) / (N - cdf_min)) in integers (exact, so the
// comparison is exact); a frame of one value is left as it is.
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>
#include <span>

namespace soac::validate {

inline void equalize_reference(std::span<const std::uint8_t> in, std::span<std::uint8_t> out) {
  std::array<std::int64_t, 256> cdf{};
  for (const std::uint8_t p : in) ++cdf[p];
  for (int v = 1; v < 256; ++v) cdf[std::size_t(v)] += cdf[std::size_t(v - 1)];
  std::int64_t cdf_min = 0;
  for (const std::int64_t c : cdf)
    if (c > 0) {
      cdf_min = c;
      break;
    }
  const auto n = std::int64_t(in.size());
  std::array<std::uint8_t, 256> lut{};
  for (int v = 0; v < 256; ++v) {
    if (n == cdf_min) {
      lut[std::size_t(v)] = std::uint8_t(v);
      continue;
    }
    const std::int64_t stretched = ((cdf[std::size_t(v)] - cdf_min) * 255 + (n - cdf_min) / 2) / (n - cdf_min);
    lut[std::size_t(v)] = std::uint8_t(std::clamp<std::int64_t>(stretched, 0, 255));
  }
  for (std::size_t i = 0; i < in.size(); ++i) out[i] = lut[in[i]];
}

}  // namespace soac::validate
