// Parboil histo (SC20 section V-D, Table III): the 2D histogram of an image of bin indices in 8-bit
// counters that saturate at 255, recomputed from zero `iterations` times; the time per iteration
// (clearing and the final conversion included) is what counts. Parboil's file is a 996 x 1040
// image into 256 x 4096 = 1,048,576 bins, about one pixel per bin on average but concentrated
// near the centre (about 25,000 bins in use, many saturating).
//
// With about as many bins as pixels, sub-histograms of the whole histogram cannot pay: each would
// be folded for about as many bins as it counted (the core's model goes global with M = 1). But
// the pixels span few of the bins. The formulations, all `--variant` names:
//   window      (default) each iteration first finds the pixels' smallest and largest bin (a
//               reduction), then counts [lo, lo + W) in shared memory (hist,
//               W = two of its largest shared passes: 116,224 bins on the H100; the run setting
//               `window` sets W), pixels past the window, if any, in the whole histogram (that
//               pass reads nothing when all fit), and one soac::scatter writes every word of the
//               8-bit result, four bins a word, zeroing the counts it read for the next iteration.
//   counts      32-bit counts of the whole histogram (hist: global, hardware atomics, one
//               reduction into L2 per pixel), then one scatter pass that writes min(count, 255)
//               and clears the counts. Every update adds 1, so min(count, 255) is what saturating
//               at every step gives.
//   saturating  the paper's: the saturating add of 8-bit values on 32-bit bins (CAS), then the
//               same pass without the clamp.
//   packed      four saturating 8-bit counters per 32-bit word (bin 4w + k in byte k, a per-byte
//               saturating add, CAS), which is the 8-bit result itself: no conversion, and 1 MB
//               to clear instead of 4, but a compare-and-swap (a read and a CAS) per pixel.
//   cub, naive  baselines (cuda only): CUB DeviceHistogram::HistogramEven then the clamp; one
//               thread per pixel with a compare-and-swap on the byte's word (the byte atomics CUDA
//               does not have).
// counts spends its time in L2 atomics (the million reductions land on ~25K bins, the peaks taking
// hundreds each), which the window's shared passes avoid; around them, the extremes are one
// reduction (segreduce, one segment spread over the GPU) of four pixels an element, the outside
// pass takes 16 pixels an element on a second stream beside the window's count, and the
// conversion writes a word a thread (docs/tuning/histo.md has the profiles behind each).
//
// Output: the counters (histo.npy, [histogram height, width] uint8) and Parboil's BMP (histo.bmp,
// byte for byte what Parboil writes for the same input).
#include <algorithm>
#include <climits>
#include <cmath>
#include <cstring>
#include <fstream>
#include <iomanip>
#include <iostream>
#include <iterator>
#include <optional>
#include <sstream>

#include <cub/device/device_histogram.cuh>

#include "apps/app.hpp"
#include "apps/hist_apps.hpp"
#include "core/buffer.hpp"
#include "core/cuda_event.hpp"
#include "core/error.hpp"
#include "core/hist.cuh"
#include "core/hist/operators.hpp"
#include "core/launch.cuh"
#include "core/scatter.cuh"
#include "core/segreduce.cuh"
#include "datasets/bundle.hpp"
#include "datasets/futhark_data.hpp"
#include "datasets/parboil_histo.hpp"
#include "datasets/random.hpp"
#include "datasets/text_reader.hpp"
#include "validate/histo.hpp"
#include "validate/report.hpp"

namespace soac::apps {
namespace {

using datasets::bundle;
using datasets::parboil_histo_input;
using u8 = std::uint8_t;
using u32 = std::uint32_t;

// Four 8-bit counters in a 32-bit word, added byte by byte with saturation at 255 (SWAR): the sum
// of the low seven bits cannot carry out of a byte, the top bits are added by xor, and a byte
// whose true sum reached 256 is set to 255.
struct saturating_bytes {
  using value_type = u32;
  static constexpr bool commutative = true;
  SOAC_HD static constexpr u32 identity() { return 0; }
  SOAC_HD constexpr u32 operator()(u32 a, u32 b) const {
    constexpr u32 high = 0x80808080u;
    const u32 low_sum = (a & ~high) + (b & ~high);
    const u32 sum = low_sum ^ ((a ^ b) & high);                  // each byte's sum mod 256
    const u32 carry = ((a & b) | ((a | b) & ~sum)) & high;       // bytes whose sum reached 256
    return sum | ((carry >> 7) * 0xffu);
  }
};

using count_op = plus<u32>;
using saturating_op = saturating_plus<u32, 8>;

// Pixel i adds 1 to its bin.
struct pixel_counts {
  const u32* image;
  SOAC_HD bin_value<u32> operator()(std::int64_t i) const { return {image[i], 1u}; }
};

// Pixel i adds 1 to byte (bin % 4) of word bin / 4.
struct pixel_bytes {
  const u32* image;
  SOAC_HD bin_value<u32> operator()(std::int64_t i) const {
    const u32 b = image[i];
    return {b >> 2, 1u << (8 * (b & 3))};
  }
};

// The 8-bit result of 32-bit counters, written to `bytes`; with Clear, the counters are set to
// zero in the same pass (the next iteration's start).
template <bool Clear, bool Clamp>
struct to_bytes {
  u32* counts;
  SOAC_HD auto operator()(std::int64_t i) const {
    const u32 c = counts[i];
    const write_at to{i, u8(Clamp && c > 255 ? 255 : c)};
    if constexpr (Clear) return writes(to, write_at{i, 0u});
    else return to;
  }
};

// ---- window: the bins the iteration's pixels span, found first, histogrammed in shared memory

// Four consecutive pixels (p 16-byte aligned): one vector load on the device.
SOAC_HD inline uint4 load4(const u32* p) {
#ifdef __CUDA_ARCH__
  return *reinterpret_cast<const uint4*>(p);
#else
  return uint4{p[0], p[1], p[2], p[3]};
#endif
}

// The pixels' smallest and largest bin, one reduction (segreduce, one segment) whose element j is
// pixels [4j, 4j + 4), reduced in registers first: as a two-bin histogram of maxima in shared
// memory every update of a warp met on the same two bins.
struct bin_range {
  u32 lo, hi;  // lo > hi: no pixels
};
struct bin_range_op {
  using value_type = bin_range;
  static constexpr bool commutative = true;
  SOAC_HD static constexpr bin_range identity() { return {UINT32_MAX, 0}; }
  SOAC_HD constexpr bin_range operator()(const bin_range& a, const bin_range& b) const {
    return {a.lo < b.lo ? a.lo : b.lo, a.hi > b.hi ? a.hi : b.hi};
  }
};
struct pixel_extremes {
  const u32* image;
  std::int64_t n;
  bool vectors;  // image is 16-byte aligned (device buffers are)
  SOAC_HD bin_range operator()(std::int64_t, std::int64_t j) const {
    u32 lo = UINT32_MAX, hi = 0;
    if (vectors && 4 * j + 4 <= n) {
      const uint4 q = load4(image + 4 * j);
      lo = std::min(std::min(q.x, q.y), std::min(q.z, q.w));
      hi = std::max(std::max(q.x, q.y), std::max(q.z, q.w));
    } else {
      for (std::int64_t p = 4 * j; p < n; ++p) lo = std::min(lo, image[p]), hi = std::max(hi, image[p]);
    }
    return {lo, hi};
  }
};
SOAC_HD inline u32 range_lo(const bin_range* range) { return range->lo; }
// Whether every pixel fell in the window [lo, lo + window) (so for no pixels: lo > hi).
SOAC_HD inline bool range_fits(const bin_range* range, std::int64_t window) {
  return range->lo > range->hi || std::int64_t(range->hi) - std::int64_t(range->lo) < window;
}

// Pixel i adds 1 to bin - lo of the window (bins past the window's end are ignored by hist).
struct window_pixels {
  const u32* image;
  const bin_range* range;
  SOAC_HD bin_value<u32> operator()(std::int64_t i) const { return {image[i] - range_lo(range), 1u}; }
};

// The pixels past the window's end, counted in the whole histogram; when all fit (the common
// case) an element returns at once, so element i is 16 pixels [16i, 16i + 16) to keep that pass
// a short one.
constexpr int outside_pixels_per_element = 16;
struct outside_pixels {
  const u32* image;
  std::int64_t n;
  const bin_range* range;
  std::int64_t window;
  SOAC_HD bin_values<u32, outside_pixels_per_element> operator()(std::int64_t i) const {
    bin_values<u32, outside_pixels_per_element> r;
    const bool fits = range_fits(range, window);
    const std::int64_t lo = range_lo(range), first = outside_pixels_per_element * i;
    SOAC_UNROLL
    for (int k = 0; k < outside_pixels_per_element; ++k) {
      r[k] = {-1, 1u};
      if (!fits && first + k < n) {
        const std::int64_t b = image[first + k];
        if (b - lo >= window) r[k].bin = b;
      }
    }
    return r;
  }
};

// Word w of the 8-bit result, bins 4w .. 4w + 3 (byte k is bin 4w + k: little-endian, as the
// result's bytes): each bin's window count plus, where pixels fell outside the window, its count
// there; both are zeroed for the next iteration by the thread that read them. Every word of the
// result is written. Destinations: the words, then the window counts four times (one write per
// bin), then (Outside) the whole histogram's counts four times.
template <bool Outside>
struct window_to_bytes {
  u32* window_counts;
  u32* counts;
  const bin_range* range;
  std::int64_t window, bins;
  SOAC_HD auto operator()(std::int64_t w) const {
    const std::int64_t lo = range_lo(range);
    const bool outside = Outside && !range_fits(range, window);
    u32 word = 0;
    std::int64_t in[4], out[4];
    SOAC_UNROLL
    for (int k = 0; k < 4; ++k) {
      const std::int64_t b = 4 * w + k, at = b - lo;
      in[k] = b < bins && at >= 0 && at < window ? at : -1;
      out[k] = outside && b < bins ? b : -1;
      u32 c = in[k] >= 0 ? window_counts[in[k]] : 0u;
      if (out[k] >= 0) c += counts[out[k]];
      word |= (c > 255 ? 255u : c) << (8 * k);
    }
    const auto clear = [](std::int64_t at) { return write_at{at, 0u}; };
    if constexpr (Outside)
      return writes(write_at{w, word}, clear(in[0]), clear(in[1]), clear(in[2]), clear(in[3]), clear(out[0]), clear(out[1]),
                    clear(out[2]), clear(out[3]));
    else return writes(write_at{w, word}, clear(in[0]), clear(in[1]), clear(in[2]), clear(in[3]));
  }
};

// The byte atomics CUDA lacks: one thread per pixel, a compare-and-swap loop on the byte's word.
__global__ void naive_bytes_kernel(std::int64_t n, pixel_bytes f, u32* words) {
  const std::int64_t i = std::int64_t{blockIdx.x} * blockDim.x + threadIdx.x;
  if (i >= n) return;
  const auto u = f(i);
  detail::atomic_update<atomic_kind::cas, saturating_bytes>(words + u.bin, nullptr, u.value);
}

const std::vector<std::string> formulations = {"window", "counts", "saturating", "packed", "cub", "naive"};

// The window of the `window` formulation: `passes` chunks of hist's largest shared pass of 32-bit
// counts (one block per SM with all of its shared memory: 58,112 bins on the H100), at most H.
std::int64_t window_bins(const device_properties& p, int passes, std::uint64_t H) {
  const std::size_t per_block = std::min(p.shared_per_sm > hist_tuning::shared_reserved_per_block
                                             ? p.shared_per_sm - hist_tuning::shared_reserved_per_block
                                             : 0,
                                         std::max(p.shared_per_block_optin, p.shared_per_block));
  // The host backend has no shared memory: its per-thread histograms take the same window.
  const std::int64_t chunk = per_block >= 4096 ? std::int64_t(per_block / sizeof(u32)) : std::int64_t{58112};
  return std::int64_t(std::min<std::uint64_t>(H, std::uint64_t(chunk) * std::uint64_t(passes)));
}

// One formulation's buffers and its iteration: from zero to the 8-bit histogram.
class histo_iterations : public first_plan {
 public:
  // window: the window formulation's bins (0: window_bins with the variant's S, else 2).
  histo_iterations(context& ctx, const hist_variant& v, span<const u32> image, std::uint64_t bins, std::int64_t window = 0)
      : ctx_(ctx), v_(v), image_(image), bins_(bins) {
    const bool packed = v.name == "packed" || v.name == "naive";
    if ((v.name == "cub" || v.name == "naive") && !ctx.is_cuda())
      throw usage_error("histo: the " + v.name + " baseline needs the cuda backend");
    if (packed) {
      words_ = buffer<u32>(ctx, std::size_t((bins + 3) / 4));
    } else if (v.name == "window") {
      window_ = window > 0 ? std::int64_t(std::min<std::uint64_t>(bins, std::uint64_t(window)))
                           : window_bins(ctx.props(), v.options.passes > 0 ? v.options.passes : 2, bins);
      // Loads issued a step ahead (the model's choice) are slower here (docs/tuning/histo.md).
      window_options_ = v.options;
      if (window_options_.overrides.load_ahead == hist_toggle::automatic) window_options_.overrides.load_ahead = hist_toggle::off;
      window_counts_ = buffer<u32>(ctx, std::size_t(window_));
      ctx.fill_zero(window_counts_.data(), window_counts_.size() * sizeof(u32));  // each iteration leaves them zero again
      if (std::uint64_t(window_) < bins) {
        counts_ = buffer<u32>(ctx, std::size_t(bins));
        ctx.fill_zero(counts_.data(), counts_.size() * sizeof(u32));
        if (ctx.is_cuda()) side_.emplace(ctx.props().ordinal);
      }
      words_ = buffer<u32>(ctx, std::size_t((bins + 3) / 4));  // the 8-bit result, four bins a word
      range_ = buffer<bin_range>(ctx, 1);
    } else {
      counts_ = buffer<u32>(ctx, std::size_t(bins));
      bytes_ = buffer<u8>(ctx, std::size_t(bins));
      ctx.fill_zero(counts_.data(), counts_.size() * sizeof(u32));  // every iteration leaves them zero again
    }
    if (v.name == "cub") {
      if (bins >= std::uint64_t(INT_MAX)) throw usage_error("histo: CUB takes fewer than 2^31 - 1 bins");
      SOAC_CUDA_CHECK(cub::DeviceHistogram::HistogramEven(nullptr, cub_bytes_, image.data(), counts_.data(), int(bins + 1), u32(0),
                                                          u32(bins), std::int64_t(image.size()), ctx.stream()));
      cub_temp_ = buffer<unsigned char>(ctx, std::max<std::size_t>(cub_bytes_, 1));
    }
  }

  void iterate() {
    const std::int64_t n = std::int64_t(image_.size()), H = std::int64_t(bins_);
    const std::string& m = v_.name;
    if (m == "counts") {
      keep(hist(ctx_, v_.options, n, pixel_counts{image_.data()}, counts_.view(), count_op{}));
      scatter(ctx_, H, to_bytes<true, true>{counts_.data()}, bytes_, counts_);
    } else if (m == "window") {
      const bool vectors = reinterpret_cast<std::uintptr_t>(image_.data()) % alignof(uint4) == 0;
      const std::int64_t quads = detail::ceil_div(n, std::int64_t{4});
      segreduce(ctx_, 1, quads, pixel_extremes{image_.data(), n, vectors}, range_.view(), bin_range_op{});
      const bin_range* range = range_.data();
      // The outside pass has nothing to do when every pixel fits, yet its launch sat between the
      // window's count and the conversion; on a second stream it runs beside the window's count.
      const auto count_outside = [&](context& on) {
        hist(on, outside_options_, detail::ceil_div(n, std::int64_t{outside_pixels_per_element}),
             outside_pixels{image_.data(), n, range, window_}, counts_.view(), count_op{});
      };
      if (side_) {
        SOAC_CUDA_CHECK(cudaEventRecord(side_->ranged.get(), ctx_.stream()));
        SOAC_CUDA_CHECK(cudaStreamWaitEvent(side_->ctx.stream(), side_->ranged.get(), 0));
        count_outside(side_->ctx);
        SOAC_CUDA_CHECK(cudaEventRecord(side_->outside_counted.get(), side_->ctx.stream()));
      }
      keep(hist(ctx_, window_options_, n, window_pixels{image_.data(), range}, window_counts_.view(), count_op{}));
      const std::int64_t words = std::int64_t(words_.size());
      auto& wc = window_counts_;
      // A word a thread: the blocked kernel's four words a thread left 256 blocks, latency-bound.
      scatter_options word_a_thread;
      word_a_thread.strategy = scatter_strategy::plain;
      if (counts_.empty()) {
        scatter(ctx_, word_a_thread, words, window_to_bytes<false>{wc.data(), nullptr, range, window_, H}, words_, wc, wc, wc, wc);
      } else {
        if (side_) SOAC_CUDA_CHECK(cudaStreamWaitEvent(ctx_.stream(), side_->outside_counted.get(), 0));
        else count_outside(ctx_);
        scatter(ctx_, word_a_thread, words, window_to_bytes<true>{wc.data(), counts_.data(), range, window_, H}, words_, wc, wc, wc, wc,
                counts_, counts_, counts_, counts_);
      }
    } else if (m == "saturating") {
      keep(hist(ctx_, v_.options, n, pixel_counts{image_.data()}, counts_.view(), saturating_op{}));
      scatter(ctx_, H, to_bytes<true, false>{counts_.data()}, bytes_, counts_);
    } else if (m == "packed") {
      ctx_.fill_zero(words_.data(), words_.size() * sizeof(u32));
      keep(hist(ctx_, v_.options, n, pixel_bytes{image_.data()}, words_.view(), saturating_bytes{}));
    } else if (m == "cub") {
      std::size_t temp_bytes = cub_bytes_;
      SOAC_CUDA_CHECK(cub::DeviceHistogram::HistogramEven(cub_temp_.data(), temp_bytes, image_.data(), counts_.data(), int(H + 1),
                                                          u32(0), u32(H), n, ctx_.stream()));
      scatter(ctx_, H, to_bytes<false, true>{counts_.data()}, bytes_);
    } else {
      ctx_.fill_zero(words_.data(), words_.size() * sizeof(u32));
      if (n > 0) {
        naive_bytes_kernel<<<unsigned(detail::ceil_div(n, 256)), 256, 0, ctx_.stream()>>>(n, pixel_bytes{image_.data()},
                                                                                            words_.data());
        SOAC_CHECK_LAUNCH("naive_bytes_kernel");
      }
    }
  }

  // The 8-bit counters of the last iteration.
  std::vector<u8> result() const {
    if (words_.empty() && bytes_.empty()) return {};
    if (!bytes_.empty()) return bytes_.to_vector();
    const auto words = words_.to_vector();  // little-endian: byte k of word w is bin 4w + k
    std::vector<u8> out(static_cast<std::size_t>(bins_));
    std::memcpy(out.data(), words.data(), out.size());
    return out;
  }

 private:
  context& ctx_;
  hist_variant v_;
  span<const u32> image_;
  std::uint64_t bins_;
  buffer<u32> counts_, words_, window_counts_;
  buffer<bin_range> range_;
  buffer<u8> bytes_;
  std::int64_t window_ = 0;
  hist_options window_options_;
  // The outside pass: global, one copy, no sparsity estimate (it mostly has nothing to count).
  const hist_options outside_options_ = parse_hist_options("strategy=global,M=1,RF=1");
  // cuda, window formulation with an outside pass: the pass's stream and the events ordering it.
  struct side_stream {
    explicit side_stream(int ordinal) : ctx(backend::cuda, ordinal) {}
    context ctx;
    cuda_event ranged, outside_counted;
  };
  std::optional<side_stream> side_;
  buffer<unsigned char> cub_temp_;
  std::size_t cub_bytes_ = 0;
};

// ---- the generator: a concentrated 2D distribution, Parboil's shape

// Pixels fall in a 2D normal distribution around a point near the histogram's centre: a fraction
// `core_fraction` with deviation `core` bins (the saturating peak), the rest with `spread`.
struct image_spec {
  parboil_histo_input shape;  // the sizes, no bins
  double core, spread, core_fraction;
};

// The generator's parameters, checked (gen, and every dataset a run opens).
image_spec spec_of(const nlohmann::json& p) {
  image_spec s;
  parboil_histo_input& in = s.shape;
  in.image_width = u32(int_param(p, "image_width", 1, 1 << 16));
  in.image_height = u32(int_param(p, "image_height", 1, 1 << 16));
  in.histo_width = u32(int_param(p, "histo_width", 1, UINT32_MAX));
  in.histo_height = u32(int_param(p, "histo_height", 1, UINT32_MAX));
  if (in.bin_count() >= (std::uint64_t{1} << 32)) throw usage_error("histo: histo_width * histo_height must be below 2^32");
  s.core = real_param(p, "core", 0, 1e6);
  s.spread = real_param(p, "spread", 0, 1e6);
  s.core_fraction = real_param(p, "core_fraction", 0, 1);
  return s;
}

parboil_histo_input generate_image(const nlohmann::json& p, std::uint64_t seed) {
  const auto [shape, core, spread, core_fraction] = spec_of(p);
  parboil_histo_input in = shape;
  const double cx = std::floor(0.45 * in.histo_width), cy = std::floor(0.55 * in.histo_height);  // a bin's centre below
  const std::int64_t n = std::int64_t(in.image_width) * in.image_height;
  in.bins.resize(std::size_t(n));
  u32* out = in.bins.data();
  const u32 W = in.histo_width, H = in.histo_height;
  // Plain copies: clang 14 refuses structured bindings inside an OpenMP region.
  const double core_sigma = core, spread_sigma = spread, core_share = core_fraction;
  SOAC_OMP_PARALLEL_FOR
  for (std::int64_t i = 0; i < n; ++i) {
    const auto u = [&](std::uint64_t stream) { return datasets::random_unit(seed, stream, std::uint64_t(i)); };
    const double sigma = u(0) < core_share ? core_sigma : spread_sigma;
    const double r = sigma * std::sqrt(-2 * std::log(1 - u(1))), a = 2 * M_PI * u(2);  // Box-Muller
    const auto clamp = [](double v, u32 size) { return u32(std::clamp(std::floor(v), 0.0, double(size - 1))); };
    out[i] = clamp(cy + 0.5 + r * std::sin(a), H) * W + clamp(cx + 0.5 + r * std::cos(a), W);
  }
  return in;
}

class histo_app final : public app {
 public:
  histo_app() : app(describe()) {}

  static app_info describe() {
    app_info a = app_info::named("histo", "Parboil histo: 2D histogram of an image of bin indices in 8-bit saturating "
                                          "counters, and its BMP (SC20 V-D)");
    {
      auto p = [](int iw, int ih, int hw, int hh, double core, double spread, double fraction) {
        return nlohmann::json{{"image_width", iw}, {"image_height", ih}, {"histo_width", hw}, {"histo_height", hh},
                              {"core", core},      {"spread", spread},    {"core_fraction", fraction}, {"variants", ""}};
      };
      a.presets = {{"parboil", "Parboil's shape: 996 x 1040 pixels into 256 x 4096 bins, ~25K in use, ~1K saturated",
                    p(996, 1040, 256, 4096, 12, 28, 0.5)},
                   {"tiny", "61 x 37 pixels into 30 x 21 bins (odd row padding, saturated bins; tests)", p(61, 37, 30, 21, 0.7, 3, 0.5)}};
    }
    a.variants = formulations;
    a.variant_settings = hist_variant_settings;
    a.input_formats = {{"parboil", "Parboil histo's input file (-i img.bin): uint32 image width, height, histogram width, height, "
                                   "then the image's bin indices"},
                       {"futhark", "the SC20 artifact's histo-data/*.in (benchmarks/parboil/histo.fut): histogram width, height (i32) "
                                   "and the image of bin indices as a 2D i32 array, in a Futhark data file (-i FILE)"}};
    a.expected_formats = {{"parboil", "the BMP Parboil's histo writes (-o ref.bmp); identical byte for byte"},
                          {"futhark", "the SC20 artifact's histo-data/*.out: the histogram's saturated counts as a Futhark i32 array; equal"}};
    a.run_settings = {{"iterations", 20, "times the histogram is computed from zero (Parboil: 20 default, 10000 large)"},
                      {"window", 0, "the window variant's bins (0: two of hist's largest shared passes, 116,224 on the H100)"},
                      strict_setting("Parboil's histo")};
    a.bench_presets = {"parboil"};
    return a;
  }

  void check_params(const nlohmann::json& params) const override { spec_of(params); }
  // What a run reads: a 2D image (its height and width, where the manifest gives them, agree) and
  // the histogram's shape; the bins are checked against it as the image is read.
  void check_dataset(const bundle& b) const override { histogram_of(b); }

  static parboil_histo_input histogram_of(const bundle& b) {
    const auto h = b.header("image");
    if (h.shape.size() != 2 || h.shape[0] > UINT32_MAX || h.shape[1] > UINT32_MAX)
      throw input_error(b.path_of("image").string() + ": expected a 2D image (height, width) of at most 2^32 - 1 each, not " +
                        datasets::shape_string(h.shape));
    for (const auto& [key, length] : {std::pair{"image_height", h.shape[0]}, std::pair{"image_width", h.shape[1]}})
      if (b.params().contains(key) && b.params()[key] != length)
        throw input_error(b.path_of("image").string() + ": shape " + datasets::shape_string(h.shape) + ", but the manifest says " +
                          key + " = " + b.params()[key].dump());
    parboil_histo_input in;
    in.image_height = u32(h.shape[0]);
    in.image_width = u32(h.shape[1]);
    in.histo_width = u32(int_param(b.params(), "histo_width", 1, UINT32_MAX));
    in.histo_height = u32(int_param(b.params(), "histo_height", 1, UINT32_MAX));
    if (in.bin_count() >= (std::uint64_t{1} << 32)) throw usage_error("histo: histo_width * histo_height must be below 2^32");
    return in;
  }

  void generate(const gen_request& r) const override {
    check_format(r.format);
    const auto in = generate_image(r.params, r.seed);
    if (r.format == "futhark") return write_futhark_histo(r.output, in);
    if (!r.format.empty()) return datasets::write_parboil_histo(r.output, in);
    datasets::bundle_writer out(r.output, "dataset", name());
    const std::int64_t shape[2] = {in.image_height, in.image_width};
    out.add("image", datasets::dtype::u32, shape, in.bins.data());
    finish_dataset(out, r);
  }

  // The input of a run: a Parboil file, or a bundle (the image and the histogram's shape).
  parboil_histo_input load(const std::vector<std::filesystem::path>& inputs, const std::string& format,
                           datasets::leniency& lenient) const {
    check_format(format);
    if (inputs.size() != 1) throw usage_error("histo: give one input (-i), not " + std::to_string(inputs.size()));
    if (format == "futhark") return read_futhark_histo(inputs.front());
    if (!format.empty()) return datasets::read_parboil_histo(inputs.front(), lenient);
    const auto b = open_dataset(inputs.front());
    parboil_histo_input in = histogram_of(b);
    in.bins = b.read<u32>("image");
    datasets::check_parboil_histo(in, b.path_of("image").string());
    return in;
  }

  std::string run(context& ctx, const run_request& r) const override {
    auto lenient = leniency_of(r.settings, "Parboil's histo");
    const auto in = load(r.inputs, r.format, lenient);
    report_leniency(lenient);
    const auto v = parse_hist_variant(r.variant, formulations, name());
    const std::int64_t iterations = int_param(r.settings, "iterations", 1, std::int64_t{1} << 40);
    const std::int64_t window = int_param(r.settings, "window", 0, UINT32_MAX);
    // 32-bit counts and 8-bit counters of every bin and the image in the backend's memory, and the
    // counters' copy on the host, refused before any is allocated.
    ctx.require_memory(checked_bytes(in.bin_count(), sizeof(u32) + 1, "histo: the bins") + in.bins.size() * sizeof(u32),
                       in.bin_count(), "histo: " + std::to_string(in.bin_count()) + " bins");
    buffer<u32> image(ctx, std::span<const u32>(in.bins));
    histo_iterations it(ctx, v, image, in.bin_count(), window);
    const bench::stats t = bench::time(ctx, bench::settings{.warmup = 0, .runs = 1, .progress = false, .warmup_ms = 0}, [&] {
      for (std::int64_t k = 0; k < iterations; ++k) it.iterate();
    });
    const auto counters = it.result();
    datasets::bundle_writer out(r.output, "result", name());
    const std::int64_t shape[2] = {in.histo_height, in.histo_width};
    out.add("histo", datasets::dtype::u8, shape, counters.data());
    out.add_file("histo.bmp", datasets::parboil_histo_bmp(counters, in.histo_width, in.histo_height));
    out.params() = {{"image_width", in.image_width}, {"image_height", in.image_height}, {"histo_width", in.histo_width},
                    {"histo_height", in.histo_height}, {"iterations", iterations}, {"format", r.format.empty() ? "bundle" : r.format}};
    const double per_iteration_us = t.median_ms * 1e3 / double(iterations);
    out.info() = {{"backend", std::string(to_string(ctx.which()))}, {"device", ctx.props().name}, {"variant", v.text},
                  {"plan", it.plan()}, {"ms", t.median_ms}, {"us_per_iteration", per_iteration_us}};
    out.finish();
    std::ostringstream s;
    s << "histo: " << in.image_width << " x " << in.image_height << " pixels into " << in.histo_width << " x " << in.histo_height
      << " bins on " << ctx.describe() << "\n  " << v.text << ": " << iterations << " iterations, " << std::fixed
      << std::setprecision(2) << per_iteration_us << " us each";
    if (r.verbose && !it.plan().empty()) s << "\n  plan: " << it.plan();
    return s.str();
  }

  validate_report validate(const validate_request& r) const override {
    datasets::leniency lenient;
    const auto in = load(r.inputs, r.format, lenient);
    const auto out = bundle::open(r.result, "result", name());
    const auto expected = validate::saturating_counts(in.bins, in.bin_count());
    const auto got = out.read<u8>("histo");
    validate::report rep;
    rep.checked = std::int64_t(expected.size());
    if (got.size() != expected.size()) {
      rep.mismatch("the result has " + std::to_string(got.size()) + " counters, expected " + std::to_string(expected.size()));
    } else {
      for (std::size_t b = 0; b < expected.size(); ++b)
        if (got[b] != expected[b])
          rep.mismatch("bin " + std::to_string(b) + " (x " + std::to_string(b % in.histo_width) + ", y " +
                       std::to_string(b / in.histo_width) + "): " + std::to_string(got[b]) + ", expected " +
                       std::to_string(expected[b]));
    }
    // Parboil's BMP of the reference, byte for byte.
    ++rep.checked;
    if (!out.has_file("histo.bmp")) {
      rep.mismatch("the result has no histo.bmp");
    } else {
      const std::string bmp = datasets::parboil_histo_bmp(expected, in.histo_width, in.histo_height);
      const std::string have = datasets::read_text_file(out.file_path("histo.bmp"));
      if (have != bmp) {
        const auto at = std::mismatch(bmp.begin(), bmp.end(), have.begin(), have.end()).first - bmp.begin();
        rep.mismatch("histo.bmp differs from Parboil's BMP of the reference from byte " + std::to_string(at) + " (" +
                     std::to_string(have.size()) + " bytes, expected " + std::to_string(bmp.size()) + ")");
      }
    }
    return {rep.ok(), rep.describe("8-bit counters and the BMP")};
  }


  // The artifact's program (benchmarks/parboil/histo.fut): main (histo_width: i32) (histo_height:
  // i32) (img: [img_width][img_height]i32), the pixels in the array's order.
  static parboil_histo_input read_futhark_histo(const std::filesystem::path& path) {
    const auto values = datasets::read_futhark_values(path);
    if (values.size() != 3)
      throw input_error(path.string() + ": holds " + std::to_string(values.size()) +
                        " values, not histo.fut's 3 (histogram width, histogram height, the image)");
    parboil_histo_input in;
    for (const auto& [v, field] : {std::pair{&values[0], &in.histo_width}, std::pair{&values[1], &in.histo_height}}) {
      const std::int64_t side = v->i64_scalar();
      if (side < 1 || side > UINT32_MAX) throw input_error(path.string() + ": a histogram side of " + std::to_string(side));
      *field = u32(side);
    }
    const auto pixels = values[2].i32_elements(2);
    if (values[2].shape[0] > UINT32_MAX || values[2].shape[1] > UINT32_MAX)
      throw input_error(path.string() + ": an image of " + values[2].type_text() + " is beyond 32-bit sides");
    in.image_width = u32(values[2].shape[0]);
    in.image_height = u32(values[2].shape[1]);
    in.bins.assign(pixels.begin(), pixels.end());  // a negative index becomes one beyond every histogram
    datasets::check_parboil_histo(in, path.string());
    return in;
  }
  static void write_futhark_histo(const std::filesystem::path& path, const parboil_histo_input& in) {
    const std::vector<std::int32_t> pixels(in.bins.begin(), in.bins.end());
    const std::vector<datasets::futhark_value> values = {
        datasets::make_futhark_scalar<std::int32_t>(std::int32_t(in.histo_width)),
        datasets::make_futhark_scalar<std::int32_t>(std::int32_t(in.histo_height)),
        datasets::make_futhark_value<std::int32_t>({std::int64_t(in.image_width), std::int64_t(in.image_height)}, pixels)};
    datasets::write_futhark_values(path, values);
  }

  // Parboil's rule: the same BMP, byte for byte. A difference is named by its pixel. The
  // artifact's output: the same counts.
  validate_report compare(const compare_request& r) const override {
    const auto out = bundle::open(r.result, "result", name());
    if (r.format == "futhark") return compare_counts(out, r.expected);
    if (!out.has_file("histo.bmp")) throw input_error(r.result.string() + ": the result has no histo.bmp");
    const auto shape = out.header("histo").shape;
    if (shape.size() != 2) throw input_error(out.path_of("histo").string() + ": not a height x width histogram");
    const std::string ours = datasets::read_text_file(out.file_path("histo.bmp")), theirs = datasets::read_text_file(r.expected);
    constexpr std::size_t headers = 54;
    if (theirs.size() < headers || theirs.compare(0, 2, "BM") != 0)
      throw input_error(r.expected.string() + ": not a BMP (" + std::to_string(theirs.size()) + " bytes; Parboil's start with \"BM\")");
    if (ours == theirs) return {true, "identical to " + r.expected.filename().string() + ", byte for byte (" + std::to_string(ours.size()) + " bytes)"};
    std::ostringstream s;
    const auto first = std::size_t(std::mismatch(ours.begin(), ours.end(), theirs.begin(), theirs.end()).first - ours.begin());
    if (ours.size() != theirs.size() || first < headers) {
      s << "the files differ from byte " << first << " (" << ours.size() << " bytes here, " << theirs.size() << " in "
        << r.expected.filename().string() << (first < headers ? "; in the headers: another histogram shape?)" : ")");
      return {false, s.str()};
    }
    // Pixel rows run from the last histogram row up, 3 bytes a pixel, each row padded to 4 bytes.
    const std::int64_t width = shape[1], height = shape[0], row_bytes = (width * 24 + 31) / 32 * 4;
    std::int64_t pixels = 0, worst_at = -1, worst = -1;
    for (std::size_t b = headers; b < ours.size(); ++b) {
      if (ours[b] == theirs[b]) continue;
      const std::int64_t at = std::int64_t(b - headers), in_row = at % row_bytes;
      if (in_row % 3 == 0 || b == first) ++pixels;
      const int diff = std::abs(int(std::uint8_t(ours[b])) - int(std::uint8_t(theirs[b])));
      if (diff > worst) worst = diff, worst_at = at;
    }
    const auto pixel = [&](std::int64_t at) {
      return "(x " + std::to_string(at % row_bytes / 3) + ", y " + std::to_string(height - 1 - at / row_bytes) + ")";
    };
    s << "about " << pixels << " pixels differ; the first at " << pixel(std::int64_t(first - headers)) << ", the largest "
      << "difference " << worst << " in a colour byte at " << pixel(worst_at) << " (red = Parboil's intensity of the 8-bit counter)";
    return {false, s.str()};
  }

  static validate_report compare_counts(const bundle& out, const std::filesystem::path& expected) {
    const auto values = datasets::read_futhark_values(expected);
    if (values.size() != 1) throw input_error(expected.string() + ": holds " + std::to_string(values.size()) + " values, not histo.fut's one");
    const auto theirs = values[0].i32_elements(1);
    const auto ours = out.read<u8>("histo");
    if (theirs.size() != ours.size())
      return {false, expected.filename().string() + " holds " + std::to_string(theirs.size()) + " counts, the result " + std::to_string(ours.size())};
    std::int64_t differ = 0, first = -1;
    for (std::size_t b = 0; b < ours.size(); ++b)
      if (std::int32_t(ours[b]) != theirs[b]) differ += 1, first = first < 0 ? std::int64_t(b) : first;
    if (differ == 0) return {true, "all " + std::to_string(ours.size()) + " counts equal " + expected.filename().string() + "'s"};
    return {false, std::to_string(differ) + " of " + std::to_string(ours.size()) + " counts differ; the first, bin " + std::to_string(first) +
                       ": " + std::to_string(ours[std::size_t(first)]) + " here, " + std::to_string(theirs[std::size_t(first)]) + " expected"};
  }

  void bench(context& ctx, const bench_request& r, bench::suite& suite) const override {
    if (!ctx.is_cuda()) throw usage_error("histo bench: the baselines (CUB, byte atomics) need --backend cuda");
    // Each -i file is a case; else the presets.
    std::vector<bench_input<parboil_histo_input>> cases;
    datasets::leniency lenient;
    for (const auto& file : r.inputs) cases.push_back({file.string(), load({file}, r.format.empty() ? "parboil" : r.format, lenient), ""});
    if (cases.empty())
      cases = preset_inputs<parboil_histo_input>(*this, r, [&](const nlohmann::json& p) { return generate_image(p, r.seed); });
    suite.expect_cases(int(cases.size()));
    for (const auto& c : cases) bench_case(ctx, suite, c.label, c.input, c.variants);
  }

  void bench_case(context& ctx, bench::suite& suite, const std::string& label, const parboil_histo_input& in,
                  const std::string& variant_list) const {
    const std::uint64_t bins = in.bin_count();
    const auto expected = validate::saturating_counts(in.bins, bins);
    std::ostringstream title;
    title << "histo " << label << ": " << in.image_width << "x" << in.image_height << " -> " << in.histo_width << "x"
         << in.histo_height;
    // Each iteration must read the image and write the 8-bit histogram.
    suite.begin_case(title.str(), {{"pixels", in.bins.size()}, {"bins", bins}}, double(in.bins.size()) * 4 + double(bins));
    buffer<u32> image(ctx, std::span<const u32>(in.bins));
    std::vector<std::string> chosen = split_variant_list(variant_list);
    // Besides the model's choices: packed in shared memory (1 MB of counters: five passes side by
    // side, each block folding only the words it changed), counts in shared memory (4 MB: 19
    // passes) and packed updating L2 directly.
    if (chosen.empty())
      chosen = {"cub", "naive", "window", "window,S=1", "window,S=3", "counts", "counts,strategy=shared", "saturating", "packed",
                "packed,strategy=shared,partition=off,partials=off", "packed,strategy=global,M=1"};
    for (const auto& text : chosen) {
      const auto v = parse_hist_variant(text, formulations, name());
      const bool baseline = v.name == "cub" || v.name == "naive";
      const std::string label_text = baseline ? (v.name == "cub" ? "CUB HistogramEven + clamp" : "naive byte atomics (CAS)")
                                              : "soac " + text;
      unless_ruled_out(label_text, [&] {
        histo_iterations it(ctx, v, image, bins);
        suite.measure(label_text, baseline ? bench::role::baseline : bench::role::soac, [&] { it.iterate(); });
        const auto got = it.result();
        std::int64_t bad = 0;
        for (std::size_t b = 0; b < got.size(); ++b) bad += got[b] != expected[b];
        if (bad || got.size() != expected.size()) suite.annotate("WRONG: " + std::to_string(bad) + " counters differ");
        else if (!it.plan().empty()) suite.annotate(it.plan());
      });
    }
  }
};

}  // namespace
}  // namespace soac::apps

SOAC_REGISTER_APP(soac::apps::histo_app)
