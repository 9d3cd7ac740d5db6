// Several ranks (core/multi/): the sharding, the collectives and multi_hist, multi_hist_batched
// and multi_segreduce on simulated host ranks (1, 2, 3 and 7, more ranks than elements, n = 0)
// against one context's result: bit-exact for integer operators, within the summation bound for
// float sums. The cuda instances run one GPU as one NCCL rank; the Cuda* tests that need several
// GPUs skip themselves on fewer.
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstring>
#include <cstdint>
#include <memory>
#include <numeric>
#include <stdexcept>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "core/buffer.hpp"
#include "core/multi/hist.cuh"
#include "core/multi/rank_threads.hpp"
#include "core/multi/segreduce.cuh"
#include "core/operators.hpp"
#include "datasets/random.hpp"
#include "tests/backend_fixture.hpp"
#include "tests/multi_fixtures.hpp"

namespace {

using namespace soac;
using namespace soac::testing;

// multi_hist over R ranks; the result of every rank (or of the root alone).
template <class Op, class F>
std::vector<std::vector<typename Op::value_type>> ranks_hist(backend which, int R, const std::vector<std::int32_t>& host,
                                                             std::int64_t H, const multi_options& options = {}) {
  using V = typename Op::value_type;
  multi_context mc(which, R);
  const sharded_input<F> in(mc, host, H);
  std::vector<buffer<V>> histos;
  for (int r = 0; r < R; ++r) histos.emplace_back(mc.rank(r), std::size_t(H));
  const auto views = views_of(histos);
  multi_hist(mc, options, std::int64_t(host.size()), in.make_f(), std::span<const span<V>>(views), Op{});
  std::vector<std::vector<V>> out;
  for (int r = 0; r < R; ++r)
    if (detail::receives_result(options, r)) out.push_back(histos[std::size_t(r)].to_vector());
  return out;
}

// Rank counts: simulated on host (one, a few, an odd count, more ranks than some inputs hold);
// on cuda one GPU as one NCCL rank, and 2 and every GPU where the machine has them.
std::vector<int> rank_counts(backend which) {
  if (which == backend::host) return {1, 2, 3, 7};
  std::vector<int> out = {1};
  const int gpus = cuda_device_count();
  if (gpus >= 2) out.push_back(2);
  if (gpus > 2) out.push_back(gpus);
  return out;
}

const std::vector<std::int64_t> sizes = {0, 1, 5, 1000, 100'003};

class Multi : public soac::testing::backend_test {};

// ---- sharding ----

TEST(MultiShards, ContiguousBlocksWithAnUnevenLastAndEmptyTail) {
  const auto check = [](std::int64_t n, int R, const std::vector<std::pair<std::int64_t, std::int64_t>>& want) {
    ASSERT_EQ(int(want.size()), R);
    for (int r = 0; r < R; ++r) {
      const shard s = shard_of(n, R, r);
      EXPECT_EQ(s.rank, r);
      EXPECT_EQ(s.begin, want[std::size_t(r)].first) << "n " << n << " R " << R << " rank " << r;
      EXPECT_EQ(s.end, want[std::size_t(r)].second) << "n " << n << " R " << R << " rank " << r;
    }
  };
  check(10, 3, {{0, 4}, {4, 8}, {8, 10}});
  check(9, 3, {{0, 3}, {3, 6}, {6, 9}});
  check(7, 1, {{0, 7}});
  check(2, 5, {{0, 1}, {1, 2}, {2, 2}, {2, 2}, {2, 2}});
  check(0, 3, {{0, 0}, {0, 0}, {0, 0}});
  check(9, 4, {{0, 3}, {3, 6}, {6, 9}, {9, 9}});  // ceil(9/4) = 3: the last rank gets nothing
  EXPECT_EQ(shard_capacity(0, 4), 0);
  EXPECT_EQ(shard_capacity(1, 4), 1);
  EXPECT_EQ(shard_capacity(std::int64_t(1) << 40, 3), ((std::int64_t(1) << 40) + 2) / 3);
}

// ---- --devices ----

TEST(MultiDevices, HostListsNameSimulatedRanks) {
  EXPECT_EQ(parse_devices("all", backend::host), std::vector<int>({0}));
  EXPECT_EQ(parse_devices("0", backend::host), std::vector<int>({0}));
  EXPECT_EQ(parse_devices("0,1,2", backend::host), std::vector<int>({0, 1, 2}));
  EXPECT_EQ(parse_devices("3,1", backend::host), std::vector<int>({3, 1}));
  EXPECT_EQ(parse_devices("63", backend::host), std::vector<int>({63}));
  for (const char* bad : {"", ",", "0,", ",0", "0,,1", "x", "1x", "-1", "+1", " 1", "1.5", "64", "0,1,0", "all,0", "99999999999"})
    EXPECT_THROW(parse_devices(bad, backend::host), usage_error) << "'" << bad << "'";
}

TEST(MultiDevices, CudaDevicesMustExist) {
  const int count = cuda_device_count();
  EXPECT_THROW(parse_devices(std::to_string(count), backend::cuda), usage_error);
  EXPECT_THROW(parse_devices("0,0", backend::cuda), usage_error);
  if (count == 0) {
    EXPECT_THROW(parse_devices("all", backend::cuda), usage_error);
  } else {
    EXPECT_EQ(int(parse_devices("all", backend::cuda).size()), count);
  }
  EXPECT_THROW(multi_context(backend::host, std::vector<int>{}), usage_error);
}

// ---- for_each_rank's threads ----

TEST(RankThreads, EveryRankOnItsOwnThreadAndAllEndedOnReturn) {
  constexpr int R = 4;
  detail::rank_threads threads(R);
  std::vector<std::thread::id> ids(R);
  std::vector<int> done(R, 0);
  for (int round = 0; round < 2000; ++round) {
    threads.run([&](int r) {
      // Rank 3 ends last: run() must not return before it does.
      if (r == 3 && round % 500 == 0) std::this_thread::sleep_for(std::chrono::milliseconds(3));
      ids[std::size_t(r)] = std::this_thread::get_id();
      ++done[std::size_t(r)];
    });
    for (int r = 0; r < R; ++r) ASSERT_EQ(done[std::size_t(r)], round + 1) << "rank " << r << " round " << round;
  }
  EXPECT_EQ(ids[0], std::this_thread::get_id());
  for (int r = 1; r < R; ++r)
    for (int q = 0; q < r; ++q) EXPECT_NE(ids[std::size_t(r)], ids[std::size_t(q)]) << r << " and " << q;
}

TEST(RankThreads, FirstExceptionInRankOrderAfterEveryRankEnded) {
  detail::rank_threads threads(5);
  std::atomic<int> ended{0};
  try {
    threads.run([&](int r) {
      if (r == 4) std::this_thread::sleep_for(std::chrono::milliseconds(5));
      ++ended;
      if (r == 2 || r == 4) throw std::runtime_error("rank " + std::to_string(r));
    });
    ADD_FAILURE() << "no exception";
  } catch (const std::runtime_error& e) {
    EXPECT_STREQ(e.what(), "rank 2");
  }
  EXPECT_EQ(ended.load(), 5);
  // The threads serve the next call as before, and one rank alone runs here.
  std::atomic<int> calls{0};
  threads.run([&](int) { ++calls; });
  EXPECT_EQ(calls.load(), 5);
  detail::rank_threads alone(1);
  alone.run([&](int r) {
    EXPECT_EQ(r, 0);
    ++calls;
  });
  EXPECT_EQ(calls.load(), 6);
}

TEST_P(Multi, ForEachRankCallsEveryRankOnce) {
  for (const int R : rank_counts(GetParam())) {
    multi_context mc(GetParam(), R);
    std::vector<int> calls(std::size_t(R), 0);
    mc.for_each_rank([&](int r) { ++calls[std::size_t(r)]; });
    EXPECT_EQ(calls, std::vector<int>(std::size_t(R), 1)) << "R " << R;
    EXPECT_THROW(mc.for_each_rank([&](int r) {
      if (r == R - 1) throw usage_error("last rank");
    }),
                 usage_error);
  }
}

// ---- collectives ----

TEST_P(Multi, CollectivesOverRanks) {
  for (const int R : rank_counts(GetParam())) {
    multi_context mc(GetParam(), R);
    const std::size_t count = 1001;
    std::vector<buffer<std::int32_t>> bufs;
    std::vector<std::vector<std::int32_t>> host;
    for (int r = 0; r < R; ++r) {
      host.push_back(random_values(std::int64_t(count), std::uint64_t(r + 1), 1000));
      for (auto& x : host.back()) x -= 500;
    }
    const auto load = [&] {
      bufs.clear();
      for (int r = 0; r < R; ++r) bufs.emplace_back(mc.rank(r), std::span<const std::int32_t>(host[std::size_t(r)]));
    };
    const auto pointers = [&] {
      std::vector<void*> p;
      for (auto& b : bufs) p.push_back(b.data());
      return p;
    };
    for (const reduce_op op : {reduce_op::sum, reduce_op::min, reduce_op::max}) {
      load();
      mc.all_reduce(pointers(), count, reduce_type::i32, op);
      for (std::size_t i = 0; i < count; ++i) {
        std::int32_t want = host[0][i];
        for (int r = 1; r < R; ++r) {
          const std::int32_t x = host[std::size_t(r)][i];
          want = op == reduce_op::sum ? want + x : op == reduce_op::min ? std::min(want, x) : std::max(want, x);
        }
        for (int r = 0; r < R; ++r) ASSERT_EQ(bufs[std::size_t(r)].to_vector()[i], want) << "R " << R << " rank " << r << " i " << i;
      }
    }
    load();
    const int root = R - 1;
    mc.reduce(pointers(), count, reduce_type::i32, reduce_op::sum, root);
    const auto rooted = bufs[std::size_t(root)].to_vector();
    for (std::size_t i = 0; i < count; ++i) {
      std::int32_t want = 0;
      for (int r = 0; r < R; ++r) want += host[std::size_t(r)][i];
      ASSERT_EQ(rooted[i], want);
    }
    EXPECT_THROW(mc.reduce(pointers(), count, reduce_type::i32, reduce_op::sum, R), usage_error);

    load();
    std::vector<buffer<std::int32_t>> gathered;
    std::vector<const void*> send;
    std::vector<void*> recv;
    for (int r = 0; r < R; ++r) {
      gathered.emplace_back(mc.rank(r), count * std::size_t(R));
      send.push_back(bufs[std::size_t(r)].data());
      recv.push_back(gathered.back().data());
    }
    mc.all_gather(send, recv, count * sizeof(std::int32_t));
    for (int r = 0; r < R; ++r) {
      const auto g = gathered[std::size_t(r)].to_vector();
      for (int q = 0; q < R; ++q)
        ASSERT_TRUE(std::equal(host[std::size_t(q)].begin(), host[std::size_t(q)].end(), g.begin() + std::ptrdiff_t(q) * std::ptrdiff_t(count)));
    }
    mc.broadcast(pointers(), count * sizeof(std::int32_t), 0);
    for (int r = 0; r < R; ++r) ASSERT_EQ(bufs[std::size_t(r)].to_vector(), host[0]);
    EXPECT_THROW(mc.all_reduce(std::vector<void*>(std::size_t(R) + 1, nullptr), count, reduce_type::i32, reduce_op::sum), usage_error);
  }
}

// ---- multi_hist ----

TEST_P(Multi, HistNativeSumEqualsOneContext) {
  const std::int64_t H = 37;
  for (const std::int64_t n : sizes) {
    const auto host = random_values(n, std::uint64_t(n + 3), std::uint32_t(H + 3));
    const auto want = single_hist<plus<int>, count_bins>(GetParam(), host, H);
    for (const int R : rank_counts(GetParam())) {
      const auto got = ranks_hist<plus<int>, count_bins>(GetParam(), R, host, H);
      ASSERT_EQ(int(got.size()), R);
      for (int r = 0; r < R; ++r) EXPECT_EQ(got[std::size_t(r)], want) << "n " << n << " R " << R << " rank " << r;
    }
  }
}

struct cyclic_bins {
  const std::int32_t* local;
  std::int64_t begin, H;
  SOAC_HD bin_value<int> operator()(std::int64_t i) const { return {i % H, local[i - begin]}; }
};

TEST_P(Multi, HistMinMaxAreNative) {
  static_assert(native_reduction_v<plus<int>> && native_reduction_v<minimum<float>> && native_reduction_v<maximum<std::uint64_t>>);
  static_assert(!native_reduction_v<arg_max<int, int>> && !native_reduction_v<elementwise<plus<int>, 3>>);
  static_assert(!native_reduction_v<plus<short>> && !native_reduction_v<max_subarray<std::int64_t>>);
  const std::int64_t H = 11, n = 5000;
  const auto host = random_values(n, 17, 1'000'000);
  for (const int R : rank_counts(GetParam())) {
    multi_context mc(GetParam(), R);
    const sharded_input<cyclic_bins> in(mc, host, H);
    std::vector<buffer<int>> lo, hi;
    for (int r = 0; r < R; ++r) lo.emplace_back(mc.rank(r), std::size_t(H)), hi.emplace_back(mc.rank(r), std::size_t(H));
    const auto make = in.make_f();
    const auto lo_views = views_of(lo), hi_views = views_of(hi);
    multi_hist(mc, {}, n, make, std::span<const span<int>>(lo_views), minimum<int>{});
    multi_hist(mc, {}, n, make, std::span<const span<int>>(hi_views), maximum<int>{});
    std::vector<int> want_lo(std::size_t(H), minimum<int>::identity()), want_hi(std::size_t(H), maximum<int>::identity());
    for (std::int64_t i = 0; i < n; ++i) {
      want_lo[std::size_t(i % H)] = std::min(want_lo[std::size_t(i % H)], host[std::size_t(i)]);
      want_hi[std::size_t(i % H)] = std::max(want_hi[std::size_t(i % H)], host[std::size_t(i)]);
    }
    for (int r = 0; r < R; ++r) {
      EXPECT_EQ(lo[std::size_t(r)].to_vector(), want_lo) << "R " << R;
      EXPECT_EQ(hi[std::size_t(r)].to_vector(), want_hi) << "R " << R;
    }
  }
}

TEST_P(Multi, HistArgMaxGathersAndFolds) {
  const std::int64_t H = 23;
  for (const std::int64_t n : sizes) {
    const auto host = random_values(n, std::uint64_t(n + 5), 700);
    const auto want = single_hist<arg_max<std::int32_t, std::int32_t>, argmax_bins>(GetParam(), host, H);
    for (const int R : rank_counts(GetParam())) {
      const auto got = ranks_hist<arg_max<std::int32_t, std::int32_t>, argmax_bins>(GetParam(), R, host, H);
      for (int r = 0; r < R; ++r) EXPECT_EQ(got[std::size_t(r)], want) << "n " << n << " R " << R << " rank " << r;
    }
  }
}

TEST_P(Multi, HistVectorBinsGatherAndFold) {
  const std::int64_t H = 9, n = 20'011;
  const auto host = random_values(n, 29, 1000);
  using Op = elementwise<plus<int>, 3>;
  const auto want = single_hist<Op, vector_bins>(GetParam(), host, H);
  for (const int R : rank_counts(GetParam())) {
    const auto got = ranks_hist<Op, vector_bins>(GetParam(), R, host, H);
    for (int r = 0; r < R; ++r)
      for (std::int64_t b = 0; b < H; ++b) EXPECT_TRUE(same_bits(got[std::size_t(r)][std::size_t(b)], want[std::size_t(b)])) << "bin " << b;
  }
}

// Float sums in any order: every bin within (k - 1) * 2^-24 * sum |v| of the exact sum, k its
// update count (the bound of any summation order), so one context's and R ranks' results both pass.
TEST_P(Multi, HistFloatSumWithinTheSummationBound) {
  const std::int64_t H = 13, n = 100'003;
  const auto host = random_values(n, 31, 5000);
  std::vector<double> exact(static_cast<std::size_t>(H)), magnitude(exact), updates(exact);
  for (std::int64_t i = 0; i < n; ++i) {
    const std::int64_t b = host[std::size_t(i)] % H;
    const double v = double(float(host[std::size_t(i)]) * 0.1f);
    exact[std::size_t(b)] += v, magnitude[std::size_t(b)] += std::fabs(v), updates[std::size_t(b)] += 1;
  }
  for (const int R : rank_counts(GetParam())) {
    const auto got = ranks_hist<plus<float>, float_bins>(GetParam(), R, host, H);
    for (int r = 0; r < R; ++r)
      for (std::int64_t b = 0; b < H; ++b) {
        const double bound = updates[std::size_t(b)] * std::ldexp(1.0, -24) * magnitude[std::size_t(b)];
        EXPECT_NEAR(got[std::size_t(r)][std::size_t(b)], exact[std::size_t(b)], bound) << "R " << R << " bin " << b;
      }
  }
}

TEST_P(Multi, HistResultOnTheRootAlone) {
  const std::int64_t H = 19, n = 4321;
  const auto host = random_values(n, 37, 400);
  const auto want_sum = single_hist<plus<int>, count_bins>(GetParam(), host, H);
  const auto want_arg = single_hist<arg_max<std::int32_t, std::int32_t>, argmax_bins>(GetParam(), host, H);
  for (const int R : rank_counts(GetParam())) {
    multi_options root;
    root.placement = result_placement::root;
    root.root = R / 2;
    const auto sum = ranks_hist<plus<int>, count_bins>(GetParam(), R, host, H, root);
    ASSERT_EQ(sum.size(), 1u);
    EXPECT_EQ(sum[0], want_sum) << "R " << R;
    const auto arg = ranks_hist<arg_max<std::int32_t, std::int32_t>, argmax_bins>(GetParam(), R, host, H, root);
    ASSERT_EQ(arg.size(), 1u);
    EXPECT_EQ(arg[0], want_arg) << "R " << R;
    root.root = R;
    EXPECT_THROW((ranks_hist<plus<int>, count_bins>(GetParam(), R, host, H, root)), usage_error);
  }
}

// ---- multi_hist_batched ----

struct batched_bins {
  const std::int32_t* all;  // every rank holds the whole input here (the shard is within each segment)
  std::int64_t H;
  SOAC_HD bin_value<indexed<std::int32_t, std::int32_t>> operator()(std::int64_t i) const {
    return {all[i] % H, {all[i] / 3, std::int32_t(i)}};
  }
};
struct batched_counts {
  const std::int32_t* all;
  std::int64_t H;
  SOAC_HD bin_value<int> operator()(std::int64_t i) const { return {all[i] % (H + 2), 1}; }
};

template <class Op, class F>
void check_batched(backend which, std::int64_t batches, std::int64_t seg_len, std::int64_t H) {
  using V = typename Op::value_type;
  const auto host = random_values(batches * seg_len, std::uint64_t(batches * 7 + seg_len), 600);
  context one(which);
  buffer<std::int32_t> data(one, std::span<const std::int32_t>(host));
  std::vector<V> init(std::size_t(batches * H), Op::identity());
  buffer<V> want_buf(one, std::span<const V>(init));
  hist_batched(one, hist_options{}, batches, seg_len, F{data.data(), H}, want_buf.view(), H, Op{});
  const auto want = want_buf.to_vector();
  for (const int R : rank_counts(which)) {
    multi_context mc(which, R);
    const replicated<V> b(mc, host, std::size_t(batches * H));
    multi_hist_batched(
        mc, {}, batches, seg_len,
        [&](const shard& s) {
          EXPECT_EQ(s.begin, shard_of(seg_len, R, s.rank).begin);
          return F{b.copies[std::size_t(s.rank)].data(), H};
        },
        b.destinations(), H, Op{});
    for (int r = 0; r < R; ++r)
      EXPECT_EQ(b.outs[std::size_t(r)].to_vector(), want) << "batches " << batches << " seg_len " << seg_len << " R " << R;
  }
}

TEST_P(Multi, HistBatchedEqualsOneContext) {
  for (const auto& [batches, seg_len] : std::vector<std::pair<std::int64_t, std::int64_t>>{{4, 1001}, {1, 5}, {3, 2}, {0, 10}, {5, 0}}) {
    check_batched<plus<int>, batched_counts>(GetParam(), batches, seg_len, 17);
    check_batched<arg_max<std::int32_t, std::int32_t>, batched_bins>(GetParam(), batches, seg_len, 17);
  }
}

// ---- multi_segreduce ----

template <class Op, class F>
void check_segreduce(backend which, std::int64_t m, std::int64_t n) {
  using T = typename Op::value_type;
  const auto host = signed_values(m * n, std::uint64_t(m * 131 + n));
  const auto want = single_segreduce<Op, F>(which, host, m, n);
  for (const int R : rank_counts(which)) {
    multi_context mc(which, R);
    const replicated<T> b(mc, host, std::size_t(m));
    const auto& copies = b.copies;
    const auto& outs = b.outs;
    multi_segreduce(
        mc, m, n,
        [&](const segment_shard& s) {
          if (m >= R) {  // whole segments: the rank's block of them, every element
            EXPECT_EQ(s.seg_begin, shard_of(m, R, s.rank).begin);
            EXPECT_EQ(s.elem_begin, 0);
            EXPECT_EQ(s.elem_end, n);
          } else {  // every segment split: the rank's block of elements
            EXPECT_EQ(s.seg_end - s.seg_begin, m);
            EXPECT_EQ(s.elem_begin, shard_of(n, R, s.rank).begin);
          }
          return F{copies[std::size_t(s.rank)].data(), n};
        },
        b.destinations(), Op{});
    for (int r = 0; r < R; ++r) {
      const auto got = outs[std::size_t(r)].to_vector();
      ASSERT_EQ(got.size(), want.size());
      for (std::size_t s = 0; s < got.size(); ++s)
        EXPECT_TRUE(got[s] == want[s]) << "m " << m << " n " << n << " R " << R << " rank " << r << " segment " << s;
    }
  }
}

// Many segments (whole segments per rank, m not a multiple of R), fewer segments than ranks
// (each split, the partials combined in rank order), one segment, n = 0, m = 0.
const std::vector<std::pair<std::int64_t, std::int64_t>> segment_shapes = {{50, 40}, {13, 1000}, {2, 7001}, {1, 100'003},
                                                                           {5, 3},   {3, 0},     {0, 5},    {1, 1}};

TEST_P(Multi, SegreduceSumEqualsOneContext) {
  for (const auto& [m, n] : segment_shapes) check_segreduce<plus<std::int64_t>, matrix_element<std::int64_t>>(GetParam(), m, n);
}

TEST_P(Multi, SegreduceMaxSubarrayCombinesInRankOrder) {
  for (const auto& [m, n] : segment_shapes) check_segreduce<max_subarray<std::int64_t>, mss_element>(GetParam(), m, n);
}

TEST_P(Multi, SegreduceArgMax) {
  for (const auto& [m, n] : segment_shapes) check_segreduce<arg_max<std::int32_t, std::int32_t>, argmax_element>(GetParam(), m, n);
}

TEST_P(Multi, SegreduceResultOnTheRootAlone) {
  for (const int R : rank_counts(GetParam())) {
    multi_context mc(GetParam(), R);
    for (const std::int64_t m : {std::int64_t(1), std::int64_t(R + 2)}) {
      const std::int64_t n = 300;
      const auto host = signed_values(m * n, 5);
      const replicated<std::int64_t> b(mc, host, std::size_t(m));
      const auto& copies = b.copies;
      multi_options root;
      root.placement = result_placement::root;
      root.root = R - 1;
      multi_segreduce(mc, m, n, [&](const segment_shard& s) { return matrix_element<std::int64_t>{copies[std::size_t(s.rank)].data(), n}; },
                      b.destinations(), plus<std::int64_t>{}, root);
      const auto got = b.outs[std::size_t(R - 1)].to_vector();
      for (std::int64_t s = 0; s < m; ++s)
        EXPECT_EQ(got[std::size_t(s)], std::accumulate(host.begin() + s * n, host.begin() + (s + 1) * n, std::int64_t(0)));
    }
  }
}

SOAC_INSTANTIATE_BACKENDS(Multi);

// ---- several GPUs (skipped on fewer) ----

// The parameterised cuda instances above already run 2 and all GPUs where there are several;
// this one takes sizes where every GPU has millions of elements and thousands of bins.
TEST(CudaMulti, SeveralGpusAtSizeEqualOneGpu) {
  if (cuda_device_count() < 2) GTEST_SKIP() << "needs 2 GPUs";
  const std::int64_t H = 1000, n = 3'000'017;
  const auto host = random_values(n, 41, std::uint32_t(H + 3));
  const auto want = single_hist<plus<int>, count_bins>(backend::cuda, host, H);
  const auto want_arg = single_hist<arg_max<std::int32_t, std::int32_t>, argmax_bins>(backend::cuda, host, H);
  for (const int R : rank_counts(backend::cuda)) {
    for (const auto& got : ranks_hist<plus<int>, count_bins>(backend::cuda, R, host, H)) EXPECT_EQ(got, want) << "R " << R;
    for (const auto& got : ranks_hist<arg_max<std::int32_t, std::int32_t>, argmax_bins>(backend::cuda, R, host, H))
      EXPECT_EQ(got, want_arg) << "R " << R;
  }
  check_segreduce<max_subarray<std::int64_t>, mss_element>(backend::cuda, 1, 2'000'003);
  check_segreduce<plus<std::int64_t>, matrix_element<std::int64_t>>(backend::cuda, 1000, 3001);
}

}  // namespace
