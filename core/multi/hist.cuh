// hist and hist_batched over the ranks of a soac::multi_context: see core/multi/combine.cuh for
// the sharding, make_f and the combine of the ranks' partial histograms.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "core/hist.cuh"
#include "core/multi/combine.cuh"

namespace soac {

namespace detail {
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

}  // namespace detail

// Every rank's histos[r] (H bins, the same H on every rank) becomes the histogram of the n
// elements from Op::identity() (unlike soac::hist, which accumulates onto the destination).
template <class Op, class MakeF>
std::vector<hist_plan> multi_hist(const multi_context& mc, const multi_options& options, std::int64_t n, MakeF make_f,
                                  std::span<const span<typename Op::value_type>> histos, Op op = {}) {
  using V = typename Op::value_type;
  detail::check_multi_options(mc, options, "multi_hist");
  if (n < 0) throw usage_error("multi_hist: n must not be negative");
  const std::size_t H = histos.size() == std::size_t(mc.ranks()) ? histos[std::size_t(mc.local_ranks()[0])].size() : 0;
  detail::check_rank_spans(mc, histos, H, "multi_hist");
  for (int r : mc.local_ranks())
    if (histos[std::size_t(r)].size() != H) throw usage_error("multi_hist: every rank's histogram must have the same number of bins");
  std::vector<hist_plan> plans(static_cast<std::size_t>(mc.ranks()));
  mc.for_each_rank([&](int r) {
    context& ctx = mc.rank(r);
    const shard s = shard_of(n, mc.ranks(), r);
    fill(ctx, histos[r], V(Op::identity()));
    plans[std::size_t(r)] = hist(ctx, options.hist, s.size(), detail::offset_index<decltype(make_f(s))>{make_f(s), s.begin}, histos[r], op);
  });
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
  std::vector<hist_plan> plans(static_cast<std::size_t>(mc.ranks()));
  mc.for_each_rank([&](int r) {
    context& ctx = mc.rank(r);
    const shard s = shard_of(seg_len, mc.ranks(), r);
    const span<V> mine = histos[r].first(bins);
    fill(ctx, mine, V(Op::identity()));
    using F = decltype(make_f(s));
    plans[std::size_t(r)] = hist_batched(ctx, options.hist, batches, s.size(),
                                         detail::offset_in_segment<F>{make_f(s), s.size(), seg_len, s.begin}, mine, H, op);
  });
  detail::combine_partials(mc, histos, histos, std::int64_t(bins), op, options, "multi_hist_batched");
  return plans;
}

}  // namespace soac
