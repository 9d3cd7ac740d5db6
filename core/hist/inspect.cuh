// The RF inspector (SC20 III-D): samples groups of H consecutive elements and estimates the race
// factor as updates per distinct bin.
#pragma once

#include <cstdint>
#include <vector>

#include <cub/block/block_reduce.cuh>

#include "core/hist/block.cuh"

namespace soac::detail {

// RF inspector (III-D): marks the bins each sampled group touches in a bitmap and counts the
// in-range updates and the distinct bins. Grid: (blocks per group, groups).
inline constexpr int inspect_block = 256;
template <class F>
__global__ void __launch_bounds__(inspect_block)
    hist_inspect_kernel(std::int64_t n, F f, std::int64_t H, std::int64_t group, unsigned int* bits,
                        unsigned long long* counts) {
  using R = decltype(f(std::int64_t{0}));
  using U = updates_of<R>;
  const int g = blockIdx.y;
  const std::int64_t start = gridDim.y > 1 ? g * ((n - group) / (gridDim.y - 1)) : 0;
  const std::int64_t words = (H + 31) / 32;
  unsigned int* my_bits = bits + g * words;
  unsigned long long hits = 0, distinct = 0;
  for (std::int64_t j = std::int64_t{blockIdx.x} * blockDim.x + threadIdx.x; j < group; j += std::int64_t{gridDim.x} * blockDim.x) {
    const R r = f(start + j);
#pragma unroll
    for (int k = 0; k < U::count; ++k) {
      const std::int64_t b = U::get(r, k).bin;
      if (b < 0 || b >= H) continue;
      ++hits;
      const unsigned int bit = 1u << (b % 32);
      if (!(atomicOr(my_bits + b / 32, bit) & bit)) ++distinct;
    }
  }
  using reduce = cub::BlockReduce<unsigned long long, inspect_block>;
  __shared__ typename reduce::TempStorage tmp;
  const unsigned long long h = reduce(tmp).Sum(hits);
  __syncthreads();
  const unsigned long long d = reduce(tmp).Sum(distinct);
  if (threadIdx.x == 0) {
    atomicAdd(counts + 2 * g, d);
    atomicAdd(counts + 2 * g + 1, h);
  }
}

// Estimates RF: updates per distinct bin over groups of H consecutive elements (1 when nothing
// lands in range). Synchronises the stream: the plan depends on the answer.
template <class F>
double hist_inspect_cuda(context& ctx, std::int64_t n, F f, std::int64_t H) {
  const inspector_shape shape = plan_inspector(n, H);
  if (shape.groups == 0) return 1.0;
  const std::int64_t words = (H + 31) / 32;
  const std::size_t bit_bytes = std::size_t(words) * shape.groups * 4, count_bytes = 2 * shape.groups * 8;
  auto* mem = static_cast<unsigned char*>(ctx.allocate_temp(bit_bytes + count_bytes));
  auto* counts = reinterpret_cast<unsigned long long*>(mem);
  auto* bits = reinterpret_cast<unsigned int*>(mem + count_bytes);
  std::vector<unsigned long long> host(2 * shape.groups);
  try {
    SOAC_CUDA_CHECK(cudaMemsetAsync(mem, 0, bit_bytes + count_bytes, ctx.stream()));
    const std::int64_t blocks = std::clamp<std::int64_t>(ceil_div(shape.group, inspect_block * 8), 1, 1024);
    hist_inspect_kernel<<<dim3(unsigned(blocks), unsigned(shape.groups)), inspect_block, 0, ctx.stream()>>>(n, f, H, shape.group, bits, counts);
    SOAC_CHECK_LAUNCH("hist_inspect_kernel");
    SOAC_CUDA_CHECK(cudaMemcpyAsync(host.data(), counts, count_bytes, cudaMemcpyDeviceToHost, ctx.stream()));
    SOAC_CUDA_CHECK(cudaStreamSynchronize(ctx.stream()));
  } catch (...) {
    ctx.free_temp(mem);
    throw;
  }
  ctx.free_temp(mem);
  double sum = 0;
  int used = 0;
  for (int g = 0; g < shape.groups; ++g) {
    if (host[2 * g] == 0) continue;
    sum += double(host[2 * g + 1]) / double(host[2 * g]);
    ++used;
  }
  return used ? sum / used : 1.0;
}

}  // namespace soac::detail
