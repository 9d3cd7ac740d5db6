// soac::segreduce, regular segmented reduction (FHPC17 sections 2-3).
//
//   segreduce(ctx, m, n, f, out, op [, options]);
//
// For every segment s in [0, m), out[s] = f(s, 0) op f(s, 1) op ... op f(s, n - 1), and
// Op::identity() when n = 0. f is a __host__ __device__ functor returning the element (anything
// convertible to Op::value_type), so the input may be an array (f = a[s * n + j]), a transposed
// view (a[j * m + s]), or computed with no array at all (Black-Scholes: from s and j alone).
// op follows core/operators.hpp: associative with a two-sided identity. Commutative operators
// (Op::commutative) may be combined in any order; all others are combined in index order
// within each segment, so e.g. the maximum subarray sum (soac::max_subarray) is exact.
//
// The strategy (sequential / large / small segments, see core/segreduce/strategy.hpp) is chosen
// at run time from m, n and the device; options.strategy forces one. The returned plan says what
// ran. out is a soac::span (or buffer) in the backend's memory with at least m elements. On cuda
// the call is asynchronous (queued on ctx.stream()).
//
//   soac::segreduce(ctx, m, n, [=] __host__ __device__ (std::int64_t s, std::int64_t j) {
//     return a[s * n + j];
//   }, out.view(), soac::plus<int>{});
#pragma once

#include <cstdint>
#include <type_traits>

#include "core/buffer.hpp"
#include "core/context.hpp"
#include "core/error.hpp"
#include "core/segreduce/cuda.cuh"
#include "core/segreduce/host.hpp"
#include "core/segreduce/operators.hpp"
#include "core/segreduce/strategy.hpp"

namespace soac {

template <class Op, class F>
segreduce_plan segreduce(context& ctx, std::int64_t m, std::int64_t n, F f, span<typename Op::value_type> out, Op op,
                         const segreduce_options& options = {}) {
  using T = typename Op::value_type;
  static_assert(std::is_invocable_v<F, std::int64_t, std::int64_t>,
                "the segreduce functor must be callable as f(std::int64_t segment, std::int64_t j)");
  static_assert(std::is_convertible_v<std::invoke_result_t<F, std::int64_t, std::int64_t>, T>,
                "f(segment, j) must return something convertible to Op::value_type");
  if (m < 0 || n < 0)
    throw usage_error("segreduce: m and n must not be negative (m = " + std::to_string(m) + ", n = " +
                      std::to_string(n) + ")");
  if (static_cast<std::uint64_t>(out.size()) < static_cast<std::uint64_t>(m))
    throw usage_error("segreduce: the output holds " + std::to_string(out.size()) + " elements, but m = " +
                      std::to_string(m));
  segreduce_plan plan = plan_segreduce(ctx.props(), m, n, sizeof(T), options, is_commutative_v<Op>, declares_compute_bound<F>,
                                        ctx.is_cuda() ? detail::segreduce_ordered_resident<Op, F>(ctx) : 0);
  if (m == 0) return plan;
  if (ctx.is_cuda()) {
    detail::segreduce_cuda<Op>(ctx, plan, m, n, f, out.data(), op);
  } else {
    plan.host = true;
    plan.reason = detail::segreduce_host<Op>(ctx.props().host_threads, m, n, f, out.data(), op);
  }
  return plan;
}

}  // namespace soac
