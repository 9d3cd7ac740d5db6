// segreduce over the ranks of a soac::multi_context: see core/multi/combine.cuh for the
// sharding, make_f and the combine of the ranks' partials.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "core/multi/combine.cuh"
#include "core/segreduce.cuh"

namespace soac {

namespace detail {
template <class F>
struct offset_segment_element {
  F f;
  std::int64_t seg_begin, elem_begin;
  SOAC_HD auto operator()(std::int64_t s, std::int64_t j) const { return f(seg_begin + s, elem_begin + j); }
};

}  // namespace detail

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
  std::vector<buffer<T>> partials(static_cast<std::size_t>(R));  // empty for other processes' ranks
  std::vector<span<T>> partial_views(static_cast<std::size_t>(R));
  for (int r : mc.local_ranks()) {
    partials[std::size_t(r)] = buffer<T>(mc.rank(r), std::size_t(per_rank), lifetime::temporary);
    partial_views[std::size_t(r)] = partials[std::size_t(r)].view();
  }
  std::vector<segreduce_plan> plans(static_cast<std::size_t>(R));
  mc.for_each_rank([&](int r) {
    const shard segs = whole_segments ? shard_of(m, R, r) : shard{r, 0, m};
    const shard elems = whole_segments ? shard{r, 0, n} : shard_of(n, R, r);
    const segment_shard s{r, segs.begin, segs.end, elems.begin, elems.end};
    using F = decltype(make_f(s));
    plans[std::size_t(r)] = segreduce(mc.rank(r), segs.size(), elems.size(),
                                      detail::offset_segment_element<F>{make_f(s), segs.begin, elems.begin}, partial_views[std::size_t(r)],
                                      op, options.segreduce);
  });
  if (!whole_segments) {
    detail::combine_partials(mc, std::span<const span<T>>(partial_views), outs, m, op, options, "multi_segreduce");
    return plans;
  }
  // Blocks of per_rank segments, the last shorter: rank q's block lands at q * per_rank, so the
  // gathered array's first m elements are the result in order.
  const auto gathered = detail::gather_ranks<T>(mc, std::span<const span<T>>(partial_views), per_rank, "multi_segreduce");
  for (int r : mc.local_ranks())
    if (detail::receives_result(options, r)) mc.rank(r).copy_within(outs[r].data(), gathered[r].data(), std::size_t(m) * sizeof(T));
  return plans;
}

}  // namespace soac
