// soac::scatter, the write construct (write-construct report, sections 1-3).
//
//   scatter(ctx, n, f, dest_0, ..., dest_{t-1});
//
// For every i in [0, n), f(i) returns the writes of element i: a soac::write_at{index, value} when
// there is one destination, or soac::writes(w_0, ..., w_{t-1}) for t destinations, the
// k-th going to dest_k. Destinations may differ in length and element type; a value is converted
// to its destination's element type. An index outside [0, dest_k.size()) is ignored, so a
// negative index is the idiomatic "skip".
//
// Duplicate indices: when several writes target the same element of one destination, which of
// them lands is unspecified (it may differ between backends and runs); callers that need a
// deterministic result must keep indices distinct.
//
// f is a __host__ __device__ functor, so no index or value array needs to exist: compute them
// from i (the report's map-write fusion), or ignore i (replicate elimination), e.g.
//
//   soac::scatter(ctx, k, [=] __host__ __device__ (std::int64_t i) {
//     return soac::write_at{idx[i], 2 * val[i]};   // fused map
//   }, dest);
//
// Destinations are soac::buffer<T> or soac::span<T> in the backend's memory. The call is
// asynchronous on the cuda backend (queued on ctx.stream()) and returns the plan it used.
#pragma once

#include <cstdint>
#include <type_traits>

#include "core/buffer.hpp"
#include "core/context.hpp"
#include "core/scatter/cuda.cuh"
#include "core/scatter/host.hpp"
#include "core/scatter/strategy.hpp"
#include "core/scatter/write.hpp"

namespace soac {

namespace detail {
template <class T>
span<T> as_span(const buffer<T>& b) { return b.view(); }
template <class T>
span<T> as_span(span<T> s) { return s; }

template <class T>
struct constant_write {
  T value;
  SOAC_HD write_at<std::int64_t, T> operator()(std::int64_t i) const { return {i, value}; }
};
}  // namespace detail

template <class F, class... Dest>
scatter_plan scatter(context& ctx, const scatter_options& options, std::int64_t n, F f, Dest&&... dest) {
  static_assert(sizeof...(Dest) >= 1, "scatter needs at least one destination array");
  static_assert(std::is_invocable_v<F, std::int64_t>, "the scatter functor must be callable as f(std::int64_t)");
  if (n < 0) throw usage_error("scatter: n must not be negative");
  scatter_plan plan = plan_scatter(n, options);
  plan.host = !ctx.is_cuda();
  if (n == 0) return plan;
  if (ctx.is_cuda()) detail::scatter_cuda(ctx, plan, n, f, detail::as_span(dest)...);
  else detail::scatter_host(n, f, detail::as_span(dest)...);
  return plan;
}

template <class F, class... Dest>
scatter_plan scatter(context& ctx, std::int64_t n, F f, Dest&&... dest) {
  return scatter(ctx, scatter_options{}, n, f, std::forward<Dest>(dest)...);
}

// Every element of dest set to value (asynchronous on cuda, like scatter).
template <class T, class Dest>
void fill(context& ctx, Dest&& dest, const T& value) {
  const span<T> out = detail::as_span(dest);
  scatter(ctx, std::int64_t(out.size()), detail::constant_write<T>{value}, out);
}

}  // namespace soac
