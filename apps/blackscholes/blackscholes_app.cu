// Black-Scholes option pricing in the two forms of issue 25:
// - ZOne (Fig 6, Listing 2): n independent European options whose five float arrays (spot,
//   strike, years to expiry, risk-free rate, volatility) are read from files and whose call and
//   put prices are written to files, streamed through soac::stream (the map is soac::scatter with
//   one write per destination);
// - FHPC17 (Fig 14/15): m options each priced on n days and summed per option with
//   soac::segreduce, the segreduce microbenchmark's element function (apps/segreduce/microbench.hpp)
//   as an app.
// `soac bench blackscholes` times the ZOne form: the serial loop, streamed, and the bound.
#include <algorithm>
#include <iostream>
#include <optional>
#include <sstream>

#include <cuda/std/tuple>

#include "apps/app.hpp"
#include "apps/segreduce/microbench.hpp"
#include "apps/stream/support.hpp"
#include "core/buffer.hpp"
#include "core/error.hpp"
#include "core/operators.hpp"
#include "core/scatter.cuh"
#include "core/segreduce.cuh"
#include "core/stream.hpp"
#include "datasets/binary_file.hpp"
#include "datasets/bundle.hpp"
#include "datasets/random.hpp"
#include "validate/blackscholes.hpp"
#include "validate/segreduce.hpp"

namespace soac::apps {
namespace {

using datasets::bundle;
using datasets::dtype;
namespace fs = std::filesystem;
namespace mb = segreduce_bench;

// The five inputs, in the order of the raw format's -i files, with the generator's ranges.
struct input_array {
  const char* name;
  float lo, hi;
};
constexpr input_array inputs_of_zone[] = {
    {"spot", 5.0f, 30.0f}, {"strike", 1.0f, 100.0f}, {"years", 0.25f, 10.0f}, {"rate", 0.01f, 0.05f}, {"volatility", 0.1f, 0.5f}};
constexpr const char* outputs_of_zone[] = {"call", "put"};

// One option's call and put, in float as ZOne's listing (N(d) through erfc).
struct price_option {
  const float* S;
  const float* X;
  const float* T;
  const float* r;
  const float* v;
  SOAC_HD auto operator()(std::int64_t i) const {
    const float sqrt_t = ::sqrtf(T[i]), v_sqrt_t = v[i] * sqrt_t;
    const float d1 = (::logf(S[i] / X[i]) + (r[i] + 0.5f * v[i] * v[i]) * T[i]) / v_sqrt_t, d2 = d1 - v_sqrt_t;
    const float discounted = X[i] * ::expf(-r[i] * T[i]);
    constexpr float inv_sqrt2 = 0.70710678118654752f;
    const float n1 = 0.5f * ::erfcf(-d1 * inv_sqrt2), n2 = 0.5f * ::erfcf(-d2 * inv_sqrt2);
    const float m1 = 0.5f * ::erfcf(d1 * inv_sqrt2), m2 = 0.5f * ::erfcf(d2 * inv_sqrt2);
    return writes(write_at<std::int64_t, float>{i, S[i] * n1 - discounted * n2},
                  write_at<std::int64_t, float>{i, discounted * m2 - S[i] * m1});
  }
};

void price_chunk(context& ctx, const stream_chunk& c) {
  const auto f = price_option{c.input<float>(0), c.input<float>(1), c.input<float>(2), c.input<float>(3), c.input<float>(4)};
  scatter(ctx, c.count, f, span<float>(c.output<float>(0), std::size_t(c.count)), span<float>(c.output<float>(1), std::size_t(c.count)));
}

void fill_array(const input_array& a, std::size_t k, std::uint64_t seed, std::uint64_t at, std::span<std::uint8_t> block) {
  const std::uint64_t key = datasets::stream_key(seed, 0x62730000ULL + k);
  auto* out = reinterpret_cast<float*>(block.data());
  const std::uint64_t first = at / sizeof(float);
  for (std::size_t i = 0; i < block.size() / sizeof(float); ++i) {
    const double u = double(datasets::keyed_word(key, first + i) >> 11) * 0x1.0p-53;
    out[i] = a.lo + float(u) * (a.hi - a.lo);
  }
}

struct spec {
  bool zone = true;
  std::int64_t options = 0, days = 0;
};

bool zone_form(const nlohmann::json& params) {
  if (!params.contains("form") || !params["form"].is_string()) throw usage_error("blackscholes: parameter form must be a string");
  const auto form = params["form"].get<std::string>();
  if (form != "zone" && form != "fhpc17") throw usage_error("blackscholes: form '" + form + "' (expected zone or fhpc17)");
  return form == "zone";
}

void require_fhpc17_size(const spec& s) {
  if (!s.zone && s.options * s.days > (std::int64_t{1} << 31))
    throw usage_error("blackscholes: options x days must be at most 2^31 in the FHPC17 form");
}

// gen's parameters.
spec spec_of(const nlohmann::json& params) {
  spec s{zone_form(params), int_param(params, "options", 0, std::int64_t{1} << 36), int_param(params, "days", 1, std::int64_t{1} << 31)};
  require_fhpc17_size(s);
  return s;
}

// What a dataset's computation reads: its form, the days of each option (FHPC17); the options are
// its arrays' common length (FHPC17: rate and volatility; ZOne: the five inputs).
spec dataset_spec(const bundle& in) {
  spec s{zone_form(in.params())};
  std::vector<std::string> arrays;
  if (s.zone) {
    for (const auto& a : inputs_of_zone) arrays.push_back(a.name);
  } else {
    s.days = int_param(in.params(), "days", 1, std::int64_t{1} << 31);
    arrays = {"rate", "volatility"};
  }
  for (const auto& a : arrays) s.options = datasets::length_of(in, a, "options");
  for (const auto& a : arrays)
    if (in.header(a).shape[0] != s.options)
      throw input_error(in.dir().string() + ": arrays must have the same length, but " + a + " has " +
                        std::to_string(in.header(a).shape[0]) + " and " + arrays.back() + " " + std::to_string(s.options));
  require_fhpc17_size(s);
  return s;
}

// The ZOne form's arrays: five sources, and the outputs where a result goes.
struct zone_files {
  std::vector<stream_source> in;
  bool bundle = false;
};

zone_files open_zone(const std::vector<fs::path>& inputs, const std::string& format) {
  zone_files z;
  if (format == "raw") {
    std::vector<fs::path> files;
    if (inputs.size() == 1) {
      std::error_code ec;
      if (!fs::is_directory(inputs.front(), ec))
        throw usage_error("blackscholes: --format raw takes five -i files (spot strike years rate volatility) or one folder");
      for (const auto& a : inputs_of_zone) files.push_back(inputs.front() / (std::string(a.name) + ".f32"));
    } else if (inputs.size() == 5) {
      files = inputs;
    } else {
      throw usage_error("blackscholes: --format raw takes five -i files (spot strike years rate volatility) or one folder");
    }
    for (const auto& f : files) z.in.push_back(streaming::raw_source(f, dtype::f32));
    return z;
  }
  const auto b = find_app("blackscholes").open_dataset(inputs.front());
  if (!dataset_spec(b).zone) throw usage_error(inputs.front().string() + ": an FHPC17 dataset (this reads the ZOne form)");
  for (const auto& a : inputs_of_zone) z.in.push_back(streaming::bundle_source(b, a.name, dtype::f32));
  z.bundle = true;
  return z;
}

// Checks options [first, first + count) of a ZOne result.
void check_zone(validate::report& rep, double& worst, const std::vector<stream_source>& in,
                const std::vector<stream_source>& out, std::int64_t first, std::int64_t count) {
  std::vector<std::vector<float>> a(7, std::vector<float>(std::size_t(count)));
  for (std::size_t k = 0; k < 5; ++k) streaming::read_elements(in[k], first, count, a[k].data());
  for (std::size_t j = 0; j < 2; ++j) streaming::read_elements(out[j], first, count, a[5 + j].data());
  validate::check_prices(rep, worst, first, a[0], a[1], a[2], a[3], a[4], a[5], a[6]);
}

std::string worst_text(double worst) {
  std::ostringstream s;
  s.precision(3);
  s << "; largest error " << worst << " x (S + X), tolerance " << validate::price_tolerance;
  return s.str();
}

class blackscholes_app final : public app {
 public:
  blackscholes_app() : app(describe()) {}

  static app_info describe() {
    app_info a = app_info::named("blackscholes", "Black-Scholes: ZOne's n options from five float files, call and put streamed "
                                                 "to files; FHPC17's m options x n days summed by segreduce");
    {
      auto zone = [](std::int64_t n) { return nlohmann::json{{"form", "zone"}, {"options", n}, {"days", 1}}; };
      auto fhpc = [](std::int64_t m, std::int64_t n) { return nlohmann::json{{"form", "fhpc17"}, {"options", m}, {"days", n}}; };
      const nlohmann::json bench = streaming::with_bench_params(zone(std::int64_t{1} << 28));
      a.presets = {{"zone20", "ZOne: 2^20 options", zone(std::int64_t{1} << 20)},
                   {"zone24", "ZOne: 2^24 options", zone(std::int64_t{1} << 24)},
                   {"zone28", "ZOne: 2^28 options (5 GiB in, 2 GiB out)", zone(std::int64_t{1} << 28)},
                   {"fhpc17", "FHPC17 Fig 14: 2^13 options x 2^13 days", fhpc(1 << 13, 1 << 13)},
                   {"fhpc17-18", "FHPC17: 2^9 options x 2^9 days", fhpc(1 << 9, 1 << 9)},
                   {"tiny", "ZOne: 1000 options (tests)", zone(1000)},
                   {"stream", "soac bench: ZOne form, `options` from raw files in `dir` (default: the temporary folder)", bench}};
    }
    a.variants = streaming::pipeline_variants();
    a.input_formats = {{"raw", "ZOne form: five raw float32 files, -i spot -i strike -i years -i rate -i volatility, or -i FOLDER "
                               "holding spot.f32 strike.f32 years.f32 rate.f32 volatility.f32 (what gen --format raw writes); "
                               "results call.f32 and put.f32"}};
    a.run_settings = streaming::pipeline_settings();
    a.bench_presets = {"stream"};
    return a;
  }

  void check_params(const nlohmann::json& params) const override { spec_of(params); }
  void check_dataset(const bundle& in) const override { dataset_spec(in); }

  void generate(const gen_request& r) const override {
    const auto s = spec_of(r.params);
    if (!s.zone) {
      require_host_memory(checked_bytes(std::uint64_t(s.options), 2 * sizeof(double), "blackscholes: options"),
                          "blackscholes: options = " + std::to_string(s.options));
      if (!r.format.empty()) throw usage_error("blackscholes: the FHPC17 form is a soac bundle only");
      const auto [rate, vol] = mb::blackscholes_options(s.options, r.seed);
      datasets::bundle_writer out(r.output, "dataset", name());
      out.add<double>("rate", rate);
      out.add<double>("volatility", vol);
      finish_dataset(out, r);
      return;
    }
    const auto bytes = std::uint64_t(s.options) * sizeof(float);
    const std::int64_t shape[] = {s.options};
    std::optional<datasets::bundle_writer> out;
    std::optional<datasets::file_set_writer> raw;
    if (r.format == "raw")
      raw.emplace(r.output);
    else
      out.emplace(r.output, "dataset", name());
    for (std::size_t k = 0; k < 5; ++k) {
      const auto& a = inputs_of_zone[k];
      const fs::path file = out ? out->array_path(a.name) : raw->add(std::string(a.name) + ".f32");
      streaming::write_generated(file, bytes, [&](std::uint64_t at, std::span<std::uint8_t> b) { fill_array(a, k, r.seed, at, b); },
                                 out ? datasets::npy_header_bytes(dtype::f32, shape) : std::string());
      if (out) out->add_written(a.name, dtype::f32, shape);
    }
    if (out) finish_dataset(*out, r);
    if (raw) raw->commit();
  }

  std::string run(context& ctx, const run_request& r) const override {
    if (r.format.empty()) {
      const auto b = open_dataset(r.input);
      if (!dataset_spec(b).zone) return run_fhpc17(ctx, r, b);
    }
    const auto z = open_zone(r.inputs, r.format);
    const auto options = streaming::pipeline_options(r.settings, r.variant);
    datasets::bundle_writer out(r.output, "result", name());
    const std::int64_t n = streaming::element_count(z.in.front());
    const std::int64_t shape[] = {n};
    std::vector<stream_sink> sinks;
    for (const char* o : outputs_of_zone)
      sinks.push_back(z.bundle ? stream_sink::to_file(out.array_path(o), 4, datasets::npy_header_bytes(dtype::f32, shape))
                               : stream_sink::to_file(out.dir() / (std::string(o) + ".f32"), 4));
    stream_pipeline pipe(ctx);
    const auto report = pipe.run(z.in, sinks, [&](const stream_chunk& c) { price_chunk(ctx, c); }, options);
    for (const char* o : outputs_of_zone) {
      if (z.bundle) out.add_written(o, dtype::f32, shape);
      else out.add_written_file(std::string(o) + ".f32");
    }
    streaming::record_run(out, ctx, r.settings, options, report);
    out.params().update({{"form", "zone"}, {"options", n}, {"format", r.format}});
    out.finish();
    return "blackscholes (ZOne): " + std::to_string(n) + " options on " + ctx.describe() + "\n  " + report.describe();
  }

  std::string run_fhpc17(context& ctx, const run_request& r, const bundle& b) const {
    if (!r.variant.empty() && r.variant != "streamed")
      throw usage_error("blackscholes: variants (streamed, serial) are for the ZOne form; the FHPC17 form runs segreduce");
    const auto s = dataset_spec(b);
    const auto rate = b.read<double>("rate"), vol = b.read<double>("volatility");
    buffer<double> rd(ctx, std::span<const double>(rate)), vd(ctx, std::span<const double>(vol)), price(ctx, std::size_t(s.options));
    const auto plan = segreduce(ctx, s.options, s.days, mb::blackscholes_day{rd.data(), vd.data(), s.days}, price.view(), plus<double>{});
    datasets::bundle_writer out(r.output, "result", name());
    out.add<double>("price", price.to_vector());
    out.params() = b.params();
    out.info() = {{"backend", std::string(to_string(ctx.which()))}, {"device", ctx.props().name}, {"plan", plan.describe()}};
    out.finish();
    return "blackscholes (FHPC17): " + std::to_string(s.options) + " options x " + std::to_string(s.days) + " days on " +
           ctx.describe() + "\n  " + plan.describe();
  }

  validate_report validate(const validate_request& r) const override {
    const auto res = bundle::open(r.result, "result", name());
    if (r.format.empty()) {
      const auto b = open_dataset(r.input);
      const auto s = dataset_spec(b);
      if (!s.zone) {
        const auto rate = b.read<double>("rate"), vol = b.read<double>("volatility");
        const auto expected = validate::segreduce_reference<plus<double>>(s.options, s.days,
                                                                          mb::blackscholes_day{rate.data(), vol.data(), s.days});
        const auto rep = validate::check_segreduce_close(expected, res.read<double>("price"));
        return {rep.ok(), rep.describe("option sums")};
      }
    }
    const auto z = open_zone(r.inputs, r.format);
    std::vector<stream_source> out;
    const std::int64_t n = streaming::element_count(z.in.front());
    for (const char* o : outputs_of_zone) out.push_back(streaming::result_source(res, o, dtype::f32, n, "f32"));
    validate::report rep;
    double worst = 0;
    constexpr std::int64_t block = std::int64_t{1} << 22;
    for (std::int64_t first = 0; first < n; first += block) check_zone(rep, worst, z.in, out, first, std::min(block, n - first));
    return {rep.ok(), rep.describe("options") + worst_text(worst)};
  }

  void bench(context& ctx, const bench_request& r, bench::suite& suite) const override {
    if (!r.inputs.empty()) throw usage_error("blackscholes: bench generates its files (see soac list)");
    const auto params = resolve_params(r.presets.empty() ? "stream" : r.presets.front(), r.overrides);
    if (!spec_of(params).zone) throw usage_error("blackscholes: bench streams the ZOne form (soac bench segreduce times FHPC17's)");
    for (const std::int64_t n : streaming::bench_sizes(params, "options", 1, std::int64_t{1} << 36)) bench_size(ctx, params, n, r.seed, suite);
  }

  static void bench_size(context& ctx, const nlohmann::json& params, std::int64_t n, std::uint64_t seed, bench::suite& suite) {
    const spec s{true, n, 1};
    streaming::scratch_dir dir(params.value("dir", ""), "blackscholes");
    std::vector<stream_source> in;
    std::vector<stream_sink> out;
    std::vector<stream_source> results;
    std::cerr << "[blackscholes] writing 5 x " << s.options << " floats to " << (dir / "").string() << "\n";
    for (std::size_t k = 0; k < 5; ++k) {
      const auto& a = inputs_of_zone[k];
      const auto file = dir / (std::string(a.name) + ".f32");
      streaming::write_generated(file, std::uint64_t(s.options) * 4,
                                 [&](std::uint64_t at, std::span<std::uint8_t> b) { fill_array(a, k, seed, at, b); });
      in.push_back(streaming::raw_source(file, dtype::f32));
    }
    for (const char* o : outputs_of_zone) {
      out.push_back(stream_sink::to_file(dir / (std::string(o) + ".f32"), 4));
      results.push_back(stream_source::from_file(out.back().file, 4));
    }
    streaming::workload w;
    w.name = "blackscholes (ZOne) " + std::to_string(s.options) + " options";
    w.params = {{"options", s.options}};
    w.bytes = double(s.options) * 7 * sizeof(float);
    w.run = [&](stream_pipeline& pipe, const stream_options& o) {
      return pipe.run(in, out, [&](const stream_chunk& c) { price_chunk(ctx, c); }, o);
    };
    w.check = [&] {
      validate::report rep;
      double worst = 0;
      const std::int64_t sample = std::min<std::int64_t>(s.options, 1 << 16);
      for (const std::int64_t first : {std::int64_t{0}, (s.options - sample) / 2, s.options - sample})
        check_zone(rep, worst, in, results, first, sample);
      return rep.ok() ? std::string() : rep.describe("options") + worst_text(worst);
    };
    w.bars = "bars at 2^28: speedup >= 1.80x, streamed / bound <= 1.20x";
    streaming::measure(ctx, suite, w, streaming::pipeline_options(params, "streamed"));
  }
};

}  // namespace
}  // namespace soac::apps

SOAC_REGISTER_APP(soac::apps::blackscholes_app)
