// soac::segreduce on both backends against the sequential reference in validate/, for the four
// FHPC17 operators, every strategy, and the edge shapes (m = 1, n = 1, n = 0, sizes that are not
// multiples of any block or tile, huge m).
#include <cmath>
#include <cstdint>
#include <memory>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

#include "apps/segreduce/microbench.hpp"
#include "core/buffer.hpp"
#include "core/operators.hpp"
#include "core/scatter.cuh"
#include "core/segreduce.cuh"
#include "datasets/random.hpp"
#include "tests/backend_fixture.hpp"
#include "validate/segreduce.hpp"

namespace {

using namespace soac;
using namespace soac::apps::segreduce_bench;
using soac::testing::backend_test;

class Segreduce : public backend_test {};

static_assert(declares_compute_bound<blackscholes_day>, "Black-Scholes pricing declares itself compute-bound");
static_assert(!declares_compute_bound<row_element>, "an array read does not");

using shape = std::pair<std::int64_t, std::int64_t>;  // m segments of n elements

// m = 1, n = 1, primes (no multiple of any block or tile), exactly one tile, just above it,
// segments straddling a small-strategy tile, long single segments split across many blocks.
const std::vector<shape> shapes = {{1, 1},    {1, 2},    {7, 1},     {1, 300'007}, {3, 70'001}, {1000, 37},
                                   {513, 129}, {97, 256}, {1, 2048},  {2, 2049},   {5, 1023},  {4099, 3},
                                   {65'537, 2}, {200, 1000}, {1100, 701}};

// Values in [-range/2, range/2): mixed signs so that the maximum subarray depends on the order.
std::vector<std::int32_t> random_ints(std::int64_t count, std::uint64_t seed, std::uint32_t range = 2001) {
  std::vector<std::int32_t> v(static_cast<std::size_t>(count));
  for (std::int64_t i = 0; i < count; ++i)
    v[std::size_t(i)] = std::int32_t(datasets::random_u32(seed, 0, std::uint64_t(i)) % range) - std::int32_t(range / 2);
  return v;
}

std::vector<segreduce_options> strategies_for(std::int64_t n, std::size_t value_bytes) {
  std::vector<segreduce_options> all = {{segreduce_strategy::automatic, 0}, {segreduce_strategy::sequential, 0},
                                        {segreduce_strategy::large, 0}, {segreduce_strategy::large, 3}};
  if (n <= segreduce_tuning::block_threads * segreduce_items_per_thread(value_bytes))
    all.push_back({segreduce_strategy::small, 0});
  return all;
}

// Runs every strategy on every shape and compares with the reference; F_of(data, n) builds f.
template <class Op, class FOf>
void check_all(context& ctx, FOf f_of, std::uint32_t range = 2001) {
  using T = typename Op::value_type;
  for (const auto& [m, n] : shapes) {
    const auto host = random_ints(m * n, std::uint64_t(m * 31 + n), range);
    buffer<std::int32_t> data(ctx, std::span<const std::int32_t>(host));
    const auto expected = validate::segreduce_reference<Op>(m, n, f_of(host.data(), n));
    for (const auto& options : strategies_for(n, sizeof(T))) {
      buffer<T> out(ctx, std::size_t(m));
      const auto plan = segreduce(ctx, m, n, f_of(data.data(), n), out.view(), Op{}, options);
      const auto got = out.to_vector();
      std::int64_t wrong = 0;
      for (std::int64_t s = 0; s < m; ++s) wrong += !(got[std::size_t(s)] == expected[std::size_t(s)]);
      EXPECT_EQ(wrong, 0) << "m=" << m << " n=" << n << " " << plan.describe();
    }
  }
}

TEST_P(Segreduce, SegmentedSumMatchesReference) {
  check_all<plus<std::int32_t>>(ctx(), [](const std::int32_t* d, std::int64_t n) { return row_element{d, n}; });
}

// A 32-byte non-commutative operator: products of 2x2 matrices of wrapping 64-bit integers
// (associative, exact), so the large strategy's ordered rounds take 4 values per thread.
struct mat2 {
  std::uint64_t a, b, c, d;
  friend SOAC_HD bool operator==(const mat2& x, const mat2& y) { return x.a == y.a && x.b == y.b && x.c == y.c && x.d == y.d; }
};
struct mat2_product {
  using value_type = mat2;
  SOAC_HD static mat2 identity() { return {1, 0, 0, 1}; }
  SOAC_HD mat2 operator()(const mat2& x, const mat2& y) const {
    return {x.a * y.a + x.b * y.c, x.a * y.b + x.b * y.d, x.c * y.a + x.d * y.c, x.c * y.b + x.d * y.d};
  }
};
struct matrix_element {
  const std::int32_t* data;
  std::int64_t n;
  SOAC_HD mat2 operator()(std::int64_t s, std::int64_t j) const {
    const auto x = std::uint64_t(std::int64_t(data[s * n + j]));
    return {x, 1, 1, 0};
  }
};

TEST_P(Segreduce, WideNonCommutativeValuesKeepTheOrder) {
  static_assert(segreduce_ordered_items(sizeof(mat2)) == 4);
  check_all<mat2_product>(ctx(), [](const std::int32_t* d, std::int64_t n) { return matrix_element{d, n}; });
}

TEST_P(Segreduce, IndexOfMaxTakesTheLowerIndexOnTies) {
  // Range 7: many ties in every segment.
  check_all<arg_max<std::int32_t>>(ctx(), [](const std::int32_t* d, std::int64_t n) { return indexed_element{d, n}; }, 7);
}

TEST_P(Segreduce, MaximumSubarraySumKeepsOrder) {
  check_all<max_subarray<std::int32_t>>(ctx(), [](const std::int32_t* d, std::int64_t n) { return mss_element{d, n}; });
}

// Issue 28, item 5: results that must not vary do not. Every strategy, run twice, against the
// host backend's result of the same input: integer operators bit for bit, Black-Scholes' double
// sums within twice the bound of recursive summation in any order, (n - 1) 2^-53 sum |x| (and
// the days' prices as each backend's math library computes them).
template <class Op, class Make, class Same>
void check_identical_runs(context& ctx, const std::vector<shape>& of, Make make, Same same) {
  using T = typename Op::value_type;
  for (const auto& [m, n] : of) {
    const auto run = [&](context& on, const segreduce_options& o) {
      auto f = make(on, m, n);
      buffer<T> out(on, std::size_t(m));
      const auto plan = segreduce(on, m, n, f.first, out.view(), Op{}, o);
      return std::pair{out.to_vector(), plan.describe()};
    };
    context host(backend::host);
    const auto baseline = run(host, {}).first;
    for (const auto& options : strategies_for(n, sizeof(T)))
      for (int again = 0; again < 2; ++again) {
        const auto [got, plan] = run(ctx, options);
        std::int64_t differ = 0;
        for (std::int64_t k = 0; k < m; ++k) differ += !same(got[std::size_t(k)], baseline[std::size_t(k)], n);
        EXPECT_EQ(differ, 0) << "m=" << m << " n=" << n << ", run " << again << ": " << plan;
      }
  }
}

// The functor over data held in `on`'s memory (kept alive beside it).
template <class Element>
auto over_ints(std::uint32_t range) {
  return [range](context& on, std::int64_t m, std::int64_t n) {
    auto data = std::make_shared<buffer<std::int32_t>>(on, std::span<const std::int32_t>(random_ints(m * n, std::uint64_t(m * 7 + n), range)));
    return std::pair{Element{data->data(), n}, data};
  };
}

template <class T>
bool equal(const T& a, const T& b, std::int64_t) { return a == b; }

const std::vector<shape> consistency_shapes = {{1, 300'007}, {1000, 37}, {4099, 3}, {200, 1000}, {97, 256}, {2, 2049}};

TEST_P(Segreduce, IntegerResultsAreBitIdenticalAcrossStrategiesRunsAndBackends) {
  check_identical_runs<plus<std::int32_t>>(ctx(), consistency_shapes, over_ints<row_element>(2001), equal<std::int32_t>);
  check_identical_runs<arg_max<std::int32_t>>(ctx(), consistency_shapes, over_ints<indexed_element>(7),
                                              equal<indexed<std::int32_t, std::int32_t>>);
  check_identical_runs<max_subarray<std::int32_t>>(ctx(), consistency_shapes, over_ints<mss_element>(2001),
                                                   equal<mss_quad<std::int32_t>>);
}

TEST_P(Segreduce, FloatSumsAgreeWithinTheSummationBoundAcrossStrategiesRunsAndBackends) {
  const auto options = [](context& on, std::int64_t m, std::int64_t n) {
    std::vector<double> r(static_cast<std::size_t>(m)), v(static_cast<std::size_t>(m));
    for (std::int64_t s = 0; s < m; ++s) {
      r[std::size_t(s)] = 0.01 + 0.04 * datasets::random_unit(6, 0, std::uint64_t(s));
      v[std::size_t(s)] = 0.1 + 0.4 * datasets::random_unit(6, 1, std::uint64_t(s));
    }
    auto held = std::make_shared<std::pair<buffer<double>, buffer<double>>>(buffer<double>(on, std::span<const double>(r)),
                                                                           buffer<double>(on, std::span<const double>(v)));
    return std::pair{blackscholes_day{held->first.data(), held->second.data(), n}, held};
  };
  // Every day's price is positive, so sum |x| is the sum itself; 1e-13 more covers each day's
  // price from CUDA's exp and sqrt against the host's (a few ulp each, at most ~100x through
  // cnd's 1 - c).
  const auto close = [](double a, double b, std::int64_t n) {
    return std::fabs(a - b) <= (2 * double(std::max<std::int64_t>(n - 1, 0)) * 0x1p-53 + 1e-13) * std::fabs(b);
  };
  check_identical_runs<plus<double>>(ctx(), {{1, 100'003}, {37, 1000}, {3000, 17}, {257, 300}}, options, close);
}

TEST_P(Segreduce, BlackScholesFromIotaMatchesReference) {
  for (const auto& [m, n] : std::vector<shape>{{1, 100'003}, {37, 1000}, {3000, 17}, {1, 1}, {257, 300}}) {
    std::vector<double> r(static_cast<std::size_t>(m)), v(static_cast<std::size_t>(m));
    for (std::int64_t s = 0; s < m; ++s) {
      r[std::size_t(s)] = 0.01 + 0.04 * datasets::random_unit(5, 0, std::uint64_t(s));
      v[std::size_t(s)] = 0.1 + 0.4 * datasets::random_unit(5, 1, std::uint64_t(s));
    }
    buffer<double> rd(ctx(), std::span<const double>(r)), vd(ctx(), std::span<const double>(v));
    const auto expected = validate::segreduce_reference<plus<double>>(m, n, blackscholes_day{r.data(), v.data(), n});
    for (const auto& options : strategies_for(n, sizeof(double))) {
      buffer<double> out(ctx(), std::size_t(m));
      const auto plan = segreduce(ctx(), m, n, blackscholes_day{rd.data(), vd.data(), n}, out.view(), plus<double>{}, options);
      const auto rep = validate::check_segreduce_close(expected, out.to_vector(), 1e-10);
      EXPECT_TRUE(rep.ok()) << "m=" << m << " n=" << n << " " << plan.describe() << "\n" << rep.describe("segments");
    }
  }
}

TEST_P(Segreduce, TransposedViewReadsColumns) {
  const std::int64_t m = 300, n = 501;  // segment s is column s of an n x m array
  const auto host = random_ints(m * n, 11);
  buffer<std::int32_t> data(ctx(), std::span<const std::int32_t>(host));
  auto column = [](const std::int32_t* d, std::int64_t m) {
    return [=] SOAC_HD(std::int64_t s, std::int64_t j) { return max_subarray<std::int32_t>::lift(d[j * m + s]); };
  };
  const auto expected = validate::segreduce_reference<max_subarray<std::int32_t>>(m, n, column(host.data(), m));
  for (const auto& options : strategies_for(n, sizeof(mss_quad<std::int32_t>))) {
    buffer<mss_quad<std::int32_t>> out(ctx(), std::size_t(m));
    segreduce(ctx(), m, n, column(data.data(), m), out.view(), max_subarray<std::int32_t>{}, options);
    EXPECT_TRUE(out.to_vector() == expected) << to_string(options.strategy);
  }
}

TEST_P(Segreduce, EmptySegmentsGiveTheIdentity) {
  for (const auto& options : strategies_for(0, sizeof(std::int32_t))) {
    buffer<std::int32_t> out(ctx(), std::span<const std::int32_t>(std::vector<std::int32_t>(1000, 42)));
    segreduce(ctx(), 1000, 0, [] SOAC_HD(std::int64_t, std::int64_t) { return std::int32_t(1); }, out.view(),
              minimum<std::int32_t>{}, options);
    EXPECT_EQ(out.to_vector(), std::vector<std::int32_t>(1000, minimum<std::int32_t>::identity()));
  }
  buffer<std::int32_t> none(ctx(), std::size_t(0));
  EXPECT_NO_THROW(segreduce(ctx(), 0, 5, [] SOAC_HD(std::int64_t, std::int64_t) { return 1; }, none.view(), plus<int>{}));
}

TEST_P(Segreduce, SegmentsSplitOverManyBlocksCombineInOrder) {
  // 1000 blocks per segment: the last block to finish folds 4 partials per thread, in order
  // (maximum subarray sum is not commutative). Repeated calls check that the arrival counters
  // are left at zero.
  const std::int64_t m = 2, n = (std::int64_t{1} << 22) + 5;
  auto f = [] SOAC_HD(std::int64_t s, std::int64_t j) {
    return max_subarray<std::int32_t>::lift(std::int32_t((j * 2654435761u + s) % 2001) - 1000);
  };
  const auto expected = validate::segreduce_reference<max_subarray<std::int32_t>>(m, n, f);
  const auto sums = validate::segreduce_reference<plus<std::int64_t>>(
      m, n, [&](std::int64_t s, std::int64_t j) { return std::int64_t(f(s, j).total); });
  for (int repeat = 0; repeat < 3; ++repeat) {
    buffer<mss_quad<std::int32_t>> out(ctx(), std::size_t(m));
    const auto plan = segreduce(ctx(), m, n, f, out.view(), max_subarray<std::int32_t>{}, {segreduce_strategy::large, 1000});
    EXPECT_TRUE(out.to_vector() == expected) << plan.describe();
    buffer<std::int64_t> total(ctx(), std::size_t(m));
    segreduce(ctx(), m, n, [f] SOAC_HD(std::int64_t s, std::int64_t j) { return std::int64_t(f(s, j).total); }, total.view(),
              plus<std::int64_t>{}, {segreduce_strategy::large, 999});
    EXPECT_EQ(total.to_vector(), sums);
  }
}

TEST_P(Segreduce, HugeSegmentCountComputedElements) {
  // 2^22 + 3 segments with elements computed from (s, j): no input array at all.
  const std::int64_t m = (std::int64_t{1} << 22) + 3, n = 3;
  auto f = [] SOAC_HD(std::int64_t s, std::int64_t j) { return std::int64_t(s * 7 + j * (s % 5) - 3); };
  for (auto strategy : {segreduce_strategy::automatic, segreduce_strategy::sequential, segreduce_strategy::small}) {
    buffer<std::int64_t> out(ctx(), std::size_t(m));
    const auto plan = segreduce(ctx(), m, n, f, out.view(), plus<std::int64_t>{}, {strategy, 0});
    const auto got = out.to_vector();
    std::int64_t wrong = 0;
    for (std::int64_t s = 0; s < m; ++s) wrong += got[std::size_t(s)] != 21 * s + 3 * (s % 5) - 9;
    EXPECT_EQ(wrong, 0) << plan.describe();
  }
}

TEST_P(Segreduce, ClusterCombineKeepsTheOrder) {
  // Few segments split over at most 16 blocks: on sm_90 and later the blocks of a segment run as
  // a cluster and rank 0 folds their results in rank order (maximum subarray sum is not
  // commutative), with rounds of the ordered kernel and without them.
  auto f = [] SOAC_HD(std::int64_t s, std::int64_t j) {
    return max_subarray<std::int32_t>::lift(std::int32_t((j * 2654435761u + 7 * s) % 2001) - 1000);
  };
  const bool clusters = ctx().is_cuda() && ctx().props().compute_major >= 9;
  for (const auto& [m, n, k] : {std::tuple<std::int64_t, std::int64_t, std::int64_t>{3, 20'000, 10}, {16, 30'000, 16}, {2, 3'000, 2}}) {
    const auto expected = validate::segreduce_reference<max_subarray<std::int32_t>>(m, n, f);
    buffer<mss_quad<std::int32_t>> out(ctx(), std::size_t(m));
    const auto plan = segreduce(ctx(), m, n, f, out.view(), max_subarray<std::int32_t>{}, {segreduce_strategy::large, k});
    EXPECT_TRUE(out.to_vector() == expected) << plan.describe();
    if (clusters) EXPECT_EQ(plan.cluster, plan.blocks_per_segment) << plan.describe();
  }
}

// The scatter that mixes each segment's sum into its elements (modulo 2^32).
struct mix_in_sum {
  const std::int32_t* x;
  const std::int64_t* sums;
  std::int64_t n;
  SOAC_HD write_at<std::int64_t, std::int32_t> operator()(std::int64_t i) const {
    return {i, std::int32_t(std::uint32_t(x[i]) * 3u + std::uint32_t(sums[i / n]) + 1u)};
  }
};

TEST_P(Segreduce, ChainedCallsSeeEachOthersResults) {
  // segreduce and scatter queued back to back, each reading what the one before wrote (the sums
  // the last block of each segment stores just before it exits; the whole array), with no wait
  // in between: on cuda each call's kernel may start while the one before drains (a dependent
  // launch, core/launch.cuh) and must still see all of its writes. Against the same loop here.
  const std::int64_t m = 16, n = 40'000;
  const int rounds = soac::testing::under_sanitizer() ? 3 : 60;
  std::vector<std::int32_t> x(static_cast<std::size_t>(m * n));
  std::vector<std::int64_t> sums(static_cast<std::size_t>(m));
  for (std::size_t i = 0; i < x.size(); ++i) x[i] = std::int32_t(std::uint32_t(i * 2654435761u));
  buffer<std::int32_t> xs(ctx(), std::span<const std::int32_t>(x));
  buffer<std::int64_t> out(ctx(), sums.size());
  for (int r = 0; r < rounds; ++r) {
    const segreduce_options options{r % 2 ? segreduce_strategy::automatic : segreduce_strategy::large, r % 2 ? 0 : 7};
    segreduce(ctx(), m, n, row_element{xs.data(), n}, out.view(), plus<std::int64_t>{}, options);
    scatter(ctx(), m * n, mix_in_sum{xs.data(), out.data(), n}, xs);
  }
  for (int r = 0; r < rounds; ++r) {
    for (std::int64_t s = 0; s < m; ++s) {
      std::int64_t sum = 0;
      for (std::int64_t j = 0; j < n; ++j) sum += x[std::size_t(s * n + j)];
      sums[std::size_t(s)] = sum;
    }
    for (std::size_t i = 0; i < x.size(); ++i) x[i] = mix_in_sum{x.data(), sums.data(), n}(std::int64_t(i)).value;
  }
  const auto got = xs.to_vector();
  std::int64_t wrong = 0;
  for (std::size_t i = 0; i < x.size(); ++i) wrong += got[i] != x[i];
  EXPECT_EQ(wrong, 0);
  EXPECT_EQ(out.to_vector(), sums);
}

TEST_P(Segreduce, BadArgumentsAreUsageErrors) {
  buffer<int> out(ctx(), std::size_t(4));
  auto f = [] SOAC_HD(std::int64_t, std::int64_t) { return 1; };
  EXPECT_THROW(segreduce(ctx(), -1, 3, f, out.view(), plus<int>{}), usage_error);
  EXPECT_THROW(segreduce(ctx(), 2, -3, f, out.view(), plus<int>{}), usage_error);
  EXPECT_THROW(segreduce(ctx(), 5, 3, f, out.view(), plus<int>{}), usage_error);
  EXPECT_THROW(segreduce(ctx(), 1, 1 << 20, f, out.view(), plus<int>{}, {segreduce_strategy::small, 0}), usage_error);
  EXPECT_THROW(segreduce(ctx(), 1, 10, f, out.view(), plus<int>{}, {segreduce_strategy::large, -2}), usage_error);
}

SOAC_INSTANTIATE_BACKENDS(Segreduce);

// The model, independent of a device.
TEST(SegreducePlan, FewSplitSegmentsCombineInAClusterOnHopper) {
  device_properties hopper;
  hopper.sm_count = 132;
  hopper.max_threads_per_sm = 2048;
  hopper.compute_major = 9;
  // backprop's forward sums: 16 segments of 65,537 floats, which the split gives 16 blocks of
  // 4,096 and one of the last element; evened out to 16 blocks of 4,352 in a cluster.
  const auto backprop = plan_segreduce(hopper, 16, 65'537, 4, {}, true);
  EXPECT_EQ(backprop.blocks_per_segment, 16);
  EXPECT_EQ(backprop.chunk, 4'352);
  EXPECT_EQ(backprop.cluster, 16);
  EXPECT_NE(backprop.describe().find("cluster"), std::string::npos) << backprop.describe();
  // A forced split keeps its blocks: clusters only where they are few enough.
  EXPECT_EQ(plan_segreduce(hopper, 3, 20'000, 16, {segreduce_strategy::large, 10}, false).cluster, 10);  // ordered too
  // Long shares are bandwidth-bound: no clusters (64 x 2^20 ints: 16 blocks of 32 tiles each).
  EXPECT_EQ(plan_segreduce(hopper, 64, std::int64_t{1} << 20, 4, {}, true).cluster, 0);
  EXPECT_EQ(plan_segreduce(hopper, 256, std::int64_t{1} << 18, 4, {}, true).cluster, 0);
  EXPECT_EQ(plan_segreduce(hopper, 3, 70'001, 16, {segreduce_strategy::large, 5}, false).cluster, 0);
  EXPECT_EQ(plan_segreduce(hopper, 2, (std::int64_t{1} << 22) + 5, 16, {segreduce_strategy::large, 1000}, false).cluster, 0);
  EXPECT_EQ(plan_segreduce(hopper, 1, std::int64_t{1} << 26, 4, {}, true).cluster, 0);   // 1,056 blocks a segment
  EXPECT_EQ(plan_segreduce(hopper, 4'000, 70'000, 4, {segreduce_strategy::large, 4}, true).cluster, 0);  // beyond a wave
  EXPECT_EQ(plan_segreduce(hopper, 16, 1'000, 4, {segreduce_strategy::large, 1}, true).cluster, 0);      // one block each
  // 4 segments of 2^16 quads (maximum subarray sum): 32 blocks of a tile each; 16 would double
  // each block's share, so no cluster.
  EXPECT_EQ(plan_segreduce(hopper, 4, 65'536, 16, {}, false, false, 660).blocks_per_segment, 32);
  EXPECT_EQ(plan_segreduce(hopper, 4, 65'536, 16, {}, false, false, 660).cluster, 0);
  // 8 segments of 2^17: 64 blocks of 2,048 each; 16 would take three more rounds, so no cluster.
  EXPECT_EQ(plan_segreduce(hopper, 8, std::int64_t{1} << 17, 4, {}, true).cluster, 0);
  device_properties ampere = hopper;
  ampere.compute_major = 8;
  EXPECT_EQ(plan_segreduce(ampere, 16, 65'537, 4, {}, true).cluster, 0);
  EXPECT_EQ(plan_segreduce(ampere, 16, 65'537, 4, {}, true).blocks_per_segment, 17);
}

TEST(SegreducePlan, AutoFollowsTheMeasuredRule) {
  device_properties h100;
  h100.sm_count = 132;
  h100.max_threads_per_sm = 2048;
  auto chosen = [&](std::int64_t m, std::int64_t n) { return plan_segreduce(h100, m, n, 4, {}).strategy; };
  EXPECT_EQ(chosen(1, std::int64_t{1} << 26), segreduce_strategy::large);
  EXPECT_EQ(chosen(std::int64_t{1} << 26, 1), segreduce_strategy::sequential);
  EXPECT_EQ(chosen(std::int64_t{1} << 22, 16), segreduce_strategy::sequential);
  // Measured on the H100: maximum subarray sum folds faster sequentially than with the scan
  // below a warp's round (8 quads a lane), with a warp per segment from there on; a commutative
  // sum of mid-length segments uses lane groups.
  EXPECT_EQ(plan_segreduce(h100, 1 << 20, 64, 16, {}, false).strategy, segreduce_strategy::sequential);
  const auto warp_each = plan_segreduce(h100, 1 << 18, 256, 16, {}, false);
  EXPECT_EQ(warp_each.strategy, segreduce_strategy::large);
  EXPECT_TRUE(warp_each.warp_segments);
  const auto groups = plan_segreduce(h100, 1 << 18, 256, 4, {}, true);
  EXPECT_EQ(groups.strategy, segreduce_strategy::small);
  EXPECT_EQ(groups.group_threads, segreduce_tuning::group_lanes_wide);
  EXPECT_EQ(plan_segreduce(h100, 1 << 10, 256, 4, {}, false).group_threads, 0);  // segmented scan
  EXPECT_EQ(plan_segreduce(h100, 1 << 10, 256, 4, {}, false).strategy, segreduce_strategy::small);
  EXPECT_EQ(chosen(1 << 16, 1024), segreduce_strategy::large);  // non-commutative
  EXPECT_EQ(plan_segreduce(h100, 1 << 16, 1024, 4, {}, true).strategy, segreduce_strategy::small);
  EXPECT_EQ(plan_segreduce(h100, 1 << 8, 1024, 4, {}, true).strategy, segreduce_strategy::large);
  EXPECT_EQ(plan_segreduce(h100, 1 << 20, 64, 8, {}, true).strategy, segreduce_strategy::sequential);
  EXPECT_EQ(plan_segreduce(h100, 1 << 20, 64, 4, {}, true).strategy, segreduce_strategy::small);
  // Few short segments: the sequential tiles shrink towards a block for every resident slot
  // (1056), but not below sequential_min_items elements a thread.
  const auto few = plan_segreduce(h100, 1 << 16, 1, 8, {segreduce_strategy::sequential, 0});
  EXPECT_EQ(few.segments_per_block, segreduce_tuning::sequential_min_items * segreduce_tuning::block_threads);
  EXPECT_EQ(few.grid, 64);
  const auto fours = plan_segreduce(h100, 1 << 16, 4, 4, {}, true);
  EXPECT_EQ(fours.strategy, segreduce_strategy::sequential);
  EXPECT_EQ(fours.segments_per_block, 256);
  const auto long_rows = plan_segreduce(h100, 1 << 16, 100, 4, {segreduce_strategy::sequential, 0});
  EXPECT_EQ(long_rows.segments_per_block, 63);  // column chunks: a block for every resident slot
  const auto many = plan_segreduce(h100, 1 << 22, 1, 8, {segreduce_strategy::sequential, 0});
  EXPECT_EQ(many.segments_per_block, 2048);  // a full tile
  const auto big = plan_segreduce(h100, 1, std::int64_t{1} << 26, 4, {});
  EXPECT_GT(big.blocks_per_segment, 1);
  EXPECT_TRUE(big.second_pass);
  EXPECT_EQ(big.chunk % (segreduce_tuning::block_threads * segreduce_items_per_thread(4)), 0);
  EXPECT_GE(big.chunk * big.blocks_per_segment, std::int64_t{1} << 26);
  // One segment too short to fill the GPU: split down to a tile (2048 ints) a block; a
  // non-commutative operator's ordered warp steps take 16 ints a lane, so 4096 a block.
  const auto one = plan_segreduce(h100, 1, std::int64_t{1} << 18, 4, {}, true);
  EXPECT_EQ(one.strategy, segreduce_strategy::large);
  EXPECT_EQ(one.blocks_per_segment, 128);
  EXPECT_FALSE(one.ordered);
  const auto ordered = plan_segreduce(h100, 1, std::int64_t{1} << 18, 4, {});
  EXPECT_TRUE(ordered.ordered);
  EXPECT_EQ(ordered.items_per_thread, segreduce_ordered_items(4));
  EXPECT_EQ(ordered.blocks_per_segment, (std::int64_t{1} << 18) / (segreduce_tuning::block_threads * segreduce_ordered_items(4)));
  // Ordered segments shorter than a round, enough to fill the GPU: a warp each (FHPC17 Fig 13
  // at m = 2^16); too few to fill it, or a commutative operator: blocks.
  const auto warps = plan_segreduce(h100, 1 << 16, 1024, 16, {});
  EXPECT_EQ(warps.strategy, segreduce_strategy::large);
  EXPECT_TRUE(warps.warp_segments);
  EXPECT_EQ(warps.segments_per_block, segreduce_tuning::block_threads / 32);
  EXPECT_EQ(warps.grid, (1 << 16) / (segreduce_tuning::block_threads / 32));
  EXPECT_FALSE(plan_segreduce(h100, 1 << 16, 1024, 16, {}, true).warp_segments);
  EXPECT_FALSE(plan_segreduce(h100, 64, 1024, 16, {segreduce_strategy::large, 0}).warp_segments);
  EXPECT_FALSE(plan_segreduce(h100, 1 << 14, 4096, 16, {}).warp_segments);  // a round: the block's runs
  // The ordered kernel's own residency sets the wave (5 blocks per SM on the H100, not 8).
  const auto wave = plan_segreduce(h100, 1, std::int64_t{1} << 26, 16, {}, false, false, 660);
  EXPECT_LE(wave.blocks_per_segment, 660);
  EXPECT_GE(wave.blocks_per_segment, 600);
  EXPECT_GT(plan_segreduce(h100, 1, std::int64_t{1} << 26, 16, {}, false).blocks_per_segment, 1000);
  // Compute-bound elements (Black-Scholes): a block per segment where lane groups would not
  // fill a wave (FHPC17 Fig 15, m = 2^10 x 256 days), lane groups where they would.
  EXPECT_EQ(plan_segreduce(h100, 1 << 10, 256, 8, {}, true, true).strategy, segreduce_strategy::large);
  EXPECT_EQ(plan_segreduce(h100, 1 << 10, 256, 8, {}, true, false).strategy, segreduce_strategy::small);
  EXPECT_EQ(plan_segreduce(h100, 1 << 18, 256, 8, {}, true, true).strategy, segreduce_strategy::small);
  EXPECT_EQ(plan_segreduce(h100, 1 << 12, 64, 8, {}, true, true).strategy, segreduce_strategy::small);
  // Split into fewer than large_min_fine_split blocks, the combine would cost more: 16 elements a thread.
  EXPECT_EQ(plan_segreduce(h100, 64, 4096, 4, {segreduce_strategy::large, 0}).blocks_per_segment, 1);
  const auto forced = plan_segreduce(h100, 10, 1000, 4, {segreduce_strategy::large, 3});
  EXPECT_EQ(forced.blocks_per_segment, 1);  // 1000 elements fit one tile of 2048
  EXPECT_EQ(std::string_view(forced.reason), "forced");  // not the literals' addresses
  EXPECT_EQ(parse_segreduce_strategy("small"), segreduce_strategy::small);
  EXPECT_THROW(parse_segreduce_strategy("medium"), usage_error);
}

}  // namespace
