// hist, hist_batched and segreduce over the ranks of a soac::multi_context (several GPUs, or
// simulated ranks on host): the input is split into contiguous shards, every rank runs the
// single-context primitive on its shard (global indexes: the functor sees the same i as on one
// context), and the ranks' partial results are combined through the context's collectives.
//
//   std::vector<soac::span<int>> histos = ...;          // one H-bin destination per rank, in its memory
//   soac::multi_hist(mc, {}, n, [&](const soac::shard& s) {
//     return my_functor{data_on_rank[s.rank], s.begin};   // f(i) for global i in [s.begin, s.end)
//   }, histos, soac::plus<int>{});
//
// make_f(shard) gives the functor of one rank: its shard says which part of the input the rank
// reads, so each rank's functor can read that rank's own copy of its part (f(i) is called with
// global indexes in [shard.begin, shard.end) only). Shards are blocks of ceil(n / R) items, the
// last one shorter, and empty ones past the end when R exceeds n.
//
// Combining: operators that the collectives reduce natively (plus, minimum, maximum of 8-, 32-
// and 64-bit integers, float and double: native_reduction_v) are all-reduced (NCCL's own sum
// order on cuda: float sums may differ from one context's in the last bits); any other operator
// (arg_max, saturating add, elementwise vectors, non-commutative ones) is all-gathered into an
// R x count array on every rank and folded in rank order with the core's segreduce, so
// non-commutative operators are combined in index order. The result lands on every rank, or with
// result_placement::root on options.root alone (the other ranks' destinations are then left
// unspecified). Calls are asynchronous on cuda like the single-context primitives.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "core/buffer.hpp"
#include "core/hist.cuh"
#include "core/multi/multi_context.hpp"
#include "core/scatter.cuh"
#include "core/segreduce.cuh"

namespace soac {

// Items [begin, end) of rank `rank`.
struct shard {
  int rank = 0;
  std::int64_t begin = 0, end = 0;
  std::int64_t size() const noexcept { return end - begin; }
};

// The block size of n items over `ranks`: ceil(n / ranks).
inline std::int64_t shard_capacity(std::int64_t n, int ranks) { return ranks > 0 && n > 0 ? (n - 1) / ranks + 1 : 0; }

inline shard shard_of(std::int64_t n, int ranks, int rank) {
  const std::int64_t c = shard_capacity(n, ranks);
  const std::int64_t begin = std::min(n, c * rank), end = std::min(n, begin + c);
  return {rank, begin, end};
}

// segreduce's shard: the segments [seg_begin, seg_end) and, of each, the elements
// [elem_begin, elem_end) that the rank reduces.
struct segment_shard {
  int rank = 0;
  std::int64_t seg_begin = 0, seg_end = 0, elem_begin = 0, elem_end = 0;
};

enum class result_placement { every_rank, root };

struct multi_options {
  result_placement placement = result_placement::every_rank;
  int root = 0;  // with result_placement::root
  hist_options hist{};
  segreduce_options segreduce{};
};

namespace detail {

template <class F>
struct offset_index {
  F f;
  std::int64_t begin;
  SOAC_HD auto operator()(std::int64_t i) const { return f(begin + i); }
};

// hist_batched on a rank: its local segments hold elements [begin, begin + local_len) of the
// global segments of seg_len.
template <class F>
struct offset_in_segment {
  F f;
  std::int64_t local_len, seg_len, begin;
  SOAC_HD auto operator()(std::int64_t i) const {
    const std::int64_t h = i / local_len;
    return f(h * seg_len + begin + (i - h * local_len));
  }
};

template <class F>
struct offset_segment_element {
  F f;
  std::int64_t seg_begin, elem_begin;
  SOAC_HD auto operator()(std::int64_t s, std::int64_t j) const { return f(seg_begin + s, elem_begin + j); }
};

template <class T>
struct fill_with {
  T value;
  SOAC_HD write_at<std::int64_t, T> operator()(std::int64_t i) const { return {i, value}; }
};

// Element s of the partial of rank j, from the gathered R x count array.
template <class T>
struct rank_major {
  const T* gathered;
  std::int64_t count;
  SOAC_HD T operator()(std::int64_t s, std::int64_t j) const { return gathered[j * count + s]; }
};

inline void check_multi_options(const multi_context& mc, const multi_options& options, const char* what) {
  if (options.placement == result_placement::root && (options.root < 0 || options.root >= mc.ranks()))
    throw usage_error(std::string(what) + ": root " + std::to_string(options.root) + " is not a rank (0-" +
                      std::to_string(mc.ranks() - 1) + ")");
}

inline bool receives_result(const multi_options& options, int rank) {
  return options.placement == result_placement::every_rank || options.root == rank;
}

template <class T>
void check_rank_spans(const multi_context& mc, std::span<const span<T>> spans, std::uint64_t least, const char* what) {
  if (spans.size() != static_cast<std::size_t>(mc.ranks()))
    throw usage_error(std::string(what) + ": " + std::to_string(spans.size()) + " destinations for " + std::to_string(mc.ranks()) +
                      " ranks");
  for (const auto& s : spans)
    if (s.size() < least)
      throw usage_error(std::string(what) + ": a destination holds " + std::to_string(s.size()) + " elements, " +
                        std::to_string(least) + " are needed");
}

// The R x count gathered copy of every rank's first `count` elements of send[r], on every rank.
template <class T>
std::vector<buffer<T>> gather_ranks(const multi_context& mc, std::span<const span<T>> send, std::int64_t count, const char* what) {
  const int R = mc.ranks();
  const std::uint64_t bytes = checked_bytes(checked_bytes(std::uint64_t(count), std::uint64_t(R), what), sizeof(T), what);
  std::vector<buffer<T>> gathered;
  std::vector<const void*> from(std::size_t(R), nullptr);
  std::vector<void*> to(std::size_t(R), nullptr);
  for (int r = 0; r < R; ++r) {
    mc.rank(r).require_memory(bytes, std::string(what) + ": the ranks' gathered partials");
    gathered.emplace_back(mc.rank(r), std::size_t(R) * std::size_t(count), lifetime::temporary);
    from[r] = send[r].data();
    to[r] = gathered.back().data();
  }
  mc.all_gather(from, to, std::size_t(count) * sizeof(T));
  return gathered;
}

// out[r][0, count) = partials[0] op partials[1] op ... op partials[R-1] (element by element, in
// rank order) on the ranks that receive the result; partials[r] may be out[r] itself (then it
// is overwritten on every rank).
template <class Op>
void combine_partials(const multi_context& mc, std::span<const span<typename Op::value_type>> partials,
                      std::span<const span<typename Op::value_type>> out, std::int64_t count, Op op, const multi_options& options,
                      const char* what) {
  using T = typename Op::value_type;
  if (count == 0) return;
  if constexpr (native_reduction_v<Op>) {
    std::vector<void*> bufs;
    for (const auto& p : partials) bufs.push_back(p.data());
    if (options.placement == result_placement::root)
      mc.reduce(bufs, std::size_t(count), reduce_type_of<T>(), native_reduction<Op>::op, options.root);
    else
      mc.all_reduce(bufs, std::size_t(count), reduce_type_of<T>(), native_reduction<Op>::op);
    for (int r = 0; r < mc.ranks(); ++r)
      if (receives_result(options, r) && partials[r].data() != out[r].data())
        mc.rank(r).copy_within(out[r].data(), partials[r].data(), std::size_t(count) * sizeof(T));
  } else {
    const auto gathered = gather_ranks<T>(mc, partials, count, what);
    for (int r = 0; r < mc.ranks(); ++r)
      if (receives_result(options, r))
        segreduce(mc.rank(r), count, mc.ranks(), rank_major<T>{gathered[r].data(), count}, out[r], op);
  }
}

}  // namespace detail

// Every rank's histos[r] (H bins, the same H on every rank) becomes the histogram of the n
// elements from Op::identity() (unlike soac::hist, which accumulates onto the destination).
template <class Op, class MakeF>
std::vector<hist_plan> multi_hist(const multi_context& mc, const multi_options& options, std::int64_t n, MakeF make_f,
                                  std::span<const span<typename Op::value_type>> histos, Op op = {}) {
  using V = typename Op::value_type;
  detail::check_multi_options(mc, options, "multi_hist");
  if (n < 0) throw usage_error("multi_hist: n must not be negative");
  const std::size_t H = histos.empty() ? 0 : histos[0].size();
  detail::check_rank_spans(mc, histos, H, "multi_hist");
  for (const auto& h : histos)
    if (h.size() != H) throw usage_error("multi_hist: every rank's histogram must have the same number of bins");
  std::vector<hist_plan> plans;
  for (int r = 0; r < mc.ranks(); ++r) {
    context& ctx = mc.rank(r);
    const shard s = shard_of(n, mc.ranks(), r);
    scatter(ctx, std::int64_t(H), detail::fill_with<V>{Op::identity()}, histos[r]);
    plans.push_back(hist(ctx, options.hist, s.size(), detail::offset_index<decltype(make_f(s))>{make_f(s), s.begin}, histos[r], op));
  }
  detail::combine_partials(mc, histos, histos, std::int64_t(H), op, options, "multi_hist");
  return plans;
}

// hist_batched over the ranks: every one of the `batches` segments of seg_len elements is split
// into the ranks' shards (make_f's shard is the range of elements within each segment), so every
// rank computes all batches * H bins of its part and the ranks' partials are combined as above.
template <class Op, class MakeF>
std::vector<hist_plan> multi_hist_batched(const multi_context& mc, const multi_options& options, std::int64_t batches,
                                          std::int64_t seg_len, MakeF make_f, std::span<const span<typename Op::value_type>> histos,
                                          std::int64_t H, Op op = {}) {
  using V = typename Op::value_type;
  detail::check_multi_options(mc, options, "multi_hist_batched");
  if (batches < 0 || seg_len < 0 || H < 0) throw usage_error("multi_hist_batched: sizes must not be negative");
  const std::uint64_t bins = checked_bytes(std::uint64_t(batches), std::uint64_t(H), "multi_hist_batched");
  detail::check_rank_spans(mc, histos, bins, "multi_hist_batched");
  std::vector<hist_plan> plans;
  for (int r = 0; r < mc.ranks(); ++r) {
    context& ctx = mc.rank(r);
    const shard s = shard_of(seg_len, mc.ranks(), r);
    const span<V> mine = histos[r].first(bins);
    scatter(ctx, std::int64_t(bins), detail::fill_with<V>{Op::identity()}, mine);
    using F = decltype(make_f(s));
    plans.push_back(hist_batched(ctx, options.hist, batches, s.size(), detail::offset_in_segment<F>{make_f(s), s.size(), seg_len, s.begin},
                                 mine, H, op));
  }
  detail::combine_partials(mc, histos, histos, std::int64_t(bins), op, options, "multi_hist_batched");
  return plans;
}

// segreduce over the ranks: out[r][s] = f(s, 0) op ... op f(s, n - 1) for s < m. With m >= R,
// whole segments per rank (contiguous blocks of segments: the same element count each, as the
// segments are regular), gathered; with m < R, every segment is split into the ranks' element
// ranges and the partials are combined in rank order (exact for non-commutative operators).
template <class Op, class MakeF>
std::vector<segreduce_plan> multi_segreduce(const multi_context& mc, std::int64_t m, std::int64_t n, MakeF make_f,
                                            std::span<const span<typename Op::value_type>> outs, Op op,
                                            const multi_options& options = {}) {
  using T = typename Op::value_type;
  detail::check_multi_options(mc, options, "multi_segreduce");
  if (m < 0 || n < 0) throw usage_error("multi_segreduce: m and n must not be negative");
  detail::check_rank_spans(mc, outs, std::uint64_t(m), "multi_segreduce");
  const int R = mc.ranks();
  const bool whole_segments = m >= R;
  // Each rank's partial: its block of segments (whole), or one partial per segment (split).
  const std::int64_t per_rank = whole_segments ? shard_capacity(m, R) : m;
  std::vector<buffer<T>> partials;
  std::vector<span<T>> partial_views;
  std::vector<segreduce_plan> plans;
  for (int r = 0; r < R; ++r) {
    context& ctx = mc.rank(r);
    const shard segs = whole_segments ? shard_of(m, R, r) : shard{r, 0, m};
    const shard elems = whole_segments ? shard{r, 0, n} : shard_of(n, R, r);
    const segment_shard s{r, segs.begin, segs.end, elems.begin, elems.end};
    partials.emplace_back(ctx, std::size_t(per_rank), lifetime::temporary);
    partial_views.push_back(partials.back().view());
    using F = decltype(make_f(s));
    plans.push_back(segreduce(ctx, segs.size(), elems.size(), detail::offset_segment_element<F>{make_f(s), segs.begin, elems.begin},
                              partials.back().view(), op, options.segreduce));
  }
  if (!whole_segments) {
    detail::combine_partials(mc, std::span<const span<T>>(partial_views), outs, m, op, options, "multi_segreduce");
    return plans;
  }
  // Blocks of per_rank segments, the last shorter: rank q's block lands at q * per_rank, so the
  // gathered array's first m elements are the result in order.
  const auto gathered = detail::gather_ranks<T>(mc, std::span<const span<T>>(partial_views), per_rank, "multi_segreduce");
  for (int r = 0; r < R; ++r)
    if (detail::receives_result(options, r)) mc.rank(r).copy_within(outs[r].data(), gathered[r].data(), std::size_t(m) * sizeof(T));
  return plans;
}

}  // namespace soac
