// soac::scan / segscan / segscan_offsets on both backends against the sequential reference, with
// operators that are not commutative (2x2 matrix product: fenced descriptors; affine-map
// composition in 32 bits: packed descriptors) and flag patterns aimed at the look-back.
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "core/buffer.hpp"
#include "core/operators.hpp"
#include "core/scan.cuh"
#include "datasets/random.hpp"
#include "tests/backend_fixture.hpp"
#include "validate/scan.hpp"

namespace {

using namespace soac;
using soac::testing::backend_test;

// 2x2 matrices over Z/2^32, multiplied in order: associative, not commutative, 16 bytes.
struct mat2 {
  std::uint32_t a, b, c, d;
  bool operator==(const mat2&) const = default;
};
struct mat_product {
  using value_type = mat2;
  SOAC_HD static mat2 identity() { return {1, 0, 0, 1}; }
  SOAC_HD mat2 operator()(mat2 x, mat2 y) const {
    return {x.a * y.a + x.b * y.c, x.a * y.b + x.b * y.d, x.c * y.a + x.d * y.c, x.c * y.b + x.d * y.d};
  }
};

// x -> m*x + k (mod 2^16) packed as (m << 16) | k; composition "first x then y". 4 bytes, so the
// look-back uses packed descriptors; not commutative.
struct affine16 {
  using value_type = std::uint32_t;
  SOAC_HD static std::uint32_t identity() { return 1u << 16; }
  SOAC_HD std::uint32_t operator()(std::uint32_t x, std::uint32_t y) const {
    const std::uint32_t mx = x >> 16, kx = x & 0xffff, my = y >> 16, ky = y & 0xffff;
    return (((my * mx) & 0xffff) << 16) | ((my * kx + ky) & 0xffff);
  }
};

std::string show(const mat2& m) {
  return "[" + std::to_string(m.a) + " " + std::to_string(m.b) + "; " + std::to_string(m.c) + " " + std::to_string(m.d) + "]";
}

template <class T>
T random_value(std::uint64_t i);
template <>
std::int32_t random_value<std::int32_t>(std::uint64_t i) {
  return static_cast<std::int32_t>(datasets::random_u32(3, 0, i) % 2001) - 1000;
}
template <>
std::uint32_t random_value<std::uint32_t>(std::uint64_t i) {
  // Odd multipliers keep the composed maps from collapsing to constants.
  return (datasets::random_u32(3, 1, i) | (1u << 16)) & 0xffffffffu;
}
template <>
mat2 random_value<mat2>(std::uint64_t i) {
  const auto r = [&](int k) { return datasets::random_u32(3, 2 + k, i) % 7; };
  return {r(0), r(1), r(2), r(3)};
}

template <class T>
std::vector<T> random_input(std::int64_t n) {
  std::vector<T> v(static_cast<std::size_t>(n));
  for (std::int64_t i = 0; i < n; ++i) v[std::size_t(i)] = random_value<T>(std::uint64_t(i));
  return v;
}

struct flag_reader {
  const unsigned char* f;
  SOAC_HD bool operator()(std::int64_t i) const { return f[i] != 0; }
};

// Runs scan (flags empty) or segscan on the backend and compares with the reference.
template <class Op>
void check(context& ctx, const std::vector<typename Op::value_type>& in, const std::vector<unsigned char>& flags,
           scan_kind kind, const std::string& what) {
  using T = typename Op::value_type;
  const auto n = static_cast<std::int64_t>(in.size());
  buffer<T> input(ctx, std::span<const T>(in));
  buffer<T> out(ctx, in.size());
  buffer<unsigned char> fl(ctx, std::span<const unsigned char>(flags));
  // Segmented: flags through a generic functor and through from_array (the vectorised path).
  const bool vector_flags = !flags.empty() && (n / 7) % 2 == 0;
  const scan_plan plan =
      flags.empty()  ? scan(ctx, n, from_array(input), out.view(), Op{}, kind)
      : vector_flags ? segscan(ctx, n, from_array(input), from_array(fl), out.view(), Op{}, kind)
                     : segscan(ctx, n, from_array(input), flag_reader{fl.data()}, out.view(), Op{}, kind);
  const auto got = out.to_vector();
  const auto want = validate::scan_reference<Op>(std::span<const T>(in), std::span<const unsigned char>(flags), Op{},
                                                 kind == scan_kind::inclusive);
  std::int64_t bad = 0, first = -1;
  for (std::int64_t i = 0; i < n; ++i)
    if (!(got[std::size_t(i)] == want[std::size_t(i)]) && bad++ == 0) first = i;
  if constexpr (std::is_same_v<T, mat2>) {
    ASSERT_EQ(bad, 0) << what << (vector_flags ? " (array flags)" : "") << " n=" << n << " " << plan.describe() << ": first bad element " << first << " is "
                      << show(got[std::size_t(first)]) << ", expected " << show(want[std::size_t(first)]);
  } else {
    ASSERT_EQ(bad, 0) << what << (vector_flags ? " (array flags)" : "") << " n=" << n << " " << plan.describe() << ": first bad element " << first << " is "
                      << got[std::size_t(first)] << ", expected " << want[std::size_t(first)];
  }
}

template <class Op>
void check_both_kinds(context& ctx, const std::vector<typename Op::value_type>& in,
                      const std::vector<unsigned char>& flags, const std::string& what) {
  check<Op>(ctx, in, flags, scan_kind::inclusive, what + " inclusive");
  check<Op>(ctx, in, flags, scan_kind::exclusive, what + " exclusive");
}

// Sizes around tile multiples of T's tile.
template <class T>
std::vector<std::int64_t> sizes() {
  const std::int64_t t = scan_tuning::tile_items<T>();
  return {0, 1, 2, 33, t - 1, t, t + 1, 2 * t, 3 * t - 1, 3 * t + 1, 40 * t + 7};
}

enum class pattern { none, all, first_only, tile_starts, tile_ends, every_10000, every_third_tile, random_sparse };

std::vector<unsigned char> make_flags(std::int64_t n, std::int64_t tile, pattern p) {
  std::vector<unsigned char> f(static_cast<std::size_t>(n), 0);
  for (std::int64_t i = 0; i < n; ++i) {
    bool v = false;
    switch (p) {
      case pattern::none: break;
      case pattern::all: v = true; break;
      case pattern::first_only: v = i == 0; break;
      case pattern::tile_starts: v = i % tile == 0; break;
      case pattern::tile_ends: v = i % tile == tile - 1; break;
      case pattern::every_10000: v = i % 10000 == 0; break;
      case pattern::every_third_tile: v = i % (3 * tile) == 5; break;
      case pattern::random_sparse: v = datasets::random_u32(9, 0, std::uint64_t(i)) % 997 == 0; break;
    }
    f[std::size_t(i)] = v;
  }
  return f;
}

const pattern all_patterns[] = {pattern::none,        pattern::all,        pattern::first_only,
                                pattern::tile_starts, pattern::tile_ends,  pattern::every_10000,
                                pattern::every_third_tile, pattern::random_sparse};

class Scan : public backend_test {};

TEST_P(Scan, PlusMatchesReferenceAroundTileSizes) {
  for (std::int64_t n : sizes<std::int32_t>())
    check_both_kinds<plus<std::int32_t>>(ctx(), random_input<std::int32_t>(n), {}, "plus");
}

TEST_P(Scan, MatrixProductKeepsOrder) {
  for (std::int64_t n : sizes<mat2>()) check_both_kinds<mat_product>(ctx(), random_input<mat2>(n), {}, "mat2");
}

TEST_P(Scan, AffineCompositionKeepsOrderWithPackedDescriptors) {
  for (std::int64_t n : sizes<std::uint32_t>())
    check_both_kinds<affine16>(ctx(), random_input<std::uint32_t>(n), {}, "affine16");
}

TEST_P(Scan, LongInputStressesLookBack) {
  // Thousands of tiles, so many are in flight and look back over several windows.
  const std::int64_t n = (std::int64_t{1} << 22) + 12345;
  check<plus<std::int32_t>>(ctx(), random_input<std::int32_t>(n), {}, scan_kind::inclusive, "plus");
  check<affine16>(ctx(), random_input<std::uint32_t>(n), {}, scan_kind::exclusive, "affine16");
}

TEST_P(Scan, InPlaceOverTheInputArray) {
  const std::int64_t n = 5 * scan_tuning::tile_items<std::int32_t>() + 3;
  const auto in = random_input<std::int32_t>(n);
  buffer<std::int32_t> data(ctx(), std::span<const std::int32_t>(in));
  scan(ctx(), n, from_array(data), data.view(), plus<std::int32_t>{});
  const auto want = validate::scan_reference<plus<std::int32_t>>(std::span<const std::int32_t>(in), {}, {}, true);
  EXPECT_EQ(data.to_vector(), want);
}

TEST_P(Scan, BadArgumentsAreUsageErrors) {
  buffer<std::int32_t> out(ctx(), 10);
  buffer<std::int32_t> in(ctx(), 10);
  EXPECT_THROW(scan(ctx(), -1, from_array(in), out.view(), plus<std::int32_t>{}), usage_error);
  EXPECT_THROW(scan(ctx(), 11, from_array(in), out.view(), plus<std::int32_t>{}), usage_error);
}

class Segscan : public backend_test {};

TEST_P(Segscan, EveryFlagPatternPlus) {
  const std::int64_t tile = scan_tuning::tile_items<std::int32_t>();
  for (std::int64_t n : sizes<std::int32_t>())
    for (pattern p : all_patterns)
      check_both_kinds<plus<std::int32_t>>(ctx(), random_input<std::int32_t>(n), make_flags(n, tile, p),
                                           "plus pattern " + std::to_string(int(p)));
}

TEST_P(Segscan, EveryFlagPatternMatrixProduct) {
  const std::int64_t tile = scan_tuning::tile_items<mat2>();
  for (std::int64_t n : sizes<mat2>())
    for (pattern p : all_patterns)
      check_both_kinds<mat_product>(ctx(), random_input<mat2>(n), make_flags(n, tile, p),
                                    "mat2 pattern " + std::to_string(int(p)));
}

TEST_P(Segscan, EveryFlagPatternAffinePacked) {
  const std::int64_t tile = scan_tuning::tile_items<std::uint32_t>();
  for (std::int64_t n : sizes<std::uint32_t>())
    for (pattern p : all_patterns)
      check_both_kinds<affine16>(ctx(), random_input<std::uint32_t>(n), make_flags(n, tile, p),
                                 "affine16 pattern " + std::to_string(int(p)));
}

TEST_P(Segscan, LongInputWithSparseAndDenseSegments) {
  const std::int64_t n = (std::int64_t{1} << 22) + 777;
  const std::int64_t tile = scan_tuning::tile_items<std::int32_t>();
  check<plus<std::int32_t>>(ctx(), random_input<std::int32_t>(n), make_flags(n, tile, pattern::every_10000),
                            scan_kind::inclusive, "plus every 10000");
  check<plus<std::int32_t>>(ctx(), random_input<std::int32_t>(n), make_flags(n, tile, pattern::every_third_tile),
                            scan_kind::exclusive, "plus every third tile");
}

TEST_P(Segscan, OffsetsMatchFlags) {
  const std::int64_t n = 7 * scan_tuning::tile_items<std::int32_t>() + 11;
  // CSR-style offsets (ending with n), a duplicate and an out-of-range start.
  const std::vector<std::int64_t> starts = {0, 3, 3, 4096, 4097, 9000, 20000, n - 1, n, n + 5, -2};
  std::vector<unsigned char> flags(std::size_t(n), 0);
  for (auto s : starts)
    if (s >= 0 && s < n) flags[std::size_t(s)] = 1;
  const auto in = random_input<std::int32_t>(n);
  buffer<std::int32_t> input(ctx(), std::span<const std::int32_t>(in));
  buffer<std::int64_t> st(ctx(), std::span<const std::int64_t>(starts));
  for (scan_kind kind : {scan_kind::inclusive, scan_kind::exclusive}) {
    buffer<std::int32_t> out(ctx(), std::size_t(n));
    segscan_offsets(ctx(), n, from_array(input), span<const std::int64_t>(st.data(), st.size()), out.view(),
                    plus<std::int32_t>{}, kind);
    EXPECT_EQ(out.to_vector(), validate::scan_reference<plus<std::int32_t>>(std::span<const std::int32_t>(in), flags, {},
                                                                            kind == scan_kind::inclusive))
        << to_string(kind);
  }
}

// Issue 28, item 5: results that must not vary do not. Each way of running a segmented scan (flags
// through a functor, flags as an array (the vectorised path), segment starts (segscan_offsets);
// a plain scan where only element 0 starts a segment), inclusive and exclusive, run twice,
// against the host backend's flag-functor result: integer operators bit for bit (packed and
// fenced descriptors), float sums within twice the bound of recursive summation in any order,
// (i - start) 2^-24 sum |x| over the segment's prefix.
template <class Op, class Same>
void check_identical_runs(context& ctx, const std::vector<typename Op::value_type>& in, const std::vector<unsigned char>& flags,
                          Same same) {
  using T = typename Op::value_type;
  const auto n = static_cast<std::int64_t>(in.size());
  std::vector<std::int64_t> starts;
  for (std::int64_t i = 0; i < n; ++i)
    if (flags[std::size_t(i)]) starts.push_back(i);
  const bool only_first = starts.size() == 1 && starts[0] == 0;
  enum class way { functor, array, offsets, plain };
  const auto run = [&](context& on, way w, scan_kind kind) {
    buffer<T> input(on, std::span<const T>(in)), out(on, in.size());
    buffer<unsigned char> fl(on, std::span<const unsigned char>(flags));
    buffer<std::int64_t> st(on, std::span<const std::int64_t>(starts));
    if (w == way::functor) segscan(on, n, from_array(input), flag_reader{fl.data()}, out.view(), Op{}, kind);
    if (w == way::array) segscan(on, n, from_array(input), from_array(fl), out.view(), Op{}, kind);
    if (w == way::offsets)
      segscan_offsets(on, n, from_array(input), span<const std::int64_t>(st.data(), st.size()), out.view(), Op{}, kind);
    if (w == way::plain) scan(on, n, from_array(input), out.view(), Op{}, kind);
    return out.to_vector();
  };
  context host(backend::host);
  for (scan_kind kind : {scan_kind::inclusive, scan_kind::exclusive}) {
    const auto baseline = run(host, way::functor, kind);
    for (way w : {way::functor, way::array, way::offsets, way::plain}) {
      if (w == way::plain && !only_first) continue;
      for (int again = 0; again < 2; ++again) {
        const auto got = run(ctx, w, kind);
        std::int64_t differ = 0;
        for (std::int64_t i = 0; i < n; ++i) differ += !same(got[std::size_t(i)], baseline[std::size_t(i)], i);
        EXPECT_EQ(differ, 0) << "n=" << n << " " << to_string(kind) << ", way " << int(w) << ", run " << again;
      }
    }
  }
}

template <class T>
bool equal_values(const T& a, const T& b, std::int64_t) { return a == b; }

TEST_P(Segscan, IntegerResultsAreBitIdenticalAcrossWaysRunsAndBackends) {
  const std::int64_t tile = scan_tuning::tile_items<std::int32_t>(), n = 9 * tile + 13;
  for (pattern p : {pattern::first_only, pattern::random_sparse, pattern::tile_starts, pattern::every_third_tile}) {
    const auto flags = make_flags(n, tile, p);
    check_identical_runs<plus<std::int32_t>>(ctx(), random_input<std::int32_t>(n), flags, equal_values<std::int32_t>);
    check_identical_runs<affine16>(ctx(), random_input<std::uint32_t>(n), flags, equal_values<std::uint32_t>);
    check_identical_runs<mat_product>(ctx(), random_input<mat2>(n), flags, equal_values<mat2>);
  }
}

TEST_P(Segscan, FloatSumsAgreeWithinTheSummationBoundAcrossWaysRunsAndBackends) {
  const std::int64_t tile = scan_tuning::tile_items<float>(), n = 9 * tile + 13;
  std::vector<float> in(static_cast<std::size_t>(n));
  for (std::int64_t i = 0; i < n; ++i) in[std::size_t(i)] = float(datasets::random_unit(12, 0, std::uint64_t(i)) - 0.3);
  for (pattern p : {pattern::first_only, pattern::random_sparse, pattern::every_third_tile}) {
    const auto flags = make_flags(n, tile, p);
    // sum |x| and the element count from each segment's start up to i (inclusive: the widest).
    std::vector<double> magnitude(in.size()), count(in.size());
    for (std::int64_t i = 0; i < n; ++i) {
      const bool start = i == 0 || flags[std::size_t(i)];
      magnitude[std::size_t(i)] = std::fabs(in[std::size_t(i)]) + (start ? 0.0 : magnitude[std::size_t(i - 1)]);
      count[std::size_t(i)] = 1 + (start ? 0.0 : count[std::size_t(i - 1)]);
    }
    check_identical_runs<plus<float>>(ctx(), in, flags, [&](float a, float b, std::int64_t i) {
      return std::fabs(double(a) - double(b)) <= 2 * (count[std::size_t(i)] - 1) * 0x1p-24 * magnitude[std::size_t(i)];
    });
  }
}

SOAC_INSTANTIATE_BACKENDS(Scan);
SOAC_INSTANTIATE_BACKENDS(Segscan);

}  // namespace
