// What stands on scan + scatter (write-construct report, section 2): filter (stream
// compaction), stable partition, and LSD radix sort.
//
//   std::int64_t filter(ctx, n, f, pred, out);     // out = [f(i) for i in [0, n) if pred(i)], in order
//   std::int64_t partition(ctx, n, f, pred, out);  // out = selected then rejected, both in order
//   radix_sort(ctx, keys [, values] [, options]);  // stable, ascending, in place
//
// f and pred are __host__ __device__ functors of std::int64_t (wrap arrays with
// soac::from_array). filter and partition return the number selected, which synchronises the
// stream. filter's `out` needs room for every selected element (more are dropped and reported
// as usage_error); partition's needs n.
//
// radix_sort keys: uint32, int32 or float; values: any 4- or 8-byte trivially copyable type,
// moved with their keys, stable. Float order (see core/sort/keys.hpp): -NaN < -inf < ... <
// -0.0 < +0.0 < ... < +inf < +NaN. Algorithms:
//  - digits (default): 8-bit digits, 4 passes. Below 2^30 keys, one-sweep: one read counts
//    every pass's digits, then each pass is one rank-and-scatter kernel whose tiles find their
//    offsets by decoupled look-back. From 2^30 keys, and always with digits_per_pass: each
//    pass is a per-tile digit histogram, soac::scan of the counts, and a rank-and-scatter.
//  - one_bit: the report's Fig 4, 32 passes of exactly soac::scan + soac::scatter (kept to show
//    where the write-based formulation stands).
#pragma once

#include <algorithm>
#include <cstdint>
#include <limits>
#include <sstream>
#include <string>
#include <type_traits>

#include "core/buffer.hpp"
#include "core/context.hpp"
#include "core/error.hpp"
#include "core/operators.hpp"
#include "core/scan.cuh"
#include "core/scatter.cuh"
#include "core/sort/cuda.cuh"
#include "core/sort/host.hpp"
#include "core/sort/keys.hpp"

namespace soac {

namespace detail {

// Exclusive count of selected elements before each i, as uint32 (checked: n < 2^32).
template <class P>
buffer<std::uint32_t> selection_offsets(context& ctx, std::int64_t n, P pred, const char* who) {
  if (n < 0) throw usage_error(std::string(who) + ": n must not be negative");
  if (n > std::int64_t{std::numeric_limits<std::uint32_t>::max()})
    throw usage_error(std::string(who) + ": n must be below 2^32");
  buffer<std::uint32_t> offsets(ctx, static_cast<std::size_t>(n), lifetime::temporary);
  scan(ctx, n, [=] SOAC_HD(std::int64_t i) { return std::uint32_t(pred(i) ? 1 : 0); }, offsets.view(),
       plus<std::uint32_t>{}, scan_kind::exclusive);
  return offsets;
}

// offsets[n-1] + pred(n-1), read back to the host.
template <class P>
std::int64_t selected_count(context& ctx, std::int64_t n, P pred, const buffer<std::uint32_t>& offsets) {
  if (n == 0) return 0;
  buffer<std::uint32_t> total(ctx, 1, lifetime::temporary);
  const std::uint32_t* off = offsets.data();
  scatter(ctx, 1, [=] SOAC_HD(std::int64_t) { return write_at<int, std::uint32_t>{0, off[n - 1] + (pred(n - 1) ? 1u : 0u)}; },
          total);
  return total.to_vector()[0];
}

}  // namespace detail

template <class F, class P, class T>
std::int64_t filter(context& ctx, std::int64_t n, F f, P pred, span<T> out) {
  const auto offsets = detail::selection_offsets(ctx, n, pred, "filter");
  const std::uint32_t* off = offsets.data();
  scatter(ctx, n, [=] SOAC_HD(std::int64_t i) {
    return write_at<std::int64_t, T>{pred(i) ? std::int64_t(off[i]) : -1, static_cast<T>(f(i))};
  }, out);
  const std::int64_t count = detail::selected_count(ctx, n, pred, offsets);
  if (count > static_cast<std::int64_t>(out.size()))
    throw usage_error("filter: " + std::to_string(count) + " elements were selected but the output holds " +
                      std::to_string(out.size()));
  return count;
}

template <class F, class P, class T>
std::int64_t partition(context& ctx, std::int64_t n, F f, P pred, span<T> out) {
  if (n >= 0 && out.size() < static_cast<std::size_t>(n))
    throw usage_error("partition: the output holds " + std::to_string(out.size()) + " elements, n is " + std::to_string(n));
  const auto offsets = detail::selection_offsets(ctx, n, pred, "partition");
  const std::uint32_t* off = offsets.data();
  scatter(ctx, n, [=] SOAC_HD(std::int64_t i) {
    // Selected: before all rejected. Rejected element i follows the i - off[i] rejected before it.
    const std::int64_t selected = std::int64_t(off[n - 1]) + (pred(n - 1) ? 1 : 0);
    const std::int64_t to = pred(i) ? std::int64_t(off[i]) : selected + i - std::int64_t(off[i]);
    return write_at<std::int64_t, T>{to, static_cast<T>(f(i))};
  }, out);
  return detail::selected_count(ctx, n, pred, offsets);
}

enum class radix_algorithm { digits, digits_per_pass, one_bit };

struct radix_sort_options {
  radix_algorithm algorithm = radix_algorithm::digits;
};

struct sort_plan {
  radix_algorithm algorithm = radix_algorithm::digits;
  bool host = false;
  bool one_sweep = false;
  int passes = 0;
  std::int64_t tiles = 0;
  int tile_items = 0;
  std::string describe() const {
    std::ostringstream s;
    if (algorithm == radix_algorithm::one_bit) {
      s << "1-bit write-based (report Fig 4): " << passes << " passes of soac::scan + soac::scatter";
    } else if (host) {
      s << sort_tuning::radix_bits << "-bit digits, " << passes << " passes, host OpenMP";
    } else if (one_sweep) {
      s << sort_tuning::radix_bits << "-bit digits, one-sweep: one histogram read of all " << passes
        << " digits, then per pass one rank/scatter with decoupled look-back (" << tiles << " tiles of " << tile_items << ")";
    } else {
      s << sort_tuning::radix_bits << "-bit digits, " << passes << " passes of tile histogram + soac::scan + rank/scatter ("
        << tiles << " tiles of " << tile_items << ")";
    }
    return s.str();
  }
};

namespace detail {

struct no_values {};

template <int Items, class K, class V, bool HasValues>
sort_plan radix_sort_digits_cuda(context& ctx, std::int64_t n, K* keys, V* values, sort_plan plan) {
  constexpr int block = sort_tuning::block_threads;
  const std::int64_t tiles = ceil_div(n, std::int64_t{block} * Items);
  plan.tiles = tiles;
  plan.tile_items = block * Items;
  buffer<K> alt_keys(ctx, std::size_t(n), lifetime::temporary);
  buffer<V> alt_values(ctx, HasValues ? std::size_t(n) : 0, lifetime::temporary);
  buffer<std::uint32_t> counts(ctx, std::size_t(tiles * radix_digits), lifetime::temporary);
  K* src = keys;
  K* dst = alt_keys.data();
  V* vsrc = values;
  V* vdst = alt_values.data();
  ctx.activate();
  for (int shift = 0; shift < 32; shift += sort_tuning::radix_bits) {
    radix_histogram_kernel<K, block, Items><<<unsigned(tiles), block, 0, ctx.stream()>>>(src, n, shift, counts.data(), tiles);
    SOAC_CHECK_LAUNCH("radix_histogram_kernel");
    // Digit-major exclusive scan: where each (digit, tile) run starts in the output. In place.
    scan(ctx, tiles * radix_digits, from_array(counts), counts.view(), plus<std::uint32_t>{}, scan_kind::exclusive);
    radix_scatter_kernel<K, V, HasValues, block, Items>
        <<<unsigned(tiles), block, 0, ctx.stream()>>>(src, dst, vsrc, vdst, n, shift, counts.data(), tiles);
    SOAC_CHECK_LAUNCH("radix_scatter_kernel");
    std::swap(src, dst);
    std::swap(vsrc, vdst);
  }
  return plan;
}

// One-sweep (see core/sort/cuda.cuh); n < 2^30, so that every count fits its status word.
template <int Block, int Items, class K, class V, bool HasValues>
sort_plan radix_sort_onesweep_cuda(context& ctx, std::int64_t n, K* keys, V* values, sort_plan plan) {
  constexpr int block = Block;
  const std::int64_t tiles = ceil_div(n, std::int64_t{block} * Items);
  plan.one_sweep = true;
  plan.tiles = tiles;
  plan.tile_items = block * Items;
  buffer<K> alt_keys(ctx, std::size_t(n), lifetime::temporary);
  buffer<V> alt_values(ctx, HasValues ? std::size_t(n) : 0, lifetime::temporary);
  // Every pass's digit totals, then one tile counter per pass.
  constexpr int totals_words = radix_passes * radix_digits;
  buffer<std::uint32_t> totals(ctx, totals_words + radix_passes, lifetime::temporary);
  buffer<std::uint32_t> status(ctx, std::size_t(tiles * radix_digits), lifetime::temporary);
  ctx.activate();
  SOAC_CUDA_CHECK(cudaMemsetAsync(totals.data(), 0, totals.size() * 4, ctx.stream()));
  const int histogram_grid =
      int(std::min<std::int64_t>(ceil_div(n, std::int64_t{block} * 16), std::int64_t{8} * ctx.props().sm_count));
  radix_all_digits_histogram_kernel<K, block><<<histogram_grid, block, 0, ctx.stream()>>>(keys, n, totals.data());
  SOAC_CHECK_LAUNCH("radix_all_digits_histogram_kernel");
  K* src = keys;
  K* dst = alt_keys.data();
  V* vsrc = values;
  V* vdst = alt_values.data();
  for (int pass = 0; pass < radix_passes; ++pass) {
    SOAC_CUDA_CHECK(cudaMemsetAsync(status.data(), 0, status.size() * 4, ctx.stream()));
    radix_onesweep_kernel<K, V, HasValues, block, Items><<<unsigned(tiles), block, 0, ctx.stream()>>>(
        src, dst, vsrc, vdst, n, pass * sort_tuning::radix_bits, totals.data() + pass * radix_digits, status.data(),
        totals.data() + totals_words + pass);
    SOAC_CHECK_LAUNCH("radix_onesweep_kernel");
    std::swap(src, dst);
    std::swap(vsrc, vdst);
  }
  return plan;
}

template <class K, class V, bool HasValues>
sort_plan radix_sort_digits(context& ctx, std::int64_t n, K* keys, V* values, bool per_pass) {
  sort_plan plan;
  plan.passes = radix_passes;
  plan.host = !ctx.is_cuda();
  if (!ctx.is_cuda()) {
    buffer<K> alt_keys(ctx, std::size_t(n), lifetime::temporary);
    buffer<V> alt_values(ctx, HasValues ? std::size_t(n) : 0, lifetime::temporary);
    radix_sort_host<K, V, HasValues>(n, keys, values, alt_keys.data(), alt_values.data());
    return plan;
  }
  constexpr int items = sort_tuning::items_per_thread;
  if (!per_pass && n <= std::int64_t{radix_status_count})
    return radix_sort_onesweep_cuda<sort_tuning::onesweep_block_threads,
                                     sort_tuning::onesweep_items(HasValues ? int(sizeof(V)) : 0), K, V, HasValues>(
        ctx, n, keys, values, plan);
  return radix_sort_digits_cuda<items, K, V, HasValues>(ctx, n, keys, values, plan);
}

// The report's Fig 4: per bit, an exclusive scan of "bit is 0" gives each zero its place; ones
// follow all zeros in order. Exactly soac::scan + soac::scatter.
template <class K, class V, bool HasValues>
sort_plan radix_sort_one_bit(context& ctx, std::int64_t n, K* keys, V* values) {
  sort_plan plan;
  plan.algorithm = radix_algorithm::one_bit;
  plan.passes = 32;
  plan.host = !ctx.is_cuda();
  buffer<K> alt_keys(ctx, std::size_t(n), lifetime::temporary);
  buffer<V> alt_values(ctx, HasValues ? std::size_t(n) : 0, lifetime::temporary);
  buffer<std::uint32_t> zeros(ctx, std::size_t(n), lifetime::temporary);
  K* src = keys;
  K* dst = alt_keys.data();
  V* vsrc = values;
  V* vdst = alt_values.data();
  const std::uint32_t* zb = zeros.data();
  for (int bit = 0; bit < 32; ++bit) {
    const K* s = src;
    const V* vs = vsrc;
    scan(ctx, n, [=] SOAC_HD(std::int64_t i) { return std::uint32_t(((encoded_bits(s[i]) >> bit) & 1u) ^ 1u); },
         zeros.view(), plus<std::uint32_t>{}, scan_kind::exclusive);
    auto place = [=] SOAC_HD(std::int64_t i) {
      const std::int64_t total_zeros = std::int64_t(zb[n - 1]) + (((encoded_bits(s[n - 1]) >> bit) & 1u) ^ 1u);
      const bool one = (encoded_bits(s[i]) >> bit) & 1u;
      return one ? total_zeros + i - std::int64_t(zb[i]) : std::int64_t(zb[i]);
    };
    if constexpr (HasValues) {
      scatter(ctx, n, [=] SOAC_HD(std::int64_t i) {
        const std::int64_t to = place(i);
        return writes(write_at<std::int64_t, K>{to, s[i]}, write_at<std::int64_t, V>{to, vs[i]});
      }, span<K>(dst, std::size_t(n)), span<V>(vdst, std::size_t(n)));
    } else {
      scatter(ctx, n, [=] SOAC_HD(std::int64_t i) { return write_at<std::int64_t, K>{place(i), s[i]}; },
              span<K>(dst, std::size_t(n)));
    }
    std::swap(src, dst);
    std::swap(vsrc, vdst);
  }
  return plan;
}

template <class K, class V, bool HasValues>
sort_plan radix_sort_any(context& ctx, span<K> keys, V* values, const radix_sort_options& options) {
  static_assert(is_radix_key_v<K>, "radix_sort supports uint32, int32 and float keys");
  static_assert(!HasValues || ((sizeof(V) == 4 || sizeof(V) == 8) && std::is_trivially_copyable_v<V>),
                "radix_sort values must be 4- or 8-byte trivially copyable types");
  const auto n = static_cast<std::int64_t>(keys.size());
  if (n > std::int64_t{std::numeric_limits<std::uint32_t>::max()})
    throw usage_error("radix_sort: at most 2^32 - 1 keys");
  sort_plan plan;
  plan.algorithm = options.algorithm;
  plan.host = !ctx.is_cuda();
  if (n <= 1) return plan;
  if (options.algorithm == radix_algorithm::one_bit) return radix_sort_one_bit<K, V, HasValues>(ctx, n, keys.data(), values);
  return radix_sort_digits<K, V, HasValues>(ctx, n, keys.data(), values,
                                            options.algorithm == radix_algorithm::digits_per_pass);
}

}  // namespace detail

template <class K>
sort_plan radix_sort(context& ctx, span<K> keys, const radix_sort_options& options = {}) {
  return detail::radix_sort_any<K, std::uint32_t, false>(ctx, keys, nullptr, options);
}

template <class K, class V>
sort_plan radix_sort(context& ctx, span<K> keys, span<V> values, const radix_sort_options& options = {}) {
  if (values.size() != keys.size())
    throw usage_error("radix_sort: " + std::to_string(keys.size()) + " keys but " + std::to_string(values.size()) +
                      " values");
  return detail::radix_sort_any<K, V, true>(ctx, keys, values.data(), options);
}

}  // namespace soac
