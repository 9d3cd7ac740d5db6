// The look-back thesis' scan experiments (sections 3.4-3.5): int32 sums, plain and segmented by a
// flag array. Dataset: values (int32) and flags (uint8, 1 starts a segment). Variants of `run`:
// segscan (flags), offsets (the same segments as start indices), scan (flags ignored).
// `soac bench scan` sweeps n with a flag every 10,000 elements, segment lengths at 5M, and flags
// on every k-th tile, against CUB InclusiveSum, CUB InclusiveSumByKey (keys = segment ids), a
// 3-pass reduce-then-scan with the lifted (flag, value) operator, and the 3n traffic floor.
#include <algorithm>
#include <cstdint>
#include <sstream>
#include <string>
#include <vector>

#include <cub/block/block_load.cuh>
#include <cub/block/block_reduce.cuh>
#include <cub/block/block_scan.cuh>
#include <cub/block/block_store.cuh>
#include <cub/device/device_scan.cuh>

#include "apps/app.hpp"
#include "apps/int32_sums.hpp"
#include "core/buffer.hpp"
#include "core/error.hpp"
#include "core/launch.cuh"
#include "core/operators.hpp"
#include "core/scan.cuh"
#include "datasets/bundle.hpp"
#include "datasets/random.hpp"
#include "validate/scan.hpp"

namespace soac::apps {
namespace {

using datasets::bundle;
using value_t = std::int32_t;
using flag_t = std::uint8_t;

struct scan_spec {
  std::int64_t n = 0;
  std::int64_t segment = 0;     // a flag every `segment` elements (0: none)
  std::int64_t tile_every = 0;  // a flag at the start of every k-th soac tile (0: none)
  std::uint64_t seed = 1;
};

struct scan_data {
  std::vector<value_t> values;
  std::vector<flag_t> flags;
};

scan_data make_data(const scan_spec& s) {
  scan_data d;
  d.values.resize(std::size_t(s.n));
  d.flags.resize(std::size_t(s.n));
  const std::int64_t tile = scan_tuning::tile_items<value_t>();
  value_t* v = d.values.data();
  flag_t* f = d.flags.data();
  const std::int64_t n = s.n;
  SOAC_OMP_PARALLEL_FOR
  for (std::int64_t i = 0; i < n; ++i) {
    v[i] = static_cast<value_t>(datasets::random_u32(s.seed, 0, std::uint64_t(i)) % 201) - 100;
    f[i] = (s.segment > 0 && i % s.segment == 0) || (s.tile_every > 0 && i % (s.tile_every * tile) == 0);
  }
  return d;
}


// ---- Baseline: 3-pass reduce-then-scan with the lifted operator (thesis 3.1) ----------------
struct lifted {
  value_t value;
  int flag;
};
struct lifted_plus {
  SOAC_HD lifted operator()(const lifted& a, const lifted& b) const {
    return {b.flag ? b.value : a.value + b.value, a.flag | b.flag};
  }
};
constexpr int rts_block = 256, rts_items = 16, rts_tile = rts_block * rts_items;

template <class T>
__device__ void load_tile(const T* in, std::int64_t base, int valid, T (&x)[rts_items], T pad) {
  using Load = cub::BlockLoad<T, rts_block, rts_items, cub::BLOCK_LOAD_WARP_TRANSPOSE>;
  __shared__ typename Load::TempStorage storage;
  if (valid == rts_tile) Load(storage).Load(in + base, x);
  else Load(storage).Load(in + base, x, valid, pad);
  __syncthreads();
}

// Loads a thread's values and flags of tile `base` and folds them with the lifted operator.
__device__ lifted load_and_fold(std::int64_t base, int valid, const value_t* v, const flag_t* f, value_t (&x)[rts_items],
                                flag_t (&fl)[rts_items]) {
  load_tile(v, base, valid, x, 0);
  load_tile(f, base, valid, fl, flag_t{0});
  lifted acc{x[0], fl[0]};
  for (int j = 1; j < rts_items; ++j) acc = lifted_plus{}(acc, lifted{x[j], fl[j]});
  return acc;
}

__global__ void rts_reduce(std::int64_t n, const value_t* v, const flag_t* f, lifted* totals) {
  using Reduce = cub::BlockReduce<lifted, rts_block>;
  __shared__ typename Reduce::TempStorage storage;
  const std::int64_t base = std::int64_t(blockIdx.x) * rts_tile;
  const int valid = int(std::min<std::int64_t>(rts_tile, n - base));
  value_t x[rts_items];
  flag_t fl[rts_items];
  const lifted acc = load_and_fold(base, valid, v, f, x, fl);
  const lifted total = Reduce(storage).Reduce(acc, lifted_plus{});
  if (threadIdx.x == 0) totals[blockIdx.x] = total;
}

struct fixed_prefix {
  lifted prefix;
  __device__ lifted operator()(const lifted&) const { return prefix; }
};

__global__ void rts_downsweep(std::int64_t n, const value_t* v, const flag_t* f, const lifted* prefixes, value_t* out) {
  using Scan = cub::BlockScan<lifted, rts_block>;
  using Store = cub::BlockStore<value_t, rts_block, rts_items, cub::BLOCK_STORE_WARP_TRANSPOSE>;
  __shared__ union {
    typename Scan::TempStorage scan;
    typename Store::TempStorage store;
  } storage;
  const std::int64_t base = std::int64_t(blockIdx.x) * rts_tile;
  const int valid = int(std::min<std::int64_t>(rts_tile, n - base));
  value_t x[rts_items];
  flag_t fl[rts_items];
  const lifted acc = load_and_fold(base, valid, v, f, x, fl);
  lifted running;
  fixed_prefix cb{prefixes[blockIdx.x]};
  Scan(storage.scan).ExclusiveScan(acc, running, lifted_plus{}, cb);
  for (int j = 0; j < rts_items; ++j) {
    running = lifted_plus{}(running, lifted{x[j], fl[j]});
    x[j] = running.value;
  }
  __syncthreads();
  if (valid == rts_tile) Store(storage.store).Store(out + base, x);
  else Store(storage.store).Store(out + base, x, valid);
}

class reduce_then_scan {
 public:
  reduce_then_scan(context& ctx, std::int64_t n) : ctx_(ctx), n_(n), tiles_(detail::ceil_div(n, rts_tile)) {
    totals_ = static_cast<lifted*>(ctx.allocate_temp(sizeof(lifted) * std::size_t(2 * tiles_)));
    SOAC_CUDA_CHECK(cub::DeviceScan::ExclusiveScan(nullptr, temp_bytes_, totals_, totals_ + tiles_, lifted_plus{},
                                                   lifted{0, 0}, tiles_, ctx.stream()));
    temp_ = ctx.allocate_temp(temp_bytes_);
  }
  ~reduce_then_scan() {
    ctx_.free_temp(temp_);
    ctx_.free_temp(totals_);
  }
  void operator()(const value_t* v, const flag_t* f, value_t* out) {
    rts_reduce<<<unsigned(tiles_), rts_block, 0, ctx_.stream()>>>(n_, v, f, totals_);
    SOAC_CHECK_LAUNCH("rts_reduce");
    SOAC_CUDA_CHECK(cub::DeviceScan::ExclusiveScan(temp_, temp_bytes_, totals_, totals_ + tiles_, lifted_plus{},
                                                   lifted{0, 0}, tiles_, ctx_.stream()));
    rts_downsweep<<<unsigned(tiles_), rts_block, 0, ctx_.stream()>>>(n_, v, f, totals_ + tiles_, out);
    SOAC_CHECK_LAUNCH("rts_downsweep");
  }

 private:
  context& ctx_;
  std::int64_t n_, tiles_;
  lifted* totals_ = nullptr;
  void* temp_ = nullptr;
  std::size_t temp_bytes_ = 0;
};

// ---- The app ----------------------------------------------------------------------------
std::string run_variant(context& ctx, const std::string& variant, std::int64_t n, const value_t* v, const flag_t* f,
                        const std::int64_t* starts, std::int64_t nstarts, span<value_t> out) {
  const array_reader<value_t> in{v};
  if (variant == "scan") return scan(ctx, n, in, out, plus<value_t>{}).describe();
  if (variant == "segscan") return segscan(ctx, n, in, array_reader<flag_t>{f}, out, plus<value_t>{}).describe();
  if (variant == "offsets")
    return "offsets -> " +
           segscan_offsets(ctx, n, in, span<const std::int64_t>(starts, std::size_t(nstarts)), out, plus<value_t>{})
               .describe();
  throw usage_error("scan: unknown variant '" + variant + "' (expected segscan, offsets or scan)");
}

std::vector<std::int64_t> starts_of(const std::vector<flag_t>& flags) {
  std::vector<std::int64_t> s;
  for (std::size_t i = 0; i < flags.size(); ++i)
    if (flags[i]) s.push_back(std::int64_t(i));
  return s;
}

class scan_app final : public app {
 public:
  scan_app() : app(describe()) {}

  static app_info describe() {
    app_info a = app_info::named("scan", "int32 scan and segmented scan (flags or offsets), single-pass look-back (thesis "
                                         "3.4-3.5)");
    {
      auto p = [](std::int64_t n, std::int64_t segment, std::int64_t tile_every) {
        return nlohmann::json{{"n", n}, {"segment", segment}, {"tile_every", tile_every}};
      };
      a.presets = {{"n-sweep", "n from 10^3 to 2^26 (bench sweeps up to n), a flag every 10,000 elements", p(1 << 26, 10'000, 0)},
                   {"segments", "5M elements, segment length 10^0 .. 10^6 (bench sweeps; gen uses `segment`)", p(5'000'000, 1000, 0)},
                   {"tile-flags", "2^26 elements, a flag on every k-th tile (bench sweeps k; gen uses `tile_every`)", p(1 << 26, 0, 4)},
                   {"small", "1e5 elements, segments of 100 (tests)", p(100'000, 100, 0)}};
    }
    a.variants = {"segscan", "offsets", "scan"};
    a.bench_presets = {"n-sweep", "segments", "tile-flags"};
    return a;
  }

  static scan_spec spec_of(const nlohmann::json& params, std::uint64_t seed) {
    scan_spec s;
    s.n = int_param(params, "n", 0, std::int64_t{1} << 32);
    s.segment = int_param(params, "segment", 0, std::int64_t{1} << 40);
    s.tile_every = int_param(params, "tile_every", 0, std::int64_t{1} << 30);
    s.seed = seed;
    return s;
  }

  void check_params(const nlohmann::json& params) const override { spec_of(params, 0); }
  // What a run reads: values and flags of one length (segment and tile_every are the generator's).
  void check_dataset(const bundle& in) const override {
    datasets::length_of(in, "values", "n");
    datasets::length_of(in, "flags", "n");
    datasets::require_same_length(in, {"values", "flags"});
  }

  void generate(const gen_request& r) const override {
    const auto s = spec_of(r.params, r.seed);
    require_host_memory(checked_bytes(std::uint64_t(s.n), sizeof(value_t) + sizeof(flag_t), "scan: n"),
                        "scan: n = " + std::to_string(s.n));
    const auto d = make_data(s);
    datasets::bundle_writer out(r.output, "dataset", name());
    out.add<value_t>("values", d.values);
    out.add<flag_t>("flags", d.flags);
    finish_dataset(out, r);
  }

  // Every prefix sum of a segment (the whole array for the plain scan) is formed, in any
  // grouping of consecutive values: all must fit int32.
  static void require_int32_sums(const std::vector<value_t>& values, const std::vector<flag_t>& flags, const std::string& variant) {
    const bool segmented = variant != "scan";
    std::int64_t begin = 0;
    const auto n = std::int64_t(values.size());
    for (std::int64_t i = 1; i <= n; ++i) {
      if (i < n && !(segmented && flags[std::size_t(i)] != 0)) continue;
      if (!consecutive_sums_fit_int32(values.data() + begin, i - begin))
        throw input_error("scan: the values from index " + std::to_string(begin) + " to " + std::to_string(i - 1) +
                          (segmented ? " (one segment)" : "") + " have prefix sums beyond int32");
      begin = i;
    }
  }

  std::string run(context& ctx, const run_request& r) const override {
    const auto in = open_dataset(r.input);
    const std::string variant = r.variant.empty() ? "segscan" : r.variant;
    const auto v_h = in.read<value_t>("values");
    const auto f_h = in.read<flag_t>("flags");
    require_int32_sums(v_h, f_h, variant);
    const auto s_h = starts_of(f_h);
    const auto n = static_cast<std::int64_t>(v_h.size());
    buffer<value_t> v(ctx, std::span<const value_t>(v_h));
    buffer<flag_t> f(ctx, std::span<const flag_t>(f_h));
    buffer<std::int64_t> st(ctx, std::span<const std::int64_t>(s_h));
    buffer<value_t> out(ctx, v_h.size());
    std::string plan;
    const bench::stats t = bench::time(ctx, bench::settings{.warmup = 1, .runs = 1, .progress = false, .warmup_ms = 0}, [&] {
      plan = run_variant(ctx, variant, n, v.data(), f.data(), st.data(), std::int64_t(s_h.size()), out);
    });
    datasets::bundle_writer res(r.output, "result", name());
    res.add<value_t>("out", out.to_vector());
    res.params() = in.params();
    res.info() = {{"backend", std::string(to_string(ctx.which()))}, {"device", ctx.props().name},
                  {"variant", variant}, {"plan", plan}, {"kernel_ms", t.median_ms}};
    res.finish();
    std::ostringstream s;
    s << "scan: " << n << " int32 values, " << s_h.size() << " segment starts, on " << ctx.describe() << "\n  "
      << variant << ": " << plan << ", " << t.median_ms << " ms";
    return s.str();
  }

  validate_report validate(const validate_request& r) const override {
    const auto in = open_dataset(r.input);
    const auto out = bundle::open(r.result, "result", name());
    const auto values = in.read<value_t>("values");
    auto flags = in.read<flag_t>("flags");
    const std::string variant = out.info().value("variant", std::string("segscan"));
    require_int32_sums(values, flags, variant);
    if (variant == "scan") flags.clear();
    const auto want = validate::scan_reference<plus<value_t>>(std::span<const value_t>(values),
                                                              std::span<const flag_t>(flags), {}, true);
    const auto got = out.read<value_t>("out");
    const auto rep = validate::compare<value_t>(want, got, [](value_t a, value_t b) { return a == b; });
    return {rep.ok(), rep.describe("outputs of " + variant)};
  }

  void bench(context& ctx, const bench_request& r, bench::suite& suite) const override {
    if (!ctx.is_cuda()) throw usage_error("soac bench scan compares against CUB and needs the cuda backend");
    const auto names = r.presets.empty() ? bench_presets() : r.presets;
    struct point {
      scan_spec spec;
      bool plain;
    };
    std::vector<point> points;
    for (const auto& preset_name : names) {
      const auto params = resolve_params(preset_name, r.overrides);
      const auto base = spec_of(params, r.seed);
      if (preset_name == "n-sweep") {
        for (std::int64_t n : {std::int64_t{1000}, std::int64_t{10'000}, std::int64_t{100'000}, std::int64_t{1'000'000},
                               std::int64_t{1} << 22, std::int64_t{1} << 24, std::int64_t{1} << 26})
          if (n <= base.n) points.push_back({{n, base.segment, 0, r.seed}, true});
      } else if (preset_name == "segments") {
        for (std::int64_t len = 1; len <= 1'000'000; len *= 10) points.push_back({{base.n, len, 0, r.seed}, false});
      } else if (preset_name == "tile-flags") {
        for (std::int64_t k : {1, 2, 4, 16, 64, 256}) points.push_back({{base.n, 0, k, r.seed}, false});
      } else {
        points.push_back({base, true});
      }
    }
    suite.expect_cases(static_cast<int>(points.size() * 2));
    for (const auto& p : points) bench_point(ctx, p.spec, p.plain, suite);
  }

  void bench_point(context& ctx, const scan_spec& spec, bool plain, bench::suite& suite) const {
    const auto d = make_data(spec);
    const std::int64_t n = spec.n;
    // Segment ids for CUB's by-key scan (untimed: its input format).
    std::vector<std::int32_t> keys_h(static_cast<std::size_t>(n));
    std::int32_t id = 0;
    for (std::int64_t i = 0; i < n; ++i) keys_h[std::size_t(i)] = id += (i > 0 && d.flags[std::size_t(i)]);
    const auto starts_h = starts_of(d.flags);
    buffer<value_t> v(ctx, std::span<const value_t>(d.values));
    buffer<flag_t> f(ctx, std::span<const flag_t>(d.flags));
    buffer<std::int32_t> keys(ctx, std::span<const std::int32_t>(keys_h));
    buffer<std::int64_t> starts(ctx, std::span<const std::int64_t>(starts_h));
    buffer<value_t> out(ctx, std::size_t(n));
    const auto want_plain = validate::scan_reference<plus<value_t>>(std::span<const value_t>(d.values), {}, {}, true);
    const auto want_seg = validate::scan_reference<plus<value_t>>(std::span<const value_t>(d.values),
                                                                  std::span<const flag_t>(d.flags), {}, true);
    // Every variant's output is checked once after timing, so a fast wrong answer cannot pass.
    auto verify = [&](const std::vector<value_t>& want, const std::string& who) {
      if (out.to_vector() != want) suite.annotate("WRONG RESULT (" + who + ")");
    };

    std::size_t temp_bytes = 0, t2 = 0;
    SOAC_CUDA_CHECK(cub::DeviceScan::InclusiveSum(nullptr, temp_bytes, v.data(), out.data(), n, ctx.stream()));
    SOAC_CUDA_CHECK(cub::DeviceScan::InclusiveSumByKey(nullptr, t2, keys.data(), v.data(), out.data(), n,
                                                       cuda::std::equal_to<>{}, ctx.stream()));
    temp_bytes = std::max(temp_bytes, t2);
    void* temp = ctx.allocate_temp(std::max<std::size_t>(temp_bytes, 1));
    std::string plan;
    const auto soac_variant = [&](const std::string& label, const std::string& variant) {
      suite.measure(label, bench::role::soac, [&] {
        plan = run_variant(ctx, variant, n, v.data(), f.data(), starts.data(), std::int64_t(starts_h.size()), out);
      });
      suite.annotate(plan);
    };

    std::ostringstream what;
    if (spec.segment > 0) what << "flag every " << spec.segment;
    else what << "flag every " << spec.tile_every << " tiles";
    if (plain) {
      std::ostringstream name;
      name << "scan n=" << n;
      suite.begin_case(name.str(), {{"n", n}}, 2.0 * n * sizeof(value_t));
      suite.measure("CUB InclusiveSum", bench::role::baseline, [&] {
        SOAC_CUDA_CHECK(cub::DeviceScan::InclusiveSum(temp, temp_bytes, v.data(), out.data(), n, ctx.stream()));
      });
      verify(want_plain, "CUB InclusiveSum");
      soac_variant("soac scan", "scan");
      verify(want_plain, "soac scan");
    }
    std::ostringstream name;
    name << "segscan n=" << n << ", " << what.str() << " (" << starts_h.size() << " segments)";
    // The 3n floor: values and flags read once, the output written once.
    suite.begin_case(name.str(), {{"n", n}, {"segment", spec.segment}, {"tile_every", spec.tile_every}},
                     double(n) * (2 * sizeof(value_t) + sizeof(flag_t)));
    suite.measure("CUB InclusiveSumByKey", bench::role::baseline, [&] {
      SOAC_CUDA_CHECK(cub::DeviceScan::InclusiveSumByKey(temp, temp_bytes, keys.data(), v.data(), out.data(), n,
                                                         cuda::std::equal_to<>{}, ctx.stream()));
    });
    verify(want_seg, "CUB by key");
    {
      reduce_then_scan rts(ctx, n);
      suite.measure("3-pass lifted", bench::role::baseline, [&] { rts(v.data(), f.data(), out.data()); });
      verify(want_seg, "3-pass lifted");
    }
    soac_variant("soac segscan", "segscan");
    verify(want_seg, "soac segscan");
    soac_variant("soac segscan offsets", "offsets");
    verify(want_seg, "soac offsets");
    ctx.free_temp(temp);
  }
};

}  // namespace
}  // namespace soac::apps

SOAC_REGISTER_APP(soac::apps::scan_app)
