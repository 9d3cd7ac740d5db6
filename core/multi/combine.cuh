// What multi_hist, multi_hist_batched (core/multi/hist.cuh) and multi_segreduce
// (core/multi/segreduce.cuh) share. They run over the ranks of a soac::multi_context (several
// GPUs, or simulated ranks on host): the input is split into contiguous shards, every rank runs the
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
// last one shorter, and empty ones past the end when R exceeds n. On several GPUs the ranks queue
// their work from a thread each (multi_context::for_each_rank), so make_f is called from those
// threads at once: it may read shared state, not change it.
//
// Combining: operators that the collectives reduce natively (plus, minimum, maximum of 8-, 32-
// and 64-bit integers, float and double: native_reduction_v) are all-reduced (NCCL's own sum
// order on cuda: float sums may differ from one context's in the last bits); any other operator
// (arg_max, saturating add, elementwise vectors, non-commutative ones) is all-gathered into an
// R x count array on every rank and folded in rank order (a scatter whose element s folds the R
// partials of s), so non-commutative operators are combined in index order. The result lands on
// every rank, or with result_placement::root on options.root alone (the other ranks' destinations are then left
// unspecified). Calls are asynchronous on cuda like the single-context primitives.
// With ranks in separate processes (multi_context over an mpi_world) every process makes the same
// call with the spans of the world's ranks, of which only its own must point at memory (the
// others may be empty); only its own ranks' work, make_f calls and results happen there.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "core/buffer.hpp"
#include "core/hist/plan.hpp"
#include "core/multi/multi_context.hpp"
#include "core/scatter.cuh"
#include "core/segreduce/strategy.hpp"

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

// Element s of the result: the ranks' partials of s in the gathered R x count array, folded in
// rank order (so non-commutative operators are right).
template <class Op>
struct fold_ranks {
  const typename Op::value_type* gathered;
  std::int64_t count;
  int ranks;
  Op op;
  SOAC_HD write_at<std::int64_t, typename Op::value_type> operator()(std::int64_t s) const {
    typename Op::value_type acc = gathered[s];
    for (int j = 1; j < ranks; ++j) acc = op(acc, gathered[j * count + s]);
    return {s, acc};
  }
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
  for (int r : mc.local_ranks())
    if (const auto& s = spans[std::size_t(r)]; s.size() < least)
      throw usage_error(std::string(what) + ": a destination holds " + std::to_string(s.size()) + " elements, " +
                        std::to_string(least) + " are needed");
}

// The R x count gathered copy of every rank's first `count` elements of send[r], on every rank.
template <class T>
std::vector<buffer<T>> gather_ranks(const multi_context& mc, std::span<const span<T>> send, std::int64_t count, const char* what) {
  const int R = mc.ranks();
  // Overflow-checked size; the caching allocator refuses what does not fit (no cudaMemGetInfo per call).
  checked_bytes(checked_bytes(std::uint64_t(count), std::uint64_t(R), what), sizeof(T), what);
  std::vector<buffer<T>> gathered(static_cast<std::size_t>(R));  // empty for other processes' ranks
  std::vector<const void*> from(std::size_t(R), nullptr);
  std::vector<void*> to(std::size_t(R), nullptr);
  for (int r : mc.local_ranks()) {
    gathered[std::size_t(r)] = buffer<T>(mc.rank(r), std::size_t(R) * std::size_t(count), lifetime::temporary);
    from[r] = send[r].data();
    to[r] = gathered[std::size_t(r)].data();
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
    for (int r : mc.local_ranks())
      if (receives_result(options, r) && partials[r].data() != out[r].data())
        mc.rank(r).copy_within(out[r].data(), partials[r].data(), std::size_t(count) * sizeof(T));
  } else {
    const auto gathered = gather_ranks<T>(mc, partials, count, what);
    for (int r : mc.local_ranks())
      if (receives_result(options, r))
        scatter(mc.rank(r), count, fold_ranks<Op>{gathered[r].data(), count, mc.ranks(), op}, out[r]);
  }
}

}  // namespace detail

}  // namespace soac
