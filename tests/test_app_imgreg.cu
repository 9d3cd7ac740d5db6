// The imgreg app: the joint histogram against the sequential reference, whole registrations that
// recover the generator's transform and a brick wall's across the capture range, image files in
// and out, and bad image inputs (blank ones included).
#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>

#include <gtest/gtest.h>

#include "apps/imgreg/imgreg.hpp"
#include "datasets/bundle.hpp"
#include "datasets/image.hpp"
#include "datasets/random.hpp"
#include "tests/app_fixture.hpp"
#include "validate/imgreg.hpp"

namespace soac {
namespace {

using testing::error_of;
namespace ir = apps::imgreg;

class ImgregApp : public testing::app_test {
 protected:
  ir::image_pair tiny_pair(const validate::rigid_transform& t = {4.6, -3.3, 2.5}) { return ir::generate_pair(128, 128, t, 3.0, 5); }
};

// A brick wall: staggered 24 x 12 bricks of random greys, 2-pixel mortar and a grain of value
// noise 2.5 pixels across, a smooth function of the point so that a moved copy is exact. It
// repeats every brick, and at the coarsest level its grain is nearly white noise, whose
// similarity peaks within a pixel: the case issue 38 (item 6) found failing on a photograph of
// bricks. The grain is value noise (random values on a lattice, blended with a smooth step).
double uniform_at(std::uint64_t key, std::int64_t i, std::int64_t j) {
  return double(datasets::splitmix64(datasets::keyed_word(key, std::uint64_t(i)) ^ std::uint64_t(j)) >> 11) * 0x1.0p-53;
}
double smooth_step(double t) {
  t = std::clamp(t, 0.0, 1.0);
  return t * t * (3 - 2 * t);
}
// Value noise of the given key `scale` pixels across at (x, y), in [0, 1].
double grain(std::uint64_t key, double scale, double x, double y) {
  const double gx = x / scale, gy = y / scale, fx = std::floor(gx), fy = std::floor(gy);
  const auto lattice = [&](double i, double j) { return uniform_at(key, std::int64_t(i), std::int64_t(j)); };
  const double sx = smooth_step(gx - fx), sy = smooth_step(gy - fy);
  const double top = lattice(fx, fy) + sx * (lattice(fx + 1, fy) - lattice(fx, fy));
  const double bottom = lattice(fx, fy + 1) + sx * (lattice(fx + 1, fy + 1) - lattice(fx, fy + 1));
  return top + sy * (bottom - top);
}
double brick_wall(double x, double y) {
  constexpr double width = 24, height = 12, mortar = 2;
  const double row = std::floor(y / height), shifted = x + std::fmod(std::fabs(row), 2.0) * width / 2;
  const double column = std::floor(shifted / width);
  // How far inside its brick the point lies (negative in the mortar), blended over a pixel.
  const double inside = std::min(std::min(shifted - column * width - mortar, (column + 1) * width - shifted),
                                 std::min(y - row * height - mortar, (row + 1) * height - y));
  const double brick = 90 + 80 * uniform_at(11, std::int64_t(row), std::int64_t(column));
  return 50 + smooth_step(inside + 0.5) * (brick - 50) + 60 * (grain(12, 2.5, x, y) - 0.5);
}

// A microscope's view of one round cell on an even background with a faint grain (scikit-image's
// cell.png): the cell alone fixes the translation, and rotations about it differ only in the
// grain, which the search images smooth away. Mutual information there rises as the overlap
// sheds background, so it is highest rotated about the cell to the edge of the range.
double cell_scene(double x, double y, int width, int height) {
  const double d = std::hypot(x - 0.75 * width, y - 0.55 * height);
  return 70 + 30 * (grain(13, 3.0, x, y) - 0.5) + 120 * smooth_step((0.14 * width - d) / 2 + 0.5);
}

// A scene and a copy moved by `t` (the app's geometry: moving(q) = fixed(p) for
// q = R(angle) (p - c) + c + (tx, ty)).
template <class Scene>
ir::image_pair scene_pair(int width, int height, const validate::rigid_transform& t, Scene scene) {
  ir::image_pair out;
  out.fixed = {width, height, std::vector<std::uint8_t>(std::size_t(width) * std::size_t(height))};
  out.moving = out.fixed;
  const double a = t.angle_deg * 3.14159265358979323846 / 180, cs = std::cos(a), sn = std::sin(a);
  const double cx = (width - 1) / 2.0, cy = (height - 1) / 2.0;
  const auto grey = [](double v) { return std::uint8_t(std::clamp(std::lround(v), 0L, 255L)); };
  for (int y = 0; y < height; ++y)
    for (int x = 0; x < width; ++x) {
      const std::size_t i = std::size_t(y) * std::size_t(width) + std::size_t(x);
      out.fixed.pixels[i] = grey(scene(x, y));
      const double qx = x - cx - t.tx, qy = y - cy - t.ty;
      out.moving.pixels[i] = grey(scene(cs * qx + sn * qy + cx, -sn * qx + cs * qy + cy));
    }
  return out;
}

TEST_P(ImgregApp, HistogramMatchesTheReference) {
  const auto pair = tiny_pair();
  const double fixed_quantum = std::ldexp(1.0, -19);  // 128 x 128 pixels: validate::fixed_point_shift gives 19
  // Near the truth, far off (most pixels fall outside) and at a rotation of 30 degrees.
  for (const validate::rigid_transform t : {validate::rigid_transform{4.6, -3.3, 2.5}, {-70.25, 40.5, 0}, {1.5, 2.0, 30}})
    for (const char* variant : {"hist", "hist,M=2", "hist,atomic=cas", "hist,strategy=global", "hist,order=rows", "hist,acc=float",
                                "hist,acc=float,M=2", "hist,acc=float,atomic=cas", "hist,acc=float,strategy=global", "sort"}) {
      SCOPED_TRACE(std::string(variant) + " at " + std::to_string(t.tx));
      if (std::string(variant) == "sort" && !ctx().is_cuda()) continue;
      double quantum = -1;
      const auto got = ir::joint_histogram(ctx(), pair.fixed, pair.moving, t, 32, variant, &quantum);
      const bool fixed = std::string(variant).find("float") == std::string::npos && std::string(variant) != "sort";
      EXPECT_EQ(quantum, fixed ? fixed_quantum : 0.0);
      const auto ref = ir::reference_histogram(pair.fixed, pair.moving, t, 32);
      const auto report = validate::compare_float_histogram(ref, got, quantum);
      EXPECT_TRUE(report.ok()) << report.describe("bins");
      double total = 0;
      for (double v : ref.sum) total += v;
      EXPECT_GT(total, 100.0);  // some pixels overlap in every case
    }
}

// Fixed-point sums are integers: every plan gives the same bits, and they are the sum of each
// product rounded to the nearest quantum (computed here in double), converted to float once.
TEST_P(ImgregApp, FixedPointSumsAreExact) {
  const auto pair = tiny_pair();
  const validate::rigid_transform t{1.5, 2.0, 30};
  const int levels = 32, side = levels + 3, s = validate::fixed_point_shift(pair.fixed.size());
  ASSERT_EQ(s, 19);
  std::vector<double> quanta(std::size_t(side) * side, 0.0);
  const std::vector<float> f(pair.fixed.pixels.begin(), pair.fixed.pixels.end()), m(pair.moving.pixels.begin(), pair.moving.pixels.end());
  const ir::image_view fv{f.data(), 128, 128}, mv{m.data(), 128, 128};
  const ir::rigid_map map = ir::make_rigid(t, 128, 128, 0);
  for (int py = 0; py < 128; ++py)
    for (int px = 0; px < 128; ++px) {
      const auto c = ir::contribution(fv, mv, map, ir::levels_scale(levels), side, px, py);
      if (!c.valid) continue;
      for (int a = 0; a < 4; ++a)
        for (int b = 0; b < 4; ++b)
          quanta[std::size_t(c.first_bin + a * side + b)] += std::nearbyint(std::ldexp(double(c.wy[a]) * c.wx[b], s));
    }
  std::vector<float> expected(quanta.size());
  for (std::size_t b = 0; b < quanta.size(); ++b) expected[b] = std::ldexp(float(quanta[b]), -s);
  for (const char* variant : {"hist", "hist,M=4", "hist,atomic=cas", "hist,strategy=global", "hist,order=rows"}) {
    SCOPED_TRACE(variant);
    const auto got = ir::joint_histogram(ctx(), pair.fixed, pair.moving, t, levels, variant);
    ASSERT_EQ(got.size(), expected.size());
    for (std::size_t b = 0; b < got.size(); ++b) ASSERT_EQ(got[b], expected[b]) << "bin " << b;
  }
}

TEST_P(ImgregApp, ComparisonCatchesAWrongBin) {
  const auto pair = tiny_pair();
  const auto ref = ir::reference_histogram(pair.fixed, pair.moving, {4.6, -3.3, 2.5}, 32);
  double quantum = 0;
  auto got = ir::joint_histogram(ctx(), pair.fixed, pair.moving, {4.6, -3.3, 2.5}, 32, "hist", &quantum);
  ASSERT_TRUE(validate::compare_float_histogram(ref, got, quantum).ok());
  // Half of one pixel's weight more in a bin of about 30 pixels' weight.
  std::size_t b = 0;
  while (b < got.size() && !(ref.sum[b] > 20 && ref.sum[b] < 40)) ++b;
  ASSERT_LT(b, got.size());
  got[b] += 0.5f;
  EXPECT_FALSE(validate::compare_float_histogram(ref, got, quantum).ok());
  // With a quantum of 2^-10 (paper-8m's) a bin of n updates may be off by n 2^-11, no more.
  got[b] -= 0.5f;
  const double coarse = std::ldexp(1.0, -10), bound = validate::bin_tolerance(ref, b, coarse);
  got[b] = float(ref.sum[b] + 0.9 * bound);
  EXPECT_TRUE(validate::compare_float_histogram(ref, got, coarse).ok());
  got[b] = float(ref.sum[b] + 1.1 * bound);
  EXPECT_FALSE(validate::compare_float_histogram(ref, got, coarse).ok());
}

TEST_P(ImgregApp, ValidatorHoldsTheQuantumToTheImageSize) {
  const auto data = gen("imgreg", "tiny", "data");
  const auto result = path("result");
  run("imgreg", {data}, "", {}, "", result);
  EXPECT_TRUE(validate("imgreg", {data}, result).ok);
  // A result that claims sums coarser than 2^-19 (128 x 128 pixels) is refused.
  auto manifest = nlohmann::json::parse(std::ifstream(result / "manifest.json"));
  ASSERT_EQ(manifest["info"]["histogram_quantum"].get<double>(), std::ldexp(1.0, -19));
  manifest["info"]["histogram_quantum"] = std::ldexp(1.0, -10);
  std::ofstream(result / "manifest.json") << manifest.dump();
  const auto coarse = validate("imgreg", {data}, result);
  EXPECT_FALSE(coarse.ok);
  EXPECT_NE(coarse.summary.find("coarser than"), std::string::npos) << coarse.summary;
}

TEST_P(ImgregApp, RegistersTheTinyPair) { round_trip("imgreg", "tiny"); }

TEST_P(ImgregApp, RegistrationVariants) {
  for (const char* variant : {"hist,M=2", "hist,atomic=cas", "sort"}) {
    SCOPED_TRACE(variant);
    if (std::string(variant) == "sort" && !ctx().is_cuda()) {
      const auto data = gen("imgreg", "tiny", "data");
      EXPECT_NE(error_of<usage_error>([&] { run("imgreg", {data}, variant); }).find("--backend cuda"), std::string::npos);
      continue;
    }
    round_trip("imgreg", "tiny", variant);
  }
}

TEST_P(ImgregApp, FindsLargeShifts) {
  // 25 pixels and 6 degrees on a 256 x 256 pair (two pyramid levels).
  const auto pair = ir::generate_pair(256, 256, {-25.0, 17.5, -6.0}, 3.0, 9);
  const auto r = ir::register_images(ctx(), pair.fixed, pair.moving, {48, "hist"});
  const auto report = validate::compare_transform({-25.0, 17.5, -6.0}, r.transform, 0.5, 0.1);
  EXPECT_TRUE(report.ok()) << report.describe("transform parameters");
  EXPECT_EQ(r.pyramid_levels, 3);
  EXPECT_EQ(r.registered.width, 256);
}

// 20 degrees and 30 pixels on the brick wall, both ways round: the earlier search (a grid of
// +-8 degrees at the coarsest level, then an unbounded Nelder-Mead) landed 46 pixels and 13
// degrees off on the first, 33 pixels and 21 degrees off on the second.
TEST_P(ImgregApp, FindsTwentyDegreesAndThirtyPixelsOnBricks) {
  for (const validate::rigid_transform truth : {validate::rigid_transform{24.0, 18.0, 20.0}, {-18.0, 24.0, -20.0}}) {
    SCOPED_TRACE(truth.angle_deg);
    const auto pair = scene_pair(256, 256, truth, brick_wall);
    const auto r = ir::register_images(ctx(), pair.fixed, pair.moving, {64, "hist"});
    const auto report = validate::compare_transform(truth, r.transform, 0.5, 0.1);
    EXPECT_TRUE(report.ok()) << report.describe("transform parameters");
    EXPECT_GT(r.mutual_information, 1.0);
    EXPECT_GT(r.overlap, 0.6);
    EXPECT_LT(r.overlap, 0.9);  // 30 pixels and 20 degrees leave parts of the fixed image uncovered
  }
}

// The search scores transforms by the information they explain over the whole fixed image: by
// mutual information alone it slid along the rotations about the cell to the edge of the range
// (23-32 degrees and 26-36 pixels off on all three), and the earlier search's unbounded simplex
// drifted to 89 and -118 degrees on two of them.
TEST_P(ImgregApp, FindsARoundCellOnAnEvenBackground) {
  for (const validate::rigid_transform truth : {validate::rigid_transform{7.0, 3.0, 3.0}, {-5.0, 6.0, -4.0}, {4.0, -8.0, 6.0}}) {
    SCOPED_TRACE(truth.angle_deg);
    const auto pair = scene_pair(256, 256, truth, [](double x, double y) { return cell_scene(x, y, 256, 256); });
    const auto r = ir::register_images(ctx(), pair.fixed, pair.moving, {64, "hist"});
    const auto report = validate::compare_transform(truth, r.transform, 0.5, 0.1);
    EXPECT_TRUE(report.ok()) << report.describe("transform parameters");
    EXPECT_GT(r.overlap, 0.9);
  }
}

// The capture range, and the search's bounds: a pair moved far beyond it (155 degrees and 78
// pixels) gets a transform inside it, never one under which the images barely overlap.
TEST_P(ImgregApp, StaysInTheCaptureRange) {
  const auto range = ir::capture_range_of(256, 200);
  EXPECT_DOUBLE_EQ(range.shift, 40.0);
  EXPECT_DOUBLE_EQ(range.angle_deg, 25.0);
  const auto pair = scene_pair(192, 192, {60.0, -50.0, 155.0}, brick_wall);
  const auto r = ir::register_images(ctx(), pair.fixed, pair.moving, {32, "hist"});
  const double bound = ir::capture_range_of(192, 192).shift;
  // A grid step beyond the range at most: a pixel of the search images (192 / 32 = 6 pixels) and
  // a pixel and a half of arc at the corners (radius 136: 3.8 degrees).
  EXPECT_LE(std::fabs(r.transform.tx), bound + 6.0);
  EXPECT_LE(std::fabs(r.transform.ty), bound + 6.0);
  EXPECT_LE(std::fabs(r.transform.angle_deg), 25.0 + 3.8);
  EXPECT_GT(r.overlap, 0.4);
}

// An image with nothing to register is an input error naming it, from the app and the API alike.
TEST_P(ImgregApp, RefusesBlankImages) {
  const auto dir = gen("imgreg", "tiny", "images", {}, "image");
  datasets::write_png(path("blank.png"), {128, 128, std::vector<std::uint8_t>(128 * 128, 7)});
  const auto blank = error_of<input_error>([&] { run("imgreg", {dir / "fixed.png", path("blank.png")}, "", {}, "image"); });
  EXPECT_NE(blank.find("blank.png: blank (every pixel is grey level 7): nothing to register"), std::string::npos) << blank;
  // Nearly blank: one pixel in 200 bright, the rest within 3 grey levels.
  datasets::grey_image nearly{128, 128, std::vector<std::uint8_t>(128 * 128)};
  for (std::size_t i = 0; i < nearly.pixels.size(); ++i) nearly.pixels[i] = std::uint8_t(i % 200 == 0 ? 200 : 40 + i % 4);
  datasets::write_png(path("nearly.png"), nearly);
  const auto faint = error_of<input_error>([&] { run("imgreg", {path("nearly.png"), dir / "moving.png"}, "", {}, "image"); });
  EXPECT_NE(faint.find("nearly.png: nearly blank (98% of its pixels within grey levels 40 to 43)"), std::string::npos) << faint;
  // A dim image with a little contrast is something to register: grey levels 40 to 46.
  datasets::grey_image dim{128, 128, std::vector<std::uint8_t>(128 * 128)};
  for (std::size_t i = 0; i < dim.pixels.size(); ++i) dim.pixels[i] = std::uint8_t(40 + i * 7919 % 7);
  EXPECT_EQ(ir::lacks_contrast(dim), "");
  // The API refuses too (a bundle's images, or a caller's).
  const auto pair = tiny_pair();
  const datasets::grey_image flat{128, 128, std::vector<std::uint8_t>(128 * 128, 255)};
  const auto api = error_of<input_error>([&] { ir::register_images(ctx(), pair.fixed, flat, {32, "hist"}); });
  EXPECT_NE(api.find("the moving image is blank (every pixel is grey level 255)"), std::string::npos) << api;
}

TEST_P(ImgregApp, ImageFilesInAndOut) {
  const auto dir = gen("imgreg", "tiny", "images", {}, "image");
  for (const char* f : {"fixed.png", "moving.png", "truth.json"}) EXPECT_TRUE(std::filesystem::exists(dir / f)) << f;
  const auto fixed = datasets::read_grey_image(dir / "fixed.png");
  EXPECT_EQ(fixed.width, 128);
  EXPECT_EQ(fixed.height, 128);
  const auto result = path("result");
  run("imgreg", {dir / "fixed.png", dir / "moving.png"}, "", {{"levels", "24"}}, "image", result);
  const auto with_truth = validate("imgreg", {dir / "fixed.png", dir / "moving.png", dir / "truth.json"}, result, "image");
  EXPECT_TRUE(with_truth.ok) << with_truth.summary;
  EXPECT_NE(with_truth.summary.find("transform within"), std::string::npos) << with_truth.summary;
  const auto without = validate("imgreg", {dir / "fixed.png", dir / "moving.png"}, result, "image");
  EXPECT_TRUE(without.ok) << without.summary;
  EXPECT_NE(without.summary.find("not checked"), std::string::npos);
  // The result: a 27 x 27 histogram, the registered image as an array and as a PNG.
  const auto res = datasets::bundle::open(result);
  EXPECT_EQ(res.header("histogram").shape, (std::vector<std::int64_t>{27, 27}));
  const auto registered = datasets::read_grey_image(res.file_path("registered.png"));
  EXPECT_EQ(registered.pixels, res.read<std::uint8_t>("registered"));
  // A truth one pixel away fails.
  std::ofstream(path("off.json")) << R"({"tx": 5.6, "ty": -3.3, "angle_deg": 2.5})";
  const auto off = validate("imgreg", {dir / "fixed.png", dir / "moving.png", path("off.json")}, result, "image");
  EXPECT_FALSE(off.ok);
  EXPECT_NE(off.summary.find("translation off"), std::string::npos) << off.summary;
}

TEST_P(ImgregApp, RejectsBadImages) {
  const auto dir = gen("imgreg", "tiny", "images", {}, "image");
  const auto missing = error_of<input_error>([&] { run("imgreg", {dir / "fixed.png", path("nothing.png")}, "", {}, "image"); });
  EXPECT_NE(missing.find("nothing.png: no such file"), std::string::npos) << missing;
  std::ofstream(path("text.png")) << "this is not an image\n";
  const auto text = error_of<input_error>([&] { run("imgreg", {path("text.png"), dir / "moving.png"}, "", {}, "image"); });
  EXPECT_NE(text.find("text.png: not an image"), std::string::npos) << text;
  std::ofstream(path("empty.png")).close();
  EXPECT_NE(error_of<input_error>([&] { run("imgreg", {path("empty.png"), dir / "moving.png"}, "", {}, "image"); }).find("empty"),
            std::string::npos);
  datasets::write_png(path("small.png"), {64, 48, std::vector<std::uint8_t>(64 * 48, 7)});
  const auto size = error_of<input_error>([&] { run("imgreg", {dir / "fixed.png", path("small.png")}, "", {}, "image"); });
  EXPECT_NE(size.find("small.png: the image is 64 x 48 pixels, but"), std::string::npos) << size;
  EXPECT_NE(size.find("is 128 x 128"), std::string::npos) << size;
  datasets::write_png(path("dot.png"), {4, 4, std::vector<std::uint8_t>(16, 7)});
  const auto dot = error_of<input_error>([&] { run("imgreg", {path("dot.png"), path("dot.png")}, "", {}, "image"); });
  EXPECT_NE(dot.find("dot.png: 4 x 4 pixels; imgreg takes 8 to 32768"), std::string::npos) << dot;
  // A result of another pair (another size) is named as such.
  const auto other = gen("imgreg", "tiny", "other", {{"width", "64"}, {"height", "48"}});
  run("imgreg", {other});
  const auto bundle = gen("imgreg", "tiny", "pair");
  EXPECT_NE(error_of<input_error>([&] { validate("imgreg", {bundle}, other.string() + ".result"); }).find("(a result of another dataset?)"),
            std::string::npos);
  // A truncated PNG (its header intact).
  std::filesystem::copy_file(dir / "moving.png", path("cut.png"));
  std::filesystem::resize_file(path("cut.png"), 100);
  EXPECT_NE(error_of<input_error>([&] { run("imgreg", {dir / "fixed.png", path("cut.png")}, "", {}, "image"); }).find("cut.png"),
            std::string::npos);
  EXPECT_NE(error_of<usage_error>([&] { run("imgreg", {dir / "fixed.png"}, "", {}, "image"); }).find("-i FIXED -i MOVING"),
            std::string::npos);
  // A bundle whose image is not two-dimensional.
  datasets::bundle_writer out(path("flat"), "dataset", "imgreg");
  out.add<std::uint8_t>("fixed", std::vector<std::uint8_t>(100, 1));
  out.add<std::uint8_t>("moving", std::vector<std::uint8_t>(100, 1));
  out.params() = apps::find_app("imgreg").find_preset("tiny").params;
  out.params().update({{"width", 10}, {"height", 10}});
  out.finish();
  EXPECT_NE(error_of<input_error>([&] { run("imgreg", {path("flat")}); }).find("shape (100,); the fixed and moving images must both be height x width"),
            std::string::npos);
}

SOAC_INSTANTIATE_APP_BACKENDS(ImgregApp);

TEST(ImgregArithmetic, BsplineWeightsSumToOne) {
  for (int k = 0; k < 1000; ++k) {
    const float t = float(k) / 1000;
    float w[4];
    ir::bspline_weights(t, w);
    const double s = 1 - double(t);
    const double expected[4] = {s * s * s / 6, (3 * t * t * t - 6 * t * t + 4) / 6.0, (-3 * t * t * t + 3 * t * t + 3 * t + 1) / 6.0,
                                double(t) * t * t / 6};
    double sum = 0;
    for (int j = 0; j < 4; ++j) {
      EXPECT_NEAR(w[j], expected[j], 1e-6) << "t = " << t << ", weight " << j;
      sum += w[j];
    }
    EXPECT_NEAR(sum, 1.0, 1e-6);
  }
}

// The fixed-point update: the exact product in quanta, rounded to the nearest, ties to even.
TEST(ImgregArithmetic, ProductQuanta) {
  for (const int s : {0, 10, 12, 22}) {
    const float scale = std::ldexp(1.0f, s);
    for (int k = 0; k < 2000; ++k) {
      float w[4], v[4];
      ir::bspline_weights(float(k) / 2000, w);
      ir::bspline_weights(float((k * 7919) % 2000) / 2000, v);
      for (int a = 0; a < 4; ++a)
        for (int b = 0; b < 4; ++b)
          ASSERT_EQ(ir::product_quanta(w[a] * scale, v[b]), std::uint32_t(std::nearbyint(std::ldexp(double(w[a]) * v[b], s))))
              << "s = " << s << ", " << w[a] << " x " << v[b];
    }
  }
  // Halves go to the even neighbour; the largest product at s = 22 still fits.
  EXPECT_EQ(ir::product_quanta(0.5f, 1.0f), 0u);
  EXPECT_EQ(ir::product_quanta(1.5f, 1.0f), 2u);
  EXPECT_EQ(ir::product_quanta(2.5f, 1.0f), 2u);
  EXPECT_EQ(ir::product_quanta(std::ldexp(2.0f / 3, 22), 2.0f / 3), std::uint32_t(std::nearbyint(std::ldexp(4.0 / 9, 22))));
}

// The shift keeps every bin below 2^32 and is the largest that does.
TEST(ImgregArithmetic, FixedPointShift) {
  EXPECT_EQ(validate::fixed_point_shift(1999396), 12);  // paper-2m
  EXPECT_EQ(validate::fixed_point_shift(7997584), 10);  // paper-8m
  EXPECT_EQ(validate::fixed_point_shift(128 * 128), 19);
  EXPECT_EQ(validate::fixed_point_shift(1000), 22);
  const auto most = [](std::int64_t n, int s) { return double(n) * (0.4445 * std::ldexp(1.0, s) + 0.5); };
  for (std::int64_t n = 1; n < (std::int64_t{1} << 31); n = n * 3 + 1) {
    const int s = validate::fixed_point_shift(n);
    EXPECT_LT(most(n, s), 4294967296.0) << n;
    if (s < 22) EXPECT_GE(most(n, s + 1), 4294967296.0) << n;
  }
}

TEST(ImgregArithmetic, MutualInformation) {
  // Two independent uniform intensities: 0; a perfect one-to-one relation over 4 values: log 4.
  std::vector<float> uniform(16, 1.0f), diagonal(16, 0.0f);
  for (int k = 0; k < 4; ++k) diagonal[std::size_t(5 * k)] = 3.0f;
  EXPECT_NEAR(ir::mutual_information(uniform.data(), 4), 0.0, 1e-12);
  EXPECT_NEAR(ir::mutual_information(diagonal.data(), 4), std::log(4.0), 1e-12);
  // Fixed-point counts: the scale cancels.
  std::vector<std::uint32_t> counts(16, 0);
  for (int k = 0; k < 4; ++k) counts[std::size_t(5 * k)] = 3u << 20;
  EXPECT_NEAR(ir::mutual_information(counts.data(), 4), std::log(4.0), 1e-12);
}

TEST(ImgregArithmetic, GeneratorIsDeterministicAndMoved) {
  const auto a = ir::generate_pair(96, 80, {3, -2, 1}, 2.0, 4), b = ir::generate_pair(96, 80, {3, -2, 1}, 2.0, 4);
  EXPECT_EQ(a.fixed.pixels, b.fixed.pixels);
  EXPECT_EQ(a.moving.pixels, b.moving.pixels);
  EXPECT_NE(a.fixed.pixels, a.moving.pixels);
  // Without noise, a pure translation by whole pixels: moving(x + 3, y - 2) = fixed(x, y).
  const auto c = ir::generate_pair(96, 80, {3, -2, 0}, 0.0, 4);
  for (int y = 2; y < 80; ++y)
    for (int x = 0; x + 3 < 96; ++x)
      ASSERT_EQ(c.moving.pixels[std::size_t((y - 2) * 96 + x + 3)], c.fixed.pixels[std::size_t(y * 96 + x)]) << x << "," << y;
}

}  // namespace
}  // namespace soac
