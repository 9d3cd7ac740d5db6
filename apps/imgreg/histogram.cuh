// The histogram step: the joint histogram's updates on soac::hist (or sorted, as the paper's PyTorch
// code does), the variant's settings, and the mutual information of a histogram.
// A part of the imgreg app's one translation unit (apps/imgreg/imgreg_app.cu includes them in order:
// histogram, search, engine).
#pragma once

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

// Pixels of a grey image as floats (the histogram's and the pyramid's type).
std::vector<float> as_floats(const grey_image& im) { return std::vector<float>(im.pixels.begin(), im.pixels.end()); }

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
//   tile, need more than the 64 registers of a 1024-thread block and spill (docs/tuning/imgreg.md).
// - Float sums, a lone histogram: float adds into shared memory are compare-and-swap loops, whose
//   retries grow with the threads that share a copy, so as many copies as one block's shared
//   memory holds, up to 16 (paper-2m: 16 copies of 53 x 53 bins, 64 threads each; paper-8m: one
//   203 x 203 copy).
hist_options histogram_options(const context& ctx, const histogram_method& m, std::int64_t bins, bool lone) {
  if (m.settings_given || !ctx.is_cuda()) return m.options;
  hist_options o = m.options;
  if (m.fixed) {
    o.overrides.load_ahead = hist_toggle::off;
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

}  // namespace
}  // namespace soac::apps::imgreg
