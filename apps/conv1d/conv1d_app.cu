// 1-D convolution of a float array from a file with a small filter (ZOne section 4.2, Fig 5),
// streamed through soac::stream: each chunk is read with `radius` elements of halo either side
// (the halo exchange between chunks: neighbouring chunks read those elements twice), and the
// output, out[i] = sum_k w[k] x[i + k - radius] with zeros outside the array, is written back.
// The map is soac::scatter. The serial loop with one chunk (--set chunk=N --variant serial) is the
// unstreamed copy-compute-copy program ZOne compares with.
#include <algorithm>
#include <array>
#include <cmath>
#include <iostream>
#include <limits>
#include <sstream>

#include "apps/app.hpp"
#include "apps/stream/support.hpp"
#include "core/error.hpp"
#include "core/scatter.cuh"
#include "core/stream.hpp"
#include "datasets/bundle.hpp"
#include "datasets/random.hpp"
#include "validate/conv1d.hpp"

namespace soac::apps {
namespace {

using datasets::bundle;
using datasets::dtype;
namespace fs = std::filesystem;

constexpr int max_taps = 65;

struct filter {
  std::array<float, max_taps> w{};
  int taps = 0;
  int radius() const { return taps / 2; }
  std::span<const float> weights() const { return {w.data(), std::size_t(taps)}; }
};

// The weights of `text` ("0.25,0.5,0.25"), or binomial weights C(2r, k) / 4^r when empty.
filter parse_filter(const std::string& text, std::int64_t radius) {
  filter f;
  if (text.empty()) {
    if (radius < 0 || 2 * radius + 1 > max_taps) throw usage_error("conv1d: radius must be in [0, " + std::to_string(max_taps / 2) + "]");
    f.taps = int(2 * radius + 1);
    double c = 1;
    for (int k = 0; k < f.taps; ++k) {
      f.w[std::size_t(k)] = float(c / std::pow(4.0, double(radius)));
      c = c * double(2 * radius - k) / double(k + 1);
    }
    return f;
  }
  std::stringstream in(text);
  for (std::string item; std::getline(in, item, ',');) {
    if (f.taps == max_taps) throw usage_error("conv1d: at most " + std::to_string(max_taps) + " filter weights");
    double w = 0;
    try {
      std::size_t used = 0;
      w = std::stod(item, &used);
      if (used != item.size()) throw std::invalid_argument(item);
    } catch (const std::invalid_argument&) {
      throw usage_error("conv1d: filter weight '" + item + "' is not a number");
    } catch (const std::out_of_range&) {
      w = INFINITY;
    }
    if (!std::isfinite(w) || std::fabs(w) > std::numeric_limits<float>::max())
      throw usage_error("conv1d: filter weight '" + item + "' is not a finite float (|w| <= 3.4e38)");
    f.w[std::size_t(f.taps)] = float(w);
    ++f.taps;
  }
  if (f.taps % 2 == 0) throw usage_error("conv1d: the filter needs an odd number of weights (got " + std::to_string(f.taps) + ")");
  return f;
}

struct convolve {
  const float* x;  // x[j] is element begin + j, readable for -before <= j < count + after
  std::int64_t lo, hi;
  int taps;
  std::array<float, max_taps> w;
  SOAC_HD write_at<std::int64_t, float> operator()(std::int64_t i) const {
    const int r = taps / 2;
    float sum = 0;
    for (int k = 0; k < taps; ++k) {
      const std::int64_t at = i + k - r;
      if (at >= lo && at < hi) sum += w[std::size_t(k)] * x[at];
    }
    return {i, sum};
  }
};

void convolve_chunk(context& ctx, const filter& f, const stream_chunk& c) {
  scatter(ctx, c.count, convolve{c.input<float>(0), -c.before, c.count + c.after, f.taps, f.w},
          span<float>(c.output<float>(0), std::size_t(c.count)));
}

stream_options conv_options(stream_options o, const filter& f) {
  o.halo = f.radius();
  return o;
}

// A signal: two sines and noise.
void fill_signal(std::uint64_t seed, std::uint64_t at, std::span<std::uint8_t> block) {
  const std::uint64_t key = datasets::stream_key(seed, 0x636f6e76ULL);
  auto* out = reinterpret_cast<float*>(block.data());
  const std::uint64_t first = at / sizeof(float);
  for (std::size_t j = 0; j < block.size() / sizeof(float); ++j) {
    const std::uint64_t i = first + j;
    const double noise = double(datasets::keyed_word(key, i) >> 11) * 0x1.0p-53 - 0.5;
    out[j] = float(std::sin(double(i % 1000) * 0.006283185307179587) + 0.5 * std::sin(double(i % 37) * 0.16981581911296178) +
                   0.2 * noise);
  }
}

// Checks out[first, first + count) against the reference, reading what it needs of x.
void check_block(validate::report& rep, const filter& f, const stream_source& x, const stream_source& out, std::int64_t n,
                 std::int64_t first, std::int64_t count) {
  const std::int64_t r = f.radius(), lo = std::max<std::int64_t>(0, first - r), hi = std::min(n, first + count + r);
  std::vector<float> xs(static_cast<std::size_t>(hi - lo)), got(static_cast<std::size_t>(count));
  streaming::read_elements(x, lo, hi - lo, xs.data());
  streaming::read_elements(out, first, count, got.data());
  validate::check_conv1d(rep, f.weights(), xs, lo, n, first, got);
}

class conv1d_app final : public app {
 public:
  conv1d_app() : app(describe()) {}

  static app_info describe() {
    app_info a = app_info::named("conv1d", "1-D convolution of a float array from a file with a small filter (ZOne 4.2), "
                                           "streamed with a halo between chunks");
    {
      auto p = [](std::int64_t n) { return nlohmann::json{{"elements", n}}; };
      nlohmann::json bench = streaming::with_bench_params(p(std::int64_t{1} << 28));
      bench["radius"] = 3;
      a.presets = {{"2^24", "2^24 floats", p(std::int64_t{1} << 24)},
                   {"2^20", "2^20 floats", p(std::int64_t{1} << 20)},
                   {"2^28", "2^28 floats (1 GiB)", p(std::int64_t{1} << 28)},
                   {"tiny", "1001 floats (tests)", p(1001)},
                   {"stream", "soac bench: `elements` floats from a raw file in `dir` (default: the temporary folder), the "
                              "binomial filter of `radius`",
                    bench}};
    }
    a.variants = streaming::pipeline_variants();
    a.input_formats = {{"raw", "one raw float32 file; the result is conv.f32"}};
    {
      auto s = streaming::pipeline_settings();
      s.insert(s.begin(), {{"radius", 3, "filter radius: 2 radius + 1 binomial weights (when no filter is given)"},
                           {"filter", "", "the weights, comma-separated, an odd number up to 65 (empty: binomial)"}});
      a.run_settings = s;
    }
    a.bench_presets = {"stream"};
    return a;
  }

  static std::int64_t elements_of(const nlohmann::json& params) { return int_param(params, "elements", 0, std::int64_t{1} << 36); }
  void check_params(const nlohmann::json& params) const override { elements_of(params); }
  void check_dataset(const bundle& in) const override { datasets::length_of(in, "signal", "elements"); }

  void generate(const gen_request& r) const override {
    const std::int64_t n = elements_of(r.params);
    auto fill = [&](std::uint64_t at, std::span<std::uint8_t> b) { fill_signal(r.seed, at, b); };
    if (r.format == "raw") {
      streaming::write_generated(r.output, std::uint64_t(n) * 4, fill);
      return;
    }
    datasets::bundle_writer out(r.output, "dataset", name());
    const std::int64_t shape[] = {n};
    streaming::write_generated(out.array_path("signal"), std::uint64_t(n) * 4, fill, datasets::npy_header_bytes(dtype::f32, shape));
    out.add_written("signal", dtype::f32, shape);
    finish_dataset(out, r);
  }

  static stream_source open_signal(const std::vector<fs::path>& inputs, const std::string& format) {
    if (format == "raw") {
      if (inputs.size() != 1) throw usage_error("conv1d: --format raw takes one -i FILE");
      return streaming::raw_source(inputs.front(), dtype::f32);
    }
    return streaming::bundle_source(find_app("conv1d").open_dataset(inputs.front()), "signal", dtype::f32);
  }

  static filter filter_of(const nlohmann::json& settings) {
    if (!settings.contains("filter") || !settings["filter"].is_string()) throw usage_error("conv1d: setting filter must be text");
    return parse_filter(settings["filter"].get<std::string>(), int_param(settings, "radius", 0, max_taps / 2));
  }

  std::string run(context& ctx, const run_request& r) const override {
    const auto x = open_signal(r.inputs, r.format);
    const filter f = filter_of(r.settings);
    const auto options = conv_options(streaming::pipeline_options(r.settings, r.variant), f);
    datasets::bundle_writer out(r.output, "result", name());
    const std::int64_t n = streaming::element_count(x);
    const std::int64_t shape[] = {n};
    const bool as_array = r.format.empty();
    const stream_sink sink[] = {as_array ? stream_sink::to_file(out.array_path("conv"), 4, datasets::npy_header_bytes(dtype::f32, shape))
                                         : stream_sink::to_file(out.dir() / "conv.f32", 4)};
    const stream_source in[] = {x};
    stream_pipeline pipe(ctx);
    const auto report = pipe.run(in, sink, [&](const stream_chunk& c) { convolve_chunk(ctx, f, c); }, options);
    if (as_array) out.add_written("conv", dtype::f32, shape);
    else out.add_written_file("conv.f32");
    streaming::record_run(out, ctx, r.settings, options, report);
    out.params().update({{"elements", n}, {"format", r.format}, {"radius", f.radius()},
                         {"filter", r.settings.at("filter")}, {"weights", std::vector<float>(f.weights().begin(), f.weights().end())}});
    out.finish();
    return "conv1d: " + std::to_string(n) + " floats, " + std::to_string(f.taps) + " taps on " + ctx.describe() + "\n  " +
           report.describe();
  }

  validate_report validate(const validate_request& r) const override {
    const auto res = bundle::open(r.result, "result", name());
    const auto x = open_signal(r.inputs, r.format);
    const filter f = params_of_file(res.dir() / "manifest.json", [&] { return filter_of(res.params()); });
    const std::int64_t n = streaming::element_count(x);
    const stream_source out = streaming::result_source(res, "conv", dtype::f32, n, "f32");
    validate::report rep;
    constexpr std::int64_t block = std::int64_t{1} << 22;
    for (std::int64_t first = 0; first < n; first += block) check_block(rep, f, x, out, n, first, std::min(block, n - first));
    return {rep.ok(), rep.describe("elements")};
  }

  void bench(context& ctx, const bench_request& r, bench::suite& suite) const override {
    if (!r.inputs.empty()) throw usage_error("conv1d: bench generates its file (see soac list)");
    const auto params = resolve_params(r.presets.empty() ? "stream" : r.presets.front(), r.overrides);
    for (const std::int64_t n : streaming::bench_sizes(params, "elements", 1, std::int64_t{1} << 36)) bench_size(ctx, params, n, r.seed, suite);
  }

  static void bench_size(context& ctx, const nlohmann::json& params, std::int64_t n, std::uint64_t seed, bench::suite& suite) {
    const filter f = parse_filter("", int_param(params, "radius", 0, max_taps / 2));
    streaming::scratch_dir dir(params.value("dir", ""), "conv1d");
    const auto file = dir / "signal.f32", result = dir / "conv.f32";
    std::cerr << "[conv1d] writing " << n << " floats to " << file.string() << "\n";
    streaming::write_generated(file, std::uint64_t(n) * 4, [&](std::uint64_t at, std::span<std::uint8_t> b) { fill_signal(seed, at, b); });
    const stream_source in[] = {streaming::raw_source(file, dtype::f32)};
    const stream_sink out[] = {stream_sink::to_file(result, 4)};
    streaming::workload w;
    w.name = "conv1d " + std::to_string(n) + " floats, " + std::to_string(f.taps) + " taps";
    w.params = {{"elements", n}, {"radius", f.radius()}};
    w.bytes = double(n) * 8;
    w.run = [&](stream_pipeline& pipe, const stream_options& o) {
      return pipe.run(in, out, [&](const stream_chunk& c) { convolve_chunk(ctx, f, c); }, o);
    };
    w.check = [&] {
      validate::report rep;
      const auto res = stream_source::from_file(result, 4, 0, n);
      const std::int64_t sample = std::min<std::int64_t>(n, 1 << 16);
      for (const std::int64_t first : {std::int64_t{0}, (n - sample) / 2, n - sample}) check_block(rep, f, in[0], res, n, first, sample);
      return rep.ok() ? std::string() : rep.describe("elements");
    };
    streaming::measure(ctx, suite, w, conv_options(streaming::pipeline_options(params, "streamed"), f));
  }
};

}  // namespace
}  // namespace soac::apps

SOAC_REGISTER_APP(soac::apps::conv1d_app)
