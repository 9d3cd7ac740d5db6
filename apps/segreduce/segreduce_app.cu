// The FHPC17 microbenchmarks (section 3.2) on soac::segreduce: segmented sum, index of max, maximum
// subarray sum (Fig 12) and Black-Scholes (Fig 14), m segments of n elements. `soac bench
// segreduce` sweeps m at a fixed total m * n (2^18 and 2^26) and times auto, each forced
// strategy, and in the same run the baselines: a plain (non-segmented) CUB reduce of the same
// elements, CUB DeviceSegmentedReduce (where CUB has the operator: not for the non-commutative
// maximum subarray sum) and CUB InclusiveScanByKey followed by taking each segment's last value.
// gen/run/validate work on one (operator, m, n) dataset.
#include <algorithm>
#include <bit>
#include <chrono>
#include <climits>
#include <cinttypes>
#include <cmath>
#include <functional>
#include <memory>
#include <optional>
#include <sstream>

#include <cub/device/device_reduce.cuh>
#include <cub/device/device_scan.cuh>
#include <cub/device/device_segmented_reduce.cuh>
#include <thrust/iterator/counting_iterator.h>
#include <thrust/iterator/transform_iterator.h>

#include "apps/app.hpp"
#include "apps/multi_scaling.hpp"
#include "apps/ranks.hpp"
#include "apps/segreduce/microbench.hpp"
#include "core/buffer.hpp"
#include "core/error.hpp"
#include "core/launch.cuh"
#include "core/multi/segreduce.cuh"
#include "core/operators.hpp"
#include "core/scatter.cuh"
#include "core/segreduce.cuh"
#include "datasets/bundle.hpp"
#include "datasets/random.hpp"
#include "validate/segreduce.hpp"

namespace soac::apps {
namespace {

namespace mb = segreduce_bench;
using datasets::bundle;

enum class op_kind { sum, argmax, mss, blackscholes };

op_kind parse_op(const std::string& s) {
  if (s == "sum") return op_kind::sum;
  if (s == "argmax") return op_kind::argmax;
  if (s == "mss") return op_kind::mss;
  if (s == "blackscholes") return op_kind::blackscholes;
  throw usage_error("segreduce: unknown operator '" + s + "' (expected sum, argmax, mss or blackscholes)");
}

// ---- inputs (generated deterministically from the seed) ----

// int32 elements in [-1000, 1000]: signed so that the maximum subarray depends on the order,
// a narrow range so that index of max meets ties.
std::vector<std::int32_t> make_ints(std::int64_t count, std::uint64_t seed) {
  std::vector<std::int32_t> v(static_cast<std::size_t>(count));
  SOAC_OMP_PARALLEL_FOR
  for (std::int64_t i = 0; i < count; ++i)
    v[std::size_t(i)] = std::int32_t(datasets::random_u32(seed, 0, std::uint64_t(i)) % 2001u) - 1000;
  return v;
}

// ---- element functions over the flat index i = s * n + j (for the CUB baselines) ----

template <class F>
struct flat_element {
  F f;
  std::int64_t n;
  SOAC_HD auto operator()(std::int64_t i) const { return f(i / n, i % n); }
};

struct segment_of {
  std::int64_t n;
  SOAC_HD std::int64_t operator()(std::int64_t i) const { return i / n; }
};

struct offset_of {
  std::int64_t n;
  SOAC_HD int operator()(std::int64_t s) const { return static_cast<int>(s * n); }
};

template <class T>
__global__ void take_last_kernel(std::int64_t m, std::int64_t n, const T* scanned, T* out) {
  const std::int64_t s = std::int64_t{blockIdx.x} * blockDim.x + threadIdx.x;
  if (s < m) out[s] = scanned[s * n + n - 1];
}

// Scratch for a CUB device algorithm: call(temp, bytes) sizes first, then runs.
struct cub_temp {
  buffer<std::uint8_t> storage;
  std::size_t bytes = 0;
  template <class Call>
  void prepare(context& ctx, Call call) {
    SOAC_CUDA_CHECK(call(nullptr, bytes));
    storage = buffer<std::uint8_t>(ctx, std::max<std::size_t>(bytes, 1), lifetime::temporary);
  }
};

std::string pow2(std::int64_t v) {
  if (v > 0 && std::has_single_bit(std::uint64_t(v))) return "2^" + std::to_string(std::countr_zero(std::uint64_t(v)));
  return std::to_string(v);
}

// ---- one benchmark cell: every variant and baseline for (Op, m, n) ----

struct cell {
  std::string name;
  std::int64_t m, n;
  double bytes;
  bool is_sum_bar;  // segmented sum: report the issue's bars
};

// Forced strategies the bench skips because they would run for seconds (not a contender).
std::optional<std::string> hopeless(segreduce_strategy s, std::int64_t m, std::int64_t n, std::size_t value_bytes) {
  if (s == segreduce_strategy::sequential && n > (std::int64_t{1} << 18))
    return "sequential skipped: " + std::to_string(m) + " threads would fold " + pow2(n) + " elements each";
  if (s == segreduce_strategy::large && m > (std::int64_t{1} << 20))
    return "large skipped: " + pow2(m) + " blocks for " + pow2(n) + "-element segments";
  if (s == segreduce_strategy::small &&
      n > std::int64_t{segreduce_tuning::block_threads} * segreduce_items_per_thread(value_bytes))
    return "small not applicable: a segment must fit one block's tile";
  return std::nullopt;
}

template <class Op, class F, class Same, class CubSegmented>
void bench_cell(context& ctx, bench::suite& suite, const cell& c, F f, Same same, CubSegmented cub_segmented) {
  using T = typename Op::value_type;
  const std::int64_t m = c.m, n = c.n, total = m * n;
  suite.begin_case(c.name, {{"m", m}, {"n", n}}, c.bytes);
  std::vector<std::string> notes;
  const auto values = thrust::make_transform_iterator(thrust::counting_iterator<std::int64_t>(0), flat_element<F>{f, n});

  // Baseline 1: plain reduce of all m * n elements (one output).
  buffer<T> one(ctx, 1);
  cub_temp plain;
  auto plain_call = [&](void* t, std::size_t& b) {
    return cub::DeviceReduce::Reduce(t, b, values, one.data(), total, Op{}, Op::identity(), ctx.stream());
  };
  plain.prepare(ctx, plain_call);
  suite.measure("plain reduce", bench::role::baseline, [&] { SOAC_CUDA_CHECK(plain_call(plain.storage.data(), plain.bytes)); });
  if (!is_commutative_v<Op>) suite.annotate("timing reference only: CUB's DeviceReduce assumes a commutative operator");
  const double plain_ms = suite.cases().back().variants.back().time.median_ms;

  // Baseline 2: segmented scan, then the last value of each segment. Its result is the check.
  buffer<T> scanned(ctx, static_cast<std::size_t>(total)), reference(ctx, static_cast<std::size_t>(m));
  const auto keys = thrust::make_transform_iterator(thrust::counting_iterator<std::int64_t>(0), segment_of{n});
  cub_temp scan;
  auto scan_call = [&](void* t, std::size_t& b) {
    return cub::DeviceScan::InclusiveScanByKey(t, b, keys, values, scanned.data(), Op{}, total,
                                               ::cuda::std::equal_to<>{}, ctx.stream());
  };
  scan.prepare(ctx, scan_call);
  suite.measure("scan+last", bench::role::baseline, [&] {
    SOAC_CUDA_CHECK(scan_call(scan.storage.data(), scan.bytes));
    take_last_kernel<<<static_cast<unsigned>(detail::ceil_div(m, 256)), 256, 0, ctx.stream()>>>(m, n, scanned.data(),
                                                                                              reference.data());
    SOAC_CHECK_LAUNCH("take_last_kernel");
  });
  scanned = buffer<T>();  // free the m * n scan output before the soac variants run
  const std::vector<T> expected = reference.to_vector();

  // Baseline 3: CUB DeviceSegmentedReduce, where CUB supports the operator.
  double cub_ms = 0;
  if constexpr (!std::is_same_v<CubSegmented, std::nullptr_t>) {
    if (m <= std::numeric_limits<int>::max()) {
      cub_ms = cub_segmented(ctx, suite, m, n, expected, same);
    }
  }

  // soac: each forced strategy, then auto.
  buffer<T> out(ctx, static_cast<std::size_t>(m));
  double best_forced = 0;
  std::string best_name;
  auto run_soac = [&](segreduce_strategy s, const std::string& label) {
    segreduce_plan chosen;  // described after timing: formatting text is host time the timer would see
    suite.measure(label, bench::role::soac,
                  [&] { chosen = segreduce(ctx, m, n, f, out.view(), Op{}, segreduce_options{s, 0}); });
    std::string plan = chosen.describe();
    const auto got = out.to_vector();
    std::int64_t wrong = 0;
    for (std::int64_t s2 = 0; s2 < m; ++s2) wrong += !same(expected[std::size_t(s2)], got[std::size_t(s2)]);
    if (wrong) plan += "; MISMATCH: " + std::to_string(wrong) + " segments differ from scan+last";
    suite.annotate(plan);
    return suite.cases().back().variants.back().time.median_ms;
  };
  for (auto s : {segreduce_strategy::sequential, segreduce_strategy::large, segreduce_strategy::small}) {
    if (auto why = hopeless(s, m, n, sizeof(T))) {
      notes.push_back(*why);
      continue;
    }
    const double ms = run_soac(s, "soac " + std::string(to_string(s)));
    if (best_forced == 0 || ms < best_forced) {
      best_forced = ms;
      best_name = std::string(to_string(s));
    }
  }
  const double auto_ms = run_soac(segreduce_strategy::automatic, "soac auto");

  // The issue's bars, computed in this run.
  std::ostringstream bar;
  bar << std::fixed;
  bar.precision(2);
  bar << "auto/best forced (" << best_name << ") = " << auto_ms / best_forced << "x [bar 1.10x]";
  if (cub_ms > 0) bar << "; auto/CUB segmented = " << auto_ms / cub_ms << "x [bar < 1x]";
  if (c.is_sum_bar) {
    const double floor = suite.floor_ms(suite.cases().back());
    if (total >= (std::int64_t{1} << 26)) {
      bar << "; auto/floor = " << auto_ms / floor << "x [bar 1.30x]";
    } else {
      const double write_ms = double(m) * sizeof(T) / suite.copy_bandwidth() * 1e3;
      bar << "; auto/(plain reduce + write) = " << auto_ms / (plain_ms + write_ms) << "x [bar 1.30x]";
    }
  }
  for (const auto& n2 : notes) bar << "; " << n2;
  suite.annotate(suite.cases().back().variants.back().note + " | " + bar.str());
}

// CUB DeviceSegmentedReduce with fixed-length segments expressed as offset iterators.
template <class Op, class In>
struct cub_segmented_reduce {
  In in;
  template <class T, class Same>
  double operator()(context& ctx, bench::suite& suite, std::int64_t m, std::int64_t n, const std::vector<T>& expected,
                    Same same) const {
    buffer<T> out(ctx, static_cast<std::size_t>(m));
    const auto begin = thrust::make_transform_iterator(thrust::counting_iterator<std::int64_t>(0), offset_of{n});
    const auto end = begin + 1;
    cub_temp temp;
    auto call = [&](void* t, std::size_t& b) {
      return cub::DeviceSegmentedReduce::Reduce(t, b, in, out.data(), m, begin, end, Op{}, Op::identity(), ctx.stream());
    };
    temp.prepare(ctx, call);
    suite.measure("CUB segmented", bench::role::baseline, [&] { SOAC_CUDA_CHECK(call(temp.storage.data(), temp.bytes)); });
    const auto got = out.to_vector();
    std::int64_t wrong = 0;
    for (std::int64_t s = 0; s < m; ++s) wrong += !same(expected[std::size_t(s)], got[std::size_t(s)]);
    if (wrong) suite.annotate("MISMATCH: " + std::to_string(wrong) + " segments differ from scan+last");
    return suite.cases().back().variants.back().time.median_ms;
  }
};

// CUB's own ArgMax (ties to the lower index, like soac::arg_max).
struct cub_segmented_argmax {
  const std::int32_t* in;
  template <class T, class Same>
  double operator()(context& ctx, bench::suite& suite, std::int64_t m, std::int64_t n, const std::vector<T>& expected,
                    Same) const {
    buffer<cub::KeyValuePair<int, std::int32_t>> out(ctx, static_cast<std::size_t>(m));
    const auto begin = thrust::make_transform_iterator(thrust::counting_iterator<std::int64_t>(0), offset_of{n});
    const auto end = begin + 1;
    cub_temp temp;
    auto call = [&](void* t, std::size_t& b) {
      return cub::DeviceSegmentedReduce::ArgMax(t, b, in, out.data(), m, begin, end, ctx.stream());
    };
    temp.prepare(ctx, call);
    suite.measure("CUB segmented", bench::role::baseline, [&] { SOAC_CUDA_CHECK(call(temp.storage.data(), temp.bytes)); });
    const auto got = out.to_vector();
    std::int64_t wrong = 0;
    for (std::int64_t s = 0; s < m; ++s)
      wrong += got[std::size_t(s)].key != expected[std::size_t(s)].index || got[std::size_t(s)].value != expected[std::size_t(s)].value;
    if (wrong) suite.annotate("MISMATCH: " + std::to_string(wrong) + " segments differ from scan+last");
    return suite.cases().back().variants.back().time.median_ms;
  }
};

struct exact {
  template <class T>
  bool operator()(const T& a, const T& b) const { return a == b; }
};
struct close_enough {
  bool operator()(double a, double b) const { return std::abs(a - b) <= 1e-9 * std::max(1.0, std::abs(a)); }
};

// Runs op over m x n on ctx and returns the per-segment result array written by `run`.
template <class Op, class F>
std::pair<std::vector<typename Op::value_type>, std::string> run_op(context& ctx, std::int64_t m, std::int64_t n, F f,
                                                                  segreduce_strategy strategy, double& ms) {
  using T = typename Op::value_type;
  buffer<T> out(ctx, static_cast<std::size_t>(m));
  segreduce_plan plan;
  const bench::stats t = bench::time(ctx, bench::settings{.warmup = 1, .runs = 1, .progress = false, .warmup_ms = 0}, [&] {
    plan = segreduce(ctx, m, n, f, out.view(), Op{}, segreduce_options{strategy, 0});
  });
  ms = t.median_ms;
  return {out.to_vector(), plan.describe()};
}

// The scaling bench's input: small values (sums of 2^30 fit int32 only if they stay small:
// [-1, 1]), element i the same on any rank count.
struct small_ints {
  std::uint64_t seed;
  std::int64_t begin;
  SOAC_HD write_at<std::int64_t, std::int32_t> operator()(std::int64_t i) const {
    return {i, std::int32_t(datasets::random_u32(seed, 0x7365677265ull, std::uint64_t(begin + i)) % 3u) - 1};
  }
};
// Element (s, j) of a rank's shard: rows from segment `first_row`, `row` elements each, columns
// from `first_column` (global indexes in, the shard's own layout out).
struct shard_element {
  const std::int32_t* local;
  std::int64_t first_row, row, first_column;
  SOAC_HD std::int32_t operator()(std::int64_t s, std::int64_t j) const { return local[(s - first_row) * row + (j - first_column)]; }
};

// What an operator reduces of an int32 element (s, j): the value (sum), the value and its index
// (argmax), the value's quad (maximum subarray sum); over a rank's shard (soac run --set devices).
struct lift_value {
  SOAC_HD std::int32_t operator()(std::int32_t x, std::int64_t) const { return x; }
};
struct lift_indexed {
  SOAC_HD indexed<std::int32_t, std::int32_t> operator()(std::int32_t x, std::int64_t j) const { return {x, std::int32_t(j)}; }
};
struct lift_quad {
  SOAC_HD mss_quad<std::int32_t> operator()(std::int32_t x, std::int64_t) const { return max_subarray<std::int32_t>::lift(x); }
};
template <class Lift>
struct shard_lifted {
  shard_element at;
  SOAC_HD auto operator()(std::int64_t s, std::int64_t j) const { return Lift{}(at(s, j), j); }
};

// The result array of each operator: sums, indexes of the maximum, maximum subarray sums, summed
// option prices.
template <class T>
auto result_values(const std::vector<T>& v) {
  if constexpr (std::is_same_v<T, std::int32_t> || std::is_same_v<T, double>) {
    return v;
  } else {
    std::vector<std::int32_t> out(v.size());
    for (std::size_t i = 0; i < v.size(); ++i) {
      if constexpr (std::is_same_v<T, mss_quad<std::int32_t>>) out[i] = v[i].best;
      else out[i] = v[i].index;
    }
    return out;
  }
}

class segreduce_app final : public app {
 public:
  segreduce_app() : app(describe()) {}

  static app_info describe() {
    app_info a = app_info::named("segreduce", "regular segmented reduction (FHPC17): sum, index of max, maximum subarray sum, "
                                              "Black-Scholes over m x n");
    {
      auto p = [](const char* op, std::int64_t m, std::int64_t n) {
        return nlohmann::json{{"operator", op}, {"m", m}, {"n", n}, {"log2_step", 2}};
      };
      const std::int64_t k9 = 1 << 9, k13 = 1 << 13;
      a.presets = {{"sum", "segmented int32 sum, 2^13 x 2^13 (bench: 2^26 elements, every m = 4^k)", p("sum", k13, k13)},
                   {"sum18", "segmented int32 sum, 2^9 x 2^9 (bench: 2^18 elements)", p("sum", k9, k9)},
                   {"argmax", "index of max, ties to the lower index, 2^13 x 2^13", p("argmax", k13, k13)},
                   {"argmax18", "index of max, 2^9 x 2^9", p("argmax", k9, k9)},
                   {"mss", "maximum subarray sum (Fig 12, non-commutative), 2^13 x 2^13", p("mss", k13, k13)},
                   {"mss18", "maximum subarray sum, 2^9 x 2^9", p("mss", k9, k9)},
                   {"blackscholes", "Black-Scholes (Fig 14): 2^13 options x 2^13 days, from iota", p("blackscholes", k13, k13)},
                   {"blackscholes18", "Black-Scholes: 2^9 options x 2^9 days", p("blackscholes", k9, k9)},
                   {"tiny", "segmented sum, 100 x 37 (tests)", p("sum", 100, 37)}};
    }
    a.variants = {"auto", "sequential", "large", "small"};
    a.run_settings = {devices_setting("each rank reduces its block of segments (with fewer segments than ranks, its columns of "
                                      "every segment, the partials combined in rank order); Black-Scholes: every rank holds the m options")};
    a.scales_over_devices = true;
    a.bench_presets = {"sum18", "sum", "argmax18", "argmax", "mss18", "mss", "blackscholes18", "blackscholes"};
    return a;
  }

  struct spec {
    op_kind op;
    std::string op_name;
    std::int64_t m, n;
    int log2_step;
  };
  // What a dataset's computation reads: the operator and the m x n shape (log2_step is bench's).
  static spec dataset_spec(const nlohmann::json& params) {
    if (!params.contains("operator") || !params["operator"].is_string())
      throw usage_error("segreduce: parameter 'operator' must be a string");
    spec s;
    s.op_name = params["operator"].get<std::string>();
    s.op = parse_op(s.op_name);
    s.m = int_param(params, "m", 0, std::int64_t{1} << 31);
    s.n = int_param(params, "n", 0, std::int64_t{1} << 31);
    s.log2_step = 2;
    if (s.m * s.n > (std::int64_t{1} << 31)) throw usage_error("segreduce: m * n must be at most 2^31");
    return s;
  }
  static spec spec_of(const nlohmann::json& params) {
    spec s = dataset_spec(params);
    s.log2_step = int(int_param(params, "log2_step", 1, 8));
    return s;
  }

  void check_params(const nlohmann::json& params) const override { spec_of(params); }
  // Black-Scholes: m rates and volatilities (the days are computed); the others: m * n values.
  void check_dataset(const bundle& in) const override {
    const auto s = dataset_spec(in.params());
    if (s.op == op_kind::blackscholes) {
      datasets::require_length(in, "rate", s.m, "m");
      datasets::require_length(in, "volatility", s.m, "m");
    } else {
      datasets::require_length(in, "data", s.m * s.n, "m * n");
    }
  }

  void generate(const gen_request& r) const override {
    const auto s = spec_of(r.params);
    require_host_memory(checked_bytes(std::uint64_t(s.m * s.n), sizeof(std::int32_t), "segreduce: m * n"),
                        "segreduce: m * n = " + std::to_string(s.m * s.n));
    datasets::bundle_writer out(r.output, "dataset", name());
    if (s.op == op_kind::blackscholes) {
      const auto [rate, vol] = mb::blackscholes_options(s.m, r.seed);
      out.add<double>("rate", rate);
      out.add<double>("volatility", vol);
    } else {
      out.add<std::int32_t>("data", make_ints(s.m * s.n, r.seed));
    }
    finish_dataset(out, r);
  }

  static void require_int32_sums(const std::vector<std::int32_t>& data, const spec& s) {
    if (s.op != op_kind::sum && s.op != op_kind::mss) return;
    const auto bad = mb::first_int32_overflow(data.data(), s.m, s.n, s.op == op_kind::mss);
    if (bad >= 0)
      throw input_error("segreduce: segment " + std::to_string(bad) + " of 'data' overflows int32 under operator " + s.op_name +
                        (s.op == op_kind::mss ? " (a run of consecutive values sums beyond it)"
                                              : " (its positive or its negative values sum beyond it)"));
  }

  // Every operator's result as one array: sums, indexes of the maximum, maximum subarray sums,
  // summed option prices.
  template <class Body>
  static auto with_input(context& ctx, const bundle& in, const spec& s, Body body) {
    if (s.op == op_kind::blackscholes) {
      const auto rate = in.read<double>("rate"), vol = in.read<double>("volatility");
      buffer<double> rd(ctx, std::span<const double>(rate)), vd(ctx, std::span<const double>(vol));
      return body(mb::blackscholes_day{rd.data(), vd.data(), s.n}, mb::blackscholes_day{rate.data(), vol.data(), s.n});
    }
    const auto data = in.read<std::int32_t>("data");
    require_int32_sums(data, s);
    buffer<std::int32_t> d(ctx, std::span<const std::int32_t>(data));
    return body(mb::row_element{d.data(), s.n}, mb::row_element{data.data(), s.n});
  }

  // With ranks: each reads its part of the data (rows by offset) and checks the int32 sums it can
  // see: whole segments as one process does; split ones by their positive and negative values'
  // sums over the ranks (which bound every run's sum, so the maximum subarray sum's check is the
  // sum's there: stricter than one process's by the runs that fit although the values' sums do not).
  template <class Op, class Lift>
  static std::vector<typename Op::value_type> reduce_ranked(const multi_context& ranks, const bundle& in, const spec& s,
                                                            const multi_options& o, std::string& plan) {
    using T = typename Op::value_type;
    const int R = ranks.ranks();
    const bool whole = s.m >= R;
    std::vector<buffer<std::int32_t>> parts(static_cast<std::size_t>(R));
    std::vector<buffer<T>> outs(static_cast<std::size_t>(R));
    std::vector<span<T>> views(static_cast<std::size_t>(R));
    std::vector<std::int64_t> positive(whole ? 0 : std::size_t(s.m)), negative(positive.size());
    for (int q : ranks.local_ranks()) {
      context& c = ranks.rank(q);
      const shard part = whole ? shard_of(s.m, R, q) : shard_of(s.n, R, q);
      const std::int64_t rows = whole ? part.size() : s.m, columns = whole ? s.n : part.size();
      c.require_memory(checked_bytes(std::uint64_t(rows * columns), sizeof(std::int32_t), "segreduce: a shard") +
                           checked_bytes(std::uint64_t(s.m), sizeof(T), "segreduce: m"),
                       0, "segreduce: rank " + std::to_string(q) + "'s shard");
      std::vector<std::int32_t> local(static_cast<std::size_t>(rows * columns));
      if (whole) {
        in.read_rows_into("data", part.begin * s.n, rows * s.n, local.data());
        if (s.op != op_kind::argmax)
          if (const auto bad = mb::first_int32_overflow(local.data(), rows, s.n, s.op == op_kind::mss); bad >= 0)
            throw input_error("segreduce: segment " + std::to_string(part.begin + bad) + " of 'data' overflows int32 under operator " +
                              s.op_name);
      } else {
        for (std::int64_t seg = 0; seg < s.m; ++seg) {
          in.read_rows_into("data", seg * s.n + part.begin, columns, local.data() + seg * columns);
          for (std::int64_t j = 0; j < columns; ++j) {
            const std::int32_t x = local[std::size_t(seg * columns + j)];
            (x > 0 ? positive : negative)[std::size_t(seg)] += x;
          }
        }
      }
      parts[std::size_t(q)] = buffer<std::int32_t>(c, std::span<const std::int32_t>(local));
      views[std::size_t(q)] = (outs[std::size_t(q)] = buffer<T>(c, std::size_t(s.m))).view();
    }
    if (!whole && s.op != op_kind::argmax) {
      if (ranks.distributed())
        for (auto* sums : {&positive, &negative}) mpi_world::get().all_reduce(sums->data(), sums->size(), reduce_type::i64, reduce_op::sum);
      for (std::int64_t seg = 0; seg < s.m; ++seg)
        if (positive[std::size_t(seg)] > INT32_MAX || negative[std::size_t(seg)] < INT32_MIN)
          throw input_error("segreduce: segment " + std::to_string(seg) + " of 'data' overflows int32 under operator " + s.op_name +
                            " (its positive or its negative values sum beyond it)");
    }
    const auto plans = multi_segreduce(
        ranks, s.m, s.n,
        [&](const segment_shard& sh) {
          return shard_lifted<Lift>{{parts[std::size_t(sh.rank)].data(), whole ? sh.seg_begin : 0,
                                     whole ? s.n : sh.elem_end - sh.elem_begin, sh.elem_begin}};
        },
        std::span<const span<T>>(views), Op{}, o);
    plan = plans[std::size_t(ranks.local_ranks()[0])].describe();
    return writes_result(&ranks) ? outs[0].to_vector() : std::vector<T>{};
  }

  std::string run_ranked(const multi_context& ranks, const run_request& r, const bundle& in, const spec& s,
                         segreduce_strategy strategy) const {
    multi_options o;
    o.placement = result_placement::root;
    o.segreduce = segreduce_options{strategy, 0};
    std::string plan;
    const auto t0 = std::chrono::steady_clock::now();
    std::function<void(datasets::bundle_writer&)> add_result;
    auto keep = [&](const auto& v) {
      ranks.synchronize();
      add_result = [values = result_values(v)](datasets::bundle_writer& out) {
        out.add<typename decltype(values)::value_type>("result", values);
      };
    };
    if (s.op == op_kind::blackscholes) {
      // Every rank prices its segments' days from all m rates and volatilities (2 m doubles).
      const auto rate = in.read<double>("rate"), vol = in.read<double>("volatility");
      std::vector<buffer<double>> rd(std::size_t(ranks.ranks())), vd(rd.size()), outs(rd.size());
      std::vector<span<double>> views(rd.size());
      for (int q : ranks.local_ranks()) {
        rd[std::size_t(q)] = buffer<double>(ranks.rank(q), std::span<const double>(rate));
        vd[std::size_t(q)] = buffer<double>(ranks.rank(q), std::span<const double>(vol));
        views[std::size_t(q)] = (outs[std::size_t(q)] = buffer<double>(ranks.rank(q), std::size_t(s.m))).view();
      }
      const auto plans = multi_segreduce(
          ranks, s.m, s.n, [&](const segment_shard& sh) { return mb::blackscholes_day{rd[std::size_t(sh.rank)].data(), vd[std::size_t(sh.rank)].data(), s.n}; },
          std::span<const span<double>>(views), plus<double>{}, o);
      plan = plans[std::size_t(ranks.local_ranks()[0])].describe();
      keep(writes_result(&ranks) ? outs[0].to_vector() : std::vector<double>{});
    } else if (s.op == op_kind::sum) {
      keep(reduce_ranked<plus<std::int32_t>, lift_value>(ranks, in, s, o, plan));
    } else if (s.op == op_kind::argmax) {
      keep(reduce_ranked<arg_max<std::int32_t>, lift_indexed>(ranks, in, s, o, plan));
    } else {
      keep(reduce_ranked<max_subarray<std::int32_t>, lift_quad>(ranks, in, s, o, plan));
    }
    const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    if (!writes_result(&ranks)) return {};
    datasets::bundle_writer out(r.output, "result", name());
    add_result(out);
    out.params() = in.params();
    out.info() = {{"backend", std::string(to_string(ranks.which()))}, {"device", ranks.describe()}, {"ranks", ranks.ranks()},
                  {"variant", r.variant.empty() ? "auto" : r.variant}, {"plan", plan}, {"ms", ms}};
    out.finish();
    std::ostringstream msg;
    msg << "segreduce " << s.op_name << ": " << s.m << " segments x " << s.n << " elements on " << ranks.describe() << "\n  rank 0: "
        << plan << "; " << ms << " ms (wall clock: reading, copies and the gather included)";
    return msg.str();
  }

  std::string run(context& ctx, const run_request& r) const override {
    const auto in = open_dataset(r.input);
    const auto s = dataset_spec(in.params());
    const auto strategy = parse_segreduce_strategy(r.variant.empty() ? "auto" : r.variant);
    if (const auto ranks = ranks_of_setting(ctx.which(), r.settings.value("devices", std::string())))
      return run_ranked(*ranks, r, in, s, strategy);
    double ms = 0;
    std::string plan;
    datasets::bundle_writer out(r.output, "result", name());
    with_input(ctx, in, s, [&](auto f, auto) {
      using F = decltype(f);
      if constexpr (std::is_same_v<F, mb::blackscholes_day>) {
        auto [v, p] = run_op<plus<double>>(ctx, s.m, s.n, f, strategy, ms);
        out.add<double>("result", v);
        plan = p;
      } else {
        if (s.op == op_kind::sum) {
          auto [v, p] = run_op<plus<std::int32_t>>(ctx, s.m, s.n, f, strategy, ms);
          out.add<std::int32_t>("result", v);
          plan = p;
        } else if (s.op == op_kind::argmax) {
          auto [v, p] = run_op<arg_max<std::int32_t>>(ctx, s.m, s.n, mb::indexed_element{f.data, s.n}, strategy, ms);
          out.add<std::int32_t>("result", result_values(v));
          plan = p;
        } else {
          auto [v, p] = run_op<max_subarray<std::int32_t>>(ctx, s.m, s.n, mb::mss_element{f.data, s.n}, strategy, ms);
          out.add<std::int32_t>("result", result_values(v));
          plan = p;
        }
      }
      return 0;
    });
    out.params() = in.params();
    out.info() = {{"backend", std::string(to_string(ctx.which()))}, {"device", ctx.props().name},
                  {"variant", r.variant.empty() ? "auto" : r.variant}, {"plan", plan}, {"kernel_ms", ms}};
    out.finish();
    std::ostringstream msg;
    msg << "segreduce " << s.op_name << ": " << s.m << " segments x " << s.n << " elements on " << ctx.describe() << "\n  "
        << plan << ", " << ms << " ms";
    return msg.str();
  }

  validate_report validate(const validate_request& r) const override {
    const auto in = open_dataset(r.input);
    const auto res = bundle::open(r.result, "result", name());
    const auto s = dataset_spec(in.params());
    validate::report rep;
    if (s.op == op_kind::blackscholes) {
      const auto rate = in.read<double>("rate"), vol = in.read<double>("volatility");
      const auto got = res.read<double>("result");
      const auto expected = validate::segreduce_reference<plus<double>>(s.m, s.n, mb::blackscholes_day{rate.data(), vol.data(), s.n});
      rep = validate::check_segreduce_close(expected, got);
      return {rep.ok(), rep.describe("segment results")};
    }
    const auto data = in.read<std::int32_t>("data");
    require_int32_sums(data, s);
    const auto got = res.read<std::int32_t>("result");
    std::vector<std::int32_t> expected;
    if (s.op == op_kind::sum) {
      expected = validate::segreduce_reference<plus<std::int32_t>>(s.m, s.n, mb::row_element{data.data(), s.n});
    } else if (s.op == op_kind::argmax) {
      for (const auto& v : validate::segreduce_reference<arg_max<std::int32_t>>(s.m, s.n, mb::indexed_element{data.data(), s.n}))
        expected.push_back(v.index);
    } else {
      for (const auto& v : validate::segreduce_reference<max_subarray<std::int32_t>>(s.m, s.n, mb::mss_element{data.data(), s.n}))
        expected.push_back(v.best);
    }
    rep = validate::check_segreduce_exact<std::int32_t>(expected, got, [](std::int32_t v) { return std::to_string(v); });
    return {rep.ok(), rep.describe("segment results")};
  }


  // `soac bench segreduce --devices`: sums of 2^30 int32 in m = 2^14 segments (whole segments per
  // rank) and in m = 1 (the segment split across the ranks, partials combined), every rank's
  // shard made on its device; --set n_total=... changes the size.
  static void bench_scaling(const context& ctx, const bench_request& r, bench::suite& suite) {
    std::int64_t total = std::int64_t(1) << 30;
    for (const auto& [key, value] : r.overrides) {
      if (key != "n_total") throw usage_error("segreduce bench " + std::string(r.mpi ? "--ranks mpi" : "--devices") + ": unknown setting '" + key + "' (n_total)");
      total = int_param({{"n_total", parse_number("n_total", value)}}, "n_total", 1, std::int64_t(1) << 34);
    }
    const std::vector<std::int64_t> segment_counts = {std::int64_t(1) << 14, 1};
    suite.expect_cases(int(segment_counts.size()));
    for (const std::int64_t m : segment_counts) {
      const std::int64_t n = std::max<std::int64_t>(1, total / m);
      suite.begin_case("scaling: " + std::to_string(m) + " segment(s) x " + std::to_string(n) + " int32, sum", {{"m", m}, {"n", n}},
                       4.0 * double(m) * double(n));
      measure_scaling(suite, ctx.which(), r, [&](const multi_context& mc) {
        struct rank_state {
          std::vector<buffer<std::int32_t>> inputs, sums;
          std::vector<span<std::int32_t>> views;
        };
        const auto st = std::make_shared<rank_state>();
        const bool whole = m >= mc.ranks();
        const auto ranks = std::size_t(mc.ranks());
        st->inputs.resize(ranks), st->sums.resize(ranks), st->views.resize(ranks);  // this process's ranks filled
        for (int q : mc.local_ranks()) {
          context& c = mc.rank(q);
          // The rank's part of the row-major m x n array: its segments' rows, or its columns of the one row.
          const shard part = whole ? shard_of(m, mc.ranks(), q) : shard_of(n, mc.ranks(), q);
          const std::int64_t elements = whole ? part.size() * n : part.size();
          c.require_memory(checked_bytes(std::uint64_t(elements + m), sizeof(std::int32_t), "segreduce --devices"),
                           "segreduce --devices: rank " + std::to_string(q) + "'s shard");
          auto& input = st->inputs[std::size_t(q)] = buffer<std::int32_t>(c, std::size_t(elements));
          scatter(c, elements, small_ints{r.seed, whole ? part.begin * n : part.begin}, input);
          st->views[std::size_t(q)] = (st->sums[std::size_t(q)] = buffer<std::int32_t>(c, std::size_t(m))).view();
        }
        return std::function<void()>([st, &mc, m, n, whole] {
          multi_segreduce(
              mc, m, n,
              [&](const segment_shard& s) {
                return shard_element{st->inputs[std::size_t(s.rank)].data(), whole ? s.seg_begin : 0, whole ? n : s.elem_end - s.elem_begin,
                                     s.elem_begin};
              },
              std::span<const span<std::int32_t>>(st->views), plus<std::int32_t>{});
        });
      });
    }
  }

  void bench(context& ctx, const bench_request& r, bench::suite& suite) const override {
    if (r.scaling()) return bench_scaling(ctx, r, suite);
    if (!ctx.is_cuda()) throw usage_error("soac bench segreduce compares with CUB baselines and needs --backend cuda");
    const auto names = r.presets.empty() ? bench_presets() : r.presets;
    std::vector<spec> specs;
    int cases = 0;
    for (const auto& preset_name : names) {
      const auto s = spec_of(resolve_params(preset_name, r.overrides));
      const std::int64_t total = s.m * s.n;
      if (total <= 0 || !std::has_single_bit(std::uint64_t(total)))
        throw usage_error("segreduce bench: m * n must be a power of two (preset " + preset_name + ")");
      const int log2_total = std::countr_zero(std::uint64_t(total));
      cases += log2_total / s.log2_step + 1;
      specs.push_back(s);
    }
    suite.expect_cases(cases);
    for (const auto& s : specs) bench_sweep(ctx, s, r.seed, suite);
  }

  static void bench_sweep(context& ctx, const spec& s, std::uint64_t seed, bench::suite& suite) {
    const std::int64_t total = s.m * s.n;
    const int log2_total = std::countr_zero(std::uint64_t(total));
    std::vector<std::int32_t> ints;
    buffer<std::int32_t> data;
    if (s.op != op_kind::blackscholes) {
      ints = make_ints(total, seed);
      data = buffer<std::int32_t>(ctx, std::span<const std::int32_t>(ints));
    }
    for (int k = 0; k <= log2_total; k += s.log2_step) {
      const std::int64_t m = std::int64_t{1} << k, n = total / m;
      cell c{s.op_name + " " + pow2(total) + ": " + pow2(m) + " x " + pow2(n), m, n, 0, s.op == op_kind::sum};
      switch (s.op) {
        case op_kind::sum:
          c.bytes = double(total) * 4 + double(m) * 4;
          bench_cell<plus<std::int32_t>>(ctx, suite, c, mb::row_element{data.data(), n}, exact{},
                                         cub_segmented_reduce<plus<std::int32_t>, const std::int32_t*>{data.data()});
          break;
        case op_kind::argmax:
          c.bytes = double(total) * 4 + double(m) * 8;
          bench_cell<arg_max<std::int32_t>>(ctx, suite, c, mb::indexed_element{data.data(), n}, exact{},
                                            cub_segmented_argmax{data.data()});
          break;
        case op_kind::mss:
          c.bytes = double(total) * 4 + double(m) * 16;
          bench_cell<max_subarray<std::int32_t>>(ctx, suite, c, mb::mss_element{data.data(), n}, exact{}, nullptr);
          break;
        case op_kind::blackscholes: {
          const auto [rate, vol] = mb::blackscholes_options(m, seed);
          buffer<double> rd(ctx, std::span<const double>(rate)), vd(ctx, std::span<const double>(vol));
          const mb::blackscholes_day f{rd.data(), vd.data(), n};
          c.bytes = double(m) * 3 * 8;  // rate and volatility read, one price written per option
          const auto days = thrust::make_transform_iterator(thrust::counting_iterator<std::int64_t>(0),
                                                            flat_element<mb::blackscholes_day>{f, n});
          bench_cell<plus<double>>(ctx, suite, c, f, close_enough{},
                                   cub_segmented_reduce<plus<double>, decltype(days)>{days});
          break;
        }
      }
    }
  }
};

}  // namespace
}  // namespace soac::apps

SOAC_REGISTER_APP(soac::apps::segreduce_app)
