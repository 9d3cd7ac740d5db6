// The registration's device state: the image pyramid, the histogram buffers, and how well a
// transform aligns the images at a level.
// A part of the imgreg app's one translation unit (apps/imgreg/imgreg_app.cu includes them in order:
// histogram, search, engine).
#pragma once

#include "apps/imgreg/search.hpp"

namespace soac::apps::imgreg {
namespace {

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
}  // namespace soac::apps::imgreg
