// soac::hist on both backends against the sequential reference in validate/hist.hpp, plus the
// (M,S) models against the paper's Table I (host only: pure arithmetic on device properties).
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <functional>
#include <limits>
#include <vector>

#include <gtest/gtest.h>

#include "core/buffer.hpp"
#include "core/hist.cuh"
#include "core/hist/operators.hpp"
#include "datasets/random.hpp"
#include "tests/backend_fixture.hpp"
#include "validate/hist.hpp"

namespace {

using namespace soac;
using soac::testing::backend_test;
// hist's argmax tests index with 32-bit unsigned positions.
using u32_arg_max = arg_max<std::uint32_t, std::uint32_t>;
using f64_arg_max = arg_max<double, std::uint32_t>;

class Hist : public backend_test {};

template <class V>
struct from_arrays {
  const std::int64_t* bins;
  const V* values;
  SOAC_HD bin_value<V> operator()(std::int64_t i) const { return {bins[i], values[i]}; }
};

// n bins uniform in [lo, hi] (so out-of-range bins are easy to include).
std::vector<std::int64_t> random_bins(std::int64_t n, std::int64_t lo, std::int64_t hi, std::uint64_t seed) {
  std::vector<std::int64_t> b(static_cast<std::size_t>(n));
  datasets::fill_random_int<std::int64_t>(b, lo, hi, seed, 1);
  return b;
}

template <class V>
std::vector<V> random_values(std::int64_t n, std::uint64_t seed, std::int64_t lo = 0, std::int64_t hi = 1000) {
  std::vector<std::int64_t> w(static_cast<std::size_t>(n));
  datasets::fill_random_int<std::int64_t>(w, lo, hi, seed, 2);
  return std::vector<V>(w.begin(), w.end());
}

// The strategies each test sweeps: the model, and forced shared/global shapes (multi-pass too).
std::vector<hist_options> strategies() {
  auto o = [](hist_strategy s, int m, int p) {
    hist_options r;
    r.strategy = s;
    r.multi = m;
    r.passes = p;
    return r;
  };
  auto exclusive = [](hist_options r) {
    r.overrides.thread_private = hist_toggle::on;
    return r;
  };
  auto clustered = [](hist_options r, int c) {
    r.overrides.cluster = c;
    return r;
  };
  auto partials = [](hist_options r, hist_toggle t) {
    r.overrides.block_partials = t;
    return r;
  };
  auto split = [](hist_options r, int c) {
    r.overrides.split = c;
    return r;
  };
  auto partitioned = [](hist_options r) {
    r.overrides.partition = hist_toggle::on;
    return r;
  };
  auto ahead = [](hist_options r, hist_toggle t) {
    r.overrides.load_ahead = t;
    return r;
  };
  // M = 32 and 64 run the interleaved shared layout; thread-private copies (no atomics) are forced
  // for every kind (refused where a copy per thread does not fit); shared shapes also run in
  // clusters of 2-8 blocks (contiguous, interleaved, multi-pass side by side; thread-private
  // blocks ask for clusters and fold without them); block partials are forced on (one pass, with
  // and without clusters, and passes side by side; thread-private shapes fold without them) and off; split
  // over clusters of 4 and 16 (refused for locks, before sm_90 and where a slice does not fit);
  // partitioned into buckets of chunks, by the model's M and with M = 32 (refused for locks and
  // values over 8 bytes, and where 32 copies of a chunk do not fit); loads issued a step ahead
  // forced on (one pass and side by side) and off.
  return {o(hist_strategy::automatic, 0, 0), o(hist_strategy::shared, 0, 0), o(hist_strategy::shared, 1, 1),
          o(hist_strategy::shared, 7, 0),   o(hist_strategy::shared, 0, 3), o(hist_strategy::shared, 4, 2),
          o(hist_strategy::shared, 32, 0),  o(hist_strategy::shared, 64, 2), o(hist_strategy::global, 0, 0),
          o(hist_strategy::global, 1, 1),   o(hist_strategy::global, 5, 3),
          exclusive(o(hist_strategy::shared, 0, 0)),
          clustered(o(hist_strategy::shared, 0, 0), 2), clustered(o(hist_strategy::shared, 32, 0), 4),
          clustered(o(hist_strategy::shared, 4, 2), 2), clustered(o(hist_strategy::shared, 1, 3), 8),
          clustered(exclusive(o(hist_strategy::shared, 0, 0)), 2),
          partials(o(hist_strategy::shared, 0, 1), hist_toggle::on),
          partials(clustered(o(hist_strategy::shared, 32, 1), 2), hist_toggle::on),
          partials(o(hist_strategy::shared, 4, 2), hist_toggle::on),
          partials(exclusive(o(hist_strategy::shared, 0, 0)), hist_toggle::on),
          partials(o(hist_strategy::automatic, 0, 0), hist_toggle::off),
          split(o(hist_strategy::shared, 0, 0), 4), split(o(hist_strategy::shared, 0, 0), 16),
          partitioned(o(hist_strategy::shared, 0, 0)), partitioned(o(hist_strategy::shared, 32, 0)),
          ahead(o(hist_strategy::shared, 0, 0), hist_toggle::on), ahead(o(hist_strategy::shared, 1, 3), hist_toggle::on),
          ahead(o(hist_strategy::automatic, 0, 0), hist_toggle::off)};
}

// Runs hist with every strategy (host: once) from `initial` and compares with the reference;
// check_plan, if given, also looks at each plan that ran.
template <class Op, class Compare>
void check_all(context& ctx, const std::vector<std::int64_t>& bins, const std::vector<typename Op::value_type>& values,
               const std::vector<typename Op::value_type>& initial, Compare compare,
               std::vector<hist_options> options = strategies(),
               const std::function<void(const hist_plan&)>& check_plan = {}) {
  using V = typename Op::value_type;
  std::vector<V> expected = initial;
  validate::hist_reference<std::int64_t, V>(expected, bins, values, Op{});
  buffer<std::int64_t> b(ctx, std::span<const std::int64_t>(bins));
  buffer<V> v(ctx, std::span<const V>(values));
  if (!ctx.is_cuda()) options.resize(1);
  for (const auto& o : options) {
    buffer<V> h(ctx, std::span<const V>(initial));
    hist_plan plan;
    try {
      plan = hist(ctx, o, std::int64_t(bins.size()), from_arrays<V>{b.data(), v.data()}, h.view(), Op{});
    } catch (const usage_error& e) {
      // A forced shape that cannot fit (e.g. M copies of a huge histogram) is refused, not run.
      ASSERT_NE(o.strategy, hist_strategy::automatic) << e.what();
      continue;
    }
    const auto report = compare(expected, h.to_vector());
    EXPECT_TRUE(report.ok()) << plan.describe() << "\n" << report.describe("bins");
    if (check_plan) check_plan(plan);
  }
}

template <class Op>
std::vector<typename Op::value_type> identity_histogram(std::int64_t H) {
  return std::vector<typename Op::value_type>(std::size_t(H), Op::identity());
}

template <class V>
validate::report exact(const std::vector<V>& e, const std::vector<V>& g) { return validate::compare_exact(e, g); }

TEST_P(Hist, IntAddAcrossSizes) {
  for (std::int64_t H : {1, 2, 31, 1000, 40'000, 300'000, 3'000'000}) {
    const std::int64_t n = 150'001;
    const auto bins = random_bins(n, 0, H - 1, 11 + H);
    const auto values = random_values<std::int32_t>(n, 3, -5, 5);
    check_all<plus<std::int32_t>>(ctx(), bins, values, std::vector<std::int32_t>(std::size_t(H), 0), exact<std::int32_t>);
  }
}

// Loads issued a step ahead re-read a thread's last whole tile instead of reading past its part;
// every element must still count once, whatever the number of whole tiles and the tail: element
// counts around multiples of a 1024-thread block's 8-element tile and of the resident grid's.
TEST_P(Hist, LoadsAheadCountEveryElementOnce) {
  const std::int64_t tile = 8 * 1024, wave = 132 * tile;
  for (std::int64_t n : {std::int64_t{1}, std::int64_t{1023}, tile - 1, tile, tile + 1, 2 * tile + 5, wave - 3, 2 * wave + 77}) {
    for (std::int64_t H : {100, 49'152}) {
      const auto bins = random_bins(n, 0, H - 1, 90 + n);
      hist_options on;
      on.overrides.load_ahead = hist_toggle::on;
      on.overrides.thread_private = hist_toggle::off;  // the compare-and-swap kernels with loads ahead too
      const auto ran_ahead = [](const hist_plan& p) { EXPECT_TRUE(p.host || p.load_ahead) << p.describe(); };
      check_all<plus<std::int32_t>>(ctx(), bins, std::vector<std::int32_t>(std::size_t(n), 1),
                                    std::vector<std::int32_t>(std::size_t(H), 0), exact<std::int32_t>, {on}, ran_ahead);
      check_all<saturating_plus<std::uint32_t, 24>>(ctx(), bins, random_values<std::uint32_t>(n, 91, 0, 300),
                                                    identity_histogram<saturating_plus<std::uint32_t, 24>>(H),
                                                    exact<std::uint32_t>, {on}, ran_ahead);
    }
  }
}

TEST_P(Hist, EmptyInputLeavesHistogramUnchanged) {
  check_all<plus<std::int32_t>>(ctx(), {}, {}, std::vector<std::int32_t>(100, 7), exact<std::int32_t>);
  // No bins at all.
  check_all<plus<std::int32_t>>(ctx(), random_bins(1000, -3, 3, 1), random_values<std::int32_t>(1000, 2), {},
                                exact<std::int32_t>);
}

TEST_P(Hist, FewerElementsThanBinsAccumulatesIntoInitial) {
  const std::int64_t H = 100'000, n = 777;
  std::vector<std::int32_t> initial(static_cast<std::size_t>(H));
  for (std::int64_t b = 0; b < H; ++b) initial[std::size_t(b)] = std::int32_t(b % 13);
  check_all<plus<std::int32_t>>(ctx(), random_bins(n, 0, H - 1, 5), random_values<std::int32_t>(n, 6), initial,
                                exact<std::int32_t>);
}

TEST_P(Hist, AllElementsInOneBin) {
  const std::int64_t n = soac::testing::sanitizer_scaled(100'000);
  check_all<plus<std::int32_t>>(ctx(), std::vector<std::int64_t>(std::size_t(n), 17), random_values<std::int32_t>(n, 7),
                                std::vector<std::int32_t>(1000, 0), exact<std::int32_t>);
  check_all<saturating_plus<std::uint32_t, 24>>(ctx(), std::vector<std::int64_t>(std::size_t(n), 3),
                                                random_values<std::uint32_t>(n, 8, 0, 1000),
                                                std::vector<std::uint32_t>(5, 0), exact<std::uint32_t>);
}

TEST_P(Hist, OutOfRangeBinsAreIgnored) {
  const std::int64_t H = 500, n = 60'000;
  auto bins = random_bins(n, -600, 1100, 9);
  bins[0] = std::numeric_limits<std::int64_t>::min();
  bins[1] = std::numeric_limits<std::int64_t>::max();
  bins[2] = H;
  bins[3] = -1;
  check_all<plus<std::int32_t>>(ctx(), bins, random_values<std::int32_t>(n, 10), std::vector<std::int32_t>(H, 0),
                                exact<std::int32_t>);
}

TEST_P(Hist, HardwareOperators) {
  const std::int64_t H = 3000, n = 100'000;
  const auto bins = random_bins(n, -10, H + 10, 21);
  check_all<minimum<std::int32_t>>(ctx(), bins, random_values<std::int32_t>(n, 22, -1'000'000, 1'000'000),
                                   std::vector<std::int32_t>(H, minimum<std::int32_t>::identity()), exact<std::int32_t>);
  check_all<maximum<std::int64_t>>(ctx(), bins, random_values<std::int64_t>(n, 23, -(std::int64_t{1} << 40), 1 << 20),
                                   std::vector<std::int64_t>(H, maximum<std::int64_t>::identity()), exact<std::int64_t>);
  check_all<plus<std::uint64_t>>(ctx(), bins, random_values<std::uint64_t>(n, 24, 0, std::int64_t{1} << 40),
                                 std::vector<std::uint64_t>(H, 0), exact<std::uint64_t>);
  check_all<bit_or<std::uint32_t>>(ctx(), bins, random_values<std::uint32_t>(n, 25, 0, 1 << 30),
                                   std::vector<std::uint32_t>(H, 0), exact<std::uint32_t>);
  static_assert(hist_atomic<minimum<std::int32_t>>::kind == atomic_kind::hdw);
  static_assert(hist_atomic<plus<float>>::kind == atomic_kind::hdw);
  static_assert(hist_atomic<maximum<float>>::kind == atomic_kind::cas);
  static_assert(hist_atomic<saturating_plus<std::uint32_t, 24>>::kind == atomic_kind::cas);
  static_assert(hist_atomic<u32_arg_max>::kind == atomic_kind::cas);
  static_assert(hist_atomic<f64_arg_max>::kind == atomic_kind::xcg);
  static_assert(hist_atomic<elementwise<plus<float>, 3>>::kind == atomic_kind::hdw);
}

TEST_P(Hist, FloatAddWithinTolerance) {
  const std::int64_t H = 20'000, n = 300'000;
  const auto bins = random_bins(n, 0, H - 1, 31);
  std::vector<float> values(static_cast<std::size_t>(n));
  for (std::int64_t i = 0; i < n; ++i) values[std::size_t(i)] = float(datasets::random_unit(31, 3, std::uint64_t(i)) - 0.25);
  std::vector<double> magnitude(std::size_t(H), 0.0);
  for (std::int64_t i = 0; i < n; ++i) magnitude[std::size_t(bins[std::size_t(i)])] += std::fabs(values[std::size_t(i)]);
  auto close = [&](const std::vector<float>& e, const std::vector<float>& g) {
    return validate::compare_close(e, g, magnitude, 1e-5, 1e-6);
  };
  check_all<plus<float>>(ctx(), bins, values, std::vector<float>(H, 0.0f), close);
  // Forced CAS for a hardware-atomic operator gives the same sums.
  hist_options cas;
  cas.force_atomic = true;
  cas.atomic = atomic_kind::cas;
  check_all<plus<float>>(ctx(), bins, values, std::vector<float>(H, 0.0f), close, {cas});
}

TEST_P(Hist, CasOperators) {
  for (std::int64_t H : {31, 5000, 200'000}) {
    const std::int64_t n = soac::testing::sanitizer_scaled(120'000);
    const auto bins = random_bins(n, 0, H - 1, 41 + H);
    check_all<saturating_plus<std::uint32_t, 24>>(ctx(), bins, random_values<std::uint32_t>(n, 42, 0, 1 << 20),
                                                  std::vector<std::uint32_t>(std::size_t(H), 0), exact<std::uint32_t>);
    check_all<maximum<float>>(ctx(), bins, random_values<float>(n, 43, -100000, 100000),
                              std::vector<float>(std::size_t(H), maximum<float>::identity()), exact<float>);
  }
}

TEST_P(Hist, CasBlocksSampleTheirOwnElements) {
  // Shared CAS blocks pick their elements per step from a sample of their own part: blocks over the
  // first half (one hot bin) take contended steps, blocks over the second half (uniform over 4000
  // bins) wide ones; both halves must land.
  const std::int64_t n = 400'000, H = 4000;
  auto bins = random_bins(n, 0, H - 1, 77);
  std::fill(bins.begin(), bins.begin() + n / 2, 1234);
  check_all<saturating_plus<std::uint32_t, 24>>(ctx(), bins, random_values<std::uint32_t>(n, 78, 0, 300),
                                                std::vector<std::uint32_t>(std::size_t(H), 0), exact<std::uint32_t>);
}

template <class V>
std::ostream& operator<<(std::ostream& s, const indexed<V, std::uint32_t>& x) { return s << "(" << x.value << ", #" << x.index << ")"; }

template <class V>
validate::report exact_pairs(const std::vector<indexed<V, std::uint32_t>>& e, const std::vector<indexed<V, std::uint32_t>>& g) {
  return validate::compare_bins(e, g, [](const auto& a, const auto& b) { return a == b; },
                                [](const auto& x) {
                                  std::ostringstream s;
                                  s << x;
                                  return s.str();
                                });
}

TEST_P(Hist, ArgmaxWithTiesToLowerIndexOnCasAndLocks) {
  for (std::int64_t H : {7, 3000, 100'000}) {
    const std::int64_t n = soac::testing::sanitizer_scaled(80'000);
    const auto bins = random_bins(n, -2, H + 2, 51 + H);
    const auto raw = random_values<std::uint32_t>(n, 52, 0, 40);  // few values: many ties
    std::vector<indexed<std::uint32_t, std::uint32_t>> values(static_cast<std::size_t>(n));
    for (std::int64_t i = 0; i < n; ++i) values[std::size_t(i)] = {raw[std::size_t(i)], std::uint32_t(i)};
    std::vector<indexed<std::uint32_t, std::uint32_t>> init(std::size_t(H), u32_arg_max::identity());
    check_all<u32_arg_max>(ctx(), bins, values, init, exact_pairs<std::uint32_t>);
    auto locked = strategies();
    for (auto& o : locked) o.force_atomic = true, o.atomic = atomic_kind::xcg;
    check_all<u32_arg_max>(ctx(), bins, values, init, exact_pairs<std::uint32_t>, locked);
    // A 16-byte value has no CAS: the trait picks the lock path itself.
    std::vector<indexed<double, std::uint32_t>> wide(static_cast<std::size_t>(n));
    for (std::int64_t i = 0; i < n; ++i) wide[std::size_t(i)] = {double(raw[std::size_t(i)]) - 20.5, std::uint32_t(i)};
    check_all<f64_arg_max>(ctx(), bins, wide, std::vector<indexed<double, std::uint32_t>>(std::size_t(H), f64_arg_max::identity()),
                               exact_pairs<double>);
  }
}

// Issue 28, item 5: results that must not vary do not. Every strategy of strategies() (and the
// lock path), run twice, against the host backend's result of the same input: integer-valued
// operators bit for bit (every order of combining gives the same bits), float sums within the
// bound of recursive summation in any order, (count - 1) 2^-24 sum |v| per bin, which any
// association of the bin's additions meets.
template <class Op, class Same>
void check_identical_runs(context& ctx, const std::vector<std::int64_t>& bins, const std::vector<typename Op::value_type>& values,
                          std::int64_t H, Same same, std::vector<hist_options> options = strategies()) {
  using V = typename Op::value_type;
  const auto run = [&](context& on, const hist_options& o) {
    buffer<std::int64_t> b(on, std::span<const std::int64_t>(bins));
    buffer<V> v(on, std::span<const V>(values));
    buffer<V> h(on, std::span<const V>(identity_histogram<Op>(H)));
    const hist_plan plan = hist(on, o, std::int64_t(bins.size()), from_arrays<V>{b.data(), v.data()}, h.view(), Op{});
    return std::pair{h.to_vector(), plan.describe()};
  };
  context host(backend::host);
  const auto baseline = run(host, {}).first;
  for (const auto& o : options)
    for (int again = 0; again < 2; ++again) {
      std::pair<std::vector<V>, std::string> got;
      try {
        got = run(ctx, o);
      } catch (const usage_error& e) {
        ASSERT_NE(o.strategy, hist_strategy::automatic) << e.what();  // a forced shape that cannot fit
        break;
      }
      std::int64_t differ = 0;
      for (std::int64_t k = 0; k < H; ++k) differ += !same(got.first[std::size_t(k)], baseline[std::size_t(k)], k);
      EXPECT_EQ(differ, 0) << "H = " << H << ", run " << again << ": " << got.second;
    }
}

template <class V>
bool same_bits(const V& a, const V& b, std::int64_t) { return std::memcmp(&a, &b, sizeof(V)) == 0; }

TEST_P(Hist, IntegerResultsAreBitIdenticalAcrossStrategiesRunsAndBackends) {
  for (std::int64_t H : {37, 4000, 150'000}) {
    const std::int64_t n = 60'000;
    auto bins = random_bins(n, -3, H + 3, 90 + H);
    std::fill(bins.begin(), bins.begin() + n / 4, H / 2);  // a hot bin: contended updates in every strategy
    check_identical_runs<plus<std::int32_t>>(ctx(), bins, random_values<std::int32_t>(n, 91, -1000, 1000), H,
                                             same_bits<std::int32_t>);
    check_identical_runs<saturating_plus<std::uint32_t, 24>>(ctx(), bins, random_values<std::uint32_t>(n, 92, 0, 1 << 10), H,
                                                             same_bits<std::uint32_t>);
    const auto raw = random_values<std::uint32_t>(n, 93, 0, 40);  // few values: ties decided by index
    std::vector<indexed<std::uint32_t, std::uint32_t>> pairs(static_cast<std::size_t>(n));
    for (std::int64_t i = 0; i < n; ++i) pairs[std::size_t(i)] = {raw[std::size_t(i)], std::uint32_t(i)};
    auto locked = strategies();
    for (auto& o : locked) o.force_atomic = true, o.atomic = atomic_kind::xcg;
    for (const auto& options : {strategies(), locked})
      check_identical_runs<u32_arg_max>(ctx(), bins, pairs, H, same_bits<indexed<std::uint32_t, std::uint32_t>>, options);
  }
}

TEST_P(Hist, FloatSumsAgreeWithinTheSummationBoundAcrossStrategiesRunsAndBackends) {
  const std::int64_t H = 3000, n = 80'000;
  const auto bins = random_bins(n, 0, H - 1, 95);
  std::vector<float> values(static_cast<std::size_t>(n));
  for (std::int64_t i = 0; i < n; ++i) values[std::size_t(i)] = float(datasets::random_unit(95, 3, std::uint64_t(i)) - 0.25);
  std::vector<double> magnitude(std::size_t(H), 0.0), count(std::size_t(H), 0.0);
  for (std::int64_t i = 0; i < n; ++i) {
    magnitude[std::size_t(bins[std::size_t(i)])] += std::fabs(values[std::size_t(i)]);
    count[std::size_t(bins[std::size_t(i)])] += 1;
  }
  // Two results each within (count - 1) u sum|v| of the exact sum are within twice that of each other.
  const auto close = [&](float a, float b, std::int64_t k) {
    return std::fabs(double(a) - double(b)) <= 2 * std::max(count[std::size_t(k)] - 1, 0.0) * 0x1p-24 * magnitude[std::size_t(k)];
  };
  check_identical_runs<plus<float>>(ctx(), bins, values, H, close);
}

TEST_P(Hist, LockPathInOneHotBin) {
  const std::int64_t n = soac::testing::sanitizer_scaled(20'000);
  std::vector<indexed<double, std::uint32_t>> values(static_cast<std::size_t>(n));
  for (std::int64_t i = 0; i < n; ++i) values[std::size_t(i)] = {double(i % 97), std::uint32_t(i)};
  check_all<f64_arg_max>(ctx(), std::vector<std::int64_t>(std::size_t(n), 1), values,
                             std::vector<indexed<double, std::uint32_t>>(3, f64_arg_max::identity()), exact_pairs<double>);
}

using vec3 = vec<std::int32_t, 3>;
bool operator==(const vec3& a, const vec3& b) { return a[0] == b[0] && a[1] == b[1] && a[2] == b[2]; }

TEST_P(Hist, VectorBinsUpdateElementByElement) {
  const std::int64_t H = 1000, n = 90'000;
  const auto bins = random_bins(n, -1, H, 61);
  const auto raw = random_values<std::int32_t>(n, 62, -100, 100);
  std::vector<vec3> values(static_cast<std::size_t>(n));
  for (std::int64_t i = 0; i < n; ++i) values[std::size_t(i)] = vec3{{raw[std::size_t(i)], 1, std::int32_t(i % 5)}};
  auto cmp = [](const std::vector<vec3>& e, const std::vector<vec3>& g) {
    return validate::compare_bins(e, g, [](const vec3& a, const vec3& b) { return a == b; },
                                  [](const vec3& x) { return std::to_string(x[0]) + "," + std::to_string(x[1]) + "," + std::to_string(x[2]); });
  };
  check_all<elementwise<plus<std::int32_t>, 3>>(ctx(), bins, values, std::vector<vec3>(H, vec3{{0, 0, 0}}), cmp);
}

// Several updates per element: a byte histogram over 32-bit words.
struct byte_updates {
  const std::uint32_t* words;
  SOAC_HD bin_values<std::int32_t, 4> operator()(std::int64_t i) const {
    bin_values<std::int32_t, 4> r;
    for (int k = 0; k < 4; ++k) r[k] = {std::int64_t((words[i] >> (8 * k)) & 255), 1};
    return r;
  }
};

TEST_P(Hist, SeveralUpdatesPerElement) {
  const std::int64_t n = 100'003;
  std::vector<std::uint32_t> words(static_cast<std::size_t>(n));
  datasets::fill_random_u32(words, 71, 1);
  std::vector<std::int32_t> expected(256, 0);
  for (auto w : words)
    for (int k = 0; k < 4; ++k) ++expected[(w >> (8 * k)) & 255];
  buffer<std::uint32_t> d(ctx(), std::span<const std::uint32_t>(words));
  for (const auto& o : strategies()) {
    buffer<std::int32_t> h(ctx(), std::span<const std::int32_t>(std::vector<std::int32_t>(256, 0)));
    const auto plan = hist(ctx(), o, n, byte_updates{d.data()}, h.view(), plus<std::int32_t>{});
    EXPECT_EQ(h.to_vector(), expected) << plan.describe();
    if (!ctx().is_cuda()) break;
  }
}

// Batched: histogram h of H bins over elements [h * seg, (h + 1) * seg).
TEST_P(Hist, BatchedHistograms) {
  for (auto [batches, seg, H] : {std::tuple<std::int64_t, std::int64_t, std::int64_t>{7, 1000, 50}, {300, 97, 22},
                                 {3, 20'000, 200'000}, {1, 5000, 31}, {0, 10, 5}}) {
    const std::int64_t n = batches * seg;
    const auto bins = random_bins(n, -1, H, 81 + H);
    const auto values = random_values<std::int32_t>(n, 82);
    std::vector<std::int32_t> expected(std::size_t(batches * H), 0);
    for (std::int64_t i = 0; i < n; ++i) {
      const auto b = bins[std::size_t(i)];
      if (b >= 0 && b < H) expected[std::size_t((i / seg) * H + b)] += values[std::size_t(i)];
    }
    buffer<std::int64_t> bd(ctx(), std::span<const std::int64_t>(bins));
    buffer<std::int32_t> vd(ctx(), std::span<const std::int32_t>(values));
    for (auto [s, cluster] : {std::pair{hist_strategy::automatic, 0}, {hist_strategy::automatic, 2}, {hist_strategy::global, 0}}) {
      hist_options o;
      o.strategy = s;
      o.overrides.cluster = cluster;
      o.overrides.block_partials = hist_toggle::on;  // batched histograms fold without them
      buffer<std::int32_t> h(ctx(), std::span<const std::int32_t>(std::vector<std::int32_t>(expected.size(), 0)));
      const auto plan = hist_batched(ctx(), o, batches, seg, from_arrays<std::int32_t>{bd.data(), vd.data()}, h.view(), H,
                                     plus<std::int32_t>{});
      EXPECT_EQ(h.to_vector(), expected) << plan.describe();
    }
  }
}

// Horizontal fusion, k-means style: counts (int add) and 4-d sums (elementwise float add).
using vec4f = vec<float, 4>;
struct kmeans_updates {
  const std::int64_t* member;
  const float* points;
  SOAC_HD fused_updates<bin_value<std::int32_t>, bin_value<vec4f>> operator()(std::int64_t i) const {
    vec4f p;
    for (int j = 0; j < 4; ++j) p[j] = points[4 * i + j];
    return {{member[i], 1}, {member[i], p}};
  }
};

TEST_P(Hist, FusedCountsAndVectorSums) {
  for (std::int64_t k : {5, 1024, 40'000}) {
    const std::int64_t n = 50'000;
    const auto member = random_bins(n, 0, k - 1, 91 + k);
    std::vector<float> points(static_cast<std::size_t>(4 * n));
    for (std::size_t j = 0; j < points.size(); ++j) points[j] = float(datasets::random_unit(92, 1, j));
    std::vector<std::int32_t> counts(std::size_t(k), 0);
    std::vector<double> sums(static_cast<std::size_t>(4 * k), 0.0);
    for (std::int64_t i = 0; i < n; ++i) {
      ++counts[std::size_t(member[std::size_t(i)])];
      for (int j = 0; j < 4; ++j) sums[std::size_t(4 * member[std::size_t(i)] + j)] += points[std::size_t(4 * i + j)];
    }
    buffer<std::int64_t> md(ctx(), std::span<const std::int64_t>(member));
    buffer<float> pd(ctx(), std::span<const float>(points));
    for (auto s : {hist_strategy::automatic, hist_strategy::global}) {
      hist_options o;
      o.strategy = s;
      buffer<std::int32_t> c(ctx(), std::span<const std::int32_t>(std::vector<std::int32_t>(std::size_t(k), 0)));
      buffer<vec4f> sm(ctx(), std::span<const vec4f>(std::vector<vec4f>(std::size_t(k), vec4f{{0, 0, 0, 0}})));
      const auto plan = hist_fused(ctx(), o, n, kmeans_updates{md.data(), pd.data()}, c.view(), plus<std::int32_t>{},
                                   sm.view(), elementwise<plus<float>, 4>{});
      EXPECT_EQ(c.to_vector(), counts) << plan.describe();
      const auto got = sm.to_vector();
      for (std::int64_t b = 0; b < k; ++b)
        for (int j = 0; j < 4; ++j)
          ASSERT_NEAR(got[std::size_t(b)][j], sums[std::size_t(4 * b + j)], 1e-4 * (1 + counts[std::size_t(b)])) << plan.describe();
    }
  }
}

TEST_P(Hist, BadOptionsAreUsageErrors) {
  buffer<std::int32_t> h(ctx(), 10);
  auto f = [] SOAC_HD(std::int64_t i) { return bin_value<std::int32_t>{i, 1}; };
  hist_options o;
  o.multi = -1;
  EXPECT_THROW(hist(ctx(), o, 10, f, h.view(), plus<std::int32_t>{}), usage_error);
  EXPECT_THROW(hist(ctx(), hist_options{}, -1, f, h.view(), plus<std::int32_t>{}), usage_error);
  hist_options hw;
  hw.force_atomic = true;
  hw.atomic = atomic_kind::hdw;
  EXPECT_THROW(hist(ctx(), hw, 10, f, h.view(), saturating_plus<std::int32_t, 24>{}), usage_error);
  EXPECT_THROW(hist_batched(ctx(), hist_options{}, 3, 4, f, h.view(), 4, plus<std::int32_t>{}), usage_error);
  hist_options odd;
  odd.overrides.cluster = 3;
  EXPECT_THROW(hist(ctx(), odd, 10, f, h.view(), plus<std::int32_t>{}), usage_error);
}

// Clusters are not only accepted but used where the device has them (the sweeps above would
// pass just as well if every launch fell back to single blocks).
TEST_P(Hist, ClustersRunWhereTheDeviceHasThem) {
  if (!ctx().is_cuda() || ctx().props().compute_major < 9) GTEST_SKIP() << "needs a GPU with thread-block clusters";
  const std::int64_t H = 5000, n = 50'000;  // a grid of fewer blocks than one wave
  const auto bins = random_bins(n, 0, H - 1, 91);
  const auto values = random_values<std::uint32_t>(n, 92, 0, 1 << 20);
  std::vector<std::uint32_t> expected(std::size_t(H), 0);
  validate::hist_reference<std::int64_t, std::uint32_t>(expected, bins, values, saturating_plus<std::uint32_t, 24>{});
  buffer<std::int64_t> b(ctx(), std::span<const std::int64_t>(bins));
  buffer<std::uint32_t> v(ctx(), std::span<const std::uint32_t>(values));
  for (int c : {2, 4}) {
    hist_options o;
    o.strategy = hist_strategy::shared;
    o.overrides.cluster = c;
    buffer<std::uint32_t> h(ctx(), std::span<const std::uint32_t>(std::vector<std::uint32_t>(std::size_t(H), 0)));
    const auto plan = hist(ctx(), o, n, from_arrays<std::uint32_t>{b.data(), v.data()}, h.view(), saturating_plus<std::uint32_t, 24>{});
    EXPECT_EQ(plan.cluster, c) << plan.describe();
    EXPECT_EQ(h.to_vector(), expected) << plan.describe();
  }
}

// Likewise block partials, alone and under clusters, and the plan says when they ran.
TEST_P(Hist, BlockPartialsRunWhenAsked) {
  if (!ctx().is_cuda()) GTEST_SKIP() << "the host backend has no blocks";
  const std::int64_t H = 3000, n = 300'000;
  const auto bins = random_bins(n, -2, H + 2, 95);
  const auto values = random_values<std::uint32_t>(n, 96, 0, 1 << 22);
  std::vector<std::uint32_t> initial(static_cast<std::size_t>(H));
  for (std::int64_t b = 0; b < H; ++b) initial[std::size_t(b)] = std::uint32_t(b * 977 % 5000);
  std::vector<std::uint32_t> expected = initial;
  validate::hist_reference<std::int64_t, std::uint32_t>(expected, bins, values, saturating_plus<std::uint32_t, 24>{});
  buffer<std::int64_t> b(ctx(), std::span<const std::int64_t>(bins));
  buffer<std::uint32_t> v(ctx(), std::span<const std::uint32_t>(values));
  const int widest = ctx().props().compute_major >= 9 ? 2 : 1;
  for (int c = 1; c <= widest; ++c) {
    for (hist_toggle t : {hist_toggle::on, hist_toggle::off}) {
      hist_options o;
      o.strategy = hist_strategy::shared;
      o.passes = 1;
      o.overrides.cluster = c;
      o.overrides.block_partials = t;
      buffer<std::uint32_t> h(ctx(), std::span<const std::uint32_t>(initial));
      const auto plan = hist(ctx(), o, n, from_arrays<std::uint32_t>{b.data(), v.data()}, h.view(), saturating_plus<std::uint32_t, 24>{});
      EXPECT_EQ(plan.block_partials, t == hist_toggle::on) << plan.describe();
      EXPECT_EQ(plan.cluster, c) << plan.describe();
      EXPECT_EQ(h.to_vector(), expected) << plan.describe();
    }
  }
}

// Split histograms run where asked (the sweeps above would pass as well if every split were
// refused), for hardware and CAS kinds, with slices of uneven fill and bins out of range.
TEST_P(Hist, SplitHistogramsRunThroughDistributedSharedMemory) {
  if (!ctx().is_cuda() || ctx().props().compute_major < 9) GTEST_SKIP() << "needs a GPU with thread-block clusters";
  const std::int64_t H = 200'003, n = 400'000;
  const auto bins = random_bins(n, -5, H + 5, 97);
  const auto values = random_values<std::uint32_t>(n, 98, 0, 1 << 20);
  const auto wide = random_values<std::int64_t>(n, 99, -(std::int64_t{1} << 40), 1 << 20);
  using u32 = std::uint32_t;
  // (H / 2 four-byte bins or H / 4 eight-byte ones do not fit one block.)
  for (int c : {4, 8, 16}) {
    hist_options o;
    o.overrides.split = c;
    const auto ran_split = [c](const hist_plan& plan) { EXPECT_EQ(plan.split, c) << plan.describe(); };
    check_all<plus<u32>>(ctx(), bins, values, identity_histogram<plus<u32>>(H), exact<u32>, {o}, ran_split);
    check_all<saturating_plus<u32, 24>>(ctx(), bins, values, identity_histogram<saturating_plus<u32, 24>>(H), exact<u32>,
                                        {o}, ran_split);
    if (c >= 8)  // 8-byte hardware max: a CAS loop (remote_update)
      check_all<maximum<std::int64_t>>(ctx(), bins, wide, identity_histogram<maximum<std::int64_t>>(H), exact<std::int64_t>,
                                       {o}, ran_split);
  }
}

// Partitioned: many buckets, some empty, skewed sizes (a part of one block spans several buckets,
// one bucket spans many parts), with ignored bins, against every operator class it takes.
TEST_P(Hist, PartitionedBucketsAnyShape) {
  if (!ctx().is_cuda()) GTEST_SKIP() << "the host backend has no buckets";
  const std::int64_t H = 1'500'000, n = 600'001;
  // Half the elements in the first 30K bins, the rest spread (and a few out of range); bins
  // 600K-900K never hit, so their buckets are empty.
  auto bins = random_bins(n, -3, H + 3, 131);
  const auto hot = random_bins(n, 0, 29'999, 132);
  for (std::size_t i = 0; i < bins.size(); ++i) {
    if (i % 2 == 0) bins[i] = hot[i];
    else if (bins[i] >= 600'000 && bins[i] < 900'000) bins[i] -= 300'000;
  }
  const auto values = random_values<std::uint32_t>(n, 133, 0, 1 << 20);
  hist_options o;
  o.overrides.partition = hist_toggle::on;
  const auto ran_partitioned = [](const hist_plan& plan) {
    EXPECT_TRUE(plan.partitioned) << plan.describe();
    EXPECT_GT(plan.passes, 50) << plan.describe();
  };
  using u32 = std::uint32_t;
  check_all<plus<u32>>(ctx(), bins, values, identity_histogram<plus<u32>>(H), exact<u32>, {o}, ran_partitioned);
  check_all<saturating_plus<u32, 24>>(ctx(), bins, values, identity_histogram<saturating_plus<u32, 24>>(H), exact<u32>, {o},
                                      ran_partitioned);
  check_all<maximum<u32>>(ctx(), bins, values, identity_histogram<maximum<u32>>(H), exact<u32>, {o}, ran_partitioned);
}

SOAC_INSTANTIATE_BACKENDS(Hist);

// ---- The models, on the paper's GPU (RTX 2080 Ti: 68 SMs x 1024 threads, 48 KiB, 5.5 MiB L2).
device_properties rtx2080ti() {
  device_properties p;
  p.sm_count = 68;
  p.max_threads_per_sm = 1024;
  p.max_threads_per_block = 1024;
  p.shared_per_block = p.shared_per_block_optin = 48 * 1024;
  p.shared_per_sm = 48 * 1024 + hist_tuning::shared_reserved_per_block;
  p.l2_bytes = 5632 * 1024;
  p.compute_major = 7;
  p.compute_minor = 5;
  return p;
}

// An H100's SMs, threads, shared memory and L2 (what the H100 re-fits were measured on).
device_properties h100() {
  device_properties p = rtx2080ti();
  p.sm_count = 132;
  p.max_threads_per_sm = 2048;
  p.shared_per_block_optin = 227 * 1024;
  p.shared_per_sm = 228 * 1024;
  p.l2_bytes = std::size_t{50} << 20;
  p.compute_major = 9;
  p.compute_minor = 0;
  return p;
}

constexpr std::int64_t N50M = 50'000'000;

TEST(HistModel, SharedMemoryReproducesTableI) {
  const auto p = rtx2080ti();
  const std::int64_t H[] = {31, 127, 505, 2048, 6144, 12288, 24576, 49152};
  const int hdw[][2] = {{396, 1}, {96, 1}, {24, 1}, {6, 1}, {2, 1}, {1, 1}, {1, 2}, {1, 4}};
  const int xcg[][2] = {{132, 1}, {32, 1}, {8, 1}, {2, 1}, {1, 2}, {1, 3}, {1, 6}, {1, 12}};
  hist_options paper;  // eqs. 1-3 as published: no thread-private shape
  paper.overrides.thread_private = hist_toggle::off;
  for (int j = 0; j < 8; ++j) {
    // CAS follows the paper's rule exactly (HDW is capped on Hopper, see hdw_multi_bytes).
    const auto a = plan_hist_shared(p, N50M, H[j], 4, atomic_kind::cas, paper);
    EXPECT_EQ(a.model_multi, hdw[j][0]) << "H=" << H[j];
    // What runs: every copy (CAS keeps the contiguous layout, see plan_hist_shared).
    EXPECT_EQ(a.multi, hdw[j][0]) << "H=" << H[j];
    EXPECT_EQ(a.passes, hdw[j][1]) << "H=" << H[j];
    const auto x = plan_hist_shared(p, N50M, H[j], 12, atomic_kind::xcg, paper);
    EXPECT_EQ(x.model_multi, xcg[j][0]) << "H=" << H[j];
    EXPECT_EQ(x.passes, xcg[j][1]) << "H=" << H[j];
  }
}

// The HDW rows of the paper's Table I need its u = 2 (re-fitted to 8 for the H100, see
// hist_tuning::u_hdw): they equal the CAS rows at half the M; CAS and XCG are checked exactly.
TEST(HistModel, GlobalMemoryReproducesTableI) {
  const auto p = rtx2080ti();
  const std::int64_t H[] = {12288, 24576, 49152, 196608, 393216, 786432, 1572864};
  struct row { atomic_kind k; std::size_t el; double rf; int ms[7][2]; };
  const row rows[] = {
      {atomic_kind::cas, 4, 1, {{46, 1}, {23, 1}, {11, 1}, {2, 1}, {1, 1}, {1, 2}, {1, 3}}},
      {atomic_kind::cas, 4, 63, {{138, 1}, {69, 1}, {34, 1}, {8, 1}, {4, 1}, {2, 1}, {1, 1}}},
      {atomic_kind::xcg, 12, 1, {{15, 1}, {7, 1}, {3, 1}, {1, 1}, {1, 2}, {1, 3}, {1, 5}}},
      {atomic_kind::xcg, 12, 63, {{69, 1}, {34, 1}, {17, 1}, {4, 1}, {2, 1}, {1, 1}, {1, 1}}},
  };
  for (const auto& r : rows)
    for (int j = 0; j < 7; ++j) {
      const auto g = plan_hist_global(p, N50M, H[j], r.el, r.k, r.rf, {});
      EXPECT_EQ(g.multi, r.ms[j][0]) << to_string(r.k) << " RF=" << r.rf << " H=" << H[j];
      EXPECT_EQ(g.passes, r.ms[j][1]) << to_string(r.k) << " RF=" << r.rf << " H=" << H[j];
    }
}

TEST(HistModel, SwitchesToGlobalMemoryOnPasses) {
  const auto p = rtx2080ti();
  auto choose = [&](std::int64_t H, atomic_kind k, std::size_t el) {
    return plan_hist(p, N50M, H, el, k, {}, [] { return 1.0; }).strategy;
  };
  EXPECT_EQ(choose(24576, atomic_kind::hdw, 4), hist_strategy::shared);
  EXPECT_EQ(choose(49152, atomic_kind::hdw, 4), hist_strategy::shared);   // S = 4 <= 8 (H100 re-fit)
  EXPECT_EQ(choose(196608, atomic_kind::hdw, 4), hist_strategy::global);  // S = 16
  // An H100's shared memory: S = 7 at 393K stays shared (passes side by side), S = 14 does not.
  const device_properties h100 = ::h100();
  EXPECT_EQ(plan_hist(h100, N50M, 393216, 4, atomic_kind::hdw, {}, {}).strategy, hist_strategy::shared);
  EXPECT_EQ(plan_hist(h100, N50M, 786432, 4, atomic_kind::hdw, {}, {}).strategy, hist_strategy::global);
  EXPECT_EQ(choose(12288, atomic_kind::cas, 4), hist_strategy::shared);   // S = 1
  EXPECT_EQ(choose(49152, atomic_kind::cas, 4), hist_strategy::shared);   // S = 4
  EXPECT_EQ(choose(98304, atomic_kind::cas, 4), hist_strategy::global);   // S = 8, above the H100 re-fit's 7
  // On an H100: saturated add at 147K (S = 3) stays shared, from 196K (S = 4) on it is
  // partitioned by chunk (see PartitionedBucketsFitTwoBlocksPerSm); without partitions 393K stays
  // shared, 786K (S = 14) splits over a cluster (see SplitForCasBeyondSharedPasses) and 1.5M goes
  // global; arg_max, whose tolerance makes global M = 1 cheap, leaves shared memory at S = 2 ...
  hist_options whole;
  whole.overrides.partition = hist_toggle::off;
  const auto sat = [&](std::int64_t H, const hist_options& o) { return plan_hist(h100, N50M, H, 4, atomic_kind::cas, o, [] { return 1.0; }); };
  EXPECT_EQ(sat(147456, {}).strategy, hist_strategy::shared);
  EXPECT_EQ(sat(147456, {}).passes, 3);
  EXPECT_FALSE(sat(147456, {}).partitioned);
  EXPECT_EQ(sat(196608, whole).passes, 4);
  for (std::int64_t H : {196608, 393216, 786432, 1572864}) EXPECT_TRUE(sat(H, {}).partitioned) << H;
  EXPECT_EQ(sat(393216, whole).strategy, hist_strategy::shared);
  EXPECT_FALSE(sat(393216, whole).partitioned);
  EXPECT_EQ(sat(1572864, whole).strategy, hist_strategy::global);
  // More buckets than an 8-bit digit ranks (255 * 24832 bins): global.
  EXPECT_EQ(sat(255 * 24832 + 1, {}).strategy, hist_strategy::global);
  const double u_argmax = detail::model_contention_tolerance<u32_arg_max>(atomic_kind::cas);
  // ... and where its one pass takes a whole SM (24K 8-byte bins: one block per SM).
  EXPECT_EQ(plan_hist(h100, N50M, 12288, 8, atomic_kind::cas, {}, {}, u_argmax).strategy, hist_strategy::shared);
  EXPECT_EQ(plan_hist(h100, N50M, 24576, 8, atomic_kind::cas, {}, {}, u_argmax).strategy, hist_strategy::global);
  EXPECT_EQ(plan_hist(h100, N50M, 49152, 8, atomic_kind::cas, {}, {}, u_argmax).strategy, hist_strategy::global);
  EXPECT_EQ(plan_hist(h100, N50M, 24576, 8, atomic_kind::cas, {}, {}).strategy, hist_strategy::shared);  // writes
  EXPECT_EQ(choose(2048, atomic_kind::xcg, 12), hist_strategy::shared);
  EXPECT_EQ(choose(6144, atomic_kind::xcg, 12), hist_strategy::global);
  bool inspected = false;
  const auto g = plan_hist(p, N50M, 1 << 20, 4, atomic_kind::cas, {}, [&] { inspected = true; return 63.0; });
  EXPECT_TRUE(inspected);
  EXPECT_TRUE(g.race_factor_estimated);
  EXPECT_EQ(g.race_factor, 63.0);
}

// Beyond the CAS pass limit, operators that write split the histogram over the smallest cluster
// whose slices fit one block (hist_tuning::split_note); forced splits are checked.
TEST(HistModel, SplitForCasBeyondSharedPasses) {
  const device_properties p = h100();
  // (Partitions, which the model prefers for these, are off.)
  const auto planned = [&](std::int64_t H, atomic_kind k, std::size_t el, double u = 0, hist_options o = {}) {
    if (o.overrides.partition == hist_toggle::automatic) o.overrides.partition = hist_toggle::off;
    return plan_hist(p, N50M, H, el, k, o, {}, u);
  };
  const auto big = planned(786432, atomic_kind::cas, 4);
  EXPECT_EQ(big.split, 16) << big.describe();
  EXPECT_EQ(big.chunk, 49152);
  EXPECT_TRUE(big.block_partials);
  EXPECT_EQ(big.items_per_thread, hist_tuning::split_items_cas);
  EXPECT_EQ(planned(393216, atomic_kind::cas, 4).split, 1);  // shared, S = 7
  EXPECT_EQ(planned(393216, atomic_kind::cas, 4).strategy, hist_strategy::shared);
  EXPECT_EQ(planned(1572864, atomic_kind::cas, 4).strategy, hist_strategy::global);  // 16 slices do not fit
  EXPECT_EQ(planned(786432, atomic_kind::cas, 8, 1e9).split, 1);                     // contention-tolerant
  EXPECT_EQ(planned(786432, atomic_kind::hdw, 4).split, 1);
  hist_options no;
  no.overrides.split = 1;
  EXPECT_EQ(planned(786432, atomic_kind::cas, 4, 0, no).strategy, hist_strategy::global);
  EXPECT_EQ(plan_hist(rtx2080ti(), N50M, 786432, 4, atomic_kind::cas, {}, {}).strategy, hist_strategy::global);
  hist_options four;
  four.overrides.split = 4;
  const auto forced = planned(100000, atomic_kind::hdw, 4, 0, four);
  EXPECT_EQ(forced.split, 4);
  EXPECT_EQ(forced.chunk, 25000);
  EXPECT_FALSE(forced.block_partials);
  EXPECT_THROW(planned(100000, atomic_kind::xcg, 12, 0, four), usage_error);
  EXPECT_THROW(planned(4'000'000, atomic_kind::cas, 4, 0, four), usage_error);  // a slice of 1M bins
  EXPECT_THROW(plan_hist(rtx2080ti(), N50M, 1000, 4, atomic_kind::cas, four, {}), usage_error);
  hist_options odd;
  odd.overrides.split = 17;
  EXPECT_THROW(planned(1000, atomic_kind::cas, 4, 0, odd), usage_error);
}

// The model runs clusters only for contention-tolerant operators with two blocks per SM (see
// hist_tuning::cluster_note); forced ones are kept in the plan.
TEST(HistModel, PartitionedBucketsFitTwoBlocksPerSm) {
  const auto p = h100();
  hist_options on;
  on.overrides.partition = hist_toggle::on;
  // Saturated add: the contended CAS cap, 196 KiB for two blocks (99328 bytes each): 24832 bins.
  const hist_plan cas = plan_hist(p, N50M, 1572864, 4, atomic_kind::cas, on, {});
  EXPECT_TRUE(cas.partitioned);
  EXPECT_EQ(cas.passes, 64);
  EXPECT_EQ(cas.chunk, 24576);
  EXPECT_EQ(cas.multi, 1);
  EXPECT_EQ(cas.blocks_per_sm, 2);
  // Int add: half of an SM's 228 KiB for each of two blocks (115712 bytes): 28928 bins.
  const hist_plan hdw = plan_hist(p, N50M, 1572864, 4, atomic_kind::hdw, on, {});
  EXPECT_EQ(hdw.passes, 55);
  EXPECT_EQ(hdw.chunk, 28598);
  EXPECT_EQ(plan_hist(p, N50M, 1000, 4, atomic_kind::hdw, on, {}).passes, 1);
  // A forced M carries over to the buckets.
  on.multi = 2;
  EXPECT_EQ(plan_hist(p, N50M, 100'000, 4, atomic_kind::cas, on, {}).multi, 2);
  on.multi = 0;
  // Refused: locks, values over 8 bytes, more than 255 buckets, a forced S, 2^31 updates.
  EXPECT_THROW(plan_hist(p, N50M, 100'000, 12, atomic_kind::xcg, on, {}), usage_error);
  EXPECT_THROW(plan_hist(p, N50M, 1000, 16, atomic_kind::cas, on, {}), usage_error);
  EXPECT_THROW(plan_hist(p, N50M, 255 * 24832 + 1, 4, atomic_kind::cas, on, {}), usage_error);
  EXPECT_NO_THROW(plan_hist(p, N50M, 255 * 24832, 4, atomic_kind::cas, on, {}));
  EXPECT_THROW(plan_hist(p, std::int64_t{1} << 30, 100'000, 4, atomic_kind::cas, on, {}, 0, 2), usage_error);
  hist_options s2 = on;
  s2.passes = 2;
  EXPECT_THROW(plan_hist(p, N50M, 100'000, 4, atomic_kind::cas, s2, {}), usage_error);
  // Off, or global forced: never partitioned.
  on.strategy = hist_strategy::global;
  EXPECT_FALSE(plan_hist(p, N50M, 1572864, 4, atomic_kind::cas, on, {}).partitioned);
}

TEST(HistModel, ClustersForTolerantOperatorsOrWhenForced) {
  const auto h100_plan = [](std::int64_t H, atomic_kind k, std::size_t el, hist_options o = {}, double u = 0) {
    return plan_hist_shared(h100(), N50M, H, el, k, o, u);
  };
  for (std::int64_t H : {2048, 49152, 196608}) EXPECT_EQ(h100_plan(H, atomic_kind::cas, 4).cluster, 1);
  EXPECT_EQ(h100_plan(49152, atomic_kind::hdw, 4).cluster, 1);
  const double u = detail::model_contention_tolerance<u32_arg_max>(atomic_kind::cas);
  for (std::int64_t H : {127, 505, 2048, 12288}) {
    const auto plan = h100_plan(H, atomic_kind::cas, 8, {}, u);
    EXPECT_EQ(plan.cluster, hist_tuning::cluster_tolerant) << "H=" << H;
    EXPECT_EQ(plan.blocks_per_sm, 2) << "H=" << H;
  }
  EXPECT_EQ(h100_plan(24576, atomic_kind::cas, 8, {}, u).cluster, 1);  // one block per SM
  EXPECT_EQ(h100_plan(31, atomic_kind::cas, 8, {}, u).cluster, 1);     // thread-private copies
  hist_options none;
  none.overrides.cluster = 1;
  EXPECT_EQ(h100_plan(2048, atomic_kind::cas, 8, none, u).cluster, 1);
  hist_options four;
  four.overrides.cluster = 4;
  EXPECT_EQ(h100_plan(49152, atomic_kind::hdw, 4, four).cluster, 4);
  EXPECT_EQ(h100_plan(2048, atomic_kind::cas, 4, four).cluster, 4);
}

// HDW histograms beyond hdw_one_block_bytes run one block per SM; CAS keeps two where its copies
// fit (footnote 7).
TEST(HistModel, LargeHdwHistogramsRunOneBlockPerSm) {
  const auto p = h100();
  for (std::int64_t H : {31, 2048, 8192}) {
    const auto plan = plan_hist_shared(p, N50M, H, 4, atomic_kind::hdw, {});
    EXPECT_EQ(plan.blocks_per_sm, 2) << "H=" << H;
    EXPECT_EQ(plan.grid, 2 * p.sm_count) << "H=" << H;
  }
  for (std::int64_t H : {8193, 24576, 49152}) {
    const auto plan = plan_hist_shared(p, N50M, H, 4, atomic_kind::hdw, {});
    EXPECT_EQ(plan.blocks_per_sm, 1) << "H=" << H;
    EXPECT_EQ(plan.grid, p.sm_count) << "H=" << H;
    EXPECT_EQ(plan.passes, 1) << "H=" << H;
  }
  // One pass holds up to all of one block's shared memory (227 KiB: 58K four-byte bins).
  EXPECT_EQ(plan_hist_shared(p, N50M, 57344, 4, atomic_kind::hdw, {}).passes, 1);
  EXPECT_EQ(plan_hist_shared(p, N50M, 2048, 4, atomic_kind::cas, {}).blocks_per_sm, 2);
  EXPECT_EQ(plan_hist_shared(p, N50M, 49152, 4, atomic_kind::cas, {}).blocks_per_sm, 1);
}

// Block partials for the same plans (see hist_tuning::partials_for_cas), on any device.
TEST(HistModel, BlockPartialsForCasThatWrites) {
  const double u_argmax = detail::model_contention_tolerance<u32_arg_max>(atomic_kind::cas);
  const auto h100_plan = [](std::int64_t H, atomic_kind k, std::size_t el, double u = 0) {
    return plan_hist_shared(h100(), N50M, H, el, k, {}, u);
  };
  EXPECT_EQ(h100_plan(49152, atomic_kind::cas, 4).block_partials, hist_tuning::partials_for_cas);
  EXPECT_EQ(plan_hist_shared(rtx2080ti(), N50M, 2048, 4, atomic_kind::cas, {}).block_partials, hist_tuning::partials_for_cas);
  EXPECT_EQ(h100_plan(196608, atomic_kind::cas, 4).block_partials, hist_tuning::partials_for_cas);  // S = 4, side by side
  EXPECT_FALSE(h100_plan(31, atomic_kind::cas, 4).block_partials);      // thread-private
  EXPECT_FALSE(h100_plan(12288, atomic_kind::cas, 8, u_argmax).block_partials);
  EXPECT_FALSE(h100_plan(49152, atomic_kind::hdw, 4).block_partials);
  hist_options on;
  on.overrides.block_partials = hist_toggle::on;
  EXPECT_TRUE(plan_hist_shared(h100(), N50M, 49152, 4, atomic_kind::hdw, on).block_partials);
}

TEST(HistModel, ForcedShapesAreHonouredOrRefused) {
  const auto p = rtx2080ti();
  hist_options o;
  o.strategy = hist_strategy::shared;
  o.multi = 3;
  const auto a = plan_hist(p, N50M, 12288, 4, atomic_kind::hdw, o, {});
  EXPECT_EQ(a.multi, 3);
  EXPECT_EQ(a.passes, 3);  // 3 copies of 12K bins need 3 passes in 48 KiB
  o.passes = 1;
  EXPECT_THROW(plan_hist(p, N50M, 12288, 4, atomic_kind::hdw, o, {}), usage_error);
  hist_options g;
  g.strategy = hist_strategy::global;
  g.multi = 16;
  const auto b = plan_hist(p, N50M, 1 << 20, 4, atomic_kind::hdw, g, [] { return 1.0; });
  EXPECT_EQ(b.multi, 16);
  EXPECT_EQ(b.passes, 1);
}

TEST(HistModel, InspectorIsSkippedWhenRfCannotChangeThePlan) {
  bool inspected = false;
  // An H100: 132 SMs x 2048 threads, 50 MiB L2; one million int bins fit L2 in one pass and
  // the re-fitted u keeps M = 1 for every RF.
  const device_properties h100 = ::h100();
  const auto g = plan_hist(h100, N50M, 1 << 20, 4, atomic_kind::hdw, {}, [&] { inspected = true; return 63.0; });
  EXPECT_FALSE(inspected);
  EXPECT_EQ(g.multi, 1);
  EXPECT_FALSE(g.race_factor_estimated);
}

TEST(HistModel, TogglesParse) {
  EXPECT_EQ(parse_hist_toggle("on"), hist_toggle::on);
  EXPECT_THROW(parse_hist_toggle("maybe"), usage_error);
}

TEST(HistModel, LoadsAheadWhereOneBlockRunsPerSm) {
  // hist_tuning::load_ahead_note: HDW and CAS that writes with one block per SM; not with two
  // (the kernels' registers would leave one), nor for contention-tolerant operators, thread-private
  // copies or partitioned plans; forced either way.
  const device_properties p = h100();
  const double u = detail::model_contention_tolerance<u32_arg_max>(atomic_kind::cas);
  EXPECT_TRUE(plan_hist_shared(p, N50M, 49152, 4, atomic_kind::hdw, {}).load_ahead);
  EXPECT_TRUE(plan_hist_shared(p, N50M, 12288, 4, atomic_kind::hdw, {}).load_ahead);
  EXPECT_FALSE(plan_hist_shared(p, N50M, 2048, 4, atomic_kind::hdw, {}).load_ahead);
  EXPECT_TRUE(plan_hist_shared(p, N50M, 49152, 4, atomic_kind::cas, {}).load_ahead);
  EXPECT_FALSE(plan_hist_shared(p, N50M, 24576, 4, atomic_kind::cas, {}).load_ahead);
  EXPECT_FALSE(plan_hist_shared(p, N50M, 24576, 8, atomic_kind::cas, {}, u).load_ahead);
  EXPECT_FALSE(plan_hist_shared(p, N50M, 31, 4, atomic_kind::cas, {}).load_ahead);  // thread-private
  EXPECT_FALSE(plan_hist(p, N50M, 786432, 4, atomic_kind::cas, {}, [] { return 1.0; }).load_ahead);  // partitioned
  hist_options on, off;
  on.overrides.load_ahead = hist_toggle::on;
  off.overrides.load_ahead = hist_toggle::off;
  EXPECT_TRUE(plan_hist_shared(p, N50M, 2048, 4, atomic_kind::hdw, on).load_ahead);
  EXPECT_FALSE(plan_hist_shared(p, N50M, 49152, 4, atomic_kind::hdw, off).load_ahead);
}

TEST(HistModel, ForcedBlockSizeShapesTheSharedPlan) {
  // hist_options::block: blocks of 768 threads, two per SM by threads, so the contended-CAS share
  // of shared memory (97 KiB) holds the same 12 copies of 2K bins, shared by 64 threads each.
  hist_options o;
  o.overrides.block = 768;
  const hist_plan p = plan_hist_shared(h100(), N50M, 2048, 4, atomic_kind::cas, o);
  EXPECT_EQ(p.block_threads, 768);
  EXPECT_EQ(p.blocks_per_sm, 2);
  EXPECT_EQ(p.multi, 12);
  EXPECT_EQ(p.coop, 64);
  EXPECT_EQ(plan_hist_shared(h100(), N50M, 2048, 4, atomic_kind::cas, {}).block_threads, hist_tuning::shared_block);
}

TEST(HistModel, SettingsParseIntoOptions) {
  const hist_options o = parse_hist_options("strategy=shared,M=1,S=2,RF=63,ahead=on,partials=off,cluster=2,block=768");
  EXPECT_EQ(o.strategy, hist_strategy::shared);
  EXPECT_EQ(o.multi, 1);
  EXPECT_EQ(o.passes, 2);
  EXPECT_EQ(o.race_factor, 63.0);
  EXPECT_EQ(o.overrides.load_ahead, hist_toggle::on);
  EXPECT_EQ(o.overrides.block_partials, hist_toggle::off);
  EXPECT_EQ(o.overrides.cluster, 2);
  EXPECT_EQ(o.overrides.block, 768);
  const hist_options forced = parse_hist_options("atomic=xcg,split=4,partition=off,private=off");
  EXPECT_TRUE(forced.force_atomic);
  EXPECT_EQ(forced.atomic, atomic_kind::xcg);
  EXPECT_EQ(forced.overrides.split, 4);
  EXPECT_EQ(forced.overrides.partition, hist_toggle::off);
  EXPECT_EQ(forced.overrides.thread_private, hist_toggle::off);
  // Settings apply on top of a base; none leave it as it was.
  hist_options base;
  base.multi = 5;
  EXPECT_EQ(parse_hist_options("S=3", base).multi, 5);
  EXPECT_EQ(parse_hist_options("", base).multi, 5);
  for (const char* bad : {"M", "=1", "Q=1", "M=-1", "M=two", "S=1.5", "RF=x", "ahead=maybe", "strategy=fast", "atomic=mutex",
                          "cluster=3", "block=100", "block=2048", "M=1,,S=2"})
    EXPECT_THROW(parse_hist_options(bad), usage_error) << bad;
}

TEST(HistModel, OperatorContentionToleranceReplacesU) {
  // arg_max declares that its CAS updates rarely write: one sub-histogram in global memory where
  // the paper's u = 1 gives several; the lock path keeps the kind's u.
  const device_properties p = h100();
  const double u = detail::model_contention_tolerance<u32_arg_max>(atomic_kind::cas);
  EXPECT_EQ(u, u32_arg_max::hist_contention_tolerance);
  EXPECT_EQ(detail::model_contention_tolerance<u32_arg_max>(atomic_kind::xcg), 0.0);
  using sat24 = saturating_plus<std::uint32_t, 24>;
  EXPECT_EQ(detail::model_contention_tolerance<sat24>(atomic_kind::cas), 0.0);
  const auto g = plan_hist(p, N50M, 196608, 8, atomic_kind::cas, {}, [] { return 1.0; }, u);
  EXPECT_EQ(g.strategy, hist_strategy::global);
  EXPECT_EQ(g.multi, 1);
  hist_options global;  // (the model partitions an 8-byte CAS histogram this large)
  global.strategy = hist_strategy::global;
  EXPECT_TRUE(plan_hist(p, N50M, 786432, 8, atomic_kind::cas, {}, [] { return 1.0; }).partitioned);
  const auto writes = plan_hist(p, N50M, 786432, 8, atomic_kind::cas, global, [] { return 1.0; });
  EXPECT_EQ(writes.strategy, hist_strategy::global);
  EXPECT_GT(writes.multi, 1);
  // One sub-histogram whatever RF is, so the inspector is not even run.
  bool inspected = false;
  const auto a = plan_hist(p, N50M, 49152, 8, atomic_kind::cas, {}, [&] { inspected = true; return 63.0; }, u);
  EXPECT_EQ(a.strategy, hist_strategy::global);
  EXPECT_EQ(a.multi, 1);
  EXPECT_FALSE(inspected);
}

TEST(HistModel, CasSampleTakesWideStepsWhereFewThreadsShareABin) {
  // A block of 1024 threads sharing one copy (C = 1024): 1024 uniform samples of 24K bins meet
  // ~1000 distinct bins (wide), of 390 bins in use (24K at RF = 63) ~360 (contended).
  EXPECT_TRUE(cas_sample_wide(1024, 1003, 1024));
  EXPECT_FALSE(cas_sample_wide(1024, 361, 1024));
  // C = 18 (H = 505, M = 57): 439 distinct of 505 bins (RF = 1) vs 8 (RF = 63).
  EXPECT_TRUE(cas_sample_wide(1024, 439, 18));
  EXPECT_FALSE(cas_sample_wide(1024, 8, 18));
  // The bar for C sharers is cas_wide_bins_per_sharer * C bins in use: at exactly its expected
  // distinct count, contended; one more, wide.
  const double bar = hist_tuning::cas_wide_bins_per_sharer * 100;
  const int expected = int(std::floor(bar * (1 - std::exp(-512.0 / bar))));
  EXPECT_FALSE(cas_sample_wide(512, expected, 100));
  EXPECT_TRUE(cas_sample_wide(512, expected + 1, 100));
  // Nothing in range says nothing: contended.
  EXPECT_FALSE(cas_sample_wide(0, 0, 1));
}

TEST(HistModel, CasFollowsFootnote7) {
  // Two blocks per SM with half the shared memory each, one block only where one copy does not fit
  // half of it (see plan_hist_shared).
  const device_properties p = h100();
  const auto cas = plan_hist_shared(p, N50M, 6144, 4, atomic_kind::cas, {});
  EXPECT_EQ(cas.multi, 4);
  EXPECT_EQ(cas.grid, 2 * p.sm_count);
  // Every copy that fits the two blocks' 196 KiB (hist_tuning::cas_shared_per_sm), contiguous:
  // H = 505 takes M = 49 (98980 bytes), not rounded down to 32 interleaved ones.
  const auto many = plan_hist_shared(p, N50M, 505, 4, atomic_kind::cas, {});
  EXPECT_EQ(many.grid, 2 * p.sm_count);
  EXPECT_EQ(many.multi, 49);
  EXPECT_EQ(many.model_multi, 49);
  for (std::int64_t H : {505, 2048, 6144, 12288, 24576}) {
    const auto plan = plan_hist_shared(p, N50M, H, 4, atomic_kind::cas, {});
    EXPECT_LE(2 * (plan.shared_bytes + hist_tuning::shared_reserved_per_block), hist_tuning::cas_shared_per_sm) << "H=" << H;
    EXPECT_EQ(plan.blocks_per_sm, 2) << "H=" << H;
  }
  EXPECT_EQ(plan_hist_shared(p, N50M, 2048, 4, atomic_kind::cas, {}).multi, 12);
  // A forced M may still take all of the SM's shared memory; hardware atomics are not capped.
  hist_options fifty_seven;
  fifty_seven.multi = 57;
  EXPECT_EQ(plan_hist_shared(p, N50M, 505, 4, atomic_kind::cas, fifty_seven).passes, 1);
  hist_options copies;
  copies.overrides.thread_private = hist_toggle::off;
  EXPECT_EQ(plan_hist_shared(p, N50M, 505, 12, atomic_kind::xcg, copies).multi, 19);  // locks: all of half the SM
  EXPECT_EQ(many.items_per_thread, hist_tuning::shared_items_cas_contended);
  EXPECT_EQ(many.items_wide, hist_tuning::shared_items_cas_wide);
  const auto alone = plan_hist_shared(p, N50M, 49152, 4, atomic_kind::cas, {});
  EXPECT_EQ(alone.grid, p.sm_count);
  EXPECT_EQ(alone.multi, 1);
  EXPECT_EQ(alone.passes, 1);
  EXPECT_EQ(alone.items_per_thread, hist_tuning::shared_items_cas_contended);
  EXPECT_EQ(alone.items_wide, hist_tuning::shared_items_cas_wide);
  // Contention-tolerant operators (arg_max, u = 1e9 here) take fixed steps by blocks per SM.
  const auto tolerant_many = plan_hist_shared(p, N50M, 505, 8, atomic_kind::cas, {}, 1e9);
  EXPECT_EQ(tolerant_many.items_per_thread, hist_tuning::shared_items_cas_contended);
  EXPECT_EQ(tolerant_many.items_wide, 0);
  EXPECT_EQ(plan_hist_shared(p, N50M, 6144, 4, atomic_kind::hdw, {}).items_per_thread, hist_tuning::items_per_thread);
  // Locks keep the interleaved layout: M rounded down to a multiple of 32.
  EXPECT_EQ(plan_hist_shared(p, N50M, 127, 12, atomic_kind::xcg, {}).multi, 64);  // 75 fit
}

TEST(HistModel, TolerantOperatorsTakeOneSharedCopyPerBlock) {
  // arg_max's declared tolerance (its updates mostly lose and only read): one sub-histogram per
  // block in shared memory too, where saturated addition takes every copy that fits.
  const device_properties p = h100();
  const double u = detail::model_contention_tolerance<u32_arg_max>(atomic_kind::cas);
  hist_options atomics;
  atomics.overrides.thread_private = hist_toggle::off;
  for (std::int64_t H : {505, 2048, 6144}) {
    const auto a = plan_hist_shared(p, N50M, H, 8, atomic_kind::cas, atomics, u);
    EXPECT_EQ(a.multi, 1) << "H=" << H;
    EXPECT_EQ(a.passes, 1) << "H=" << H;
    EXPECT_GT(plan_hist_shared(p, N50M, H, 8, atomic_kind::cas, atomics).multi, 1) << "H=" << H;
  }
  // Through plan_hist as well, and a forced M still wins.
  EXPECT_EQ(plan_hist(p, N50M, 2048, 8, atomic_kind::cas, {}, {}, u).multi, 1);
  hist_options forced;
  forced.multi = 4;
  EXPECT_EQ(plan_hist(p, N50M, 2048, 8, atomic_kind::cas, forced, {}, u).multi, 4);
}

TEST(HistModel, ThreadPrivateCopiesWhereEnoughThreadsFit) {
  const device_properties p = h100();
  // H = 31 at 4 bytes: two blocks of 928 threads (115 KiB each), one copy per thread.
  const auto small = plan_hist_shared(p, N50M, 31, 4, atomic_kind::cas, {});
  EXPECT_TRUE(small.thread_private);
  EXPECT_EQ(small.block_threads, 928);
  EXPECT_EQ(small.multi, 928);
  EXPECT_EQ(small.passes, 1);
  EXPECT_EQ(small.grid, 2 * p.sm_count);
  EXPECT_EQ(small.items_per_thread, hist_tuning::items_per_thread);
  EXPECT_LE(small.shared_bytes, p.shared_per_sm / 2 - hist_tuning::shared_reserved_per_block);
  // H = 127: 448 threads per SM, each with more loads in flight.
  const auto mid = plan_hist_shared(p, N50M, 127, 4, atomic_kind::cas, {});
  EXPECT_TRUE(mid.thread_private);
  EXPECT_EQ(mid.block_threads * mid.grid / p.sm_count, 448);
  EXPECT_EQ(mid.items_per_thread, hist_tuning::private_items_per_thread);
  EXPECT_TRUE(plan_hist_shared(p, N50M, 31, 8, atomic_kind::cas, {}).thread_private);   // argmax
  EXPECT_TRUE(plan_hist_shared(p, N50M, 127, 8, atomic_kind::cas, {}).thread_private);  // 224 threads
  // A contention-tolerant operator (arg_max) needs more threads (private_min_threads_tolerant).
  const double u_argmax = detail::model_contention_tolerance<u32_arg_max>(atomic_kind::cas);
  EXPECT_TRUE(plan_hist_shared(p, N50M, 31, 8, atomic_kind::cas, {}, u_argmax).thread_private);    // 928
  EXPECT_FALSE(plan_hist_shared(p, N50M, 127, 8, atomic_kind::cas, {}, u_argmax).thread_private);  // 224
  // Too few threads would remain (96 per SM), and hardware atomics keep their shared copies...
  EXPECT_FALSE(plan_hist_shared(p, N50M, 505, 4, atomic_kind::cas, {}).thread_private);
  EXPECT_FALSE(plan_hist_shared(p, N50M, 31, 4, atomic_kind::hdw, {}).thread_private);
  // ...unless forced; forced M or S, or a histogram too large for 32 copies, is refused.
  hist_options on, off;
  on.overrides.thread_private = hist_toggle::on;
  off.overrides.thread_private = hist_toggle::off;
  const auto forced = plan_hist_shared(p, N50M, 505, 4, atomic_kind::cas, on);
  EXPECT_TRUE(forced.thread_private);
  EXPECT_EQ(forced.block_threads, 96);
  EXPECT_TRUE(plan_hist_shared(p, N50M, 31, 4, atomic_kind::hdw, on).thread_private);
  EXPECT_FALSE(plan_hist_shared(p, N50M, 31, 4, atomic_kind::cas, off).thread_private);
  EXPECT_THROW(plan_hist_shared(p, N50M, 4096, 4, atomic_kind::cas, on), usage_error);
  on.multi = 32;
  EXPECT_THROW(plan_hist_shared(p, N50M, 31, 4, atomic_kind::cas, on), usage_error);
  // Forced M or S leave the paper's shapes alone.
  hist_options m;
  m.multi = 64;
  EXPECT_FALSE(plan_hist_shared(p, N50M, 31, 4, atomic_kind::cas, m).thread_private);
  // The automatic switch keeps the private shape (one pass).
  EXPECT_TRUE(plan_hist(p, N50M, 31, 4, atomic_kind::cas, {}, {}).thread_private);
}

TEST(HistModel, InspectorSamplesAFewGroups) {
  EXPECT_EQ(plan_inspector(0, 10).groups, 0);
  EXPECT_EQ(plan_inspector(100, 1000).group, 100);
  EXPECT_EQ(plan_inspector(100, 1000).groups, 1);
  EXPECT_EQ(plan_inspector(N50M, 12288).groups, hist_tuning::inspector_max_groups);
  EXPECT_EQ(plan_inspector(N50M, 196608).groups, 1);
  EXPECT_EQ(plan_inspector(N50M, 1572864).groups, 1);
}

}  // namespace
