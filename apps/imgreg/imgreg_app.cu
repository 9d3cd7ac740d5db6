// Image registration by mutual information (SC20 section V-D4, Table III): rigid registration
// (translation and rotation) of two grey images. Its inner step is the paper's float-add
// histogram with computed bins: the joint intensity histogram of the fixed image and the warped
// (bilinearly resampled) moving image, each pixel adding a 4 x 4 block of cubic B-spline
// weights, on soac::hist (bin_values of 16 updates) with the warp fused into the histogram's
// functor. By default the weights are summed in fixed point (32-bit integers counting quanta of
// 2^-s, plus<std::uint32_t>: native shared-memory atomics, exact and deterministic sums) and
// converted to float at the end; acc=float sums floats, as the paper does. A derivative-free
// optimiser (Nelder-Mead) on the host maximises the mutual information coarse-to-fine on an
// image pyramid, after a grid over the capture range (capture_range_of) on smoothed search images
// (one batched histogram) whose best local maxima it refines side by side, so that rotations of
// tens of degrees and shifts of tens of pixels are found.
//
// Variants: `hist` (soac::hist, default) and `sort` (the paper's PyTorch approach with CUB: every
// update materialised, sorted by bin, reduced by key; cuda only). `soac bench imgreg` times the
// histogram step of both at the paper's sizes in the same run, and the whole registration.
#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>
#include <functional>
#include <iomanip>
#include <sstream>

#include <cub/device/device_radix_sort.cuh>
#include <cub/device/device_reduce.cuh>

#include "apps/app.hpp"
#include "apps/hist_apps.hpp"
#include "apps/imgreg/imgreg.hpp"
#include "core/buffer.hpp"
#include "core/cuda_check.hpp"
#include "core/error.hpp"
#include "core/hist.cuh"
#include "core/scatter.cuh"
#include "datasets/binary_file.hpp"
#include "datasets/bundle.hpp"
#include "datasets/image.hpp"
#include "datasets/random.hpp"

namespace soac::apps::imgreg {

using datasets::grey_image;
using validate::rigid_transform;

constexpr double pi = 3.14159265358979323846;

namespace {
// The map at a scale of `f` full-size pixels per pixel (pixel i covering full pixels
// [f i, f (i + 1))): full-size centre c0 = ((W - 1) / 2, (H - 1) / 2), index x = (x_0 - b) / f
// with b = (f - 1) / 2, so c = (c0 - b) / f and the translation t / f.
rigid_map rigid_at_scale(const rigid_transform& t, int width, int height, double f) {
  const double b = (f - 1) / 2;
  const double cx = ((width - 1) / 2.0 - b) / f, cy = ((height - 1) / 2.0 - b) / f;
  const double a = t.angle_deg * pi / 180;
  return {float(std::cos(a)), float(std::sin(a)), float(cx), float(cy), float(cx + t.tx / f), float(cy + t.ty / f)};
}
}  // namespace

// Pyramid level l: a scale of 2^l (exact binary fractions throughout).
rigid_map make_rigid(const rigid_transform& t, int width, int height, int level) {
  return rigid_at_scale(t, width, height, std::ldexp(1.0, level));
}

namespace {

// Pixels of a grey image as floats (the histogram's and the pyramid's type).
std::vector<float> as_floats(const grey_image& im) { return std::vector<float>(im.pixels.begin(), im.pixels.end()); }

}  // namespace

validate::float_histogram reference_histogram(const grey_image& fixed, const grey_image& moving, const rigid_transform& t,
                                              int levels) {
  const int side = levels + 3;
  const std::vector<float> f = as_floats(fixed), m = as_floats(moving);
  const image_view fv{f.data(), fixed.width, fixed.height}, mv{m.data(), moving.width, moving.height};
  const rigid_map map = make_rigid(t, fixed.width, fixed.height, 0);
  const float scale = levels_scale(levels);
  validate::float_histogram h(std::size_t(side) * side);
  for (int py = 0; py < fixed.height; ++py)
    for (int px = 0; px < fixed.width; ++px) {
      const pixel_contribution c = contribution(fv, mv, map, scale, side, px, py);
      if (!c.valid) continue;
      for (int a = 0; a < 4; ++a)
        for (int b = 0; b < 4; ++b) h.add(c.first_bin + a * side + b, c.value(a, b));
    }
  return h;
}

namespace {
// The mutual information of a joint histogram of side x side bins, and its total weight (the
// overlapping pixels, each adding weights that sum to one, or to one over the quantum in fixed
// point). With v the bins, r and c the row and column sums and T the total,
// MI = (sum v log v - sum r log r - sum c log c) / T + log T: two passes and no arrays, so that a
// device thread computes it for one histogram of a batch.
struct information {
  double mutual = 0, total = 0;
};

template <class T>
SOAC_HD information information_of(const T* histogram, int side) {
  double total = 0, cells = 0, rows = 0, cols = 0;
  for (int a = 0; a < side; ++a) {
    double r = 0;
    for (int b = 0; b < side; ++b) {
      const double v = double(histogram[a * side + b]);
      if (v > 0) cells += v * log(v);
      r += v;
    }
    if (r > 0) rows += r * log(r);
    total += r;
  }
  for (int b = 0; b < side; ++b) {
    double c = 0;
    for (int a = 0; a < side; ++a) c += double(histogram[a * side + b]);
    if (c > 0) cols += c * log(c);
  }
  if (!(total > 0)) return {};
  return {(cells - rows - cols) / total + log(total), total};
}

// information_of for each histogram of a batch (side^2 bins each): the mutual information to the
// first destination, the total to the second.
template <class T>
struct batch_information {
  const T* histograms;
  int side;
  SOAC_HD auto operator()(std::int64_t h) const {
    const information i = information_of(histograms + h * side * side, side);
    return writes(write_at<std::int64_t, double>{h, i.mutual}, write_at<std::int64_t, double>{h, i.total});
  }
};
}  // namespace

double mutual_information(const float* histogram, int side) { return information_of(histogram, side).mutual; }
double mutual_information(const std::uint32_t* histogram, int side) { return information_of(histogram, side).mutual; }

// ---- The generator.

namespace {

// Value noise: random values on the integer lattice, blended with the quintic fade.
double lattice_value(std::uint64_t key, std::int64_t ix, std::int64_t iy) {
  return double(datasets::splitmix64(datasets::keyed_word(key, std::uint64_t(ix)) ^ std::uint64_t(iy)) >> 11) * 0x1.0p-53;
}
double fade(double t) { return t * t * t * (t * (t * 6 - 15) + 10); }
double value_noise(std::uint64_t key, double x, double y) {
  const double fx = std::floor(x), fy = std::floor(y);
  const auto ix = std::int64_t(fx), iy = std::int64_t(fy);
  const double sx = fade(x - fx), sy = fade(y - fy);
  const double top = lattice_value(key, ix, iy) + sx * (lattice_value(key, ix + 1, iy) - lattice_value(key, ix, iy));
  const double bottom =
      lattice_value(key, ix, iy + 1) + sx * (lattice_value(key, ix + 1, iy + 1) - lattice_value(key, ix, iy + 1));
  return top + sy * (bottom - top);
}

// The texture at full-size point (x, y): six octaves from features of a fifth of the image down
// to a few pixels, amplitudes falling by 0.6, stretched to most of [0, 255].
struct texture {
  std::uint64_t seed;
  double scale;
  double operator()(double x, double y) const {
    double sum = 0, amplitude = 1, period = scale, total = 0;
    for (int octave = 0; octave < 6; ++octave) {
      sum += amplitude * value_noise(datasets::stream_key(seed, 100 + octave), x / period, y / period);
      total += amplitude;
      amplitude *= 0.6;
      period /= 2;
    }
    return 127.5 + (sum - total / 2) * 220.0;
  }
};

// A grey level with Gaussian noise (Box-Muller on two counter-based uniforms), rounded and clamped.
std::uint8_t noisy(double v, double noise, std::uint64_t seed, std::uint64_t stream, std::uint64_t i) {
  const double u1 = 1.0 - datasets::random_unit(seed, stream, 2 * i), u2 = datasets::random_unit(seed, stream, 2 * i + 1);
  const double g = std::sqrt(-2 * std::log(u1)) * std::cos(2 * pi * u2);
  return std::uint8_t(std::clamp(std::lround(v + noise * g), 0L, 255L));
}

}  // namespace

image_pair generate_pair(int width, int height, const rigid_transform& truth, double noise, std::uint64_t seed) {
  const texture tex{seed, std::max(width, height) / 5.0};
  image_pair out;
  out.fixed = {width, height, std::vector<std::uint8_t>(std::size_t(width) * std::size_t(height))};
  out.moving = out.fixed;
  // moving(q) = texture(p) for q = R (p - c) + c + t: p = R^-1 (q - c - t) + c.
  const double a = truth.angle_deg * pi / 180, cs = std::cos(a), sn = std::sin(a);
  const double cx = (width - 1) / 2.0, cy = (height - 1) / 2.0;
  const std::int64_t n = std::int64_t(width) * height;
  std::uint8_t *fp = out.fixed.pixels.data(), *mp = out.moving.pixels.data();
#pragma omp parallel for schedule(static)
  for (std::int64_t i = 0; i < n; ++i) {
    const double x = double(i % width), y = double(i / width);
    fp[i] = noisy(tex(x, y), noise, seed, 1, std::uint64_t(i));
    const double qx = x - cx - truth.tx, qy = y - cy - truth.ty;
    mp[i] = noisy(tex(cs * qx + sn * qy + cx, -sn * qx + cs * qy + cy), noise, seed, 2, std::uint64_t(i));
  }
  return out;
}

namespace {

// ---- The histogram step on the device (or host backend).

// Pixels visited in an order that gives the 32 lanes of a warp pixels from 32 different stripes
// of the image: element e is pixel (e mod 32) * stripe + e / 32 (lane_bits = 5). Neighbouring
// pixels have nearly the same intensities, so in row order (lane_bits = 0: element e is pixel
// e) a warp's 32 pixels mostly add to the same 16 bins, and float adds into shared memory are
// compare-and-swap loops in hardware that retry on every collision; pixels ~stripe apart fall on
// unrelated bins. Each lane still walks its stripe in order, so the images are read in 32
// sequential streams.
//
// Acc: how the weights are summed: float (the paper's float-add histogram) or std::uint32_t, the
// weights in quanta of 1 / scale (fixed point, see product_quanta), which shared memory adds
// natively.
template <class Acc>
struct joint_updates {
  image_view fixed, moving;
  float to_levels;
  std::int32_t side;
  rigid_map single;
  const rigid_map* batch;       // one map per histogram (histogram h at bins [h side^2, ...)), or null
  std::int64_t stripe;          // ceil(pixels / 2^lane_bits)
  std::uint32_t per_image;      // elements per histogram: 2^lane_bits * stripe
  fast_divisor image_div;       // by per_image
  fast_divisor width_div;
  std::uint32_t lane_bits;      // 5: 32 stripes, 0: row order
  float scale;                  // fixed point: 2^s, the quanta per unit of weight

  SOAC_HD bin_values<Acc, 16> operator()(std::int64_t i) const {
    std::uint32_t h = 0, e = std::uint32_t(i);
    if (batch) {
      h = image_div.divide(e);
      e -= h * per_image;
    }
    const std::int64_t p = std::int64_t(e & ((1u << lane_bits) - 1)) * stripe + (e >> lane_bits);
    pixel_contribution c{};
    if (p < std::int64_t(fixed.width) * fixed.height) {
      const std::uint32_t py = width_div.divide(std::uint32_t(p));
      const int px = int(std::uint32_t(p) - py * std::uint32_t(fixed.width));
      c = contribution(fixed, moving, batch ? batch[h] : single, to_levels, side, px, int(py));
    }
    // A pixel outside the moving image gets bins below zero, which hist ignores: one select per
    // pixel rather than one per update (64-bit bins: two instructions each).
    const std::int64_t first = c.valid ? std::int64_t(h) * side * side + c.first_bin : std::int64_t{-1} << 40;
    bin_values<Acc, 16> r;
    for (int a = 0; a < 4; ++a)
      for (int b = 0; b < 4; ++b) {
        r[4 * a + b].bin = first + (a * side + b);
        if constexpr (std::is_same_v<Acc, float>) r[4 * a + b].value = c.value(a, b);
        else r[4 * a + b].value = c.quanta(a, b, scale);
      }
    return r;
  }
};

// The sort variant's materialisation: every element's 16 (bin, value) pairs, ignored ones under
// the key `ignored` (above every bin, so they sort last).
__global__ void materialize_updates(joint_updates<float> f, std::int64_t n, unsigned ignored, unsigned* keys, float* values) {
  const std::int64_t i = std::int64_t{blockIdx.x} * blockDim.x + threadIdx.x;
  if (i >= n) return;
  const auto r = f(i);
  for (int k = 0; k < 16; ++k) {
    keys[16 * i + k] = r[k].bin < 0 ? ignored : unsigned(r[k].bin);
    values[16 * i + k] = r[k].value;
  }
}

// histo[unique[r]] = sums[r] for each of the *runs runs that is a bin.
__global__ void scatter_runs(const unsigned* unique, const float* sums, const std::int64_t* runs, std::int64_t bins,
                             float* histo) {
  const std::int64_t r = std::int64_t{blockIdx.x} * blockDim.x + threadIdx.x;
  if (r < *runs && unique[r] < bins) histo[unique[r]] = sums[r];
}

// The joint histogram by sorting (the paper's PyTorch approach: group equal keys, then sum).
void sorted_histogram(context& ctx, const joint_updates<float>& f, std::int64_t n, span<float> histo) {
  if (!ctx.is_cuda()) throw usage_error("imgreg: the sort variant is CUB's device sort and needs --backend cuda");
  const std::int64_t bins = std::int64_t(histo.size()), updates = 16 * n;
  if (updates > std::int64_t(INT32_MAX))
    throw resource_error("imgreg: the sort variant sorts " + std::to_string(updates) + " updates, beyond CUB's 2^31 items");
  const unsigned ignored = unsigned(bins);
  int end_bit = 1;
  while ((std::int64_t{1} << end_bit) <= bins) ++end_bit;
  buffer<unsigned> keys(ctx, std::size_t(updates), lifetime::temporary), sorted_keys(ctx, std::size_t(updates), lifetime::temporary);
  buffer<float> values(ctx, std::size_t(updates), lifetime::temporary), sorted_values(ctx, std::size_t(updates), lifetime::temporary);
  buffer<unsigned> unique(ctx, std::size_t(bins + 1), lifetime::temporary);
  buffer<float> sums(ctx, std::size_t(bins + 1), lifetime::temporary);
  buffer<std::int64_t> runs(ctx, 1, lifetime::temporary);
  constexpr int block = 256;
  if (n > 0) {
    materialize_updates<<<unsigned((n + block - 1) / block), block, 0, ctx.stream()>>>(f, n, ignored, keys.data(), values.data());
    SOAC_CHECK_LAUNCH("materialize_updates");
  }
  std::size_t sort_bytes = 0, reduce_bytes = 0;
  SOAC_CUDA_CHECK(cub::DeviceRadixSort::SortPairs(nullptr, sort_bytes, keys.data(), sorted_keys.data(), values.data(),
                                                  sorted_values.data(), int(updates), 0, end_bit, ctx.stream()));
  SOAC_CUDA_CHECK(cub::DeviceReduce::ReduceByKey(nullptr, reduce_bytes, sorted_keys.data(), unique.data(), sorted_values.data(),
                                                 sums.data(), runs.data(), plus<float>{}, int(updates), ctx.stream()));
  buffer<unsigned char> temp(ctx, std::max(sort_bytes, reduce_bytes) + 1, lifetime::temporary);
  SOAC_CUDA_CHECK(cub::DeviceRadixSort::SortPairs(temp.data(), sort_bytes, keys.data(), sorted_keys.data(), values.data(),
                                                  sorted_values.data(), int(updates), 0, end_bit, ctx.stream()));
  SOAC_CUDA_CHECK(cub::DeviceReduce::ReduceByKey(temp.data(), reduce_bytes, sorted_keys.data(), unique.data(),
                                                 sorted_values.data(), sums.data(), runs.data(), plus<float>{}, int(updates),
                                                 ctx.stream()));
  scatter_runs<<<unsigned((bins + 1 + block - 1) / block), block, 0, ctx.stream()>>>(unique.data(), sums.data(), runs.data(),
                                                                                     bins, histo.data());
  SOAC_CHECK_LAUNCH("scatter_runs");
}

// How the histogram step runs: NAME[,acc=fixed|float][,order=stripes|rows][,hist settings] with
// NAME hist or sort. acc: the weights summed as 32-bit fixed-point integers (the default: shared
// memory adds integers natively, while its float adds are compare-and-swap loops on sm_90:
// LDS, ATOMS.CAST.SPIN and a branch back per update) or as floats. order: the pixels' order
// (joint_updates).
struct histogram_method {
  bool sort = false;
  bool fixed = true;
  std::uint32_t lane_bits = 5;
  bool settings_given = false;
  hist_options options;
};

histogram_method parse_method(const std::string& variant) {
  const std::size_t comma = variant.find(',');
  const std::string name = variant.empty() ? "hist" : variant.substr(0, comma);
  histogram_method m;
  if (name == "sort") m.sort = true, m.fixed = false;
  else if (name != "hist") throw usage_error("imgreg: unknown variant '" + name + "' (expected hist or sort)");
  if (comma == std::string::npos) return m;
  if (m.sort) throw usage_error("imgreg: the sort variant takes no settings (got '" + variant + "')");
  // The app's own keys; the rest are hist settings.
  std::string rest;
  std::string_view list = std::string_view(variant).substr(comma + 1);
  while (!list.empty()) {
    const std::size_t next = list.find(',');
    const std::string_view item = list.substr(0, next);
    list = next == std::string_view::npos ? std::string_view{} : list.substr(next + 1);
    if (item == "acc=fixed" || item == "acc=float") {
      m.fixed = item == "acc=fixed";
    } else if (item == "order=stripes" || item == "order=rows") {
      m.lane_bits = item == "order=stripes" ? 5 : 0;
    } else if (item.starts_with("acc=") || item.starts_with("order=")) {
      throw usage_error("imgreg: '" + std::string(item) + "': acc takes fixed or float, order stripes or rows");
    } else {
      rest += (rest.empty() ? "" : ",") + std::string(item);
    }
  }
  if (!rest.empty()) {
    m.options = parse_hist_options(rest);
    m.settings_given = true;
  }
  return m;
}

// The options of the histogram step, for `bins` bins in all, `lone` for a single histogram (not a
// batch), where no settings are given.
// - Fixed-point sums: the model's plan (its HDW rules were measured with integer adds, as these
//   are) without loads issued ahead: this functor's 16 updates per result, held for a second
//   tile, need more than the 64 registers of a 1024-thread block and spill. Measured on the H100
//   (soac bench imgreg, paper-8m, one 203 x 203 copy per block, the plan's loads ahead vs not):
//   198 vs 149 us (64 registers, 4.8M local spill requests under ncu); paper-2m (no loads ahead
//   in the plan) forced on: 51.0 vs 42.6 us.
// - Float sums, a lone histogram: float adds into shared memory are compare-and-swap loops, whose
//   retries grow with the threads that share a copy, so as many copies as one block's shared
//   memory holds, up to 16 (paper-2m: 16 copies of 53 x 53 bins, 64 threads each; paper-8m: one
//   203 x 203 copy).
hist_options histogram_options(const context& ctx, const histogram_method& m, std::int64_t bins, bool lone) {
  if (m.settings_given || !ctx.is_cuda()) return m.options;
  hist_options o = m.options;
  if (m.fixed) {
    o.load_ahead = hist_toggle::off;
    return o;
  }
  if (!lone) return o;
  const std::size_t room = ctx.props().shared_per_block_optin - hist_tuning::shared_reserved_per_block;
  int copies = 1;
  while (copies < 16 && std::size_t(2 * copies) * std::size_t(bins) * sizeof(float) <= room) copies *= 2;
  if (copies > 1) {
    o.strategy = hist_strategy::shared;
    o.multi = copies;
  }
  return o;
}

// One pyramid level of both images (level 0: the images themselves). Every buffer of a
// registration comes from the context's caching allocator, so repeated registrations (the bench)
// do not pay cudaMalloc and cudaFree each time.
struct pyramid_level {
  buffer<float> fixed, moving;
  int width = 0, height = 0;
  std::int64_t pixels() const { return std::int64_t(width) * height; }
};

struct to_floats {
  const std::uint8_t* fixed;
  const std::uint8_t* moving;
  SOAC_HD auto operator()(std::int64_t i) const {
    return writes(write_at<std::int64_t, float>{i, float(fixed[i])}, write_at<std::int64_t, float>{i, float(moving[i])});
  }
};

// The next level: each pixel the mean of a 2 x 2 block (an odd last row or column dropped).
struct halve {
  const float* fixed;
  const float* moving;
  int width, half_width;  // of the finer level, of this one
  SOAC_HD auto operator()(std::int64_t i) const {
    const std::int64_t y = i / half_width, x = i - y * half_width;
    const std::int64_t p = 2 * y * width + 2 * x;
    const float f = 0.25f * ((fixed[p] + fixed[p + 1]) + (fixed[p + width] + fixed[p + width + 1]));
    const float m = 0.25f * ((moving[p] + moving[p + 1]) + (moving[p + width] + moving[p + width + 1]));
    return writes(write_at<std::int64_t, float>{i, f}, write_at<std::int64_t, float>{i, m});
  }
};

// The moving image resampled into the fixed frame (0 where it falls outside).
struct resample {
  image_view moving;
  rigid_map map;
  fast_divisor width_div;
  SOAC_HD write_at<std::int64_t, std::uint8_t> operator()(std::int64_t i) const {
    const std::uint32_t y = width_div.divide(std::uint32_t(i));
    const int x = int(std::uint32_t(i) - y * std::uint32_t(moving.width));
    float v = 0;
    if (!sample(moving, map, x, int(y), v)) v = 0;
    return {i, std::uint8_t(floorf(v + 0.5f))};
  }
};

// Fixed-point sums (quanta) as float weights: the count rounded to float, times the quantum
// (a power of two: exact).
struct quanta_to_weights {
  const std::uint32_t* counts;
  float quantum;
  SOAC_HD write_at<std::int64_t, float> operator()(std::int64_t b) const { return {b, float(counts[b]) * quantum}; }
};

// Nelder-Mead on three parameters (Lagarias et al.'s standard coefficients: reflection 1,
// expansion 2, contraction and shrink 0.5) inside the box [lower, upper], written as a state
// machine so that several searches advance in lockstep and their evaluations go to the device
// together: wanted() lists the points whose values the next tell() takes. A point outside the box
// is worse than any inside and is not evaluated, so the simplex stays in the box. The search ends
// when every vertex is within `tol` of the best in every coordinate, or after max_evals
// evaluations.
using point3 = std::array<double, 3>;

class simplex_search {
 public:
  simplex_search(const point3& x0, const point3& step, const point3& lower, const point3& upper, double tol, int max_evals)
      : lower_(lower), upper_(upper), tol_(tol), max_evals_(max_evals) {
    wanted_.push_back(x0);
    for (int k = 0; k < 3; ++k) {
      // The first simplex steps away from a bound the start lies on.
      point3 p = x0;
      p[k] += x0[k] + step[k] <= upper[k] ? step[k] : -step[k];
      wanted_.push_back(p);
    }
  }

  bool done() const { return phase_ == phase::done; }
  bool inside(const point3& p) const {
    for (int k = 0; k < 3; ++k)
      if (!(p[k] >= lower_[k] && p[k] <= upper_[k])) return false;
    return true;
  }
  const std::vector<point3>& wanted() const { return wanted_; }
  const point3& best() const { return v_[0]; }
  double best_value() const { return fv_[0]; }
  int evaluations() const { return evals_; }

  // The values of wanted(), in order (INFINITY for those outside the box).
  void tell(const std::vector<double>& values) {
    for (const point3& p : wanted_) evals_ += inside(p) ? 1 : 0;
    switch (phase_) {
      case phase::start:
        for (int k = 0; k < 4; ++k) v_[k] = wanted_[std::size_t(k)], fv_[k] = values[std::size_t(k)];
        return next();
      case phase::reflect: {
        reflected_ = wanted_[0], fr_ = values[0];
        if (fr_ < fv_[0]) return want({along(centroid_, v_[3], -2.0)}, phase::expand);
        if (fr_ < fv_[2]) {
          v_[3] = reflected_, fv_[3] = fr_;
          return next();
        }
        outside_ = fr_ < fv_[3];
        return want({along(centroid_, outside_ ? reflected_ : v_[3], 0.5)}, phase::contract);
      }
      case phase::expand:
        if (values[0] < fr_) v_[3] = wanted_[0], fv_[3] = values[0];
        else v_[3] = reflected_, fv_[3] = fr_;
        return next();
      case phase::contract:
        if (values[0] < (outside_ ? fr_ : fv_[3])) {
          v_[3] = wanted_[0], fv_[3] = values[0];
          return next();
        }
        return want({along(v_[0], v_[1], 0.5), along(v_[0], v_[2], 0.5), along(v_[0], v_[3], 0.5)}, phase::shrink);
      case phase::shrink:
        for (int k = 1; k < 4; ++k) v_[k] = wanted_[std::size_t(k - 1)], fv_[k] = values[std::size_t(k - 1)];
        return next();
      case phase::done:
        return;
    }
  }

 private:
  enum class phase { start, reflect, expand, contract, shrink, done };

  static point3 along(const point3& from, const point3& to, double s) {
    point3 p;
    for (int k = 0; k < 3; ++k) p[k] = from[k] + s * (to[k] - from[k]);
    return p;
  }
  void want(std::vector<point3> points, phase next_phase) {
    wanted_ = std::move(points);
    phase_ = next_phase;
  }
  // Orders the simplex best first, then stops or reflects the worst vertex.
  void next() {
    std::array<int, 4> order = {0, 1, 2, 3};
    std::sort(order.begin(), order.end(), [&](int a, int b) { return fv_[a] < fv_[b]; });
    const std::array<point3, 4> v = v_;
    const std::array<double, 4> fv = fv_;
    for (int k = 0; k < 4; ++k) v_[k] = v[order[k]], fv_[k] = fv[order[k]];
    double spread = 0;
    for (int k = 1; k < 4; ++k)
      for (int c = 0; c < 3; ++c) spread = std::max(spread, std::fabs(v_[k][c] - v_[0][c]));
    if (spread <= tol_ || evals_ >= max_evals_) return want({}, phase::done);
    centroid_ = {0, 0, 0};
    for (int k = 0; k < 3; ++k)
      for (int c = 0; c < 3; ++c) centroid_[c] += v_[k][c] / 3;
    want({along(centroid_, v_[3], -1.0)}, phase::reflect);
  }

  point3 lower_, upper_;
  double tol_;
  int max_evals_;
  int evals_ = 0;
  phase phase_ = phase::start;
  std::vector<point3> wanted_;
  std::array<point3, 4> v_{};
  std::array<double, 4> fv_{};
  point3 centroid_{}, reflected_{};
  double fr_ = 0;
  bool outside_ = false;
};

// Runs the searches to their ends in lockstep: each round evaluates every search's wanted points
// that lie in its box with one call of `f` (a batch of histograms).
void run_searches(std::vector<simplex_search>& searches, const std::function<std::vector<double>(const std::vector<point3>&)>& f) {
  for (;;) {
    std::vector<point3> batch;
    for (const simplex_search& s : searches)
      if (!s.done())
        for (const point3& p : s.wanted())
          if (s.inside(p)) batch.push_back(p);
    if (batch.empty()) {
      // Nothing to evaluate: the searches still going get INFINITY for every point (outside).
      bool any = false;
      for (simplex_search& s : searches)
        if (!s.done()) any = true, s.tell(std::vector<double>(s.wanted().size(), INFINITY));
      if (!any) return;
      continue;
    }
    const std::vector<double> values = f(batch);
    std::size_t next = 0;
    for (simplex_search& s : searches) {
      if (s.done()) continue;
      std::vector<double> mine;
      for (const point3& p : s.wanted()) mine.push_back(s.inside(p) ? values[next++] : INFINITY);
      s.tell(mine);
    }
  }
}

// The search images: the coarsest level smoothed by a Gaussian, shrunk to a smaller side of
// search_side pixels and contrast-stretched. The smoothing widens each alignment's peak of mutual
// information from about one pixel (a fine texture at the coarsest level is nearly white noise)
// to a few, so that a grid of one search pixel meets it; the stretch spreads the intensities that
// the smoothing drew together over the histogram again.
constexpr double search_side = 32;
constexpr double search_blur = 0.75;  // the Gaussian's sigma, in search pixels

// `image` (width x height) convolved with a Gaussian of `sigma` pixels, separably, edges clamped.
std::vector<float> gaussian_blur(const std::vector<float>& image, int width, int height, double sigma) {
  const int reach = int(std::ceil(3 * sigma));
  std::vector<double> kernel(std::size_t(2 * reach + 1));
  double sum = 0;
  for (int k = -reach; k <= reach; ++k) sum += kernel[std::size_t(k + reach)] = std::exp(-0.5 * k * k / (sigma * sigma));
  for (double& k : kernel) k /= sum;
  const auto at = [&](const std::vector<float>& im, int x, int y) {
    return double(im[std::size_t(std::clamp(y, 0, height - 1)) * std::size_t(width) + std::size_t(std::clamp(x, 0, width - 1))]);
  };
  std::vector<float> rows(image.size()), out(image.size());
  for (int y = 0; y < height; ++y)
    for (int x = 0; x < width; ++x) {
      double v = 0;
      for (int k = -reach; k <= reach; ++k) v += kernel[std::size_t(k + reach)] * at(image, x + k, y);
      rows[std::size_t(y) * width + x] = float(v);
    }
  for (int y = 0; y < height; ++y)
    for (int x = 0; x < width; ++x) {
      double v = 0;
      for (int k = -reach; k <= reach; ++k) v += kernel[std::size_t(k + reach)] * at(rows, x, y + k);
      out[std::size_t(y) * width + x] = float(v);
    }
  return out;
}

// `image` shrunk by `ratio` (>= 1) to out_width x out_height: output pixel i covers input pixels
// [ratio i, ratio (i + 1)) (the pyramid's geometry), sampled bilinearly at its centre.
std::vector<float> shrink(const std::vector<float>& image, int width, int height, double ratio, int out_width, int out_height) {
  std::vector<float> out(std::size_t(out_width) * std::size_t(out_height));
  const auto at = [&](int x, int y) { return double(image[std::size_t(y) * std::size_t(width) + std::size_t(x)]); };
  for (int y = 0; y < out_height; ++y)
    for (int x = 0; x < out_width; ++x) {
      const double u = std::min(ratio * x + (ratio - 1) / 2, double(width - 1));
      const double v = std::min(ratio * y + (ratio - 1) / 2, double(height - 1));
      const int i0 = int(u), j0 = int(v), i1 = std::min(i0 + 1, width - 1), j1 = std::min(j0 + 1, height - 1);
      const double fu = u - i0, fv = v - j0;
      const double top = at(i0, j0) + fu * (at(i1, j0) - at(i0, j0)), bottom = at(i0, j1) + fu * (at(i1, j1) - at(i0, j1));
      out[std::size_t(y) * out_width + x] = float(top + fv * (bottom - top));
    }
  return out;
}

// `image` with its 1st to 99th percentile of intensities stretched over 0 .. 255 (clamped).
void stretch_contrast(std::vector<float>& image) {
  std::vector<float> sorted = image;
  const auto quantile = [&](double q) {
    const auto it = sorted.begin() + std::ptrdiff_t(q * double(sorted.size() - 1));
    std::nth_element(sorted.begin(), it, sorted.end());
    return double(*it);
  };
  const double low = quantile(0.01), high = quantile(0.99);
  if (!(high - low > 1e-3)) return;
  for (float& v : image) v = float(std::clamp((v - low) * 255.0 / (high - low), 0.0, 255.0));
}

// How well a transform aligns the images: the mutual information of the joint histogram, and the
// overlap, the share of the fixed image's pixels that fall inside the moving image.
struct match {
  double information = 0, overlap = 0;
  // The information per pixel of the whole fixed image, those outside the overlap explaining
  // nothing: mutual information falls as a textureless background joins the overlap, so it
  // favours transforms that push the background out of it (a single cell on an even background
  // scores best rotated about itself to the edge of the range), while this rises with each pixel
  // the overlap gains, as long as the two images agree there.
  double explained() const { return information * overlap; }
};

// The registration's device state: the pyramid and the histogram buffers.
class engine {
 public:
  engine(context& ctx, const grey_image& fixed, const grey_image& moving, const registration_options& o)
      : ctx_(ctx), levels_(o.levels), method_(parse_method(o.variant)), width_(fixed.width), height_(fixed.height) {
    if (fixed.width != moving.width || fixed.height != moving.height)
      throw usage_error("imgreg: the fixed and moving images must have the same size");
    if (levels_ < 2 || levels_ > 4093) throw usage_error("imgreg: levels = " + std::to_string(levels_) + " is outside [2, 4093]");
    if (fixed.size() > std::int64_t(INT32_MAX) - 32)
      throw resource_error("imgreg: " + std::to_string(fixed.size()) + " pixels are beyond the 2^31 of 32-bit pixel indexes");
    // Halve while the smaller side stays at least min_side: the coarsest level has 64 .. 127
    // pixels on its smaller side, where the refinement starts.
    constexpr int min_side = 64;
    pyramid_.emplace_back();
    pyramid_[0].width = width_;
    pyramid_[0].height = height_;
    pyramid_[0].fixed = buffer<float>(ctx, std::size_t(fixed.size()), lifetime::temporary);
    pyramid_[0].moving = buffer<float>(ctx, std::size_t(fixed.size()), lifetime::temporary);
    {
      buffer<std::uint8_t> f8(ctx, std::span<const std::uint8_t>(fixed.pixels), lifetime::temporary);
      buffer<std::uint8_t> m8(ctx, std::span<const std::uint8_t>(moving.pixels), lifetime::temporary);
      // (Temporaries go back to the caching allocator while kernels of the same stream still use
      // them: it hands them out again only to later work of that stream.)
      scatter(ctx, fixed.size(), to_floats{f8.data(), m8.data()}, pyramid_[0].fixed, pyramid_[0].moving);
    }
    while (std::min(pyramid_.back().width, pyramid_.back().height) / 2 >= min_side) {
      const pyramid_level& fine = pyramid_.back();
      pyramid_level coarse;
      coarse.width = fine.width / 2;
      coarse.height = fine.height / 2;
      coarse.fixed = buffer<float>(ctx, std::size_t(coarse.pixels()), lifetime::temporary);
      coarse.moving = buffer<float>(ctx, std::size_t(coarse.pixels()), lifetime::temporary);
      scatter(ctx, coarse.pixels(), halve{fine.fixed.data(), fine.moving.data(), fine.width, coarse.width}, coarse.fixed,
              coarse.moving);
      pyramid_.push_back(std::move(coarse));
    }
    // The search images (index levels(), search_side above), made on the host from the coarsest
    // level: a few thousand pixels.
    const pyramid_level& top = pyramid_.back();
    const double ratio = std::max(1.0, std::min(top.width, top.height) / search_side);  // coarsest pixels per search pixel
    search_scale_ = std::ldexp(ratio, int(pyramid_.size()) - 1);
    pyramid_level search;
    search.width = std::max(1, int(top.width / ratio));
    search.height = std::max(1, int(top.height / ratio));
    for (const auto& [from, to] : {std::pair{&top.fixed, &search.fixed}, std::pair{&top.moving, &search.moving}}) {
      std::vector<float> im = shrink(gaussian_blur(from->to_vector(), top.width, top.height, search_blur * ratio), top.width,
                                     top.height, ratio, search.width, search.height);
      stretch_contrast(im);
      *to = buffer<float>(ctx, std::span<const float>(im), lifetime::temporary);
    }
    pyramid_.push_back(std::move(search));
  }

  // Pyramid levels (0: full size); index levels() holds the search images.
  int levels() const { return int(pyramid_.size()) - 1; }
  int search_level() const { return levels(); }
  // Full-size pixels per pixel of level l (of the search images too).
  double scale(int l) const { return l == search_level() ? search_scale_ : std::ldexp(1.0, l); }
  int width() const { return width_; }
  int height() const { return height_; }
  int evaluations() const { return evaluations_; }
  int calls() const { return calls_; }

  // Intensity levels at pyramid level l: the full count at full size; at coarser levels no more
  // than their pixels fill (about 16 pixels per joint bin: sqrt(pixels) / 4 levels, at least 16).
  int intensity_levels(int l) const {
    if (l == 0) return levels_;
    const int fit = int(std::lround(std::sqrt(double(pyramid_[std::size_t(l)].pixels())) / 4));
    return std::min(levels_, std::max(16, fit));
  }
  int side(int l) const { return intensity_levels(l) + 3; }

  // The quantum of level l's fixed-point sums (validate::fixed_point_shift); 0 for float sums.
  double quantum(int l) const {
    return method_.fixed ? std::ldexp(1.0, -validate::fixed_point_shift(pyramid_[std::size_t(l)].pixels())) : 0;
  }

  // The joint histograms of level l under each map (one histogram of side^2 bins per map, in
  // order), computed into histo (batch.size() side^2 bins): the histogram step, fixed-point sums
  // converted to float weights at its end.
  hist_plan histograms(int l, const std::vector<rigid_map>& maps, span<float> histo) {
    if (!method_.fixed) return accumulate(l, maps, histo);
    const span<std::uint32_t> counts = scratch(counts_, histo.size());
    const hist_plan plan = accumulate(l, maps, counts);
    scatter(ctx_, std::int64_t(histo.size()), quanta_to_weights{counts.data(), float(quantum(l))}, histo);
    return plan;
  }

  // How well each transform aligns the images at level l: the mutual information (from the
  // fixed-point sums as they are: the scale cancels) and the overlap.
  std::vector<match> matches(int l, const std::vector<rigid_transform>& ts) {
    return method_.fixed ? matches_of(l, ts, counts_) : matches_of(l, ts, weights_);
  }

  // The registered image: the moving image resampled into the fixed frame under t.
  grey_image resampled(const rigid_transform& t) {
    const pyramid_level& lv = pyramid_[0];
    buffer<std::uint8_t> out(ctx_, std::size_t(lv.pixels()), lifetime::temporary);
    scatter(ctx_, lv.pixels(),
            resample{{lv.moving.data(), lv.width, lv.height}, make_rigid(t, width_, height_, 0), fast_divisor(std::uint32_t(lv.width))},
            out);
    return {lv.width, lv.height, out.to_vector()};
  }

 private:
  // The first `size` elements of `b`, grown to hold them.
  template <class T>
  span<T> scratch(buffer<T>& b, std::size_t size) {
    if (b.size() < size) b = buffer<T>(ctx_, size, lifetime::temporary);
    return span<T>(b.data(), size);
  }

  template <class Acc>
  void zero(span<Acc> a) {
    if (a.empty()) return;
    if (ctx_.is_cuda()) SOAC_CUDA_CHECK(cudaMemsetAsync(a.data(), 0, a.size() * sizeof(Acc), ctx_.stream()));
    else std::fill(a.begin(), a.end(), Acc{0});
  }

  // The histograms as histograms() describes them, summed in Acc (std::uint32_t: quanta of
  // quantum(l)) and left so.
  template <class Acc>
  hist_plan accumulate(int l, const std::vector<rigid_map>& maps, span<Acc> histo) {
    const pyramid_level& lv = pyramid_[std::size_t(l)];
    const int s = side(l);
    const std::int64_t lanes = std::int64_t{1} << method_.lane_bits;
    const std::int64_t stripe = (lv.pixels() + lanes - 1) / lanes, per_image = lanes * stripe;
    if (per_image * std::int64_t(maps.size()) > std::int64_t(UINT32_MAX))
      throw resource_error("imgreg: a batch of " + std::to_string(maps.size()) + " histograms is beyond 2^32 elements");
    buffer<rigid_map> batch;
    if (maps.size() > 1) batch = buffer<rigid_map>(ctx_, std::span<const rigid_map>(maps), lifetime::temporary);
    const joint_updates<Acc> f{{lv.fixed.data(), lv.width, lv.height},
                               {lv.moving.data(), lv.width, lv.height},
                               levels_scale(intensity_levels(l)),
                               s,
                               maps.front(),
                               batch.data(),
                               stripe,
                               std::uint32_t(per_image),
                               fast_divisor(std::uint32_t(per_image)),
                               fast_divisor(std::uint32_t(lv.width)),
                               method_.lane_bits,
                               quantum(l) > 0 ? float(1 / quantum(l)) : 0.0f};
    const std::int64_t n = per_image * std::int64_t(maps.size());
    zero(histo);
    evaluations_ += int(maps.size());
    ++calls_;
    if constexpr (std::is_same_v<Acc, float>) {
      if (method_.sort) {
        sorted_histogram(ctx_, f, n, histo);
        return {};
      }
    }
    const hist_options o = histogram_options(ctx_, method_, std::int64_t(histo.size()), maps.size() == 1);
    return hist(ctx_, o, n, f, histo, plus<Acc>{});
  }

  // Batches of at most max_batch_bins bins, so that a wide grid needs no more memory than this.
  static constexpr std::size_t max_batch_bins = std::size_t{1} << 24;

  template <class Acc>
  std::vector<match> matches_of(int l, const std::vector<rigid_transform>& ts, buffer<Acc>& sums) {
    const int sd = side(l);
    const std::size_t bins = std::size_t(sd) * std::size_t(sd);
    const std::size_t per_batch = std::max<std::size_t>(1, max_batch_bins / bins);
    // A total of weights as a share of the level's pixels.
    const double per_pixel = (quantum(l) > 0 ? quantum(l) : 1.0) / double(pyramid_[std::size_t(l)].pixels());
    std::vector<match> out;
    out.reserve(ts.size());
    for (std::size_t first = 0; first < ts.size(); first += per_batch) {
      std::vector<rigid_map> maps;
      for (std::size_t k = first; k < std::min(ts.size(), first + per_batch); ++k)
        maps.push_back(rigid_at_scale(ts[k], width_, height_, scale(l)));
      const span<Acc> all = scratch(sums, bins * maps.size());
      accumulate(l, maps, all);
      if (maps.size() >= device_information_batch) {
        // A grid: each histogram's information computed where it lies, two numbers back.
        const span<double> mutual = scratch(mutual_, maps.size()), total = scratch(total_, maps.size());
        scatter(ctx_, std::int64_t(maps.size()), batch_information<Acc>{all.data(), sd}, mutual, total);
        std::vector<double> m(maps.size()), t(maps.size());
        ctx_.copy_to_host(m.data(), mutual.data(), m.size() * sizeof(double));
        ctx_.copy_to_host(t.data(), total.data(), t.size() * sizeof(double));
        for (std::size_t k = 0; k < maps.size(); ++k) out.push_back({m[k], t[k] * per_pixel});
      } else {
        std::vector<Acc> h(all.size());
        ctx_.copy_to_host(h.data(), all.data(), h.size() * sizeof(Acc));
        for (std::size_t k = 0; k < maps.size(); ++k) {
          const information i = information_of(h.data() + k * bins, sd);
          out.push_back({i.mutual, i.total * per_pixel});
        }
      }
    }
    return out;
  }

  // Batches of at least this many histograms have their information computed on the backend
  // (one thread each) rather than copied to the host: a grid, not a few searches' steps.
  static constexpr std::size_t device_information_batch = 64;

  context& ctx_;
  int levels_;
  histogram_method method_;
  int width_, height_;
  std::vector<pyramid_level> pyramid_;
  buffer<float> weights_;
  buffer<std::uint32_t> counts_;
  buffer<double> mutual_, total_;
  double search_scale_ = 1;
  int evaluations_ = 0, calls_ = 0;
};

// Optimiser parameters: (tx, ty) in full-size pixels and the angle as the arc it moves the image's
// corners, angle * radius, so that one unit of each moves some pixel by about one pixel.
double corner_radius(int width, int height) { return 0.5 * std::hypot(double(width), double(height)); }

rigid_transform transform_of(const std::array<double, 3>& x, double radius) {
  return {x[0], x[1], x[2] / radius * 180 / pi};
}

// Starts refined from the grid's best local maxima.
constexpr std::size_t search_starts = 8;

}  // namespace

std::vector<float> joint_histogram(context& ctx, const grey_image& fixed, const grey_image& moving, const rigid_transform& t,
                                   int levels, const std::string& variant, double* quantum) {
  engine e(ctx, fixed, moving, {levels, variant});
  buffer<float> h(ctx, std::size_t(levels + 3) * std::size_t(levels + 3), lifetime::temporary);
  e.histograms(0, {make_rigid(t, fixed.width, fixed.height, 0)}, h.view());
  if (quantum) *quantum = e.quantum(0);
  return h.to_vector();
}

std::string lacks_contrast(const grey_image& image) {
  std::array<std::int64_t, 256> count{};
  for (std::uint8_t v : image.pixels) ++count[v];
  // The grey levels below which 1% and 99% of the pixels lie.
  const auto level_at = [&](double share) {
    const double wanted = share * double(image.size());
    std::int64_t seen = 0;
    for (int v = 0; v < 256; ++v)
      if (double(seen += count[std::size_t(v)]) >= wanted) return v;
    return 255;
  };
  const int low = level_at(0.01), high = level_at(0.99);
  if (high - low >= min_contrast) return "";
  std::ostringstream s;
  if (count[std::size_t(low)] == image.size()) s << "blank (every pixel is grey level " << low << ")";
  else s << "nearly blank (98% of its pixels within grey levels " << low << " to " << high << ")";
  s << ": nothing to register";
  return s.str();
}

registration_result register_images(context& ctx, const grey_image& fixed, const grey_image& moving,
                                    const registration_options& options) {
  for (const auto& [image, name] : {std::pair{&fixed, "the fixed image"}, std::pair{&moving, "the moving image"}})
    if (const std::string why = lacks_contrast(*image); !why.empty()) throw input_error(std::string(name) + " is " + why);
  engine e(ctx, fixed, moving, options);
  const double radius = corner_radius(e.width(), e.height());
  const int coarsest = e.levels() - 1;
  const capture_range range = capture_range_of(e.width(), e.height());
  const double max_arc = range.angle_deg * pi / 180 * radius;
  // The grid on the search images over the capture range, symmetric about the zero transform:
  // translations in steps of one search pixel, rotations in steps that move the corners by a pixel
  // and a half (points nearer the centre move less).
  const double shift_step = e.scale(e.search_level()), arc_step = 1.5 * e.scale(e.search_level());
  const int shifts = int(std::ceil(range.shift / shift_step)), arcs = int(std::ceil(max_arc / arc_step));
  const int across = 2 * shifts + 1, turns = 2 * arcs + 1;
  std::vector<rigid_transform> grid;
  for (int a = -arcs; a <= arcs; ++a)
    for (int y = -shifts; y <= shifts; ++y)
      for (int x = -shifts; x <= shifts; ++x) grid.push_back(transform_of({x * shift_step, y * shift_step, a * arc_step}, radius));
  // On the search images, whose smoothing leaves little but the largest structures, every
  // transform is scored by the information it explains over the whole fixed image (explained()).
  std::vector<double> scores;
  for (const match& m : e.matches(e.search_level(), grid)) scores.push_back(m.explained());
  // Its local maxima (no better neighbour among the 26 around), best first: the starts. A texture
  // that repeats (bricks) has several of nearly the same height, of which the finer levels tell the
  // right one.
  const auto index = [&](int a, int y, int x) { return (std::size_t(a) * across + std::size_t(y)) * across + std::size_t(x); };
  std::vector<std::size_t> peaks;
  for (int a = 0; a < turns; ++a)
    for (int y = 0; y < across; ++y)
      for (int x = 0; x < across; ++x) {
        const double here = scores[index(a, y, x)];
        bool peak = true;
        for (int da = -1; da <= 1 && peak; ++da)
          for (int dy = -1; dy <= 1 && peak; ++dy)
            for (int dx = -1; dx <= 1 && peak; ++dx) {
              const int na = a + da, ny = y + dy, nx = x + dx;
              if (na < 0 || na >= turns || ny < 0 || ny >= across || nx < 0 || nx >= across) continue;
              if (scores[index(na, ny, nx)] > here) peak = false;
            }
        if (peak) peaks.push_back(index(a, y, x));
      }
  std::stable_sort(peaks.begin(), peaks.end(),
                   [&](std::size_t p, std::size_t q) { return scores[p] > scores[q]; });
  if (peaks.size() > search_starts) peaks.resize(search_starts);
  std::vector<point3> candidates;
  for (std::size_t p : peaks) candidates.push_back({grid[p].tx, grid[p].ty, grid[p].angle_deg * pi / 180 * radius});

  registration_result r;
  r.evaluations_per_level.assign(std::size_t(e.levels()), 0);
  r.evaluations_per_level[std::size_t(coarsest)] = int(grid.size());
  // Every refinement stays in the capture range and a grid step beyond: the search never reaches a
  // transform under which the images barely overlap, where a sparse joint histogram can score
  // well.
  const point3 lower = {-range.shift - shift_step, -range.shift - shift_step, -max_arc - arc_step};
  const point3 upper = {range.shift + shift_step, range.shift + shift_step, max_arc + arc_step};
  // Nelder-Mead from each start on the search images, then from the best two at the next level and
  // from the best one at each level after, the starts of a level advancing in lockstep (one
  // batch of histograms per step).
  for (int l = coarsest; l >= 0; --l) {
    const double unit = std::ldexp(1.0, l);  // one pixel of this level, in full-size pixels
    const bool first = l == coarsest;
    const std::size_t keep = first ? search_starts : l == coarsest - 1 ? 2 : 1;
    if (candidates.size() > keep) candidates.resize(keep);
    std::vector<simplex_search> searches;
    for (const point3& c : candidates) {
      // The first simplex spans half a grid step, then half a pixel of the level (each start lies
      // within the coarser level's tolerance); the search images need no finer tolerance than a
      // fifth of a coarsest pixel, which the next level refines.
      if (first) searches.emplace_back(c, point3{shift_step / 2, shift_step / 2, arc_step / 2}, lower, upper, 0.2 * unit, 100);
      else searches.emplace_back(c, point3{unit / 2, unit / 2, unit / 2}, lower, upper, 0.05 * unit, 200);
    }
    const int images = first ? e.search_level() : l;
    run_searches(searches, [&](const std::vector<point3>& points) {
      std::vector<rigid_transform> ts;
      for (const point3& p : points) ts.push_back(transform_of(p, radius));
      std::vector<double> f;
      for (const match& m : e.matches(images, ts)) f.push_back(-(first ? m.explained() : m.information));
      return f;
    });
    std::vector<std::size_t> order(searches.size());
    for (std::size_t c = 0; c < order.size(); ++c) order[c] = c;
    std::stable_sort(order.begin(), order.end(),
                     [&](std::size_t a, std::size_t b) { return searches[a].best_value() < searches[b].best_value(); });
    candidates.clear();
    for (std::size_t c : order) {
      r.evaluations_per_level[std::size_t(l)] += searches[c].evaluations();
      candidates.push_back(searches[c].best());
    }
  }
  const point3 x = candidates.front();
  r.transform = transform_of(x, radius);
  const int bins_side = options.levels + 3;
  r.histogram.resize(std::size_t(bins_side) * bins_side);
  {
    buffer<float> h(ctx, r.histogram.size(), lifetime::temporary);
    const hist_plan plan = e.histograms(0, {make_rigid(r.transform, e.width(), e.height(), 0)}, h.view());
    h.copy_to(r.histogram);
    r.plan = plan.n ? plan.describe() : "CUB sort + reduce-by-key";
    r.quantum = e.quantum(0);
  }
  r.mutual_information = mutual_information(r.histogram.data(), bins_side);
  double weight = 0;
  for (float v : r.histogram) weight += v;
  r.overlap = weight / double(fixed.size());
  r.registered = e.resampled(r.transform);
  r.evaluations = e.evaluations();
  r.histogram_calls = e.calls();
  r.pyramid_levels = e.levels();
  return r;
}

namespace {

// ---- The app.

// The largest |got - expected| of any bin as a fraction of the validator's bound for it
// (compare_float_histogram); bins with a zero bound count only if they are wrong.
double largest_error_share(const validate::float_histogram& expected, const std::vector<float>& got, double quantum) {
  double worst = 0;
  for (std::size_t b = 0; b < got.size(); ++b) {
    const double err = std::fabs(double(got[b]) - expected.sum[b]);
    const double bound = validate::bin_tolerance(expected, b, quantum);
    worst = std::max(worst, bound > 0 ? err / bound : (err > 0 ? INFINITY : 0.0));
  }
  return worst;
}

struct pair_spec {
  int width = 0, height = 0, levels = 0;
  rigid_transform truth;
  double noise = 0;
  std::string variants;  // bench: the histogram step's variants, separated by ';' (empty: the default list)
};

pair_spec spec_of(const nlohmann::json& params) {
  pair_spec s;
  s.width = int(int_param(params, "width", 8, 1 << 15));
  s.height = int(int_param(params, "height", 8, 1 << 15));
  s.levels = int(int_param(params, "levels", 2, 4093));
  s.truth = {real_param(params, "tx", -1e4, 1e4), real_param(params, "ty", -1e4, 1e4), real_param(params, "angle", -180, 180)};
  s.noise = real_param(params, "noise", 0, 100);
  if (params.contains("variants")) {
    if (!params["variants"].is_string()) throw usage_error("imgreg: parameter variants must be a string");
    s.variants = params["variants"].get<std::string>();
    for (const auto& v : split_variant_list(s.variants)) parse_method(v);  // a bad one fails before any run
  }
  return s;
}

nlohmann::json transform_json(const rigid_transform& t) { return {{"tx", t.tx}, {"ty", t.ty}, {"angle_deg", t.angle_deg}}; }

rigid_transform transform_from(const nlohmann::json& j, const std::string& where) {
  for (const char* key : {"tx", "ty", "angle_deg"})
    if (!j.contains(key) || !j[key].is_number()) throw input_error(where + ": no number '" + key + "' in the transform");
  return {j["tx"].get<double>(), j["ty"].get<double>(), j["angle_deg"].get<double>()};
}

// A grey image from a bundle array of shape (height, width), uint8.
grey_image image_array(const datasets::bundle& b, const std::string& name) {
  const auto h = b.header(name);
  if (h.shape.size() != 2 || h.shape[0] < 1 || h.shape[1] < 1 || h.shape[0] > (1 << 20) || h.shape[1] > (1 << 20))
    throw input_error(b.path_of(name).string() + ": an image must have shape (height, width), not " +
                      datasets::shape_string(h.shape));
  return {int(h.shape[1]), int(h.shape[0]), b.read<std::uint8_t>(name)};
}

void add_image(datasets::bundle_writer& out, const std::string& name, const grey_image& im) {
  const std::int64_t shape[2] = {im.height, im.width};
  out.add(name, datasets::dtype::u8, shape, im.pixels.data());
}

nlohmann::json read_json_file(const std::filesystem::path& path) {
  datasets::binary_reader in(path);
  std::string text(std::size_t(in.size()), '\0');
  in.read_into(text.data(), in.size(), "the JSON text");
  try {
    return nlohmann::json::parse(text);
  } catch (const nlohmann::json::exception& e) {
    throw input_error(path.string() + ": not JSON (" + e.what() + ")");
  }
}

// The two images of a request, and what the dataset says about them (levels, truth).
struct loaded_pair {
  grey_image fixed, moving;
  std::string fixed_name, moving_name;  // the files they came from
  nlohmann::json params = nlohmann::json::object();  // the bundle's params (or truth.json)
  bool has_truth = false;
  rigid_transform truth;
};

loaded_pair load_pair(const std::vector<std::filesystem::path>& inputs, const std::string& format, bool truth_allowed) {
  loaded_pair p;
  if (format.empty() || format == "bundle") {
    const auto in = find_app("imgreg").open_dataset(inputs.front());
    p.fixed = image_array(in, "fixed");
    p.moving = image_array(in, "moving");
    p.fixed_name = in.path_of("fixed").string();
    p.moving_name = in.path_of("moving").string();
    datasets::require_same_size(p.fixed, in.path_of("fixed"), p.moving, in.path_of("moving"));
    p.params = in.params();
    // Generated bundles carry the truth in their parameters (tx, ty, angle).
    p.has_truth = true;
    for (const char* key : {"tx", "ty", "angle"}) p.has_truth = p.has_truth && p.params.contains(key) && p.params[key].is_number();
    if (p.has_truth) p.truth = {p.params["tx"].get<double>(), p.params["ty"].get<double>(), p.params["angle"].get<double>()};
    return p;
  }
  const std::size_t most = truth_allowed ? 3 : 2;
  if (inputs.size() < 2 || inputs.size() > most)
    throw usage_error(std::string("imgreg --format image: give -i FIXED -i MOVING") + (truth_allowed ? " [-i TRUTH.json]" : ""));
  p.fixed = datasets::read_grey_image(inputs[0]);
  p.moving = datasets::read_grey_image(inputs[1]);
  p.fixed_name = inputs[0].string();
  p.moving_name = inputs[1].string();
  datasets::require_same_size(p.fixed, inputs[0], p.moving, inputs[1]);
  // The bundles' bounds (spec_of): below 8 pixels a side the pyramid and the Parzen window have
  // nothing to register.
  if (p.fixed.width < 8 || p.fixed.height < 8 || p.fixed.width > (1 << 15) || p.fixed.height > (1 << 15))
    throw input_error(inputs[0].string() + ": " + std::to_string(p.fixed.width) + " x " + std::to_string(p.fixed.height) +
                      " pixels; imgreg takes 8 to 32768 pixels a side");
  if (inputs.size() == 3) {
    p.params = read_json_file(inputs[2]);
    p.truth = transform_from(p.params, inputs[2].string());
    p.has_truth = true;
  }
  return p;
}

class imgreg_app final : public app {
 public:
  std::string name() const override { return "imgreg"; }
  std::string summary() const override {
    return "rigid image registration by mutual information (SC20 V-D4): joint histograms with cubic B-spline Parzen "
           "windows, 16 float adds per pixel; finds rotations of up to 25 degrees and translations of up to a fifth of the "
           "smaller side (the capture range)";
  }
  std::vector<preset> presets() const override {
    auto p = [](int size, int levels, double tx, double ty, double angle) {
      return nlohmann::json{{"width", size}, {"height", size}, {"levels", levels}, {"tx", tx},
                            {"ty", ty},      {"angle", angle}, {"noise", 3.0}, {"variants", ""}};
    };
    return {{"paper-2m", "1414 x 1414 pixels (N = 2M), 50 levels (H = 53 x 53), moved by (23.4, -31.7) px and 3.5 deg",
             p(1414, 50, 23.4, -31.7, 3.5)},
            {"paper-8m", "2828 x 2828 pixels (N = 8M), 200 levels (H = 203 x 203), moved by (41.3, -27.6) px and -2.8 deg",
             p(2828, 200, 41.3, -27.6, -2.8)},
            {"small", "512 x 512 pixels, 64 levels, moved by (12.4, -9.1) px and -3.1 deg", p(512, 64, 12.4, -9.1, -3.1)},
            {"tiny", "128 x 128 pixels, 32 levels, moved by (4.6, -3.3) px and 2.5 deg (tests)", p(128, 32, 4.6, -3.3, 2.5)}};
  }
  std::vector<std::string> variants() const override { return {"hist", "sort"}; }
  std::string variant_settings() const override {
    return "hist takes acc=fixed|float (weights summed as 32-bit fixed-point integers, the default, or floats), "
           "order=stripes|rows (the pixels' order) and hist settings for the histogram step (as soac run hist: "
           "strategy=..., M=N, atomic=cas, ...), e.g. hist,acc=float,M=4";
  }
  std::vector<std::string> bench_presets() const override { return {"paper-2m", "paper-8m"}; }
  std::vector<file_format> input_formats() const override {
    return {{"image", "two image files of the same size (PNG, JPEG, BMP, TGA, PGM, ... through stb_image; colour becomes "
                      "grey): -i FIXED -i MOVING, the moving one within the capture range of the fixed one (rotated by up to "
                      "25 degrees, shifted by up to a fifth of the smaller side along each axis); a blank or nearly blank "
                      "image is refused (exit 3); validate takes the truth as a third -i (JSON with tx, ty, angle_deg); gen "
                      "-o DIR writes DIR/fixed.png, DIR/moving.png, DIR/truth.json"}};
  }
  std::vector<setting> run_settings() const override {
    return {{"levels", 0, "intensity levels (histogram side levels + 3); 0: the dataset's, or 64 for image files"}};
  }

  void check_params(const nlohmann::json& params) const override { spec_of(params); }
  // Both images of the manifest's height x width.
  void check_arrays(const datasets::bundle& in) const override {
    const pair_spec s = spec_of(in.params());
    const std::vector<std::int64_t> shape = {s.height, s.width};
    for (const char* name : {"fixed", "moving"})
      if (in.header(name).shape != shape)
        throw input_error(in.path_of(name).string() + ": shape " + datasets::shape_string(in.header(name).shape) +
                          ", but the manifest says height x width = " + datasets::shape_string(shape));
  }

  void generate(const gen_request& r) const override {
    const pair_spec s = spec_of(r.params);
    const image_pair pair = generate_pair(s.width, s.height, s.truth, s.noise, r.seed);
    if (r.format == "image") {
      datasets::file_set_writer files(r.output);
      datasets::write_png(files.add("fixed.png"), pair.fixed);
      datasets::write_png(files.add("moving.png"), pair.moving);
      nlohmann::json truth = transform_json(s.truth);
      truth["levels"] = s.levels;
      truth["seed"] = r.seed;
      truth["preset"] = r.preset;
      datasets::write_file_atomically(files.add("truth.json"), truth.dump(2) + "\n");
      files.commit();
      return;
    }
    datasets::bundle_writer out(r.output, "dataset", name());
    add_image(out, "fixed", pair.fixed);
    add_image(out, "moving", pair.moving);
    finish_dataset(out, r);
  }

  static int levels_of(const nlohmann::json& settings, const loaded_pair& p) {
    const std::int64_t given = settings.value("levels", std::int64_t{0});
    if (given != 0) return int(int_param(settings, "levels", 2, 4093));
    if (p.params.contains("levels") && p.params["levels"].is_number_integer()) return int(int_param(p.params, "levels", 2, 4093));
    return 64;
  }

  std::string run(context& ctx, const run_request& r) const override {
    const loaded_pair p = load_pair(r.inputs, r.format, false);
    for (const auto& [image, name] : {std::pair{&p.fixed, &p.fixed_name}, std::pair{&p.moving, &p.moving_name}})
      if (const std::string why = lacks_contrast(*image); !why.empty()) throw input_error(*name + ": " + why);
    registration_options o;
    o.levels = levels_of(r.settings, p);
    o.variant = r.variant.empty() ? "hist" : r.variant;
    const auto t0 = std::chrono::steady_clock::now();
    const registration_result res = register_images(ctx, p.fixed, p.moving, o);
    const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    datasets::bundle_writer out(r.output, "result", name());
    const std::int64_t shape[2] = {o.levels + 3, o.levels + 3};
    out.add("histogram", datasets::dtype::f32, shape, res.histogram.data());
    add_image(out, "registered", res.registered);
    nlohmann::json transform = transform_json(res.transform);
    transform["mutual_information"] = res.mutual_information;
    out.add_file("transform.json", transform.dump(2) + "\n");
    out.add_file("registered.png", datasets::encode_png(res.registered));
    out.params() = p.params;
    out.params()["levels"] = o.levels;
    out.info() = {{"backend", std::string(to_string(ctx.which()))}, {"device", ctx.props().name}, {"variant", o.variant},
                  {"transform", transform_json(res.transform)}, {"mutual_information", res.mutual_information},
                  {"overlap", res.overlap},
                  {"evaluations", res.evaluations}, {"evaluations_per_level", res.evaluations_per_level},
                  {"histogram_calls", res.histogram_calls},
                  {"pyramid_levels", res.pyramid_levels}, {"plan", res.plan}, {"histogram_quantum", res.quantum},
                  {"registration_ms", ms}};
    out.finish();
    std::ostringstream s;
    s << "imgreg: " << p.fixed.width << " x " << p.fixed.height << " pixels, " << o.levels << " levels on " << ctx.describe()
      << "\n  " << o.variant << ": (" << res.transform.tx << ", " << res.transform.ty << ") px, " << res.transform.angle_deg
      << " deg, MI " << res.mutual_information << " over " << std::lround(100 * res.overlap) << "% of the fixed image; "
      << res.evaluations << " histograms, " << ms
      << " ms (decoding excluded)";
    if (r.verbose) {
      s << "\n  histograms per pyramid level (full size first):";
      for (int n : res.evaluations_per_level) s << " " << n;
      s << "; " << res.histogram_calls << " calls of the histogram step, one after another";
      s << "\n  full-size histogram: " << res.plan;
    }
    return s.str();
  }

  validate_report validate(const validate_request& r) const override {
    const loaded_pair p = load_pair(r.inputs, r.format, true);
    const auto res = datasets::bundle::open(r.result, "result", name());
    const int levels = params_of_file(r.result / "manifest.json", [&] { return int(int_param(res.params(), "levels", 2, 4093)); });
    if (!res.info().contains("transform")) throw input_error(r.result.string() + ": the result records no transform");
    const rigid_transform got = transform_from(res.info()["transform"], r.result.string());
    const std::vector<std::int64_t> size = {p.fixed.height, p.fixed.width};
    if (res.header("registered").shape != size)
      throw input_error(res.path_of("registered").string() + ": a registered image of " + datasets::shape_string(res.header("registered").shape) +
                        " pixels, but the dataset's images are " + datasets::shape_string(size) + " (a result of another dataset?)");
    // Fixed-point sums are checked with their quantum, which may be no coarser than the one the
    // images' size allows (float sums record 0).
    double quantum = 0;
    if (res.info().contains("histogram_quantum")) {
      if (!res.info()["histogram_quantum"].is_number()) throw input_error(r.result.string() + ": histogram_quantum is not a number");
      quantum = res.info()["histogram_quantum"].get<double>();
    }
    const double coarsest_allowed = std::ldexp(1.0, -validate::fixed_point_shift(p.fixed.size()));
    if (!(quantum >= 0 && quantum <= coarsest_allowed)) {
      std::ostringstream s;
      s << "the histogram's fixed-point quantum " << quantum << " is coarser than the " << coarsest_allowed << " of "
        << p.fixed.size() << " pixels";
      return {false, s.str()};
    }
    const validate::report hist_report = validate::compare_float_histogram(
        reference_histogram(p.fixed, p.moving, got, levels), res.read<float>("histogram"), quantum);
    validate_report out{hist_report.ok(), hist_report.describe("joint histogram bins")};
    if (!p.has_truth) {
      out.summary += "; no ground truth given, transform not checked";
      return out;
    }
    const validate::report t = validate::compare_transform(p.truth, got, transform_px, transform_deg);
    out.ok = out.ok && t.ok();
    std::ostringstream s;
    if (t.ok()) s << "; transform within " << transform_px << " px and " << transform_deg << " deg of the truth";
    else s << "; " << t.describe("transform parameters");
    out.summary += s.str();
    return out;
  }

  // The issue's accuracy bar for the recovered transform.
  static constexpr double transform_px = 0.5, transform_deg = 0.1;

  void bench(context& ctx, const bench_request& r, bench::suite& suite) const override {
    if (!ctx.is_cuda()) throw usage_error("imgreg bench compares with CUB's sort and needs --backend cuda");
    const auto names = r.presets.empty() ? bench_presets() : r.presets;
    suite.expect_cases(int(2 * names.size()));
    for (const auto& preset_name : names) {
      const pair_spec s = spec_of(resolve_params(preset_name, r.overrides));
      const image_pair pair = generate_pair(s.width, s.height, s.truth, s.noise, r.seed);
      const validate::float_histogram reference = reference_histogram(pair.fixed, pair.moving, s.truth, s.levels);
      const std::int64_t N = pair.fixed.size();
      const int side = s.levels + 3;
      std::ostringstream name;
      name << "histogram step " << preset_name << " (N=" << N << ", H=" << side << "x" << side << ")";
      // Bytes that must move: both float images read once.
      suite.begin_case(name.str(), {{"preset", preset_name}, {"N", N}, {"H", side * side}, {"levels", s.levels}}, 8.0 * double(N));
      buffer<float> histo(ctx, std::size_t(side) * side);
      // Each variant's histogram is validated; the note gives its largest error as a fraction of
      // the validator's bound.
      auto step = [&](const std::string& label, const std::string& variant, bench::role role) {
        registration_options o;
        o.levels = s.levels;
        o.variant = variant;
        engine e(ctx, pair.fixed, pair.moving, o);
        const rigid_map truth = make_rigid(s.truth, s.width, s.height, 0);
        std::string plan;
        suite.measure(label, role, [&] {
          const hist_plan p = e.histograms(0, {truth}, histo.view());
          plan = p.n ? p.describe() : "";
        });
        const std::vector<float> got = histo.to_vector();
        const double quantum = e.quantum(0);
        const validate::report rep = validate::compare_float_histogram(reference, got, quantum);
        std::ostringstream note;
        note << std::setprecision(3) << plan << (plan.empty() ? "" : "; ");
        if (quantum > 0) note << "fixed-point sums, quantum 2^" << std::ilogb(quantum) << ", ";
        note << "largest error " << largest_error_share(reference, got, quantum) << " of its bound";
        suite.annotate(rep.ok() ? note.str() : "WRONG RESULT: " + rep.describe("bins"));
      };
      std::vector<std::string> chosen = split_variant_list(s.variants);
      if (chosen.empty()) chosen = {"sort", "hist", "hist,acc=float", "hist,acc=float,atomic=cas"};
      for (const auto& v : chosen) {
        const std::string label = v == "sort"                        ? "CUB sort + reduce-by-key (the paper's PyTorch unique + sum)"
                                  : v == "hist"                      ? "soac hist (fixed-point sums)"
                                  : v == "hist,acc=float"            ? "soac hist, float sums (shared float adds: CAS loops)"
                                  : v == "hist,acc=float,atomic=cas" ? "soac hist, float sums, compare-and-swap forced"
                                                                     : "soac " + v;
        unless_ruled_out(label, [&] { step(label, v, v == "sort" ? bench::role::baseline : bench::role::soac); });
      }

      suite.begin_case("registration " + preset_name, {{"preset", preset_name}, {"N", N}, {"levels", s.levels}}, 8.0 * double(N));
      registration_options o;
      o.levels = s.levels;
      registration_result res;
      suite.measure("soac registration (decoding excluded)", bench::role::soac,
                    [&] { res = register_images(ctx, pair.fixed, pair.moving, o); });
      const validate::report t = validate::compare_transform(s.truth, res.transform, transform_px, transform_deg);
      std::ostringstream note;
      note << std::setprecision(4) << "(" << res.transform.tx << ", " << res.transform.ty << ") px, " << res.transform.angle_deg
           << " deg; truth (" << s.truth.tx << ", " << s.truth.ty << "), " << s.truth.angle_deg << "; " << res.evaluations
           << " histograms";
      suite.annotate((t.ok() ? "" : "WRONG TRANSFORM: ") + note.str());
    }
  }
};

}  // namespace
}  // namespace soac::apps::imgreg

SOAC_REGISTER_APP(soac::apps::imgreg::imgreg_app)
