// Sequential references of the counting apps: Parboil histo's 8-bit counters that saturate at
// 255, and the CUDA samples' byte histograms (64 bins of byte >> 2, 256 bins of the byte).
#pragma once

#include <cstdint>
#include <span>
#include <vector>

namespace soac::validate {

// counters[b] = min(255, number of i with bins[i] == b); indices at or beyond `bins_count` are
// ignored.
inline std::vector<std::uint8_t> saturating_counts(std::span<const std::uint32_t> bins, std::uint64_t bins_count) {
  std::vector<std::uint8_t> counters(static_cast<std::size_t>(bins_count), 0);
  for (const std::uint32_t b : bins)
    if (b < bins_count && counters[b] < 255) ++counters[b];
  return counters;
}

// counts[v >> shift] over every byte v (256 >> shift bins).
inline std::vector<std::uint32_t> byte_counts(std::span<const std::uint8_t> bytes, int shift) {
  std::vector<std::uint32_t> counts(std::size_t{256} >> shift, 0);
  for (const std::uint8_t v : bytes) ++counts[v >> shift];
  return counts;
}

}  // namespace soac::validate
