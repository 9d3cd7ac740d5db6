// The backprop app on both backends: both variants validate against the double reference (the
// balanced tiny network exercises every part of the step, Rodinia's own saturates), the variants
// agree with each other, and bad datasets and parameters are clear errors.
#include <cmath>

#include <gtest/gtest.h>

#include "bench/harness.hpp"
#include "datasets/bundle.hpp"
#include "tests/app_fixture.hpp"
#include "validate/backprop.hpp"

namespace {

using namespace soac;
using soac::testing::app_test;
using soac::testing::error_of;
namespace fs = std::filesystem;

class BackpropApp : public app_test {};

TEST_P(BackpropApp, BothVariantsValidate) {
  for (const std::string variant : {"segreduce", "rodinia"}) {
    round_trip("backprop", "tiny", variant);
    round_trip("backprop", "tiny", variant, {{"layer_size", "16"}});  // one full Rodinia block
    round_trip("backprop", "tiny", variant, {{"layer_size", "1"}});
    round_trip("backprop", "tiny", variant, {{"init", "rodinia"}, {"layer_size", "4099"}});
  }
}

TEST_P(BackpropApp, TheStepChangesWhatItShouldAndTheVariantsAgree) {
  const auto data = gen("backprop", "tiny", "data");
  run("backprop", {data}, "segreduce", {}, "", path("a"));
  run("backprop", {data}, "rodinia", {}, "", path("b"));
  const auto in = datasets::bundle::open(data);
  const auto a = datasets::bundle::open(path("a")), b = datasets::bundle::open(path("b"));
  const auto w0 = in.read<float>("input_weights"), wa = a.read<float>("input_weights"), wb = b.read<float>("input_weights");
  const std::size_t row = 1001;
  ASSERT_EQ(wa.size(), 17 * row);
  std::size_t changed = 0;
  for (std::size_t e = 0; e < wa.size(); ++e) {
    if (e < row) EXPECT_EQ(wa[e], w0[e]) << "hidden unit 0's row must stay";
    changed += wa[e] != w0[e];
    EXPECT_NEAR(wa[e], wb[e], 1e-6) << e;
  }
  EXPECT_GT(changed, 15 * row);  // balanced weights: every hidden delta is non-zero
  const auto ha = a.read<float>("hidden_units"), hb = b.read<float>("hidden_units");
  EXPECT_EQ(ha[0], 1.f);
  for (int j = 1; j <= 16; ++j) {
    EXPECT_GT(ha[j], 0.05f);  // off saturation
    EXPECT_LT(ha[j], 0.95f);
    EXPECT_NEAR(ha[j], hb[j], 1e-6);
  }
  EXPECT_NEAR(a.read<float>("output_unit")[0], b.read<float>("output_unit")[0], 1e-6);
  EXPECT_NE(a.read<float>("output_delta")[0], 0.f);
  EXPECT_NEAR(a.info()["hid_err"].get<double>(), b.info()["hid_err"].get<double>(), 1e-6);
}

TEST_P(BackpropApp, ValidateCatchesAWrongWeight) {
  const auto data = gen("backprop", "tiny", "data");
  run("backprop", {data}, "", {}, "", path("r"));
  const auto r = datasets::bundle::open(path("r"));
  auto w = r.read<float>("input_weights");
  w[5 * 1001 + 17] += 1e-4f;
  datasets::bundle_writer out(path("bad"), "result", "backprop");
  const std::int64_t wshape[2] = {17, 1001}, hshape[2] = {17, 2};
  out.add("input_weights", datasets::dtype::f32, wshape, w.data());
  for (const std::string name : {"input_prev_weights"}) out.add(name, datasets::dtype::f32, wshape, r.read<float>(name).data());
  for (const std::string name : {"hidden_weights", "hidden_prev_weights"})
    out.add(name, datasets::dtype::f32, hshape, r.read<float>(name).data());
  for (const std::string name : {"hidden_units", "hidden_delta", "output_unit", "output_delta"})
    out.add<float>(name, r.read<float>(name));
  out.params() = r.params();
  out.finish();
  const auto report = validate("backprop", {data}, path("bad"));
  EXPECT_FALSE(report.ok);
  EXPECT_NE(report.summary.find("input weight [17][5]"), std::string::npos) << report.summary;
}

TEST_P(BackpropApp, BadParametersAndDatasets) {
  EXPECT_NE(error_of<usage_error>([&] { gen("backprop", "tiny", "g", {{"layer_size", "0"}}); }).find("layer_size = 0 is outside"),
            std::string::npos);
  EXPECT_NE(error_of<usage_error>([&] { gen("backprop", "tiny", "g", {{"layer_size", "2^40"}}); }).find("layer_size"),
            std::string::npos);
  EXPECT_NE(error_of<usage_error>([&] { gen("backprop", "tiny", "g", {{"init", "zeros"}}); }).find("init must be rodinia or balanced"),
            std::string::npos);
  const auto data = gen("backprop", "tiny", "data");
  EXPECT_NE(error_of<usage_error>([&] { run("backprop", {data}, "fast"); }).find("unknown variant"), std::string::npos);
  // A dataset whose bias input is not 1, and one whose weights do not match its layer.
  const auto in = datasets::bundle::open(data);
  auto units = in.read<float>("input_units");
  auto rewrite = [&](const std::vector<float>& u, std::int64_t rows) {
    datasets::bundle_writer out(path("bad"), "dataset", "backprop");
    out.add<float>("input_units", u);
    const auto w = in.read<float>("input_weights");
    const std::int64_t wshape[2] = {rows, std::int64_t(w.size()) / rows}, hshape[2] = {17, 2};
    out.add("input_weights", datasets::dtype::f32, wshape, w.data());
    out.add("input_prev_weights", datasets::dtype::f32, wshape, in.read<float>("input_prev_weights").data());
    out.add("hidden_weights", datasets::dtype::f32, hshape, in.read<float>("hidden_weights").data());
    out.add("hidden_prev_weights", datasets::dtype::f32, hshape, in.read<float>("hidden_prev_weights").data());
    out.add<float>("target", in.read<float>("target"));
    out.params() = in.params();
    out.finish();
  };
  units[0] = 0.5f;
  rewrite(units, 17);
  EXPECT_NE(error_of<input_error>([&] { run("backprop", {path("bad")}); }).find("input unit 0 is the bias unit and must be 1"),
            std::string::npos);
  units[0] = 1.f;
  rewrite(units, 7 * 11);  // 17 x 1001 = 7 x 11 x 221 elements
  EXPECT_NE(error_of<input_error>([&] { run("backprop", {path("bad")}); }).find("expected (17, 1001)"), std::string::npos);
}

TEST_P(BackpropApp, BenchTimesKernelsAndEndToEndAgainstRodinia) {
  bench::suite suite(ctx(), "backprop", bench::settings{.warmup = 0, .runs = 1, .progress = false, .warmup_ms = 0});
  apps::bench_request req;
  req.presets = {"tiny"};
  apps::find_app("backprop").bench(ctx(), req, suite);
  ASSERT_EQ(suite.cases().size(), 2u);
  EXPECT_NE(suite.cases()[0].name.find("kernels"), std::string::npos);
  EXPECT_EQ(suite.cases()[0].variants[0].kind, bench::role::baseline);
  EXPECT_EQ(suite.cases()[1].variants.size(), 2u);
}

SOAC_INSTANTIATE_APP_BACKENDS(BackpropApp);

TEST(BackpropValidator, BoundsFollowSaturation) {
  // A saturated hidden unit (sum ~ 1e4) has a zero derivative: its delta must be ~0 exactly, and
  // the sigmoid's error bound there is only the float rounding.
  EXPECT_LT(validate::sigmoid_error(1e4, 1.0), 1e-6);
  EXPECT_GT(validate::sigmoid_error(0.0, 1e-3), 2e-4);  // slope 1/4 at 0
}

}  // namespace
