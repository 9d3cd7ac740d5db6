// CUDA kernels of scatter. Each kernel covers [offset, offset + count) of the write indices; the
// launcher slices larger n so that no grid exceeds CUDA's limit. Every kernel is a dependent
// launch (core/launch.cuh): a scatter after another kernel starts as that one drains.
#pragma once

#include <algorithm>
#include <cstdint>

#include "core/context.hpp"
#include "core/launch.cuh"
#include "core/scatter/strategy.hpp"
#include "core/scatter/write.hpp"

namespace soac::detail {

// The report's Fig 13: one write per thread.
template <class F, class... T>
__global__ void scatter_plain_kernel(std::int64_t offset, std::int64_t count, F f, cuda::std::span<T>... dest) {
  wait_for_previous_grid();
  const std::int64_t i = std::int64_t{blockIdx.x} * blockDim.x + threadIdx.x;
  if (i < count) apply_writes(f(offset + i), dest...);
}

// The report's Fig 14: each thread `chunk` writes, grid-strided so a warp's accesses stay adjacent.
template <class F, class... T>
__global__ void scatter_chunked_kernel(std::int64_t offset, std::int64_t count, int chunk, F f,
                                       cuda::std::span<T>... dest) {
  wait_for_previous_grid();
  const std::int64_t stride = std::int64_t{gridDim.x} * blockDim.x;
  std::int64_t i = std::int64_t{blockIdx.x} * blockDim.x + threadIdx.x;
  for (int j = 0; j < chunk && i < count; ++j, i += stride) apply_writes(f(offset + i), dest...);
}

// Items writes per thread, all produced (loads issued) before any is stored.
template <int Items, class F, class... T>
__global__ void scatter_blocked_kernel(std::int64_t offset, std::int64_t count, F f, cuda::std::span<T>... dest) {
  wait_for_previous_grid();
  using result = decltype(f(std::int64_t{0}));
  const std::int64_t base = std::int64_t{blockIdx.x} * blockDim.x * Items + threadIdx.x;
  if (base + std::int64_t{Items - 1} * blockDim.x < count) {
    result w[Items];
#pragma unroll
    for (int j = 0; j < Items; ++j) w[j] = f(offset + base + std::int64_t{j} * blockDim.x);
#pragma unroll
    for (int j = 0; j < Items; ++j) apply_writes(w[j], dest...);
  } else {
#pragma unroll
    for (int j = 0; j < Items; ++j) {
      const std::int64_t i = base + std::int64_t{j} * blockDim.x;
      if (i < count) apply_writes(f(offset + i), dest...);
    }
  }
}

template <class F, class... T>
void scatter_cuda(const context& ctx, const scatter_plan& plan, std::int64_t n, F f, cuda::std::span<T>... dest) {
  ctx.activate();
  const int block = plan.block_threads;
  const std::int64_t per_block = std::int64_t{block} * plan.items_per_thread;
  const std::int64_t slice = max_grid_x * per_block;
  for (std::int64_t offset = 0; offset < n; offset += slice) {
    const std::int64_t count = std::min(slice, n - offset);
    const std::int64_t grid = ceil_div(count, per_block);
    switch (plan.strategy) {
      case scatter_strategy::plain:
        launch_dependent(ctx, "scatter_plain_kernel", scatter_plain_kernel<F, T...>, {grid, block}, offset, count, f, dest...);
        break;
      case scatter_strategy::chunked:
        launch_dependent(ctx, "scatter_chunked_kernel", scatter_chunked_kernel<F, T...>, {grid, block}, offset, count,
                         plan.items_per_thread, f, dest...);
        break;
      default:
        launch_dependent(ctx, "scatter_blocked_kernel", scatter_blocked_kernel<scatter_tuning::blocked_items, F, T...>, {grid, block},
                         offset, count, f, dest...);
        break;
    }
  }
}

}  // namespace soac::detail
