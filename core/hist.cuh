// soac::hist, generalized histograms (SC20 paper, sections III-IV).
//
//   hist_plan p = soac::hist(ctx, options, n, f, histo, op);
//
// For every i in [0, n), f(i) returns soac::bin_value<V>{bin, value}, or soac::bin_values<V, K>
// (K updates per element, e.g. 4 per 32-bit word of a byte histogram); for every update with
// 0 <= bin < H = histo.size(), histo[bin] = op(histo[bin], value). Other bins are ignored. histo
// is read and updated, so fill it with Op::identity() for a fresh histogram, or keep a previous
// result to accumulate. Op is an operator type (core/operators.hpp) that must be associative and
// commutative (Op::commutative == true): the order of updates is unspecified, so float sums may
// differ from a sequential sum in the last bits.
//
// The atomic used follows from the operator (soac::hist_atomic<Op>, core/hist/update.hpp):
// hardware atomics, CAS, or a lock per bin; soac::elementwise<Op, D> gives vector bins updated
// element by element. The strategy (shared or global memory), M and S follow from the models of
// core/hist/plan.hpp unless hist_options forces them; the returned plan says what ran.
//
//   // A byte histogram, 4 updates per 32-bit word, counted in int32 bins:
//   soac::hist(ctx, n_words, [=] __host__ __device__ (std::int64_t i) {
//     soac::bin_values<int, 4> r;
//     for (int k = 0; k < 4; ++k) r[k] = {(words[i] >> (8 * k)) & 255, 1};
//     return r;
//   }, counts, soac::plus<int>{});
//
// Batched histograms (section IV-C): hist_batched(ctx, options, Nout, seg_len, f, histos, H, op)
// computes Nout histograms of H bins; histogram h takes the updates of elements
// [h * seg_len, (h + 1) * seg_len) and lives at histos[h * H, (h + 1) * H).
//
// Horizontal fusion: hist_fused(ctx, options, n, f, histo_a, op_a, histo_b, op_b) where f(i)
// returns soac::fused_updates{ra, rb} computes two histograms (other operators and value types
// allowed, e.g. k-means counts and vector sums) in one pass over the input.
//
// Destinations are soac::buffer<V> or soac::span<V> in the backend's memory. Calls are
// asynchronous on cuda (ctx.stream()), except that the RF inspector of the global strategy waits
// for its own small result.
#pragma once

#include <cstdint>
#include <type_traits>

#include "core/buffer.hpp"
#include "core/context.hpp"
#include "core/error.hpp"
#include "core/hist/dispatch.cuh"
#include "core/hist/fused.cuh"
#include "core/hist/host.hpp"
#include "core/hist/plan.hpp"
#include "core/hist/update.hpp"

namespace soac {

namespace detail {
template <class Op, class F>
atomic_kind check_hist_call(const hist_options& options) {
  static_assert(is_commutative_v<Op>, "hist needs a commutative operator (Op::commutative = true)");
  static_assert(std::is_invocable_v<F, std::int64_t>, "the hist functor must be callable as f(std::int64_t)");
  using R = std::remove_cv_t<std::remove_reference_t<std::invoke_result_t<F, std::int64_t>>>;
  static_assert(std::is_convertible_v<typename updates_of<R>::value_type, typename Op::value_type>,
                "the functor's values must convert to the operator's value type");
  check_hist_options(options);
  if (!options.force_atomic) return hist_atomic<Op>::kind;
  if (!atomic_allowed<Op>(options.atomic))
    throw usage_error("hist: atomic kind " + std::string(to_string(options.atomic)) + " cannot update this operator's values");
  return options.atomic;
}

// Batched on the host / flattened: element i of segment h updates bin h * H + bin.
template <class F>
struct batched_to_flat {
  F f;
  std::int64_t seg_len, H;
  SOAC_HD auto operator()(std::int64_t i) const {
    auto r = f(i);
    using U = updates_of<decltype(r)>;
    const std::int64_t base = (i / seg_len) * H;
    if constexpr (U::count == 1) {
      r.bin = r.bin >= 0 && r.bin < H ? base + r.bin : -1;
    } else {
      for (int k = 0; k < U::count; ++k) r.u[k].bin = r.u[k].bin >= 0 && r.u[k].bin < H ? base + r.u[k].bin : -1;
    }
    return r;
  }
};
}  // namespace detail

template <class Op, class F>
hist_plan hist(context& ctx, const hist_options& options, std::int64_t n, F f, span<typename Op::value_type> histo, Op = {}) {
  const atomic_kind kind = detail::check_hist_call<Op, F>(options);
  if (n < 0) throw usage_error("hist: n must not be negative");
  const auto H = static_cast<std::int64_t>(histo.size());
  if (ctx.is_cuda()) return detail::hist_cuda<Op>(ctx, options, kind, n, f, histo.data(), H);
  hist_plan plan;
  plan.host = true;
  plan.atomic = kind;
  plan.n = n;
  plan.bins = H;
  plan.host_threads = detail::hist_host<Op>(n, f, histo.data(), H);
  return plan;
}

template <class Op, class F>
hist_plan hist(context& ctx, std::int64_t n, F f, span<typename Op::value_type> histo, Op op = {}) {
  return hist(ctx, hist_options{}, n, f, histo, op);
}

template <class Op, class F>
hist_plan hist_batched(context& ctx, const hist_options& options, std::int64_t batches, std::int64_t seg_len, F f,
                       span<typename Op::value_type> histos, std::int64_t H, Op = {}) {
  const atomic_kind kind = detail::check_hist_call<Op, F>(options);
  if (batches < 0 || seg_len < 0 || H < 0) throw usage_error("hist_batched: sizes must not be negative");
  if (static_cast<std::int64_t>(histos.size()) != batches * H)
    throw usage_error("hist_batched: the destination has " + std::to_string(histos.size()) + " elements, expected Nout * H = " +
                      std::to_string(batches * H));
  const detail::batched_to_flat<F> flat{f, seg_len, H};
  if (ctx.is_cuda()) return detail::hist_batched_cuda<Op>(ctx, options, kind, batches, seg_len, f, flat, histos.data(), H);
  hist_plan plan;
  plan.host = true;
  plan.atomic = kind;
  plan.n = batches * seg_len;
  plan.bins = H;
  plan.batches = batches;
  plan.host_threads = detail::hist_host<Op>(batches * seg_len, flat, histos.data(), batches * H);
  return plan;
}

}  // namespace soac
