// hist's dispatch on cuda: asks the planner (core/hist/plan.hpp) for the plan, answering its
// questions about the compiled kernel versions from the GPU, then maps the plan to its kernel and
// launches it. Nothing here decides: every shape, version and fold comes from the plan, which the
// launch code only reads.
#pragma once

#include <cstdint>
#include <string>
#include <type_traits>

#include "core/context.hpp"
#include "core/error.hpp"
#include "core/fast_divide.hpp"
#include "core/hist/block.cuh"
#include "core/hist/global.cuh"
#include "core/hist/inspect.cuh"
#include "core/hist/partition.cuh"
#include "core/hist/plan.hpp"
#include "core/hist/shared.cuh"
#include "core/hist/split.cuh"
#include "core/launch.cuh"

namespace soac::detail {

// Calls fn(integral_constant<atomic_kind, K>) for the kind chosen at run time, instantiating only
// the kinds the operator allows.
template <class Op, class Fn>
void with_atomic_kind(atomic_kind k, Fn&& fn) {
  if constexpr (atomic_allowed<Op>(atomic_kind::hdw))
    if (k == atomic_kind::hdw) return fn(std::integral_constant<atomic_kind, atomic_kind::hdw>{});
  if constexpr (atomic_allowed<Op>(atomic_kind::cas))
    if (k == atomic_kind::cas) return fn(std::integral_constant<atomic_kind, atomic_kind::cas>{});
  if (k == atomic_kind::xcg) return fn(std::integral_constant<atomic_kind, atomic_kind::xcg>{});
  throw usage_error("hist: atomic kind " + std::string(to_string(k)) + " cannot update this value type");
}

// The shared kernel's version for k (families shared and shared_fold): fn(kernel). Only the
// versions the planner can pick are instantiated.
template <atomic_kind K, class Op, class F, class Fn>
void with_shared_kernel(const hist_kernel& k, Fn&& fn) {
  namespace t = hist_tuning;
  constexpr update_mode atomic = update_mode::atomic, exclusive = update_mode::exclusive;
  constexpr int standard = hist_items<F>();
  const bool fold = k.fam == hist_kernel::family::shared_fold;
  if (k.exclusive) {
    if (k.max_block == t::private_items_max_block)
      return fn(hist_shared_kernel<K, hist_items<F, t::private_items_per_thread>(), Op, exclusive, F, t::private_items_max_block>);
    return fn(hist_shared_kernel<K, standard, Op, exclusive, F>);
  }
  if constexpr (K == atomic_kind::cas) {
    constexpr int contended = hist_items<F, t::shared_items_cas_contended>();
    constexpr int alone = hist_items<F, t::shared_items_cas_alone>();
    constexpr int wide = hist_items<F, t::shared_items_cas_wide>();
    if (k.per_thread == t::shared_items_cas_alone) {
      if (fold) return fn(hist_shared_kernel<K, alone, Op, atomic, F, t::shared_block, true>);
      return fn(hist_shared_kernel<K, alone, Op, atomic, F>);
    }
    if (fold) return fn(hist_shared_kernel<K, contended, Op, atomic, F, t::shared_block, true>);
    if (k.wide > 0 && k.ahead) return fn(hist_shared_kernel<K, contended, Op, atomic, F, t::shared_block, false, wide, true>);
    if (k.wide > 0) return fn(hist_shared_kernel<K, contended, Op, atomic, F, t::shared_block, false, wide>);
    return fn(hist_shared_kernel<K, contended, Op, atomic, F>);
  } else {
    if (fold) return fn(hist_shared_kernel<K, standard, Op, atomic, F, t::shared_block, true>);
    if (k.ahead) return fn(hist_shared_kernel<K, standard, Op, atomic, F, t::shared_block, false, 0, true>);
    return fn(hist_shared_kernel<K, standard, Op, atomic, F>);
  }
}

template <atomic_kind K, class Op, class F>
constexpr auto global_kernel() {
  constexpr bool tolerant = model_contention_tolerance<Op>(K) > 0;
  return hist_global_kernel<K, hist_items<F, tolerant ? hist_tuning::global_items_per_thread_tolerant : hist_tuning::items_per_thread>(),
                            Op, update_mode::atomic, F>;
}

template <atomic_kind K, class Op, class F>
constexpr auto split_kernel() {
  return hist_split_kernel<K, K == atomic_kind::hdw ? hist_items<F>() : hist_items<F, hist_tuning::split_items_cas>(), Op, F>;
}

// The bucket kernel of a partitioned plan: elements per step per update (see hist_bucket_kernel).
template <atomic_kind K, class Op, class Fn>
void with_bucket_kernel(const hist_kernel& k, Fn&& fn) {
  if constexpr (K == atomic_kind::cas) {
    if (k.per_thread == hist_tuning::shared_items_cas_alone)
      return fn(hist_bucket_kernel<K, hist_tuning::shared_items_cas_alone, Op>);
    fn(hist_bucket_kernel<K, hist_tuning::shared_items_cas_contended, Op>);
  } else {
    fn(hist_bucket_kernel<K, hist_tuning::items_per_thread, Op>);
  }
}

// Any version of the kernels for kind K, operator Op and functor F.
template <atomic_kind K, class Op, class F, class Fn>
void with_kernel_of(const hist_kernel& k, Fn&& fn) {
  using family = hist_kernel::family;
  switch (k.fam) {
    case family::shared:
    case family::shared_fold: return with_shared_kernel<K, Op, F>(k, fn);
    case family::global: return fn(global_kernel<K, Op, F>());
    case family::split:
      if constexpr (K != atomic_kind::xcg) return fn(split_kernel<K, Op, F>());
      break;
    case family::bucket:
      if constexpr (K != atomic_kind::xcg) return with_bucket_kernel<K, Op>(k, fn);
      break;
    default: break;
  }
  throw usage_error("hist: no kernel version " + k.name() + " for atomic kind " + std::string(to_string(K)));
}

// The version k of a call of kind `kind` with functor F (Flat: hist_batched's flattened functor).
template <class Op, class F, class Flat, class Fn>
void with_kernel(atomic_kind kind, const hist_kernel& k, Fn&& fn) {
  if (k.counts) {
    if (k.flat) with_shared_kernel<atomic_kind::hdw, plus<unsigned>, bucket_counter<Flat>>(k, fn);
    else with_shared_kernel<atomic_kind::hdw, plus<unsigned>, bucket_counter<F>>(k, fn);
    return;
  }
  with_atomic_kind<Op>(kind, [&](auto kk) {
    constexpr atomic_kind K = decltype(kk)::value;
    if (k.flat) with_kernel_of<K, Op, Flat>(k, fn);
    else with_kernel_of<K, Op, F>(k, fn);
  });
}

// The planner's questions, answered by the GPU's occupancy queries (which also raise each
// kernel's shared memory limit for the shape it will run).
template <class Op, class F, class Flat = F>
hist_device cuda_device(atomic_kind kind) {
  hist_device d;
  d.resident_blocks = [kind](const hist_kernel& k, int threads, std::size_t bytes) {
    int per_sm = 0;
    with_kernel<Op, F, Flat>(kind, k, [&](auto kernel) { per_sm = resident_blocks(kernel, threads, bytes, "hist"); });
    return per_sm;
  };
  d.resident_clusters = [kind](const hist_kernel& k, int threads, std::size_t bytes, int cluster) {
    int clusters = 0;
    with_kernel<Op, F, Flat>(kind, k, [&](auto kernel) {
      if (k.fam == hist_kernel::family::split) allow_cluster_size(kernel, cluster);
      clusters = resident_clusters(kernel, threads, bytes, cluster);
    });
    return clusters;
  };
  d.free_bytes = [] {
    std::size_t free_bytes = 0, total = 0;
    SOAC_CUDA_CHECK(cudaMemGetInfo(&free_bytes, &total));
    return free_bytes;
  };
  return d;
}

template <class Op, class F>
hist_call cuda_call(atomic_kind kind, std::int64_t n, std::int64_t H) {
  hist_call c;
  c.n = n;
  c.bins = H;
  c.kind = kind;
  c.value_bytes = sizeof(typename Op::value_type);
  c.tolerance = contention_tolerance<Op>::value;
  c.per_element = updates_of<decltype(std::declval<F>()(std::int64_t{0}))>::count;
  return c;
}

// ---- Launches, one per strategy, each as the plan says.

// The shared strategy: `batches` histograms of seg_len elements (1: a single histogram, its
// passes side by side), one launch per group of passes.
template <atomic_kind K, class Op, class F>
void launch_shared(context& ctx, const hist_plan& plan, std::int64_t seg_len, std::int64_t batches, F f,
                   typename Op::value_type* histo, std::int64_t H) {
  using V = typename Op::value_type;
  hist_temp locks(ctx, K == atomic_kind::xcg ? std::size_t(batches * H) * 4 : 0);
  if (locks.p) SOAC_CUDA_CHECK(cudaMemsetAsync(locks.p, 0, std::size_t(batches * H) * 4, ctx.stream()));
  hist_temp partial_rows(ctx, std::size_t(plan.partial_rows * H) * sizeof(V));
  const std::int64_t per_hist = batches == 1 ? plan.grid : plan.blocks_per_histogram;
  const std::int64_t group = plan.side_by_side;
  const launch_config launch({plan.grid, plan.block_threads, plan.shared_bytes, plan.cluster}, ctx.stream());
  with_shared_kernel<K, Op, F>(plan.kernel, [&](auto kernel) {
    for (std::int64_t off = 0; off < H; off += group * plan.chunk) {
      SOAC_CUDA_CHECK(cudaLaunchKernelEx(&launch.config, kernel, seg_len, per_hist, f, histo, static_cast<int*>(locks.p), H, off,
                                         int(plan.chunk), plan.multi, int(group), plan.cluster, static_cast<V*>(partial_rows.p)));
    }
  });
  if (plan.partial_rows) reduce_rows<Op>(ctx, static_cast<const V*>(partial_rows.p), histo, H, plan.partial_rows);
}

// The global strategy: per pass, M sub-histograms filled with the identity, updated, folded into
// the destination (M = 1 updates the destination in place).
template <atomic_kind K, class Op, class F>
void launch_global(context& ctx, const hist_plan& plan, std::int64_t n, F f, typename Op::value_type* histo, std::int64_t H) {
  using V = typename Op::value_type;
  const auto kernel = global_kernel<K, Op, F>();
  const std::int64_t M = plan.multi, chunk = plan.chunk;
  hist_temp subs(ctx, M > 1 ? std::size_t(M * chunk) * sizeof(V) : 0);
  const std::int64_t lock_count = K == atomic_kind::xcg ? (M > 1 ? M * chunk : H) : 0;
  hist_temp locks(ctx, std::size_t(lock_count) * 4);
  if (locks.p) SOAC_CUDA_CHECK(cudaMemsetAsync(locks.p, 0, std::size_t(lock_count) * 4, ctx.stream()));
  const int fill_grid = int(std::min<std::int64_t>(ceil_div(M * chunk, 256), 4 * ctx.props().sm_count));
  for (std::int64_t off = 0; off < H; off += chunk) {
    const std::int64_t limit = std::min(chunk, H - off);
    V* target = M > 1 ? static_cast<V*>(subs.p) : histo + off;
    int* target_locks = locks.p ? static_cast<int*>(locks.p) + (M > 1 ? 0 : off) : nullptr;
    if (M > 1) {
      hist_fill_kernel<<<fill_grid, 256, 0, ctx.stream()>>>(target, M * chunk, Op::identity());
      SOAC_CHECK_LAUNCH("hist_fill_kernel");
    }
    kernel<<<unsigned(plan.grid), plan.block_threads, 0, ctx.stream()>>>(n, f, target, target_locks, H, off,
                                                                          M > 1 ? chunk : limit, int(M));
    SOAC_CHECK_LAUNCH("hist_global_kernel");
    if (M > 1) {
      const int grid = int(std::clamp<std::int64_t>(ceil_div(limit, 256), 1, 8 * ctx.props().sm_count));
      hist_reduce_kernel<Op><<<grid, 256, 0, ctx.stream()>>>(target, histo + off, limit, chunk, int(M));
      SOAC_CHECK_LAUNCH("hist_reduce_kernel");
    }
  }
}

// The split strategy: one wave of whole clusters, then (CAS) the cluster rows reduced.
template <atomic_kind K, class Op, class F>
void launch_split(context& ctx, const hist_plan& plan, std::int64_t n, F f, typename Op::value_type* histo, std::int64_t H) {
  using V = typename Op::value_type;
  if constexpr (K == atomic_kind::xcg) {
    throw usage_error("hist: split histograms take hardware or CAS atomics, not locks");
  } else {
    const auto kernel = split_kernel<K, Op, F>();
    allow_cluster_size(kernel, plan.split);
    hist_temp partial_rows(ctx, std::size_t(plan.partial_rows * H) * sizeof(V));
    const launch_config launch({plan.grid, plan.block_threads, plan.shared_bytes, plan.split}, ctx.stream());
    SOAC_CUDA_CHECK(cudaLaunchKernelEx(&launch.config, kernel, n, f, histo, H, unsigned(plan.chunk), static_cast<V*>(partial_rows.p)));
    if (plan.partial_rows) reduce_rows<Op>(ctx, static_cast<const V*>(partial_rows.p), histo, H, plan.partial_rows);
  }
}

// The partitioned strategy: count the updates of each bucket (a histogram planned with the rest),
// scan the counts, partition the updates, fold each block's part of them, reduce the rows.
template <atomic_kind K, class Op, class F>
void launch_partition(context& ctx, const hist_plan& plan, std::int64_t n, F f, typename Op::value_type* histo, std::int64_t H) {
  using V = typename Op::value_type;
  using U = updates_of<decltype(f(std::int64_t{0}))>;
  if constexpr (K == atomic_kind::xcg) {
    throw usage_error("hist: partitioned histograms take hardware or CAS atomics, not locks");
  } else {
    const int S = plan.passes;
    const fast_divisor chunk(unsigned(plan.chunk));
    const std::int64_t updates = n * U::count;
    // counts, offsets and cursors; then the bucketed bins and values.
    hist_temp small(ctx, std::size_t(3 * S + 1) * 4);
    auto* counts = static_cast<unsigned*>(small.p);
    unsigned *offsets = counts + S, *cursors = offsets + S + 1;
    SOAC_CUDA_CHECK(cudaMemsetAsync(counts, 0, std::size_t(S) * 4, ctx.stream()));
    launch_shared<atomic_kind::hdw, plus<unsigned>>(ctx, *plan.bucket_count, n, 1, bucket_counter<F>{f, H, chunk}, counts, S);
    hist_bucket_offsets_kernel<partition_block><<<1, partition_block, 0, ctx.stream()>>>(counts, S, offsets, cursors);
    SOAC_CHECK_LAUNCH("hist_bucket_offsets_kernel");
    const std::size_t bin_bytes = (std::size_t(updates) * 4 + 255) & ~std::size_t(255);
    hist_temp pairs(ctx, bin_bytes + std::size_t(updates) * sizeof(V));
    auto* bins = static_cast<unsigned*>(pairs.p);
    auto* values = reinterpret_cast<V*>(static_cast<unsigned char*>(pairs.p) + bin_bytes);
    constexpr int elems = partition_elements<F>();
    auto partition = hist_partition_kernel<Op, elems, F>;
    constexpr std::size_t storage_bytes = sizeof(partition_storage<V, partition_block * elems * U::count>);
    resident_blocks(partition, partition_block, storage_bytes, "hist");
    const std::int64_t tiles = ceil_div(n, std::int64_t(partition_block) * elems);
    partition<<<unsigned(tiles), partition_block, storage_bytes, ctx.stream()>>>(n, f, H, chunk, cursors, bins, values);
    SOAC_CHECK_LAUNCH("hist_partition_kernel");
    hist_temp rows(ctx, std::size_t(plan.partial_rows * plan.chunk) * sizeof(V));
    with_bucket_kernel<K, Op>(plan.kernel, [&](auto kernel) {
      kernel<<<unsigned(plan.grid), plan.block_threads, plan.shared_bytes, ctx.stream()>>>(
          bins, values, offsets, S, H, int(plan.chunk), plan.multi, static_cast<V*>(rows.p));
      SOAC_CHECK_LAUNCH("hist_bucket_kernel");
    });
    const int grid = int(std::clamp<std::int64_t>(ceil_div(H, 256), 1, 8 * ctx.props().sm_count));
    hist_bucket_rows_kernel<Op><<<grid, 256, 0, ctx.stream()>>>(static_cast<const V*>(rows.p), histo, H, int(plan.chunk), offsets,
                                                                S, plan.grid);
    SOAC_CHECK_LAUNCH("hist_bucket_rows_kernel");
  }
}

// A single histogram of n elements and H bins, as planned.
template <class Op, class F>
void launch_single(context& ctx, const hist_plan& plan, atomic_kind kind, std::int64_t n, F f, typename Op::value_type* histo,
                   std::int64_t H) {
  if (plan.kernel.fam == hist_kernel::family::none) return;  // nothing to do (n or H is 0)
  with_atomic_kind<Op>(kind, [&](auto k) {
    constexpr atomic_kind K = decltype(k)::value;
    if (plan.partitioned) launch_partition<K, Op>(ctx, plan, n, f, histo, H);
    else if (plan.split > 1) launch_split<K, Op>(ctx, plan, n, f, histo, H);
    else if (plan.strategy == hist_strategy::shared) launch_shared<K, Op>(ctx, plan, n, 1, f, histo, H);
    else launch_global<K, Op>(ctx, plan, n, f, histo, H);
  });
}

// A single histogram: plan (running the inspector if the global model needs RF), then launch.
template <class Op, class F>
hist_plan hist_cuda(context& ctx, const hist_options& options, atomic_kind kind, std::int64_t n, F f,
                    typename Op::value_type* histo, std::int64_t H) {
  ctx.activate();
  const hist_plan plan = plan_hist_launch(ctx.props(), cuda_device<Op, F>(kind), cuda_call<Op, F>(kind, n, H), options,
                                          [&] { return hist_inspect_cuda(ctx, n, f, H); });
  launch_single<Op>(ctx, plan, kind, n, f, histo, H);
  return plan;
}

// Batched: Nout histograms over segments of seg_len elements, with K blocks per histogram when one
// histogram fits shared memory in one pass; otherwise one flattened Nout*H histogram.
template <class Op, class F, class Flat>
hist_plan hist_batched_cuda(context& ctx, const hist_options& options, atomic_kind kind, std::int64_t batches,
                            std::int64_t seg_len, F f, Flat flat, typename Op::value_type* histo, std::int64_t H) {
  ctx.activate();
  hist_call call = cuda_call<Op, F>(kind, seg_len, H);
  call.batches = batches;
  const hist_plan plan = plan_hist_launch(ctx.props(), cuda_device<Op, F, Flat>(kind), call, options,
                                          [&] { return hist_inspect_cuda(ctx, batches * seg_len, flat, batches * H); });
  if (plan.flattened) {
    launch_single<Op>(ctx, plan, kind, batches * seg_len, flat, histo, batches * H);
  } else if (plan.kernel.fam != hist_kernel::family::none) {
    with_atomic_kind<Op>(kind, [&](auto k) { launch_shared<decltype(k)::value, Op>(ctx, plan, seg_len, batches, f, histo, H); });
  }
  return plan;
}

}  // namespace soac::detail
