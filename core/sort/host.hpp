// Host (OpenMP) backend of the digit radix sort: the same LSD passes as the CUDA kernels, one
// chunk per thread in place of a tile (per-chunk digit counts, digit-major exclusive scan,
// stable scatter of each chunk in order).
#pragma once

#include <algorithm>
#include <cstdint>
#include <vector>

#include "core/host_parallel.hpp"

#include "core/sort/keys.hpp"

namespace soac::detail {

template <class K, class V, bool HasValues>
void radix_sort_host(std::int64_t n, K* keys, V* values, K* alt_keys, V* alt_values) {
  constexpr int digits = 1 << sort_tuning::radix_bits;
  const std::int64_t chunks = host_workers(n, 65536);
  const std::int64_t chunk = (n + chunks - 1) / chunks;
  std::vector<std::int64_t> offsets(static_cast<std::size_t>(chunks * digits));
  K* src = keys;
  K* dst = alt_keys;
  V* vsrc = values;
  V* vdst = alt_values;
  for (int shift = 0; shift < 32; shift += sort_tuning::radix_bits) {
    auto digit = [shift](const K& k) { return (encoded_bits(k) >> shift) & (digits - 1); };
#pragma omp parallel for schedule(static, 1)
    for (std::int64_t c = 0; c < chunks; ++c) {
      std::int64_t* count = &offsets[std::size_t(c * digits)];
      std::fill(count, count + digits, 0);
      for (std::int64_t i = c * chunk, hi = std::min(n, i + chunk); i < hi; ++i) ++count[digit(src[i])];
    }
    std::int64_t running = 0;  // digit-major: all chunks' digit 0, then digit 1, ...
    for (int d = 0; d < digits; ++d)
      for (std::int64_t c = 0; c < chunks; ++c) {
        const std::int64_t k = offsets[std::size_t(c * digits + d)];
        offsets[std::size_t(c * digits + d)] = running;
        running += k;
      }
#pragma omp parallel for schedule(static, 1)
    for (std::int64_t c = 0; c < chunks; ++c) {
      std::int64_t* next = &offsets[std::size_t(c * digits)];
      for (std::int64_t i = c * chunk, hi = std::min(n, i + chunk); i < hi; ++i) {
        const std::int64_t to = next[digit(src[i])]++;
        dst[to] = src[i];
        if constexpr (HasValues) vdst[to] = vsrc[i];
      }
    }
    std::swap(src, dst);
    std::swap(vsrc, vdst);
  }
  static_assert(32 % sort_tuning::radix_bits == 0 && (32 / sort_tuning::radix_bits) % 2 == 0,
                "an even number of passes leaves the result in the caller's arrays");
}

}  // namespace soac::detail
