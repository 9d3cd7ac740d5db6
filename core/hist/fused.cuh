// Horizontal fusion (SC20 section IV-B, rule F2): two histograms, possibly with different
// operators and value types, computed in one pass over the input. f(i) returns
// soac::fused_updates{ra, rb}; ra updates histogram a, rb histogram b (each a bin_value or
// bin_values). On cuda both go to shared memory when one copy of each fits a block (M copies
// when more fit, strided as in the single-histogram kernel); otherwise, or when a lock (xcg) is
// needed, each update goes straight to the destination with the operator's global atomic.
#pragma once

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "core/host_parallel.hpp"

#include "core/context.hpp"
#include "core/error.hpp"
#include "core/hist/atomics.cuh"
#include "core/hist/block.cuh"
#include "core/hist/plan.hpp"
#include "core/hist/update.hpp"
#include "core/launch.cuh"

namespace soac {

template <class Ra, class Rb>
struct fused_updates {
  Ra a;
  Rb b;
};
template <class Ra, class Rb>
fused_updates(Ra, Rb) -> fused_updates<Ra, Rb>;

namespace detail {

template <class R>
struct fused_parts;
template <class Ra, class Rb>
struct fused_parts<fused_updates<Ra, Rb>> {
  using a = Ra;
  using b = Rb;
};

template <class Op, class R>
__host__ __device__ __forceinline__ void apply_plain(const R& r, typename Op::value_type* h, std::int64_t H) {
  using U = updates_of<R>;
  for (int k = 0; k < U::count; ++k) {
    const auto& u = U::get(r, k);
    if (u.bin >= 0 && u.bin < H) h[u.bin] = Op{}(h[u.bin], static_cast<typename Op::value_type>(u.value));
  }
}

// Shared: M copies of both histograms per block, one pass; global (smem == false): in place.
template <atomic_kind Ka, atomic_kind Kb, bool Shared, class OpA, class OpB, class F>
__global__ void __launch_bounds__(hist_tuning::shared_block)
    hist_fused_kernel(std::int64_t n, F f, typename OpA::value_type* ha, std::int64_t Ha, int* la,
                      typename OpB::value_type* hb, std::int64_t Hb, int* lb, int M) {
  using A = typename OpA::value_type;
  using B = typename OpB::value_type;
  extern __shared__ __align__(16) unsigned char smem[];
  A* sa = reinterpret_cast<A*>(smem);
  B* sb = reinterpret_cast<B*>(smem + ((std::size_t(M) * Ha * sizeof(A) + 15) & ~std::size_t(15)));
  if constexpr (Shared) {
    for (std::int64_t i = threadIdx.x; i < M * Ha; i += blockDim.x) sa[i] = OpA::identity();
    for (std::int64_t i = threadIdx.x; i < M * Hb; i += blockDim.x) sb[i] = OpB::identity();
    __syncthreads();
  }
  A* ma = Shared ? sa + (threadIdx.x % M) * Ha : ha;
  B* mb = Shared ? sb + (threadIdx.x % M) * Hb : hb;
  constexpr int items = hist_tuning::fused_items_per_thread;
  using R = decltype(f(std::int64_t{0}));
  const std::int64_t tile = std::int64_t{blockDim.x} * items;
  for (std::int64_t base = std::int64_t{blockIdx.x} * tile + threadIdx.x; base < n; base += std::int64_t{gridDim.x} * tile) {
    R r[items];
#pragma unroll
    for (int j = 0; j < items; ++j)
      if (base + std::int64_t{j} * blockDim.x < n) r[j] = f(base + std::int64_t{j} * blockDim.x);
#pragma unroll
    for (int j = 0; j < items; ++j)
      if (base + std::int64_t{j} * blockDim.x < n) {
        apply_updates<Ka, OpA, update_mode::atomic, Shared>(r[j].a, ma, Shared ? nullptr : la, 0, Ha);
        apply_updates<Kb, OpB, update_mode::atomic, Shared>(r[j].b, mb, Shared ? nullptr : lb, 0, Hb);
      }
  }
  if constexpr (Shared) {
    __syncthreads();
    for (std::int64_t b = threadIdx.x; b < Ha; b += blockDim.x) {
      A acc = sa[b];
      for (int m = 1; m < M; ++m) acc = OpA{}(acc, sa[std::int64_t{m} * Ha + b]);
      if (!same_bits(acc, OpA::identity())) atomic_update<Ka, OpA>(ha + b, nullptr, acc);
    }
    for (std::int64_t b = threadIdx.x; b < Hb; b += blockDim.x) {
      B acc = sb[b];
      for (int m = 1; m < M; ++m) acc = OpB{}(acc, sb[std::int64_t{m} * Hb + b]);
      if (!same_bits(acc, OpB::identity())) atomic_update<Kb, OpB>(hb + b, nullptr, acc);
    }
  }
}

template <class OpA, class OpB, class F>
hist_plan hist_fused_cuda(context& ctx, const hist_options& options, std::int64_t n, F f, typename OpA::value_type* ha,
                          std::int64_t Ha, typename OpB::value_type* hb, std::int64_t Hb) {
  constexpr atomic_kind Ka = hist_atomic<OpA>::kind, Kb = hist_atomic<OpB>::kind;
  using A = typename OpA::value_type;
  using B = typename OpB::value_type;
  constexpr bool lockless = Ka != atomic_kind::xcg && Kb != atomic_kind::xcg;
  ctx.activate();
  // The planner's question: resident blocks of the shared or the global version.
  hist_device device;
  device.resident_blocks = [](const hist_kernel& k, int threads, std::size_t bytes) {
    if constexpr (lockless)
      if (k.fam == hist_kernel::family::fused_shared)
        return resident_blocks(hist_fused_kernel<Ka, Kb, true, OpA, OpB, F>, threads, bytes, "hist_fused");
    return resident_blocks(hist_fused_kernel<Ka, Kb, false, OpA, OpB, F>, threads, bytes, "hist_fused");
  };
  const hist_plan plan = plan_hist_fused(ctx.props(), device, {n, Ha, Hb, sizeof(A), sizeof(B), Ka, Kb}, options);
  if (plan.kernel.fam == hist_kernel::family::none) return plan;
  hist_temp locks(ctx, (Ka == atomic_kind::xcg ? std::size_t(Ha) * 4 : 0) + (Kb == atomic_kind::xcg ? std::size_t(Hb) * 4 : 0));
  int* la = Ka == atomic_kind::xcg ? static_cast<int*>(locks.p) : nullptr;
  int* lb = Kb == atomic_kind::xcg ? static_cast<int*>(locks.p) + (la ? Ha : 0) : nullptr;
  if (locks.p) SOAC_CUDA_CHECK(cudaMemsetAsync(locks.p, 0, (la ? Ha * 4 : 0) + (lb ? Hb * 4 : 0), ctx.stream()));
  auto run = [&](auto kernel) {
    kernel<<<unsigned(plan.grid), plan.block_threads, plan.shared_bytes, ctx.stream()>>>(n, f, ha, Ha, la, hb, Hb, lb, plan.multi);
    SOAC_CHECK_LAUNCH("hist_fused_kernel");
  };
  if (plan.kernel.fam == hist_kernel::family::fused_shared) {
    if constexpr (lockless) run(hist_fused_kernel<Ka, Kb, true, OpA, OpB, F>);
  } else {
    run(hist_fused_kernel<Ka, Kb, false, OpA, OpB, F>);
  }
  return plan;
}

template <class OpA, class OpB, class F>
int hist_fused_host(std::int64_t n, F f, typename OpA::value_type* ha, std::int64_t Ha, typename OpB::value_type* hb,
                    std::int64_t Hb) {
  using A = typename OpA::value_type;
  using B = typename OpB::value_type;
  if (n == 0) return 0;
  const int threads = int(host_workers(n, 1024));
  std::vector<A> sa(std::size_t(threads) * Ha, OpA::identity());
  std::vector<B> sb(std::size_t(threads) * Hb, OpB::identity());
#pragma omp parallel num_threads(threads)
  {
    const std::size_t t = std::size_t(host_thread_index());
#pragma omp for schedule(static)
    for (std::int64_t i = 0; i < n; ++i) {
      const auto r = f(i);
      apply_plain<OpA>(r.a, sa.data() + t * Ha, Ha);
      apply_plain<OpB>(r.b, sb.data() + t * Hb, Hb);
    }
  }
  for (int t = 0; t < threads; ++t) {
    for (std::int64_t b = 0; b < Ha; ++b) ha[b] = OpA{}(ha[b], sa[std::size_t(t) * Ha + b]);
    for (std::int64_t b = 0; b < Hb; ++b) hb[b] = OpB{}(hb[b], sb[std::size_t(t) * Hb + b]);
  }
  return threads;
}

}  // namespace detail

template <class OpA, class OpB, class F>
hist_plan hist_fused(context& ctx, const hist_options& options, std::int64_t n, F f, span<typename OpA::value_type> a, OpA,
                     span<typename OpB::value_type> b, OpB) {
  static_assert(is_commutative_v<OpA> && is_commutative_v<OpB>, "hist_fused needs commutative operators");
  if (n < 0) throw usage_error("hist_fused: n must not be negative");
  check_hist_fused_options(options);
  const auto Ha = std::int64_t(a.size()), Hb = std::int64_t(b.size());
  if (ctx.is_cuda()) return detail::hist_fused_cuda<OpA, OpB>(ctx, options, n, f, a.data(), Ha, b.data(), Hb);
  hist_plan plan;
  plan.host = true;
  plan.n = n;
  plan.bins = Ha + Hb;
  plan.host_threads = detail::hist_fused_host<OpA, OpB>(n, f, a.data(), Ha, b.data(), Hb);
  return plan;
}

}  // namespace soac
