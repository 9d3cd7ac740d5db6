// The SC20 histogram microbenchmark (section V, Fig 7, Tables I-II): N uniformly random uint32,
// bin = (x % max(1, H/RF)) * RF, for the three operator classes: HDW = int32 add (counting),
// CAS = 24-bit saturated add of (x >> 16) & 255, XCG workload = argmax over (x >> 20, index) with
// ties to the lower index (8 bytes: the trait picks a 64-bit CAS; `lock` forces the paper's
// lock path). `soac bench hist` times soac's automatic choice, the paper's fixed (M,S) sweeps,
// and in the same run CUB HistogramEven (HDW), CUB radix sort + ReduceByKey (CAS, XCG) and naive
// global atomics; ratios are to the read floor (N * 4 bytes at copy bandwidth). It also prints
// the model's (M,S) table for the device (Table I). gen/run/validate work on one (H, RF, op).
#include <array>
#include <chrono>
#include <cstring>
#include <iomanip>
#include <iostream>
#include <sstream>

#include <cub/device/device_histogram.cuh>
#include <cub/device/device_radix_sort.cuh>
#include <cub/device/device_reduce.cuh>
#include <thrust/iterator/transform_iterator.h>

#include "apps/app.hpp"
#include "apps/multi_scaling.hpp"
#include "apps/ranks.hpp"
#include "core/buffer.hpp"
#include "core/error.hpp"
#include "core/fast_divide.hpp"
#include "core/hist.cuh"
#include "core/hist/operators.hpp"
#include "core/multi/hist.cuh"
#include "datasets/bundle.hpp"
#include "datasets/random.hpp"
#include "validate/hist.hpp"

namespace soac::apps {
namespace {

using datasets::bundle;
using u32 = std::uint32_t;
using hdw_op = plus<std::int32_t>;
using cas_op = saturating_plus<u32, 24>;
using xcg_op = arg_max<u32, u32>;

// The paper's H values (K = 1024).
const std::int64_t paper_bins[] = {31, 127, 505, 2048, 6144, 12288, 24576, 49152, 196608, 393216, 786432, 1572864};
constexpr std::int64_t shared_sweep_max = 49152, global_sweep_min = 12288;  // Fig 7's panels
constexpr std::int64_t private_sweep_max = 505;  // one copy per thread fits up to ~500 4-byte bins
constexpr std::int64_t cluster_sweep_max = 196608;  // the largest H that stays in shared memory (S = 4)
constexpr std::int64_t split_sweep_min = 24576;  // smaller histograms fit one block's shared memory
constexpr std::int64_t naive_min_bins = 4096;

template <class Op>
SOAC_HD typename Op::value_type value_of(u32 x, std::int64_t i) {
  if constexpr (std::is_same_v<Op, hdw_op>) return 1;
  else if constexpr (std::is_same_v<Op, cas_op>) return (x >> 16) & 255u;
  else return indexed<u32, u32>{x >> 20, u32(i)};
}

SOAC_HD inline u32 bin_of(u32 x, u32 q, u32 rf) { return (x % q) * rf; }
// The same bin for the GPU kernels (soac's and the baselines' alike): the remainder by a
// multiply, which leaves the 48K-bin int histogram ~20 instructions per element short of issue
// bound. The reference (above) keeps the plain remainder.
SOAC_HD inline u32 bin_of(u32 x, const fast_divisor& q, u32 rf) { return q.remainder(x) * rf; }

template <class Op>
struct micro_updates {
  const u32* in;
  fast_divisor q;
  u32 rf;
  SOAC_HD bin_value<typename Op::value_type> operator()(std::int64_t i) const {
    const u32 x = in[i];
    return {std::int64_t(bin_of(x, q, rf)), value_of<Op>(x, i)};
  }
};

// micro_updates over a rank's shard (soac run hist --set devices=...): element i, the input's
// index (which argmax records), is local[i - begin].
template <class Op>
struct shard_updates {
  micro_updates<Op> local;
  std::int64_t begin;
  SOAC_HD bin_value<typename Op::value_type> operator()(std::int64_t i) const {
    const u32 x = local.in[i - begin];
    return {std::int64_t(bin_of(x, local.q, local.rf)), value_of<Op>(x, i)};
  }
};

struct bin_functor {
  fast_divisor q;
  u32 rf;
  __host__ __device__ int operator()(u32 x) const { return int(bin_of(x, q, rf)); }
};

// Naive global atomics: one thread per element, the operator's atomic straight on the result.
template <class Op>
__global__ void naive_kernel(std::int64_t n, micro_updates<Op> f, typename Op::value_type* histo) {
  const std::int64_t i = std::int64_t{blockIdx.x} * blockDim.x + threadIdx.x;
  if (i >= n) return;
  const auto r = f(i);
  detail::atomic_update<hist_atomic<Op>::kind, Op>(histo + r.bin, nullptr, r.value);
}

template <class Op>
__global__ void materialize_kernel(std::int64_t n, micro_updates<Op> f, u32* keys, typename Op::value_type* values) {
  const std::int64_t i = std::int64_t{blockIdx.x} * blockDim.x + threadIdx.x;
  if (i >= n) return;
  const auto r = f(i);
  keys[i] = u32(r.bin);
  values[i] = r.value;
}

__global__ void random_kernel(u32* out, std::int64_t n, std::uint64_t key) {
  for (std::int64_t i = std::int64_t{blockIdx.x} * blockDim.x + threadIdx.x; i < n; i += std::int64_t{gridDim.x} * blockDim.x)
    out[i] = u32(datasets::keyed_word(key, std::uint64_t(i)) >> 32);
}

struct micro_spec {
  std::int64_t n = 0, H = 0, rf = 0;
  std::string op;
  bool sweeps = true, lock = true;
  // The forced variants besides auto: empty, the default set; "none"; or variants of
  // `soac run --variant` separated by ';' (e.g. "shared,M=1,S=2;auto,ahead=on") in place of that set and
  // the sweeps.
  std::string variants;
};

u32 divisor(std::int64_t H, std::int64_t rf) { return u32(std::max<std::int64_t>(1, H / rf)); }

template <class Op>
void fill_identity(context& ctx, span<typename Op::value_type> h) {
  if (ctx.is_cuda()) {
    if (h.empty()) return;
    detail::hist_fill_kernel<<<unsigned(std::min<std::int64_t>(detail::ceil_div(std::int64_t(h.size()), 256), 1024)), 256, 0,
                               ctx.stream()>>>(h.data(), std::int64_t(h.size()), Op::identity());
    SOAC_CHECK_LAUNCH("hist_fill_kernel");
  } else {
    std::fill(h.begin(), h.end(), Op::identity());
  }
}

hist_options named_options(const std::string& variant) {
  hist_options o;
  if (variant == "auto") return o;
  if (variant == "private" || variant == "atomic-shared") {
    o.overrides.thread_private = variant == "private" ? hist_toggle::on : hist_toggle::off;
    return o;
  }
  if (variant == "partitioned" || variant == "unpartitioned") {
    o.overrides.partition = variant == "partitioned" ? hist_toggle::on : hist_toggle::off;
    return o;
  }
  if (variant == "lock") {
    o.force_atomic = true;
    o.atomic = atomic_kind::xcg;
    return o;
  }
  o.strategy = parse_hist_strategy(variant);
  return o;
}

// NAME[,KEY=VALUE...]: a named variant, then settings on top of it (set_hist_option), so that any
// fixed shape can be run, e.g. "shared,M=1,S=2".
hist_options options_for(const std::string& variant) {
  const std::size_t comma = variant.find(',');
  const hist_options named = named_options(variant.substr(0, comma));
  return comma == std::string::npos ? named : parse_hist_options(std::string_view(variant).substr(comma + 1), named);
}

// ---- Result files: "histo" for hdw/cas, "value" + "index" for argmax.
template <class Op>
void write_result(datasets::bundle_writer& out, const std::vector<typename Op::value_type>& h) {
  if constexpr (std::is_same_v<Op, xcg_op>) {
    std::vector<u32> v(h.size()), idx(h.size());
    for (std::size_t b = 0; b < h.size(); ++b) v[b] = h[b].value, idx[b] = h[b].index;
    out.add<u32>("value", v);
    out.add<u32>("index", idx);
  } else {
    out.add<typename Op::value_type>("histo", h);
  }
}

template <class Op>
std::vector<typename Op::value_type> read_result(const bundle& b) {
  if constexpr (std::is_same_v<Op, xcg_op>) {
    datasets::require_same_length(b, {"value", "index"});
    const auto v = b.read<u32>("value"), idx = b.read<u32>("index");
    std::vector<indexed<u32, u32>> h(v.size());
    for (std::size_t k = 0; k < v.size(); ++k) h[k] = {v[k], idx[k]};
    return h;
  } else {
    return b.read<typename Op::value_type>("histo");
  }
}

template <class Op>
std::vector<typename Op::value_type> reference(const std::vector<u32>& in, std::int64_t H, std::int64_t rf) {
  require_host_memory(checked_bytes(std::uint64_t(H), sizeof(typename Op::value_type), "hist: H"), "hist's reference of H = " + std::to_string(H) + " bins");
  std::vector<std::int64_t> bins(in.size());
  std::vector<typename Op::value_type> values(in.size());
  const u32 q = divisor(H, rf);
  for (std::size_t i = 0; i < in.size(); ++i) bins[i] = bin_of(in[i], q, u32(rf)), values[i] = value_of<Op>(in[i], std::int64_t(i));
  std::vector<typename Op::value_type> h(std::size_t(H), Op::identity());
  validate::hist_reference<std::int64_t, typename Op::value_type>(h, bins, values, Op{});
  return h;
}

std::string show(std::int32_t v) { return std::to_string(v); }
std::string show(u32 v) { return std::to_string(v); }
std::string show(const indexed<u32, u32>& v) { return "(" + std::to_string(v.value) + ", #" + std::to_string(v.index) + ")"; }

template <class V>
bool same_bytes(const V& a, const V& b) { return std::memcmp(&a, &b, sizeof(V)) == 0; }

template <class F>
void with_op(const std::string& op, F&& f) {
  if (op == "hdw") f(hdw_op{});
  else if (op == "cas") f(cas_op{});
  else if (op == "xcg") f(xcg_op{});
  else throw usage_error("hist: op must be hdw, cas or xcg (or all for bench), not '" + op + "'");
}

nlohmann::json plan_json(const hist_plan& p) {
  return {{"strategy", std::string(to_string(p.strategy))}, {"atomic", std::string(to_string(p.atomic))},
          {"M", p.multi}, {"M_model", p.model_multi}, {"S", p.passes}, {"thread_private", p.thread_private}, {"cluster", p.cluster}, {"block_partials", p.block_partials}, {"partitioned", p.partitioned}, {"load_ahead", p.load_ahead}, {"Hchk", p.chunk}, {"C", p.coop}, {"grid", p.grid}, {"blocks_per_sm", p.blocks_per_sm},
          {"block", p.block_threads}, {"items_per_thread", p.items_per_thread}, {"shared_bytes", p.shared_bytes},
          {"RF", p.race_factor}, {"RF_estimated", p.race_factor_estimated}, {"host", p.host},
          {"describe", p.describe()}};
}

// The scaling bench's input (uniform 32-bit words, element i the same on any rank count) and
// bin function (x mod H, by multiplication as in the other GPU variants).
struct scaling_input {
  std::uint64_t seed;
  std::int64_t begin;
  SOAC_HD write_at<std::int64_t, std::uint32_t> operator()(std::int64_t i) const {
    return {i, datasets::random_u32(seed, 0x6d756c7469ull, std::uint64_t(begin + i))};
  }
};
struct scaling_bins {
  const std::uint32_t* local;
  std::int64_t begin;
  fast_divisor by_bins;
  SOAC_HD bin_value<std::uint32_t> operator()(std::int64_t i) const { return {by_bins.remainder(local[i - begin]), 1u}; }
};

class hist_app final : public app {
 public:
  hist_app() : app(describe()) {}

  static app_info describe() {
    app_info a = app_info::named("hist", "generalized histograms (SC20 Fig 7, Tables I-II): N random uint32, bin (x % "
                                         "max(1,H/RF))*RF, int add / 24-bit saturated add / argmax");
    {
      auto p = [](std::int64_t n, std::int64_t H, std::int64_t rf, const char* op, int sweeps) {
        return nlohmann::json{{"n", n}, {"H", H}, {"RF", rf}, {"op", op}, {"sweeps", sweeps}, {"lock", 1}, {"variants", ""}};
      };
      constexpr std::int64_t N = 50'000'000;
      a.presets = {{"small", "N = 1M, H = 2048, RF = 1, int add (gen/run default)", p(1'000'000, 2048, 1, "hdw", 1)},
                   {"fig7", "Fig 7 + Table II: N = 50M, every H and RF in {1, 63}, all three operators, fixed (M,S) sweeps",
                    p(N, 0, 0, "all", 1)},
                   {"fig7-hdw", "Fig 7, HDW (int32 add) only", p(N, 0, 0, "hdw", 1)},
                   {"fig7-cas", "Fig 7, CAS (24-bit saturated add) only", p(N, 0, 0, "cas", 1)},
                   {"fig7-xcg", "Fig 7, argmax (CAS by the trait, lock path beside it) only", p(N, 0, 0, "xcg", 1)},
                   {"table2", "Table II: N = 50M, every H and RF, auto and baselines only", p(N, 0, 0, "all", 0)},
                   {"tiny", "N = 20000, H = 127, RF = 63, argmax (tests)", p(20'000, 127, 63, "xcg", 1)}};
    }
    a.variants = {"auto", "shared", "global", "lock", "private", "atomic-shared", "partitioned", "unpartitioned"};
    a.variant_settings = hist_settings_text() + " (e.g. shared,M=1,S=2)";
    a.scales_over_devices = true;
    a.run_settings = {devices_setting("each rank histograms its shard of the input into its own histogram, combined on rank 0")};
    a.bench_presets = {"fig7"};
    return a;
  }

  // The bench parameter `variants` split at ';' ("none" and "" give none).
  static std::vector<std::string> variant_list(const micro_spec& s) {
    std::vector<std::string> out;
    if (s.variants == "none") return out;
    std::string_view rest = s.variants;
    while (!rest.empty()) {
      const std::size_t semi = rest.find(';');
      if (semi != 0) out.emplace_back(rest.substr(0, semi));
      rest = semi == std::string_view::npos ? std::string_view{} : rest.substr(semi + 1);
    }
    return out;
  }

  static micro_spec spec_of(const nlohmann::json& params) {
    micro_spec s;
    s.n = int_param(params, "n", 0, std::int64_t{1} << 40);
    s.H = int_param(params, "H", 0, std::int64_t{1} << 31);
    s.rf = int_param(params, "RF", 0, std::int64_t{1} << 31);
    s.sweeps = int_param(params, "sweeps", 0, 1) == 1;
    s.lock = int_param(params, "lock", 0, 1) == 1;
    if (!params.contains("op") || !params["op"].is_string()) throw usage_error("hist: parameter op must be hdw, cas, xcg or all");
    s.op = params["op"].get<std::string>();
    if (params.contains("variants")) {
      if (!params["variants"].is_string()) throw usage_error("hist: parameter variants must be a string");
      s.variants = params["variants"].get<std::string>();
      for (const auto& v : variant_list(s)) options_for(v);  // a bad one fails before any run
    }
    return s;
  }

  // What a dataset's computation reads: one H >= 1, one RF >= 1 (RF = 0 would divide by zero in
  // the bin formula) and one operator, where bench's presets sweep every H, RF and op (0, all).
  // Its n is its input's length.
  static micro_spec dataset_spec(const nlohmann::json& params) {
    micro_spec s;
    s.H = int_param(params, "H", 1, std::int64_t{1} << 31);
    s.rf = int_param(params, "RF", 1, std::int64_t{1} << 31);
    if (!params.contains("op") || !params["op"].is_string()) throw usage_error("hist: parameter op must be hdw, cas or xcg");
    s.op = params["op"].get<std::string>();
    with_op(s.op, [](auto) {});
    return s;
  }
  void check_params(const nlohmann::json& params) const override {
    spec_of(params);
    dataset_spec(params);
  }
  void check_dataset(const bundle& in) const override {
    datasets::length_of(in, "input", "n");
    dataset_spec(in.params());
  }

  void generate(const gen_request& r) const override {
    const auto s = spec_of(r.params);
    require_host_memory(checked_bytes(std::uint64_t(s.n), sizeof(u32), "hist: n"), "hist: n = " + std::to_string(s.n) + " inputs");
    std::vector<u32> in(std::size_t(s.n));
    datasets::fill_random_u32(in, r.seed, 0);
    datasets::bundle_writer out(r.output, "dataset", name());
    out.add<u32>("input", in);
    finish_dataset(out, r);
  }

  // The result bundle: the histogram, the dataset's parameters, what ran.
  template <class Op>
  static void write_run(const run_request& r, const bundle& in, const std::vector<typename Op::value_type>& result, nlohmann::json info) {
    datasets::bundle_writer out(r.output, "result", "hist");
    write_result<Op>(out, result);
    out.params() = in.params();
    out.info() = std::move(info);
    out.finish();
  }

  // --set devices=...: every rank reads its shard of the input (rows by offset, so that with
  // ranks in separate processes none reads it whole); multi_hist combines onto rank 0.
  static std::string run_ranked(const multi_context& ranks, const run_request& r, const bundle& in, const micro_spec& s,
                                const std::string& variant) {
    const std::int64_t n = datasets::length_of(in, "input", "n");
    const auto R = static_cast<std::size_t>(ranks.ranks());
    std::ostringstream msg;
    with_op(s.op, [&](auto op) {
      using Op = decltype(op);
      using V = typename Op::value_type;
      std::vector<buffer<u32>> inputs(R);
      std::vector<buffer<V>> histos(R);
      std::vector<span<V>> views(R);
      for (int q : ranks.local_ranks()) {
        context& c = ranks.rank(q);
        const shard sh = shard_of(n, ranks.ranks(), q);
        const std::uint64_t histo_bytes = checked_bytes(std::uint64_t(s.H), sizeof(V), "hist: H");
        c.require_memory(histo_bytes + std::uint64_t(sh.size()) * sizeof(u32), histo_bytes,
                         "hist: rank " + std::to_string(q) + "'s shard and H = " + std::to_string(s.H) + " bins");
        std::vector<u32> part(static_cast<std::size_t>(sh.size()));
        in.read_rows_into("input", sh.begin, sh.size(), part.data());
        inputs[std::size_t(q)] = buffer<u32>(c, std::span<const u32>(part));
        views[std::size_t(q)] = (histos[std::size_t(q)] = buffer<V>(c, std::size_t(s.H))).view();
      }
      multi_options o;
      o.placement = result_placement::root;
      o.hist = options_for(variant);
      const fast_divisor q(divisor(s.H, s.rf));
      const auto t0 = std::chrono::steady_clock::now();
      const auto plans = multi_hist(
          ranks, o, n, [&](const shard& sh) { return shard_updates<Op>{{inputs[std::size_t(sh.rank)].data(), q, u32(s.rf)}, sh.begin}; },
          std::span<const span<V>>(views), Op{});
      ranks.synchronize();
      const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
      if (!writes_result(&ranks)) return;
      const hist_plan& plan = plans[std::size_t(ranks.local_ranks()[0])];
      write_run<Op>(r, in, histos[0].to_vector(),
                    {{"backend", std::string(to_string(ranks.which()))}, {"device", ranks.describe()}, {"ranks", ranks.ranks()},
                     {"variant", variant}, {"plan", plan_json(plan)}, {"ms", ms}});
      msg << "hist " << s.op << ": N=" << n << " H=" << s.H << " RF=" << s.rf << " on " << ranks.describe() << "\n  " << variant
          << ": " << ms << " ms (wall clock, the combine included)";
      if (r.verbose) msg << "\n  rank 0's plan: " << plan.describe();
    });
    return msg.str();
  }

  std::string run(context& ctx, const run_request& r) const override {
    const auto in = open_dataset(r.input);
    const auto s = dataset_spec(in.params());
    const std::string variant = r.variant.empty() ? "auto" : r.variant;
    if (const auto ranks = ranks_of_setting(ctx.which(), r.settings.value("devices", std::string())))
      return run_ranked(*ranks, r, in, s, variant);
    const auto input = in.read<u32>("input");
    std::ostringstream msg;
    with_op(s.op, [&](auto op) {
      using Op = decltype(op);
      using V = typename Op::value_type;
      // The histogram and the input in the backend's memory and the histogram's copy on the host,
      // refused before any is allocated.
      const std::uint64_t histo_bytes = checked_bytes(std::uint64_t(s.H), sizeof(V), "hist: H");
      ctx.require_memory(histo_bytes + input.size() * sizeof(u32), histo_bytes, "hist: H = " + std::to_string(s.H) + " bins");
      buffer<u32> d(ctx, std::span<const u32>(input));
      buffer<V> h(ctx, std::size_t(s.H));
      const micro_updates<Op> f{d.data(), fast_divisor(divisor(s.H, s.rf)), u32(s.rf)};
      hist_plan plan;
      const bench::stats t = bench::time(ctx, bench::settings{.warmup = 1, .runs = 1, .progress = false, .warmup_ms = 0}, [&] {
        fill_identity<Op>(ctx, h.view());
        plan = hist(ctx, options_for(variant), std::int64_t(input.size()), f, h.view(), Op{});
      });
      write_run<Op>(r, in, h.to_vector(),
                    {{"backend", std::string(to_string(ctx.which()))}, {"device", ctx.props().name}, {"variant", variant},
                     {"plan", plan_json(plan)}, {"ms", t.median_ms}});
      msg << "hist " << s.op << ": N=" << input.size() << " H=" << s.H << " RF=" << s.rf << " on " << ctx.describe()
          << "\n  " << variant << ": " << t.median_ms << " ms";
      if (r.verbose) msg << "\n  plan: " << plan.describe() << "\n  plan JSON: " << plan_json(plan).dump();
    });
    return msg.str();
  }

  validate_report validate(const validate_request& r) const override {
    const auto in = open_dataset(r.input);
    const auto out = bundle::open(r.result, "result", name());
    const auto s = dataset_spec(in.params());
    const auto input = in.read<u32>("input");
    validate_report rep;
    with_op(s.op, [&](auto op) {
      using Op = decltype(op);
      using V = typename Op::value_type;
      const auto expected = reference<Op>(input, s.H, s.rf);
      const auto got = read_result<Op>(out);
      const auto report = validate::compare_bins(expected, got, same_bytes<V>, [](const V& v) { return show(v); });
      rep = {report.ok(), report.describe("bins")};
    });
    return rep;
  }


  // `soac bench hist --devices`: the issue's sizes, N = 2^30 uint32 counted into H in {256, 48K,
  // 1.5M} bins (uint32 add, all-reduced natively); every rank holds its shard of the input, made
  // on its device. --set n=... and --set H=... (one H) change them.
  static void bench_scaling(const context& ctx, const bench_request& r, bench::suite& suite) {
    std::int64_t n = std::int64_t(1) << 30;
    std::vector<std::int64_t> bins = {256, 48 * 1024, 1536 * 1024};
    for (const auto& [key, value] : r.overrides) {
      if (key == "n") {
        n = int_param({{"n", parse_number("n", value)}}, "n", 0, std::int64_t(1) << 40);
      } else if (key == "H") {
        bins = {int_param({{"H", parse_number("H", value)}}, "H", 1, std::int64_t(1) << 31)};
      } else {
        throw usage_error("hist bench " + std::string(r.mpi ? "--ranks mpi" : "--devices") + ": unknown setting '" + key + "' (n, H)");
      }
    }
    suite.expect_cases(int(bins.size()));
    for (const std::int64_t H : bins) {
      suite.begin_case("scaling: N = " + std::to_string(n) + " uint32, H = " + std::to_string(H), {{"n", n}, {"H", H}}, 4.0 * double(n));
      measure_scaling(suite, ctx.which(), r, [&](const multi_context& mc) {
        struct rank_state {
          std::vector<buffer<std::uint32_t>> inputs, histos;
          std::vector<span<std::uint32_t>> views;
        };
        const auto st = std::make_shared<rank_state>();
        const auto ranks = std::size_t(mc.ranks());
        st->inputs.resize(ranks), st->histos.resize(ranks), st->views.resize(ranks);  // this process's ranks filled
        for (int q : mc.local_ranks()) {
          context& c = mc.rank(q);
          const shard s = shard_of(n, mc.ranks(), q);
          c.require_memory(checked_bytes(std::uint64_t(s.size() + H), sizeof(std::uint32_t), "hist --devices"),
                           "hist --devices: rank " + std::to_string(q) + "'s shard and histogram");
          auto& input = st->inputs[std::size_t(q)] = buffer<std::uint32_t>(c, std::size_t(s.size()));
          scatter(c, s.size(), scaling_input{r.seed, s.begin}, input);
          st->views[std::size_t(q)] = (st->histos[std::size_t(q)] = buffer<std::uint32_t>(c, std::size_t(H))).view();
        }
        const fast_divisor by_bins{static_cast<std::uint32_t>(H)};
        return std::function<void()>([st, &mc, n, by_bins] {
          multi_hist(mc, {}, n, [&](const shard& s) { return scaling_bins{st->inputs[std::size_t(s.rank)].data(), s.begin, by_bins}; },
                     std::span<const span<std::uint32_t>>(st->views), plus<std::uint32_t>{});
        });
      });
    }
  }

  void bench(context& ctx, const bench_request& r, bench::suite& suite) const override {
    if (r.scaling()) return bench_scaling(ctx, r, suite);
    if (!ctx.is_cuda()) throw usage_error("hist bench: the microbenchmark and its CUB baselines need --backend cuda");
    const auto names = r.presets.empty() ? bench_presets() : r.presets;
    std::vector<micro_spec> specs;
    int cases = 0;
    for (const auto& p : names) {
      specs.push_back(spec_of(resolve_params(p, r.overrides)));
      cases += int(ops_of(specs.back()).size() * bins_of(specs.back()).size() * rfs_of(specs.back()).size());
    }
    suite.expect_cases(cases);
    for (const auto& s : specs) {
      print_model_table(ctx, s);
      buffer<u32> input(ctx, std::size_t(s.n));
      random_kernel<<<unsigned(std::min<std::int64_t>(detail::ceil_div(std::max<std::int64_t>(s.n, 1), 256), 4096)), 256, 0,
                      ctx.stream()>>>(input.data(), s.n, datasets::stream_key(r.seed, 0));
      SOAC_CHECK_LAUNCH("random_kernel");
      for (const auto& op : ops_of(s))
        with_op(op, [&](auto o) {
          for (auto rf : rfs_of(s))
            for (auto H : bins_of(s)) bench_case<decltype(o)>(ctx, suite, s, input, H, rf);
        });
    }
  }

  static std::vector<std::string> ops_of(const micro_spec& s) {
    return s.op == "all" ? std::vector<std::string>{"hdw", "cas", "xcg"} : std::vector<std::string>{s.op};
  }
  static std::vector<std::int64_t> bins_of(const micro_spec& s) {
    return s.H ? std::vector<std::int64_t>{s.H} : std::vector<std::int64_t>(std::begin(paper_bins), std::end(paper_bins));
  }
  static std::vector<std::int64_t> rfs_of(const micro_spec& s) {
    return s.rf ? std::vector<std::int64_t>{s.rf} : std::vector<std::int64_t>{1, 63};
  }

  // Table I for this device: the models' (M,S) per operator class, H and RF (RF as given).
  static void print_model_table(const context& ctx, const micro_spec& s) {
    std::cout << "\nTable I on " << ctx.props().name << " (N=" << s.n << "): model (M,S); shared for H <= "
              << shared_sweep_max << ", global for H >= " << global_sweep_min << ", p = one copy per thread (no atomics), splitC = split over clusters of C blocks (auto), partS = updates partitioned into S buckets first (auto), * = auto picks it (RF as given)\n";
    struct row { const char* name; atomic_kind k; std::size_t el; double u; };
    const row rows[] = {{"HDW int add", atomic_kind::hdw, 4, 0},
                        {"CAS sat-add", atomic_kind::cas, 4, 0},
                        {"argmax CAS", atomic_kind::cas, 8, detail::model_contention_tolerance<xcg_op>(atomic_kind::cas)},
                        {"argmax lock", atomic_kind::xcg, 12, 0}};
    std::ostringstream head;
    head << "  " << std::left << std::setw(22) << "";
    for (auto H : bins_of(s)) head << std::setw(9) << H;
    std::cout << head.str() << "\n";
    for (const auto& rw : rows)
      for (std::int64_t rf : {std::int64_t(1), std::int64_t(63)}) {
        std::ostringstream line;
        line << "  " << std::left << std::setw(22) << (std::string(rw.name) + " RF=" + std::to_string(rf));
        for (auto H : bins_of(s)) {
          hist_options o;
          o.race_factor = double(rf);
          const auto chosen = plan_hist(ctx.props(), s.n, H, rw.el, rw.k, o, {}, rw.u);
          const hist_plan p = H <= shared_sweep_max ? plan_hist_shared(ctx.props(), s.n, H, rw.el, rw.k, {}, rw.u)
                                                    : plan_hist_global(ctx.props(), s.n, H, rw.el, rw.k, double(rf), {}, rw.u);
          std::ostringstream cell;
          if (chosen.partitioned) cell << "part" << chosen.passes << "*";
          else if (chosen.split > 1) cell << "split" << chosen.split << "*";
          else cell << p.multi << "," << p.passes << (p.thread_private ? "p" : "") << (chosen.strategy == p.strategy ? "*" : "");
          line << std::setw(9) << cell.str();
        }
        std::cout << line.str() << "\n";
      }
    std::cout << std::right;
  }

  template <class Op>
  void bench_case(context& ctx, bench::suite& suite, const micro_spec& s, const buffer<u32>& input, std::int64_t H,
                  std::int64_t rf) const {
    using V = typename Op::value_type;
    constexpr bool is_hdw = std::is_same_v<Op, hdw_op>;
    constexpr bool is_xcg = std::is_same_v<Op, xcg_op>;
    const char* op_name = is_hdw ? "HDW" : is_xcg ? "XCG(argmax)" : "CAS";
    const micro_updates<Op> f{input.data(), fast_divisor(divisor(H, rf)), u32(rf)};
    const std::int64_t n = s.n;
    std::ostringstream case_name;
    case_name << op_name << " H=" << H << " RF=" << rf;
    suite.begin_case(case_name.str(), {{"op", op_name}, {"H", H}, {"RF", rf}, {"n", n}}, double(n) * sizeof(u32));
    buffer<V> histo(ctx, std::size_t(H));
    const auto reset = [&] { fill_identity<Op>(ctx, histo.view()); };

    // CUB first: its result is this case's reference for every other variant.
    std::vector<V> expected;
    const unsigned naive_grid = unsigned(detail::ceil_div(std::max<std::int64_t>(n, 1), 256));
    if constexpr (is_hdw) {
      // CUB HistogramEven over the same bins, computed on the fly from the input.
      auto samples = thrust::make_transform_iterator(input.data(), bin_functor{fast_divisor(divisor(H, rf)), u32(rf)});
      std::size_t temp_bytes = 0;
      SOAC_CUDA_CHECK(cub::DeviceHistogram::HistogramEven(nullptr, temp_bytes, samples, histo.data(), int(H + 1), 0, int(H),
                                                          n, ctx.stream()));
      buffer<unsigned char> temp(ctx, std::max<std::size_t>(temp_bytes, 1), lifetime::temporary);
      suite.measure("CUB HistogramEven", bench::role::baseline, [&] {
        SOAC_CUDA_CHECK(cub::DeviceHistogram::HistogramEven(temp.data(), temp_bytes, samples, histo.data(), int(H + 1), 0,
                                                            int(H), n, ctx.stream()));
      });
      expected = histo.to_vector();
    } else {
      // CUB radix sort of (bin, value) pairs + ReduceByKey; the pairs are made before timing.
      buffer<u32> keys(ctx, std::size_t(n)), keys_sorted(ctx, std::size_t(n)), unique(ctx, std::size_t(H));
      buffer<V> vals(ctx, std::size_t(n)), vals_sorted(ctx, std::size_t(n)), aggregates(ctx, std::size_t(H));
      buffer<std::int64_t> runs(ctx, 1);
      materialize_kernel<Op><<<naive_grid, 256, 0, ctx.stream()>>>(n, f, keys.data(), vals.data());
      SOAC_CHECK_LAUNCH("materialize_kernel");
      int end_bit = 1;
      while ((std::int64_t{1} << end_bit) < H) ++end_bit;
      std::size_t sort_bytes = 0, rbk_bytes = 0;
      SOAC_CUDA_CHECK(cub::DeviceRadixSort::SortPairs(nullptr, sort_bytes, keys.data(), keys_sorted.data(), vals.data(),
                                                      vals_sorted.data(), n, 0, end_bit, ctx.stream()));
      SOAC_CUDA_CHECK(cub::DeviceReduce::ReduceByKey(nullptr, rbk_bytes, keys_sorted.data(), unique.data(), vals_sorted.data(),
                                                     aggregates.data(), runs.data(), Op{}, n, ctx.stream()));
      buffer<unsigned char> temp(ctx, std::max(sort_bytes, rbk_bytes) + 1, lifetime::temporary);
      suite.measure("CUB sort+ReduceByKey", bench::role::baseline, [&] {
        std::size_t b1 = sort_bytes, b2 = rbk_bytes;
        SOAC_CUDA_CHECK(cub::DeviceRadixSort::SortPairs(temp.data(), b1, keys.data(), keys_sorted.data(), vals.data(),
                                                        vals_sorted.data(), n, 0, end_bit, ctx.stream()));
        SOAC_CUDA_CHECK(cub::DeviceReduce::ReduceByKey(temp.data(), b2, keys_sorted.data(), unique.data(), vals_sorted.data(),
                                                       aggregates.data(), runs.data(), Op{}, n, ctx.stream()));
      });
      const auto count = runs.to_vector()[0];
      const auto u = unique.to_vector();
      const auto a = aggregates.to_vector();
      expected.assign(std::size_t(H), Op::identity());
      for (std::int64_t k = 0; k < count; ++k) expected[u[std::size_t(k)]] = a[std::size_t(k)];
    }
    const auto check = [&] {
      const auto got = histo.to_vector();
      std::int64_t bad = 0;
      for (std::size_t b = 0; b < got.size(); ++b) bad += !same_bytes(got[b], expected[b]);
      if (bad) suite.annotate("WRONG: " + std::to_string(bad) + " bins differ from CUB");
      return bad == 0;
    };
    // Naive global atomics. CAS into few bins is contention-bound (3.9 s per run at H = 31 on an
    // H100), so for CAS operators it runs only where at least naive_min_bins bins are in use.
    if (is_hdw || divisor(H, rf) >= naive_min_bins) {
      suite.measure("naive global atomics", bench::role::baseline, [&] {
        naive_kernel<Op><<<naive_grid, 256, 0, ctx.stream()>>>(n, f, histo.data());
        SOAC_CHECK_LAUNCH("naive_kernel");
      }, {}, reset);
      check();
    }

    // One line per case on stderr as soon as it is measured (the table comes at the end).
    struct progress_line {
      const bench::suite& suite;
      ~progress_line() {
        const auto& c = suite.cases().back();
        std::ostringstream s;
        s << "[case] " << c.name << " floor_us=" << std::fixed << std::setprecision(1) << suite.floor_ms(c) * 1e3;
        for (const auto& v : c.variants) s << " | " << v.name << "=" << v.time.median_ms * 1e3;
        std::cerr << s.str() << "\n";
      }
    } progress{suite};
    auto soac_variant = [&](const std::string& label, const hist_options& o) {
      std::string plan;
      try {
        suite.measure(label, bench::role::soac, [&] { plan = hist(ctx, o, n, f, histo.view(), Op{}).describe(); }, {}, reset);
      } catch (const usage_error& e) {
        std::cerr << "  " << label << ": not run (" << e.what() << ")\n";
        return;
      }
      if (check()) suite.annotate(plan);
    };
    soac_variant("soac auto", {});
    if (!s.variants.empty()) {
      for (const auto& v : variant_list(s)) soac_variant("soac " + v, options_for(v));
      return;
    }
    if (H <= private_sweep_max) {
      // Thread-private shared copies (no atomics) forced both ways, where one copy per thread fits.
      soac_variant("soac auto, thread-private on", options_for("private"));
      soac_variant("soac auto, thread-private off", options_for("atomic-shared"));
    }
    if (is_xcg && s.lock) soac_variant("soac auto, lock (XCG)", options_for("lock"));
    if (H <= cluster_sweep_max) {
      // Clusters of 2 blocks folding through distributed shared memory (see
      // hist_tuning::cluster_note), forced both ways.
      for (int c : {1, 2}) {
        hist_options o;
        o.overrides.cluster = c;
        soac_variant(c == 1 ? "soac auto, clusters off" : "soac auto, clusters of 2", o);
      }
      // Block results reduced from partial rows (see hist_tuning::partials_for_cas), forced both
      // ways, and on without clusters.
      hist_options on, off, alone;
      on.overrides.block_partials = alone.overrides.block_partials = hist_toggle::on;
      off.overrides.block_partials = hist_toggle::off;
      alone.overrides.cluster = 1;
      soac_variant("soac auto, partials on", on);
      soac_variant("soac auto, partials off", off);
      soac_variant("soac auto, partials on, clusters off", alone);
    }
    if (H >= split_sweep_min && ctx.props().compute_major >= 9) {
      // Split histograms (distributed shared memory), clusters of 2-16 blocks where a slice fits
      // one block and at least 2K bins.
      for (int c : {2, 4, 8, 16}) {
        hist_options o;
        o.overrides.split = c;
        if (H / c < 2048 || std::size_t(detail::ceil_div(H, c)) * sizeof(V) > ctx.props().shared_per_block_optin) continue;
        soac_variant("soac split " + std::to_string(c), o);
      }
    }
    if (H >= split_sweep_min && !is_xcg) {
      // The partitioned multi-pass (see hist_tuning::partition_note), forced both ways.
      hist_options on, off;
      on.overrides.partition = hist_toggle::on;
      off.overrides.partition = hist_toggle::off;
      soac_variant("soac partitioned", on);
      soac_variant("soac auto, partition off", off);
    }
    if (!s.sweeps) return;
    if (H > shared_sweep_max) {
      // Beyond Fig 7's shared panel: one sub-histogram per block, S passes (to re-fit V-A's switch).
      hist_options o;
      o.strategy = hist_strategy::shared;
      o.multi = 1;
      soac_variant("shared M0=1", o);
    } else {
      // Fig 7: M_0 = 1 and M_k = floor(k * B / min(H, B)), multi-pass when M_k * H does not fit.
      const std::int64_t B = hist_tuning::shared_block;
      std::vector<std::int64_t> ms{1};
      for (int k : {1, 3, 6, 9}) ms.push_back(std::max<std::int64_t>(1, k * B / std::min(H, B)));
      for (std::size_t j = 0; j < ms.size(); ++j) {
        hist_options o;
        o.strategy = hist_strategy::shared;
        o.multi = int(std::min<std::int64_t>(ms[j], B));
        soac_variant("shared M" + std::to_string(j == 0 ? 0 : std::array{1, 3, 6, 9}[j - 1]) + "=" + std::to_string(o.multi), o);
      }
    }
    if (H >= global_sweep_min) {
      for (int m : {1, 4, 8, 16, 32}) {
        hist_options o;
        o.strategy = hist_strategy::global;
        o.multi = m;
        o.passes = 1;
        soac_variant("global M=" + std::to_string(m), o);
      }
    }
  }
};

}  // namespace
}  // namespace soac::apps

SOAC_REGISTER_APP(soac::apps::hist_app)
