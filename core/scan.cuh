// soac::scan and soac::segscan: prefix sums under any associative operator (look-back thesis,
// sections 2.3-3.3).
//
//   scan(ctx, n, f, out, op [, kind]);                  // out[i] = f(0) + ... + f(i)
//   segscan(ctx, n, f, flags, out, op [, kind]);        // restarts wherever flags(i) is true
//   segscan_offsets(ctx, n, f, starts, out, op [, kind]); // restarts at each index in `starts`
//
// f(i) gives element i (a __host__ __device__ functor, so no input array need exist; wrap an
// array with soac::from_array; uint8 flag arrays wrapped so are read 16 bytes at a time).
// flags(i) is true where a segment starts; element 0 always
// starts one. `op` follows core/operators.hpp (value_type, identity(), operator()); it must be
// associative, commutativity is not assumed: elements are always combined in index order.
// kind: inclusive (default) or exclusive; exclusive output is op's identity at every segment
// start. `out` (at least n elements, in the backend's memory) may be the array f reads from,
// as long as f(i) reads only index i.
//
// The cuda backend is one single-pass kernel with decoupled look-back and dynamic tile ids; a
// tile with a segment start publishes its inclusive prefix at once, so look-back never crosses
// it. Calls are asynchronous on cuda (queued on ctx.stream()) and return the plan used.
#pragma once

#include <cstdint>
#include <type_traits>

#include "core/buffer.hpp"
#include "core/context.hpp"
#include "core/error.hpp"
#include "core/scan/cuda.cuh"
#include "core/scan/host.hpp"
#include "core/scan/input.hpp"
#include "core/scan/strategy.hpp"
#include "core/scatter.cuh"

namespace soac {

namespace detail {

template <bool Seg, class F, class G, class Op>
scan_plan run_scan(context& ctx, std::int64_t n, F f, G flags, span<typename Op::value_type> out, Op op,
                   scan_kind kind, const char* who) {
  using T = typename Op::value_type;
  static_assert(std::is_invocable_v<F, std::int64_t>, "the scan functor must be callable as f(std::int64_t)");
  static_assert(std::is_convertible_v<std::invoke_result_t<F, std::int64_t>, T>,
                "f(i) must convert to the operator's value_type");
  static_assert(std::is_trivially_copyable_v<T>, "scan values must be trivially copyable");
  if (n < 0) throw usage_error(std::string(who) + ": n must not be negative");
  if (out.size() < static_cast<std::size_t>(n))
    throw usage_error(std::string(who) + ": the output holds " + std::to_string(out.size()) + " elements, n is " +
                      std::to_string(n));
  scan_plan plan;
  plan.kind = kind;
  plan.segmented = Seg;
  plan.host = !ctx.is_cuda();
  if (n == 0) return plan;
  if (ctx.is_cuda()) {
    scan_cuda<Seg>(ctx, plan, n, f, flags, out.data(), op);
  } else if (kind == scan_kind::inclusive) {
    scan_host<Seg, true>(n, f, flags, out.data(), op);
  } else {
    scan_host<Seg, false>(n, f, flags, out.data(), op);
  }
  return plan;
}

}  // namespace detail

template <class F, class Op>
scan_plan scan(context& ctx, std::int64_t n, F f, span<typename Op::value_type> out, Op op,
               scan_kind kind = scan_kind::inclusive) {
  return detail::run_scan<false>(ctx, n, f, detail::no_flags{}, out, op, kind, "scan");
}

template <class F, class G, class Op>
scan_plan segscan(context& ctx, std::int64_t n, F f, G flags, span<typename Op::value_type> out, Op op,
                  scan_kind kind = scan_kind::inclusive) {
  static_assert(std::is_invocable_v<G, std::int64_t>, "the flag functor must be callable as flags(std::int64_t)");
  return detail::run_scan<true>(ctx, n, f, flags, out, op, kind, "segscan");
}

// Segments given by their start indices (any order; duplicates and indices outside [0, n) are
// ignored, so CSR offsets including the final n work as they are). The starts are scattered
// into a temporary flag array (soac::scatter), then segscan runs over it: n extra bytes each
// way, against 4 bytes per start for a binary search per element.
template <class F, class I, class Op>
scan_plan segscan_offsets(context& ctx, std::int64_t n, F f, span<const I> starts, span<typename Op::value_type> out,
                          Op op, scan_kind kind = scan_kind::inclusive) {
  static_assert(std::is_integral_v<I>, "segment starts must be integers");
  if (n < 0) throw usage_error("segscan_offsets: n must not be negative");
  buffer<unsigned char> flags(ctx, static_cast<std::size_t>(n), lifetime::temporary);
  if (n > 0) {
    if (ctx.is_cuda()) SOAC_CUDA_CHECK(cudaMemsetAsync(flags.data(), 0, std::size_t(n), ctx.stream()));
    else std::fill(flags.data(), flags.data() + n, 0);
  }
  const I* s = starts.data();
  scatter(ctx, static_cast<std::int64_t>(starts.size()),
          [=] SOAC_HD(std::int64_t k) { return write_at<I, unsigned char>{s[k], 1}; }, flags);
  const unsigned char* fl = flags.data();
  // The temporary is released after queueing; the caching allocator orders reuse on the stream.
  return segscan(ctx, n, f, array_reader<unsigned char>{fl}, out, op, kind);
}

}  // namespace soac
