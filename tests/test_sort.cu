// filter, partition and radix_sort (both algorithms) on both backends against the sequential
// references in validate/sort.hpp.
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "core/buffer.hpp"
#include "core/sort.cuh"
#include "datasets/random.hpp"
#include "tests/backend_fixture.hpp"
#include "validate/sort.hpp"

namespace {

using namespace soac;
using soac::testing::backend_test;

struct divisible_by {
  const std::int32_t* v;
  std::int32_t k;
  SOAC_HD bool operator()(std::int64_t i) const { return v[i] % k == 0; }
};
struct always {
  bool value;
  SOAC_HD bool operator()(std::int64_t) const { return value; }
};

std::vector<std::int32_t> random_ints(std::int64_t n, std::uint64_t stream) {
  std::vector<std::int32_t> v(static_cast<std::size_t>(n));
  for (std::int64_t i = 0; i < n; ++i) v[std::size_t(i)] = std::int32_t(datasets::random_u32(5, stream, std::uint64_t(i)));
  return v;
}

const std::int64_t tile = sort_tuning::tile_items;
const std::int64_t sizes[] = {0, 1, 2, 100, tile - 1, tile, tile + 1, 5 * tile + 3, 100'003};

class Filter : public backend_test {};

TEST_P(Filter, FilterAndPartitionMatchReference) {
  for (std::int64_t n : sizes) {
    for (std::int32_t k : {1, 2, 3, 1000}) {
      const auto in = random_ints(n, 1);
      buffer<std::int32_t> data(ctx(), std::span<const std::int32_t>(in));
      const auto host_pred = [&](std::int64_t i) { return in[std::size_t(i)] % k == 0; };
      std::int64_t want_count = 0;
      const auto want = validate::partition_reference<std::int32_t>(in, host_pred, want_count);

      buffer<std::int32_t> out(ctx(), std::size_t(n));
      const auto count = filter(ctx(), n, from_array(data), divisible_by{data.data(), k}, out.view());
      ASSERT_EQ(count, want_count) << "filter n=" << n << " k=" << k;
      const auto got = out.to_vector();
      ASSERT_TRUE(std::equal(want.begin(), want.begin() + count, got.begin())) << "filter n=" << n << " k=" << k;

      buffer<std::int32_t> part(ctx(), std::size_t(n));
      EXPECT_EQ(partition(ctx(), n, from_array(data), divisible_by{data.data(), k}, part.view()), want_count);
      ASSERT_EQ(part.to_vector(), want) << "partition n=" << n << " k=" << k;
    }
  }
}

TEST_P(Filter, NoneOrAllSelected) {
  const std::int64_t n = 3 * tile + 17;
  const auto in = random_ints(n, 2);
  buffer<std::int32_t> data(ctx(), std::span<const std::int32_t>(in));
  buffer<std::int32_t> out(ctx(), std::size_t(n));
  EXPECT_EQ(filter(ctx(), n, from_array(data), always{false}, out.view()), 0);
  EXPECT_EQ(filter(ctx(), n, from_array(data), always{true}, out.view()), n);
  EXPECT_EQ(out.to_vector(), in);
}

TEST_P(Filter, TooSmallOutputIsAUsageError) {
  const std::int64_t n = 1000;
  buffer<std::int32_t> data(ctx(), std::span<const std::int32_t>(random_ints(n, 3)));
  buffer<std::int32_t> out(ctx(), 10);
  EXPECT_THROW(filter(ctx(), n, from_array(data), always{true}, out.view()), usage_error);
  EXPECT_THROW(partition(ctx(), n, from_array(data), always{true}, out.view()), usage_error);
}

class RadixSort : public backend_test {};

// Sorts keys (and their input positions as values) with `algorithm` and checks against the
// stable reference.
template <class K>
void check_sort(context& ctx, const std::vector<K>& keys, radix_algorithm algorithm, const std::string& what) {
  const auto n = keys.size();
  std::vector<std::uint32_t> positions(n);
  for (std::size_t i = 0; i < n; ++i) positions[i] = std::uint32_t(i);
  buffer<K> k(ctx, std::span<const K>(keys));
  buffer<std::uint32_t> v(ctx, std::span<const std::uint32_t>(positions));
  const auto plan = radix_sort(ctx, k.view(), v.view(), radix_sort_options{algorithm});
  const auto sorted = k.to_vector();
  const auto sorted_pos = v.to_vector();
  const auto rep = validate::check_sort<K, std::uint32_t>(keys, sorted, positions, sorted_pos);
  ASSERT_TRUE(rep.ok()) << what << " n=" << n << " " << plan.describe() << ": " << rep.describe("keys");
  // Keys only.
  buffer<K> k2(ctx, std::span<const K>(keys));
  radix_sort(ctx, k2.view(), radix_sort_options{algorithm});
  const auto sorted2 = k2.to_vector();
  ASSERT_TRUE(validate::check_sort<K>(keys, sorted2).ok()) << what << " keys only, n=" << n;
}

std::vector<std::uint32_t> random_u32(std::int64_t n, std::uint32_t mask) {
  std::vector<std::uint32_t> v(static_cast<std::size_t>(n));
  for (std::int64_t i = 0; i < n; ++i) v[std::size_t(i)] = datasets::random_u32(6, 0, std::uint64_t(i)) & mask;
  return v;
}

TEST_P(RadixSort, RandomUint32AroundTileSizes) {
  for (std::int64_t n : sizes) check_sort(ctx(), random_u32(n, ~0u), radix_algorithm::digits, "random");
  // The one-sweep tiles: keys alone, and keys with values.
  for (std::int64_t t : {sort_tuning::onesweep_items_keys, sort_tuning::onesweep_items_pairs})
    for (std::int64_t n : {t * sort_tuning::onesweep_block_threads - 1, t * sort_tuning::onesweep_block_threads + 1,
                           3 * t * sort_tuning::onesweep_block_threads})
      check_sort(ctx(), random_u32(n, ~0u), radix_algorithm::digits, "random, one-sweep tile edges");
  check_sort(ctx(), random_u32(1 << 20, ~0u), radix_algorithm::digits, "random");
}

TEST_P(RadixSort, StableWithFewDistinctKeys) {
  for (std::int64_t n : {tile + 5, std::int64_t{200'000}})
    for (std::uint32_t mask : {0u, 1u, 0xfu, 0x0f000f00u})
      check_sort(ctx(), random_u32(n, mask), radix_algorithm::digits, "mask " + std::to_string(mask));
}

TEST_P(RadixSort, SortedAndReversedInput) {
  const std::int64_t n = 7 * tile + 9;
  std::vector<std::uint32_t> up(static_cast<std::size_t>(n)), down(static_cast<std::size_t>(n));
  for (std::int64_t i = 0; i < n; ++i) {
    up[std::size_t(i)] = std::uint32_t(i * 37);
    down[std::size_t(i)] = std::uint32_t((n - i) * 37);
  }
  check_sort(ctx(), up, radix_algorithm::digits, "sorted");
  check_sort(ctx(), down, radix_algorithm::digits, "reversed");
}

TEST_P(RadixSort, NegativeInt32) {
  for (std::int64_t n : {std::int64_t{1000}, 3 * tile + 1}) {
    auto v = random_ints(n, 7);
    v[0] = std::numeric_limits<std::int32_t>::min();
    v[1] = std::numeric_limits<std::int32_t>::max();
    v[2] = -1;
    v[3] = 0;
    check_sort(ctx(), v, radix_algorithm::digits, "int32");
  }
}

std::vector<float> special_floats(std::int64_t n) {
  std::vector<float> v(static_cast<std::size_t>(n));
  for (std::int64_t i = 0; i < n; ++i)
    v[std::size_t(i)] = (float(datasets::random_u32(8, 0, std::uint64_t(i)) % 20001) - 10000.0f) / 7.0f;
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const float specials[] = {-0.0f, 0.0f, nan, -nan, std::numeric_limits<float>::infinity(),
                            -std::numeric_limits<float>::infinity(), std::numeric_limits<float>::denorm_min(),
                            -std::numeric_limits<float>::denorm_min(), -0.0f, 0.0f};
  for (std::size_t k = 0; k < std::size(specials); ++k) v[(k * 97) % v.size()] = specials[k];
  return v;
}

TEST_P(RadixSort, FloatsWithSignedZerosAndNaNs) {
  const auto v = special_floats(2 * tile + 11);
  check_sort(ctx(), v, radix_algorithm::digits, "float");
  // The documented order at the ends and around zero.
  buffer<float> k(ctx(), std::span<const float>(v));
  radix_sort(ctx(), k.view());
  const auto s = k.to_vector();
  EXPECT_TRUE(std::isnan(s.front()) && std::signbit(s.front()));
  EXPECT_TRUE(std::isnan(s.back()) && !std::signbit(s.back()));
  EXPECT_EQ(s[1], -std::numeric_limits<float>::infinity());
  EXPECT_EQ(s[s.size() - 2], std::numeric_limits<float>::infinity());
  const auto zero = std::find_if(s.begin(), s.end(), [](float x) { return x == 0.0f; });
  ASSERT_NE(zero, s.end());
  EXPECT_TRUE(std::signbit(zero[0]) && std::signbit(zero[1]) && !std::signbit(zero[2]) && !std::signbit(zero[3]));
}

TEST_P(RadixSort, PerPassDigitsMatch) {
  // The per-pass structure serves n >= 2^30, too large to test; here it is forced.
  for (std::int64_t n : sizes) check_sort(ctx(), random_u32(n, ~0u), radix_algorithm::digits_per_pass, "per-pass u32");
  check_sort(ctx(), random_u32(200'000, 0x0f000f00u), radix_algorithm::digits_per_pass, "per-pass few keys");
  check_sort(ctx(), random_ints(3 * tile + 1, 7), radix_algorithm::digits_per_pass, "per-pass int32");
  check_sort(ctx(), special_floats(2 * tile + 11), radix_algorithm::digits_per_pass, "per-pass float");
}

TEST_P(RadixSort, UnalignedKeysWithEightByteValues) {
  // Keys starting 0-3 elements past a 16-byte boundary (the one-sweep histogram reads quads),
  // with 8-byte values that must travel with them.
  const std::int64_t n = 9 * sort_tuning::onesweep_items(8) * sort_tuning::onesweep_block_threads + 7;
  const auto keys = random_u32(n, 0xffff0fffu);
  for (std::int64_t offset : {0, 1, 2, 3}) {
    std::vector<std::uint32_t> padded_keys(std::size_t(n + offset), 7u);
    std::vector<std::uint64_t> padded_values(std::size_t(n + offset), 7u);
    std::vector<std::uint64_t> values(static_cast<std::size_t>(n));
    for (std::int64_t i = 0; i < n; ++i) {
      padded_keys[std::size_t(i + offset)] = keys[std::size_t(i)];
      values[std::size_t(i)] = padded_values[std::size_t(i + offset)] = (std::uint64_t(i) << 32) | 0xabcdu;
    }
    buffer<std::uint32_t> k(ctx(), std::span<const std::uint32_t>(padded_keys));
    buffer<std::uint64_t> v(ctx(), std::span<const std::uint64_t>(padded_values));
    const auto plan = radix_sort(ctx(), k.view().subspan(std::size_t(offset)), v.view().subspan(std::size_t(offset)));
    if (ctx().is_cuda()) EXPECT_TRUE(plan.one_sweep) << plan.describe();
    const auto sorted = k.to_vector();
    const auto sorted_values = v.to_vector();
    for (std::int64_t i = 0; i < offset; ++i) ASSERT_EQ(sorted[std::size_t(i)], 7u) << "the key before the span changed";
    const std::vector<std::uint32_t> got_keys(sorted.begin() + offset, sorted.end());
    const std::vector<std::uint64_t> got_values(sorted_values.begin() + offset, sorted_values.end());
    const auto rep = validate::check_sort<std::uint32_t, std::uint64_t>(keys, got_keys, values, got_values);
    ASSERT_TRUE(rep.ok()) << "offset " << offset << " " << plan.describe() << ": " << rep.describe("keys");
  }
}

TEST_P(RadixSort, OneBitVariantMatches) {
  for (std::int64_t n : {std::int64_t{0}, std::int64_t{1}, tile + 1, std::int64_t{50'000}}) {
    check_sort(ctx(), random_u32(n, ~0u), radix_algorithm::one_bit, "one-bit u32");
    check_sort(ctx(), random_u32(n, 0x3u), radix_algorithm::one_bit, "one-bit few keys");
  }
  check_sort(ctx(), random_ints(3 * tile, 9), radix_algorithm::one_bit, "one-bit int32");
  check_sort(ctx(), special_floats(3 * tile), radix_algorithm::one_bit, "one-bit float");
}

TEST_P(RadixSort, MismatchedValuesAreAUsageError) {
  buffer<std::uint32_t> k(ctx(), 10);
  buffer<std::uint32_t> v(ctx(), 9);
  EXPECT_THROW(radix_sort(ctx(), k.view(), v.view()), usage_error);
}

SOAC_INSTANTIATE_BACKENDS(Filter);
SOAC_INSTANTIATE_BACKENDS(RadixSort);

}  // namespace
