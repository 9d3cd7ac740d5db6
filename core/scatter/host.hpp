// Host (OpenMP) backend of scatter: the same semantics as the CUDA kernels.
#pragma once

#include <cstdint>

#include "core/scatter/write.hpp"

namespace soac::detail {

template <class F, class... T>
void scatter_host(std::int64_t n, F f, cuda::std::span<T>... dest) {
#pragma omp parallel for schedule(static)
  for (std::int64_t i = 0; i < n; ++i) apply_writes(f(i), dest...);
}

}  // namespace soac::detail
