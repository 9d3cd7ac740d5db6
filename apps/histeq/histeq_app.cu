// Histogram equalisation of an 8-bit grey video (ZOne section 4.4, Figs 7-8), streamed through
// soac::stream a few frames per chunk: per frame a 256-bin histogram (soac::hist_batched), its
// cumulative distribution (soac::segscan, a segment per frame), the darkest value present
// (soac::segreduce, min of the nonzero cdf), the lookup table and the remap (soac::scatter as a
// map). Frames come from a raw file (width x height x frames bytes), a soac bundle, or a folder
// of images (stb_image); the result is a raw file (an .npy array for bundles) and a few frames
// as PNG. `soac bench histeq` reports frames per second: streamed, the serial loop, the bound,
// and ZOne Fig 7's CPU baselines (the host backend on every thread and on one).
#include <algorithm>
#include <climits>
#include <iostream>
#include <sstream>

#ifdef _OPENMP
#include <omp.h>
#endif

#include "apps/app.hpp"
#include "apps/stream/support.hpp"
#include "core/buffer.hpp"
#include "core/error.hpp"
#include "core/fast_divide.hpp"
#include "core/hist.cuh"
#include "core/operators.hpp"
#include "core/scan.cuh"
#include "core/scatter.cuh"
#include "core/segreduce.cuh"
#include "core/stream.hpp"
#include "datasets/binary_file.hpp"
#include "datasets/bundle.hpp"
#include "datasets/image.hpp"
#include "datasets/random.hpp"
#include "validate/histeq.hpp"
#include "validate/report.hpp"

namespace soac::apps {
namespace {

using datasets::bundle;
namespace fs = std::filesystem;

constexpr int levels = 256;

// ---- the per-chunk kernels, as functors for the core primitives ----

struct pixel_count {  // hist_batched: frame h's pixels, one count each
  const std::uint8_t* pixels;
  SOAC_HD bin_value<int> operator()(std::int64_t i) const { return {pixels[i], 1}; }
};

struct frame_start {  // segscan: the cdf restarts at every frame's bin 0
  SOAC_HD bool operator()(std::int64_t i) const { return (i & (levels - 1)) == 0; }
};

struct present_cdf {  // segreduce with min: the cdf at the darkest value present
  const int* cdf;
  SOAC_HD int operator()(std::int64_t s, std::int64_t v) const {
    const int c = cdf[s * levels + v];
    return c > 0 ? c : INT_MAX;
  }
};

struct lut_entry {  // round(255 (cdf[v] - cdf_min) / (N - cdf_min)); a one-value frame stays
  const int* cdf;
  const int* cdf_min;
  std::int64_t pixels;
  SOAC_HD write_at<std::int64_t, std::uint8_t> operator()(std::int64_t i) const {
    const std::int64_t v = i & (levels - 1), m = cdf_min[i / levels], c = cdf[i];
    if (pixels == m) return {i, std::uint8_t(v)};
    const std::int64_t s = ((c - m) * 255 + (pixels - m) / 2) / (pixels - m);
    return {i, std::uint8_t(s < 0 ? 0 : s > 255 ? 255 : s)};
  }
};

struct remap {  // out[i] = lut of i's frame at in[i]; chunks hold < 2^31 pixels
  const std::uint8_t* in;
  const std::uint8_t* lut;
  fast_divisor frame_pixels;
  SOAC_HD write_at<std::int64_t, std::uint8_t> operator()(std::int64_t i) const {
    return {i, lut[std::int64_t(frame_pixels.divide(std::uint32_t(i))) * levels + in[i]]};
  }
};

// The callback of the stream: equalises the chunk's frames on ctx.
class equalizer {
 public:
  equalizer(context& ctx, std::int64_t frame_pixels) : ctx_(ctx), frame_pixels_(frame_pixels), divisor_(std::uint32_t(frame_pixels)) {}

  void operator()(const stream_chunk& c) {
    const std::int64_t frames = c.count / frame_pixels_, bins = frames * levels;
    reserve(frames);
    const auto* in = c.input<std::uint8_t>(0);
    streaming::zero(ctx_, histo_.data(), std::size_t(bins) * sizeof(int));
    hist_batched(ctx_, hist_options{}, frames, frame_pixels_, pixel_count{in}, span<int>(histo_.data(), std::size_t(bins)), levels,
                 plus<int>{});
    segscan(ctx_, bins, array_reader<int>{histo_.data()}, frame_start{}, span<int>(cdf_.data(), std::size_t(bins)), plus<int>{});
    segreduce(ctx_, frames, levels, present_cdf{cdf_.data()}, span<int>(cdf_min_.data(), std::size_t(frames)), minimum<int>{});
    scatter(ctx_, bins, lut_entry{cdf_.data(), cdf_min_.data(), frame_pixels_}, span<std::uint8_t>(lut_.data(), std::size_t(bins)));
    scatter(ctx_, c.count, remap{in, lut_.data(), divisor_}, span<std::uint8_t>(c.output<std::uint8_t>(0), std::size_t(c.count)));
  }

 private:
  void reserve(std::int64_t frames) {
    if (frames <= capacity_) return;
    const auto bins = std::size_t(frames * levels);
    histo_ = buffer<int>(ctx_, bins);
    cdf_ = buffer<int>(ctx_, bins);
    cdf_min_ = buffer<int>(ctx_, std::size_t(frames));
    lut_ = buffer<std::uint8_t>(ctx_, bins);
    capacity_ = frames;
  }
  context& ctx_;
  std::int64_t frame_pixels_;
  fast_divisor divisor_;
  std::int64_t capacity_ = 0;
  buffer<int> histo_, cdf_, cdf_min_;
  buffer<std::uint8_t> lut_;
};

// ---- generated video: moving blocky patterns whose brightness and contrast change per frame,
// plus noise, in a narrow band of grey (what equalisation stretches) ----

void fill_frames(std::uint64_t at, std::span<std::uint8_t> block, std::int64_t width, std::int64_t height, std::uint64_t seed) {
  const std::uint64_t key = datasets::stream_key(seed, 0x6869737465710000ULL);
  const std::uint64_t frame_pixels = std::uint64_t(width * height);
  std::uint64_t t = at / frame_pixels, rest = at % frame_pixels, y = rest / std::uint64_t(width), x = rest % std::uint64_t(width);
  std::uint64_t noise = 0;
  for (std::size_t i = 0; i < block.size(); ++i) {
    if ((at + i) % 8 == 0 || i == 0) noise = datasets::keyed_word(key, (at + i) / 8);
    const std::uint64_t lo = 30 + (t * 13) % 110, amplitude = 24 + (t * 29) % 72;
    const std::uint64_t pattern = (((x + 6 * t) >> 5) ^ ((y + 3 * t) >> 5)) & 15;
    const std::uint64_t grain = (noise >> (8 * ((at + i) % 8))) & 15;
    block[i] = std::uint8_t(lo + pattern * amplitude / 16 + grain);
    if (++x == std::uint64_t(width)) {
      x = 0;
      if (++y == std::uint64_t(height)) y = 0, ++t;
    }
  }
}

struct video_spec {
  std::int64_t width, height, frames;
  std::int64_t pixels() const { return width * height; }
};

video_spec spec_of(const nlohmann::json& params) {
  video_spec s{int_param(params, "width", 1, 1 << 16), int_param(params, "height", 1, 1 << 16), int_param(params, "frames", 0, 1 << 24)};
  if (s.pixels() >= (std::int64_t{1} << 31)) throw usage_error("histeq: a frame must hold fewer than 2^31 pixels");
  return s;
}

// What a run reads of a bundle: its frames x height x width video (as the manifest says, where it
// gives them), frames of fewer than 2^31 pixels.
video_spec video_of(const bundle& in) {
  const auto shape = in.header("video").shape;
  if (shape.size() != 3 || shape[1] < 1 || shape[2] < 1)
    throw input_error(in.path_of("video").string() + ": shape " + datasets::shape_string(shape) + ", expected frames x height x width");
  const video_spec s{shape[2], shape[1], shape[0]};
  for (const auto& [key, length] : {std::pair{"frames", s.frames}, std::pair{"height", s.height}, std::pair{"width", s.width}})
    if (in.params().contains(key) && in.params()[key] != length)
      throw input_error(in.path_of("video").string() + ": shape " + datasets::shape_string(shape) + ", but the manifest says " + key +
                        " = " + in.params()[key].dump());
  if (s.pixels() >= (std::int64_t{1} << 31)) throw input_error(in.path_of("video").string() + ": a frame must hold fewer than 2^31 pixels");
  return s;
}

// The input: a source of frames, and where the images were decoded to when read from a folder.
struct video_input {
  video_spec spec;
  stream_source source;
  std::vector<std::uint8_t> decoded;  // a folder of images, in memory
  bool bundle = false;
};

void open_video(const std::vector<fs::path>& inputs, const std::string& format, const nlohmann::json& settings, video_input& v) {
  if (format == "raw") {
    if (inputs.size() != 1) throw usage_error("histeq: --format raw takes one -i FILE");
    const auto setting = [&](const char* key) { return settings.contains(key) ? settings[key] : nlohmann::json(); };
    v.spec = spec_of({{"width", setting("width")}, {"height", setting("height")}, {"frames", 0}});
    v.source = streaming::raw_source(inputs.front(), datasets::dtype::u8);
    const std::int64_t bytes = streaming::element_count(v.source);
    if (bytes % v.spec.pixels() != 0)
      throw input_error(inputs.front().string() + ": " + std::to_string(bytes) + " bytes are not a whole number of " +
                        std::to_string(v.spec.width) + " x " + std::to_string(v.spec.height) + " frames (--set width=W --set height=H)");
    v.spec.frames = bytes / v.spec.pixels();
    return;
  }
  if (format == "images") {
    if (inputs.size() != 1) throw usage_error("histeq: --format images takes one -i FOLDER");
    const auto files = datasets::image_files(inputs.front());
    const auto first = datasets::read_grey_image(files.front());
    v.spec = {first.width, first.height, std::int64_t(files.size())};
    if (v.spec.pixels() >= (std::int64_t{1} << 31)) throw input_error(files.front().string() + ": too large a frame");
    require_host_memory(std::uint64_t(v.spec.pixels() * v.spec.frames), inputs.front().string() + ": the decoded frames");
    v.decoded.resize(std::size_t(v.spec.pixels() * v.spec.frames));
    std::exception_ptr error;
#pragma omp parallel for schedule(dynamic, 1)
    for (std::int64_t f = 0; f < v.spec.frames; ++f) {
      try {
        const auto img = f == 0 ? first : datasets::read_grey_image(files[std::size_t(f)]);
        if (img.width != first.width || img.height != first.height)
          throw input_error(files[std::size_t(f)].string() + ": " + std::to_string(img.width) + " x " + std::to_string(img.height) +
                            ", but " + files.front().filename().string() + " is " + std::to_string(first.width) + " x " +
                            std::to_string(first.height));
        std::copy(img.pixels.begin(), img.pixels.end(), v.decoded.begin() + f * v.spec.pixels());
      } catch (...) {
#pragma omp critical
        if (!error) error = std::current_exception();
      }
    }
    if (error) std::rethrow_exception(error);
    v.source = stream_source::from_host(v.decoded.data(), 1, std::int64_t(v.decoded.size()));
    return;
  }
  const auto in = find_app("histeq").open_dataset(inputs.front());
  v.spec = video_of(in);
  v.source = streaming::bundle_source(in, "video", datasets::dtype::u8);
  v.bundle = true;
}

stream_options histeq_options(stream_options o, const video_spec& s) {
  o.granule = s.pixels();
  o.max_chunk = (std::int64_t{1} << 31) / s.pixels() * s.pixels();  // the remap's 32-bit frame index
  return o;
}

// Frames to write as PNG: `count` spread evenly, first and last included.
std::vector<std::int64_t> png_frames(std::int64_t frames, std::int64_t count) {
  std::vector<std::int64_t> out;
  count = std::min(count, frames);
  for (std::int64_t k = 0; k < count; ++k) out.push_back(count == 1 ? 0 : k * (frames - 1) / (count - 1));
  return out;
}

// Frame-by-frame comparison of output frames with the reference; `frames` empty: every frame.
validate::report compare_frames(const stream_source& in, const stream_source& out, const video_spec& s,
                                std::vector<std::int64_t> frames = {}) {
  validate::report rep;
  if (frames.empty())
    for (std::int64_t f = 0; f < s.frames; ++f) frames.push_back(f);
  std::vector<std::uint8_t> frame(std::size_t(s.pixels())), got(frame.size()), expected(frame.size());
  for (const std::int64_t f : frames) {
    streaming::read_elements(in, f * s.pixels(), s.pixels(), frame.data());
    streaming::read_elements(out, f * s.pixels(), s.pixels(), got.data());
    validate::equalize_reference(frame, expected);
    std::int64_t wrong = 0, first = -1;
    for (std::size_t i = 0; i < frame.size(); ++i)
      if (got[i] != expected[i]) {
        if (first < 0) first = std::int64_t(i);
        ++wrong;
      }
    rep.checked += s.pixels();
    if (wrong) {
      rep.mismatches += wrong - 1;
      const auto i = std::size_t(first);
      rep.mismatch("frame " + std::to_string(f) + ": " + std::to_string(wrong) + " pixels differ, first (" +
                   std::to_string(first % s.width) + ", " + std::to_string(first / s.width) + "): input " +
                   std::to_string(frame[i]) + ", expected " + std::to_string(expected[i]) + ", got " + std::to_string(got[i]));
    }
  }
  return rep;
}

class histeq_app final : public app {
 public:
  histeq_app() : app(describe()) {}

  static app_info describe() {
    app_info a = app_info::named("histeq", "histogram equalisation of an 8-bit grey video (ZOne 4.4), frames streamed: "
                                           "hist_batched, segscan, segreduce, scatter per chunk of frames");
    {
      auto p = [](std::int64_t w, std::int64_t h, std::int64_t frames) {
        return nlohmann::json{{"width", w}, {"height", h}, {"frames", frames}};
      };
      nlohmann::json bench = streaming::with_bench_params(p(3840, 2160, 300));
      bench["cpu"] = 1;
      a.presets = {{"4k", "60 frames of 3840 x 2160", p(3840, 2160, 60)},
                   {"hd", "60 frames of 1920 x 1080", p(1920, 1080, 60)},
                   {"small", "10 frames of 320 x 240", p(320, 240, 10)},
                   {"tiny", "5 frames of 37 x 23 (odd sizes, tests)", p(37, 23, 5)},
                   {"stream", "soac bench: `frames` 4K frames from a raw file in `dir` (default: the temporary folder); cpu=1 "
                              "adds the host backend on every thread and on one",
                    bench}};
    }
    a.variants = streaming::pipeline_variants();
    a.input_formats = {{"raw", "one raw file of width x height x frames bytes (--set width=W --set height=H)"},
                       {"images", "a folder of images (png, jpg, bmp, pgm, ...: stb_image), frames in name order, converted to grey"}};
    {
      auto s = streaming::pipeline_settings();
      s.insert(s.begin(), {{"width", 3840, "frame width of a raw file"},
                           {"height", 2160, "frame height of a raw file"},
                           {"png", 3, "frames written as PNG beside the result (spread evenly; 0: none)"}});
      a.run_settings = s;
    }
    a.bench_presets = {"stream"};
    return a;
  }

  void check_params(const nlohmann::json& params) const override { spec_of(params); }
  void check_dataset(const bundle& in) const override { video_of(in); }

  void generate(const gen_request& r) const override {
    const auto s = spec_of(r.params);
    const auto bytes = std::uint64_t(s.pixels() * s.frames);
    auto fill = [&](std::uint64_t at, std::span<std::uint8_t> block) { fill_frames(at, block, s.width, s.height, r.seed); };
    if (r.format == "raw") {
      streaming::write_generated(r.output, bytes, fill);
      return;
    }
    if (r.format == "images") {
      datasets::file_set_writer files(r.output);
      std::exception_ptr error;
#pragma omp parallel for schedule(dynamic, 1)
      for (std::int64_t f = 0; f < s.frames; ++f) {
        try {
          std::vector<std::uint8_t> frame(std::size_t(s.pixels()));
          fill(std::uint64_t(f * s.pixels()), frame);
          char name[32];
          std::snprintf(name, sizeof name, "frame_%06lld.png", static_cast<long long>(f));
          datasets::write_file_atomically(files.add(name), datasets::encode_png(int(s.width), int(s.height), frame));
        } catch (...) {
#pragma omp critical
          if (!error) error = std::current_exception();
        }
      }
      if (error) std::rethrow_exception(error);
      files.commit();
      return;
    }
    datasets::bundle_writer out(r.output, "dataset", name());
    const std::int64_t shape[] = {s.frames, s.height, s.width};
    streaming::write_generated(out.array_path("video"), bytes, fill, datasets::npy_header_bytes(datasets::dtype::u8, shape));
    out.add_written("video", datasets::dtype::u8, shape);
    finish_dataset(out, r);
  }

  std::string run(context& ctx, const run_request& r) const override {
    const std::int64_t pngs = int_param(r.settings, "png", 0, 1000);  // checked before any work
    video_input v;
    open_video(r.inputs, r.format, r.settings, v);
    const auto options = histeq_options(streaming::pipeline_options(r.settings, r.variant), v.spec);
    datasets::bundle_writer out(r.output, "result", name());
    const std::int64_t shape[] = {v.spec.frames, v.spec.height, v.spec.width};
    const fs::path file = v.bundle ? out.array_path("equalized") : out.dir() / "equalized.raw";
    const std::string prefix = v.bundle ? datasets::npy_header_bytes(datasets::dtype::u8, shape) : std::string();
    equalizer eq(ctx, v.spec.pixels());
    stream_pipeline pipe(ctx);
    const stream_source in[] = {v.source};
    const stream_sink sink[] = {stream_sink::to_file(file, 1, prefix)};
    const auto report = pipe.run(in, sink, std::ref(eq), options);
    if (v.bundle) out.add_written("equalized", datasets::dtype::u8, shape);
    else out.add_written_file("equalized.raw");
    // A few frames as PNG, read back from the output.
    const stream_source result = stream_source::from_file(file, 1, prefix.size(), v.spec.pixels() * v.spec.frames);
    std::vector<std::uint8_t> frame(std::size_t(v.spec.pixels()));
    for (const std::int64_t f : png_frames(v.spec.frames, pngs)) {
      streaming::read_elements(result, f * v.spec.pixels(), v.spec.pixels(), frame.data());
      char name[32];
      std::snprintf(name, sizeof name, "frame_%06lld.png", static_cast<long long>(f));
      out.add_file(name, datasets::encode_png(int(v.spec.width), int(v.spec.height), frame));
    }
    streaming::record_run(out, ctx, r.settings, options, report);
    out.params().update({{"width", v.spec.width}, {"height", v.spec.height}, {"frames", v.spec.frames}, {"format", r.format}});
    out.info()["fps"] = report.seconds > 0 ? double(v.spec.frames) / report.seconds : 0.0;
    out.finish();
    std::ostringstream msg;
    msg << "histeq: " << v.spec.frames << " frames of " << v.spec.width << " x " << v.spec.height << " on " << ctx.describe()
        << ", " << (report.seconds > 0 ? double(v.spec.frames) / report.seconds : 0.0) << " fps\n  " << report.describe();
    return msg.str();
  }

  validate_report validate(const validate_request& r) const override {
    const auto res = bundle::open(r.result, "result", name());
    video_input v;
    // A raw video's frame size is the run's, as its result recorded it.
    params_of_file(res.dir() / "manifest.json", [&] { open_video(r.inputs, r.format, res.params(), v); });
    const stream_source out = streaming::result_source(res, "equalized", datasets::dtype::u8, v.spec.pixels() * v.spec.frames, "raw");
    const auto rep = compare_frames(v.source, out, v.spec);
    return {rep.ok(), rep.describe("pixels")};
  }

  void bench(context& ctx, const bench_request& r, bench::suite& suite) const override {
    if (!r.inputs.empty()) throw usage_error("histeq: bench generates its video (see soac list)");
    const auto params = resolve_params(r.presets.empty() ? "stream" : r.presets.front(), r.overrides);
    const auto s = spec_of(params);
    streaming::scratch_dir dir(params.value("dir", ""), "histeq");
    const auto file = dir / "video.raw", result = dir / "equalized.raw";
    std::cerr << "[histeq] writing " << s.frames << " frames of " << s.width << " x " << s.height << " to " << file.string() << "\n";
    streaming::write_generated(file, std::uint64_t(s.pixels() * s.frames),
                               [&](std::uint64_t at, std::span<std::uint8_t> b) { fill_frames(at, b, s.width, s.height, r.seed); });
    const stream_source in[] = {stream_source::from_file(file, 1)};
    const stream_sink out[] = {stream_sink::to_file(result, 1)};
    const auto options = histeq_options(streaming::pipeline_options(params, "streamed"), s);
    auto fps = [&](double seconds) {
      std::ostringstream t;
      t.precision(4);
      t << double(s.frames) / seconds << " fps";
      return t.str();
    };
    equalizer eq(ctx, s.pixels());
    streaming::workload w;
    w.name = "histeq " + std::to_string(s.frames) + " frames of " + std::to_string(s.width) + " x " + std::to_string(s.height);
    w.params = {{"width", s.width}, {"height", s.height}, {"frames", s.frames}};
    w.bytes = 2.0 * double(s.pixels() * s.frames);
    w.run = [&](stream_pipeline& pipe, const stream_options& o) { return pipe.run(in, out, std::ref(eq), o); };
    w.check = [&] {
      const auto rep = compare_frames(in[0], stream_source::from_file(result, 1), s, png_frames(s.frames, 3));
      return rep.ok() ? std::string() : rep.describe("pixels");
    };
    w.rate = fps;
    w.bars = "bar at 4K: >= 500 fps and streamed / bound <= 1.20x";
    streaming::measure(ctx, suite, w, options);
    if (int_param(params, "cpu", 0, 1) == 0) return;
    // ZOne Fig 7's CPU baselines: the host backend, every OpenMP thread, then one.
    context host(backend::host);
    equalizer cpu(host, s.pixels());
    stream_pipeline host_pipe(host);
    const int runs = std::min(suite.config().runs, 3);
    auto cpu_row = [&](int threads) {
#ifdef _OPENMP
      const int before = omp_get_max_threads();
      omp_set_num_threads(threads);
#endif
      std::cerr << "[histeq] host backend, " << threads << " thread" << (threads == 1 ? "" : "s") << "\n";
      const auto t = streaming::time_wall(0, runs, [&] { host_pipe.run(in, out, std::ref(cpu), options); });
#ifdef _OPENMP
      omp_set_num_threads(before);
#endif
      suite.record("CPU, " + std::to_string(threads) + " thread" + (threads == 1 ? "" : "s"), bench::role::soac, t,
                   "host backend streamed, " + std::to_string(runs) + " runs without warm-up; " + fps(t.median_ms * 1e-3));
    };
    cpu_row(host.props().host_threads);
    cpu_row(1);
  }
};

}  // namespace
}  // namespace soac::apps

SOAC_REGISTER_APP(soac::apps::histeq_app)
