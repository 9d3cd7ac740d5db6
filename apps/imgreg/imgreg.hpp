// Image registration by mutual information (SC20 section V-D4, Darkner and Sporring's locally
// orderless registration): the per-pixel arithmetic shared by the device, the host backend and
// the validator, and the registration's entry points that tests call besides the app interface.
//
// Geometry: pixel (px, py) of an image has its centre at index coordinates (px, py); a rigid
// transform (tx, ty, angle) maps fixed-image point p to moving-image point
// q = R(angle) (p - c) + c + (tx, ty), c the image centre ((W - 1) / 2, (H - 1) / 2). Registration
// finds the transform for which moving(q(p)) best explains fixed(p): the largest mutual
// information of their joint intensity histogram.
//
// The joint histogram (the paper's interp()): an intensity I in [0, 255] is x = I (levels - 1) /
// 255 in level units; its cubic B-spline weights w[0..3] at t = x - floor(x) spread it over bins
// floor(x) .. floor(x) + 3, so the histogram side is levels + 3; a pixel pair adds the outer
// product of the moving (rows) and fixed (columns) weights to a 4 x 4 block: 16 float adds.
//
// Every float operation here is rounded on its own (explicit fmaf, and the _rn helpers, which
// the device compiler does not contract into fused multiply-adds), so the host backend, the device
// and the validator compute the same bits for every weight. The histogram step sums the weights
// in fixed point by default (each product rounded to quanta of 2^-s and added as a 32-bit
// integer: exact, so every backend and plan gives the same bits), or in float (acc=float), where
// only the order of the additions differs.
#pragma once

#include <cmath>
#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "core/context.hpp"
#include "core/fast_divide.hpp"
#include "core/hd.hpp"
#include "core/hist/plan.hpp"
#include "datasets/image.hpp"
#include "validate/imgreg.hpp"

namespace soac::apps::imgreg {

SOAC_HD inline float mul_rn(float a, float b) {
#ifdef __CUDA_ARCH__
  return __fmul_rn(a, b);
#else
  return a * b;
#endif
}
SOAC_HD inline float sub_rn(float a, float b) {
#ifdef __CUDA_ARCH__
  return __fsub_rn(a, b);
#else
  return a - b;
#endif
}

// The map from fixed to moving index coordinates at one pyramid level, in float:
// u = cos_a (px - cx) - sin_a (py - cy) + ox, v = sin_a (px - cx) + cos_a (py - cy) + oy.
struct rigid_map {
  float cos_a, sin_a, cx, cy, ox, oy;
};

// The transform at pyramid level `level` (images halved `level` times) of images whose full
// size is width x height: level-l pixel i covers full pixels [2^l i, 2^l (i + 1)), so the centre
// and the translation scale by 2^-l (see make_rigid in imgreg_app.cu).
rigid_map make_rigid(const validate::rigid_transform& t, int width, int height, int level);

struct image_view {
  const float* pixels;  // row-major, width * height
  int width, height;
};

// Bilinear sample of `im` at the point pixel (px, py) maps to; false outside the image.
SOAC_HD inline bool sample(const image_view& im, const rigid_map& m, int px, int py, float& out) {
  const float dx = sub_rn(float(px), m.cx), dy = sub_rn(float(py), m.cy);
  const float u = fmaf(m.cos_a, dx, fmaf(-m.sin_a, dy, m.ox));
  const float v = fmaf(m.sin_a, dx, fmaf(m.cos_a, dy, m.oy));
  if (!(u >= 0.0f && v >= 0.0f && u <= float(im.width - 1) && v <= float(im.height - 1))) return false;
  const float u0 = floorf(u), v0 = floorf(v);
  const float fu = sub_rn(u, u0), fv = sub_rn(v, v0);
  const int i0 = int(u0), j0 = int(v0);
  const int i1 = i0 + 1 < im.width ? i0 + 1 : i0, j1 = j0 + 1 < im.height ? j0 + 1 : j0;
  const float* r0 = im.pixels + std::int64_t(j0) * im.width;
  const float* r1 = im.pixels + std::int64_t(j1) * im.width;
  const float top = fmaf(fu, sub_rn(r0[i1], r0[i0]), r0[i0]);
  const float bottom = fmaf(fu, sub_rn(r1[i1], r1[i0]), r1[i0]);
  out = fmaf(fv, sub_rn(bottom, top), top);
  return true;
}

// The cubic B-spline weights of the paper's interp() at t in [0, 1): they sum to one.
SOAC_HD inline void bspline_weights(float t, float w[4]) {
  constexpr float sixth = 1.0f / 6.0f;
  const float s = sub_rn(1.0f, t), t2 = mul_rn(t, t);
  w[0] = mul_rn(mul_rn(mul_rn(s, s), s), sixth);                                 // (1 - t)^3 / 6
  w[1] = mul_rn(fmaf(t2, fmaf(3.0f, t, -6.0f), 4.0f), sixth);                    // (3t^3 - 6t^2 + 4) / 6
  w[2] = mul_rn(fmaf(t, fmaf(t, fmaf(-3.0f, t, 3.0f), 3.0f), 1.0f), sixth);       // (-3t^3 + 3t^2 + 3t + 1) / 6
  w[3] = mul_rn(mul_rn(t2, t), sixth);                                            // t^3 / 6
}

// The bits of a float (a move on the device).
SOAC_HD inline std::uint32_t float_bits(float x) {
  std::uint32_t r;
  __builtin_memcpy(&r, &x, sizeof r);
  return r;
}

// w_y w_x in quanta of 2^-s, rounded to the nearest (ties to even), given w_y 2^s (exact: scaling
// up by a power of two) and w_x: the fixed-point histogram's update. The fused multiply-add rounds
// the exact product plus 1.5 2^23 once, to an integer (its ulp), which leaves the product's
// quanta in the low 22 bits of the mantissa for products below 2^22 quanta (s <= 22 and weights
// below 1: validate::fixed_point_shift). One full-rate instruction and an integer subtraction,
// where a float-to-integer conversion runs at a quarter of the rate.
SOAC_HD inline std::uint32_t product_quanta(float scaled_wy, float wx) {
  constexpr float bias = 12582912.0f;  // 1.5 2^23, bits 0x4B400000
  return float_bits(fmaf(scaled_wy, wx, bias)) - 0x4B400000u;
}

// What one fixed pixel adds to the joint histogram: weights wy (moving, rows) x wx (fixed,
// columns) at the 4 x 4 block whose top-left bin is first_bin; nothing when its point falls
// outside the moving image.
struct pixel_contribution {
  bool valid;
  std::int32_t first_bin;
  float wy[4], wx[4];
  SOAC_HD float value(int a, int b) const { return mul_rn(wy[a], wx[b]); }
  // value(a, b) in quanta of 1 / scale (scale = 2^s, s <= 22).
  SOAC_HD std::uint32_t quanta(int a, int b, float scale) const { return product_quanta(mul_rn(wy[a], scale), wx[b]); }
};

SOAC_HD inline pixel_contribution contribution(const image_view& fixed, const image_view& moving, const rigid_map& m,
                                               float to_levels, int side, int px, int py) {
  pixel_contribution c{};
  float warped;
  if (!sample(moving, m, px, py, warped)) return c;
  const float x = mul_rn(fixed.pixels[std::int64_t(py) * fixed.width + px], to_levels), y = mul_rn(warped, to_levels);
  const float fx = floorf(x), fy = floorf(y);
  bspline_weights(sub_rn(x, fx), c.wx);
  bspline_weights(sub_rn(y, fy), c.wy);
  c.first_bin = std::int32_t(fy) * side + std::int32_t(fx);
  c.valid = true;
  return c;
}

// Intensity levels (levels - 1) / 255 per grey value, as a float (shared by every caller).
inline float levels_scale(int levels) { return float(double(levels - 1) / 255.0); }

// The sequential joint histogram (side x side bins, summed in double) of fixed against moving
// under `t` at full size: the validator's reference.
validate::float_histogram reference_histogram(const datasets::grey_image& fixed, const datasets::grey_image& moving,
                                              const validate::rigid_transform& t, int levels);

// Mutual information (nats) of a joint histogram of side x side bins (float sums, or fixed-point
// ones in quanta: the scale cancels).
double mutual_information(const float* histogram, int side);
double mutual_information(const std::uint32_t* histogram, int side);

struct registration_options {
  int levels = 64;            // intensity levels at full size (histogram side levels + 3)
  // hist[,acc=fixed|float][,order=stripes|rows][,hist settings] or sort (CUB sort +
  // reduce-by-key, cuda only); see histogram_method in imgreg_app.cu.
  std::string variant = "hist";
};

struct registration_result {
  validate::rigid_transform transform;
  double mutual_information = 0;
  int evaluations = 0;       // joint histograms computed (a batched grid counts each transform)
  std::vector<int> evaluations_per_level;  // of them at each pyramid level, full size first
  int histogram_calls = 0;   // calls of the histogram step (a batch each), one after another
  int pyramid_levels = 0;
  std::vector<float> histogram;        // (levels + 3)^2 at full size under `transform`
  datasets::grey_image registered;     // moving resampled into the fixed frame (0 outside)
  std::string plan;                    // what the full-size histogram ran as
  double quantum = 0;                  // of the full-size histogram's fixed-point sums (0: float sums)
  double overlap = 0;                  // the fraction of the fixed image that overlaps the moving one
};

// One joint histogram ((levels + 3)^2 bins) of the full-size images under `t`, computed on ctx
// with `variant` (as registration_options::variant). quantum: where not null, set to the
// fixed-point quantum the sums were rounded to (0 for float sums).
std::vector<float> joint_histogram(context& ctx, const datasets::grey_image& fixed, const datasets::grey_image& moving,
                                   const validate::rigid_transform& t, int levels, const std::string& variant,
                                   double* quantum = nullptr);

// The transforms the registration searches: translations of up to `shift` pixels along each axis
// (a fifth of the images' smaller side) and rotations of up to `angle_deg` either way. The search
// and its refinement never leave this range (and a grid step beyond it), so a transform outside it
// is not found: some transform inside is returned instead.
struct capture_range {
  double shift, angle_deg;
};
inline capture_range capture_range_of(int width, int height) { return {0.2 * std::min(width, height), 25.0}; }

// Why an image has nothing to register, or empty when it has something: blank, or nearly so (the
// 1st to 99th percentile of its grey levels less than min_contrast apart, under one intensity
// level of the default 64, so that the joint histogram has one column and no information).
inline constexpr int min_contrast = 4;
std::string lacks_contrast(const datasets::grey_image& image);

// The whole registration on ctx, from decoded images to the final histogram and registered image
// on the host: coarse-to-fine on an image pyramid, a grid of transforms over the capture range on
// smoothed images the size of the coarsest level or smaller (one batched histogram), then
// Nelder-Mead on (tx, ty, angle) from its best local maxima, narrowed to one level by level, in the
// capture range. input_error when either image lacks contrast (lacks_contrast).
registration_result register_images(context& ctx, const datasets::grey_image& fixed, const datasets::grey_image& moving,
                                    const registration_options& options);

// The generator: a textured image (value noise, six octaves) and a copy moved by `truth`, each
// with independent noise of `noise` grey levels (standard deviation).
struct image_pair {
  datasets::grey_image fixed, moving;
};
image_pair generate_pair(int width, int height, const validate::rigid_transform& truth, double noise, std::uint64_t seed);

}  // namespace soac::apps::imgreg
