// soac::scatter on both backends against the sequential reference in validate/.
#include <cstdint>
#include <limits>
#include <numeric>
#include <vector>

#include <gtest/gtest.h>

#include "core/buffer.hpp"
#include "core/scatter.cuh"
#include "datasets/scatter_data.hpp"
#include "tests/backend_fixture.hpp"
#include "validate/scatter.hpp"

namespace {

using namespace soac;
using soac::testing::backend_test;

class Scatter : public backend_test {};

template <class I>
struct from_arrays {
  const I* idx;
  const std::int32_t* val;
  SOAC_HD write_at<I, std::int32_t> operator()(std::int64_t i) const { return {idx[i], val[i]}; }
};

constexpr std::int32_t sentinel = -777;

std::vector<scatter_options> every_strategy() {
  std::vector<scatter_options> all;
  for (auto s : {scatter_strategy::automatic, scatter_strategy::plain, scatter_strategy::chunked, scatter_strategy::blocked})
    all.push_back({s, 10});
  all.push_back({scatter_strategy::chunked, 3});
  return all;
}

TEST_P(Scatter, RandomDistinctWritesMatchReferenceForEveryStrategy) {
  datasets::scatter_spec spec{100'003, 40'001, 0.05, 7};
  const auto data = datasets::generate_scatter<std::int32_t>(spec);
  std::vector<std::int32_t> expected = data.dest;
  validate::scatter_reference<std::int32_t, std::int32_t>(expected, data.indexes, data.values);
  buffer<std::int32_t> idx(ctx(), std::span<const std::int32_t>(data.indexes));
  buffer<std::int32_t> val(ctx(), std::span<const std::int32_t>(data.values));
  for (const auto& options : every_strategy()) {
    buffer<std::int32_t> dest(ctx(), std::span<const std::int32_t>(data.dest));
    const auto plan = scatter(ctx(), options, spec.k, from_arrays<std::int32_t>{idx.data(), val.data()}, dest);
    EXPECT_EQ(dest.to_vector(), expected) << plan.describe();
  }
}

TEST_P(Scatter, OutOfRangeIndexesAreIgnored) {
  const std::int64_t n = 50;
  const std::vector<std::int64_t> idx_h = {-1, 0, std::numeric_limits<std::int64_t>::min(), 49, 50, 51,
                                           std::numeric_limits<std::int64_t>::max(), -50, 25, 1000};
  std::vector<std::int32_t> val_h(idx_h.size());
  std::iota(val_h.begin(), val_h.end(), 100);
  buffer<std::int64_t> idx(ctx(), std::span<const std::int64_t>(idx_h));
  buffer<std::int32_t> val(ctx(), std::span<const std::int32_t>(val_h));
  for (const auto& options : every_strategy()) {
    std::vector<std::int32_t> start(n, sentinel);
    buffer<std::int32_t> dest(ctx(), std::span<const std::int32_t>(start));
    scatter(ctx(), options, std::int64_t(idx_h.size()), from_arrays<std::int64_t>{idx.data(), val.data()}, dest);
    std::vector<std::int32_t> expected(n, sentinel);
    expected[0] = 101;
    expected[49] = 103;
    expected[25] = 108;
    EXPECT_EQ(dest.to_vector(), expected);
  }
}

TEST_P(Scatter, UnsignedIndexesAboveTheLengthAreIgnored) {
  buffer<std::int32_t> dest(ctx(), std::span<const std::int32_t>(std::vector<std::int32_t>(8, sentinel)));
  // i = 0..9: index 2^32 - 1 - i for odd i (out of range), i for even i.
  scatter(ctx(), 10, [] SOAC_HD(std::int64_t i) {
    return write_at{i % 2 ? std::uint32_t(0xffffffffu - i) : std::uint32_t(i), std::int32_t(i)};
  }, dest);
  EXPECT_EQ(dest.to_vector(), (std::vector<std::int32_t>{0, sentinel, 2, sentinel, 4, sentinel, 6, sentinel}));
}

struct rgb {
  std::uint8_t r, g, b;
  bool operator==(const rgb&) const = default;
};

TEST_P(Scatter, SeveralDestinationsOfDifferentTypesAndLengths) {
  buffer<std::int32_t> a(ctx(), std::span<const std::int32_t>(std::vector<std::int32_t>(100, sentinel)));
  buffer<double> b(ctx(), std::span<const double>(std::vector<double>(37, -1.0)));
  buffer<rgb> c(ctx(), std::span<const rgb>(std::vector<rgb>(5, rgb{0, 0, 0})));
  const std::int64_t n = 120;
  // Each i writes i into a (in range for i < 100), i/2 into b at 36 - i (in range for i <= 36),
  // and a colour into c at i - 115 (in range for the last five).
  scatter(ctx(), n, [] SOAC_HD(std::int64_t i) {
    return writes(write_at{i, std::int32_t(i)}, write_at{36 - i, double(i) / 2},
                  write_at{i - 115, rgb{std::uint8_t(i), std::uint8_t(2 * i), 3}});
  }, a, b, c);
  std::vector<std::int32_t> ea(100);
  std::iota(ea.begin(), ea.end(), 0);
  std::vector<double> eb(37);
  for (int j = 0; j < 37; ++j) eb[j] = double(36 - j) / 2;
  std::vector<rgb> ec;
  for (int i = 115; i < 120; ++i) ec.push_back(rgb{std::uint8_t(i), std::uint8_t(2 * i), 3});
  EXPECT_EQ(a.to_vector(), ea);
  EXPECT_EQ(b.to_vector(), eb);
  EXPECT_EQ(c.to_vector(), ec);
}

TEST_P(Scatter, ZeroWritesLeaveTheDestinationAlone) {
  buffer<std::int32_t> dest(ctx(), std::span<const std::int32_t>(std::vector<std::int32_t>(10, sentinel)));
  for (const auto& options : every_strategy()) {
    const auto plan = scatter(ctx(), options, 0, [] SOAC_HD(std::int64_t i) { return write_at{i, 1}; }, dest);
    EXPECT_EQ(plan.grid, 0);
  }
  EXPECT_EQ(dest.to_vector(), std::vector<std::int32_t>(10, sentinel));
  buffer<std::int32_t> empty(ctx(), 0);
  scatter(ctx(), 5, [] SOAC_HD(std::int64_t i) { return write_at{i, 1}; }, empty);  // every index out of range
  EXPECT_THROW(scatter(ctx(), -1, [] SOAC_HD(std::int64_t i) { return write_at{i, 1}; }, dest), usage_error);
}

TEST_P(Scatter, SizesAroundTheBlockSize) {
  for (std::int64_t n : {1, 2, 255, 256, 257, 1023, 1024, 1025, 4 * 256 - 1, 4 * 256 + 1, 1'000'003}) {
    for (const auto& options : every_strategy()) {
      buffer<std::int64_t> dest(ctx(), std::span<const std::int64_t>(std::vector<std::int64_t>(n, -1)));
      // Reversed order, values computed from i: the report's map-write fusion, no input arrays.
      scatter(ctx(), options, n, [n] SOAC_HD(std::int64_t i) { return write_at{n - 1 - i, 3 * i}; }, dest);
      const auto got = dest.to_vector();
      std::int64_t wrong = 0;
      for (std::int64_t j = 0; j < n; ++j) wrong += got[j] != 3 * (n - 1 - j);
      EXPECT_EQ(wrong, 0) << "n=" << n << " strategy=" << to_string(options.strategy);
    }
  }
}

TEST_P(Scatter, MoreWritesThanA32BitIndexCounts) {
  // 2^31 + 100 writes; only the last 4096 land (index i - (n - 4096)), so no input array is needed
  // and the loop index must not overflow 32 bits.
  const std::int64_t n = (std::int64_t{1} << 31) + 100, len = 4096;
  buffer<std::int64_t> dest(ctx(), std::span<const std::int64_t>(std::vector<std::int64_t>(len, -1)));
  scatter(ctx(), n, [n, len] SOAC_HD(std::int64_t i) { return write_at{i - (n - len), i}; }, dest);
  const auto got = dest.to_vector();
  for (std::int64_t j = 0; j < len; ++j) ASSERT_EQ(got[j], n - len + j) << "element " << j;
}

TEST_P(Scatter, DuplicateIndexesLeaveOneOfTheWrittenValues) {
  buffer<std::int32_t> dest(ctx(), std::span<const std::int32_t>(std::vector<std::int32_t>(4, sentinel)));
  scatter(ctx(), 10'000, [] SOAC_HD(std::int64_t i) { return write_at{std::int64_t(0), std::int32_t(i)}; }, dest);
  const auto got = dest.to_vector();
  EXPECT_GE(got[0], 0);
  EXPECT_LT(got[0], 10'000);
  EXPECT_EQ(got[1], sentinel);
}

SOAC_INSTANTIATE_BACKENDS(Scatter);

TEST(ScatterPlan, StrategiesAndGridSizes) {
  EXPECT_EQ(plan_scatter(1000, {scatter_strategy::plain, 10}).grid, 4);
  EXPECT_EQ(plan_scatter(1000, {scatter_strategy::chunked, 10}).grid, 1);
  EXPECT_EQ(plan_scatter(1000, {scatter_strategy::chunked, 10}).items_per_thread, 10);
  EXPECT_NE(plan_scatter(1000, {}).strategy, scatter_strategy::automatic);
  EXPECT_EQ(plan_scatter(0, {}).grid, 0);
  EXPECT_THROW(plan_scatter(10, {scatter_strategy::chunked, 0}), usage_error);
  EXPECT_EQ(parse_scatter_strategy("chunked"), scatter_strategy::chunked);
  EXPECT_THROW(parse_scatter_strategy("fast"), usage_error);
}

}  // namespace
