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
//
// The parts, in reading order: histogram.cuh, search.hpp, engine.cuh; this file holds the
// generator, the registration and the app class.
#include "apps/imgreg/engine.cuh"

namespace soac::apps::imgreg {

// Pyramid level l: a scale of 2^l (exact binary fractions throughout).
rigid_map make_rigid(const rigid_transform& t, int width, int height, int level) {
  return rigid_at_scale(t, width, height, std::ldexp(1.0, level));
}

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
  imgreg_app() : app(describe()) {}

  static app_info describe() {
    app_info a = app_info::named("imgreg", "rigid image registration by mutual information (SC20 V-D4): joint histograms with "
                                           "cubic B-spline Parzen windows, 16 float adds per pixel; finds rotations of up to "
                                           "25 degrees and translations of up to a fifth of the smaller side (the capture "
                                           "range)");
    {
      auto p = [](int size, int levels, double tx, double ty, double angle) {
        return nlohmann::json{{"width", size}, {"height", size}, {"levels", levels}, {"tx", tx},
                              {"ty", ty},      {"angle", angle}, {"noise", 3.0}, {"variants", ""}};
      };
      a.presets = {{"paper-2m", "1414 x 1414 pixels (N = 2M), 50 levels (H = 53 x 53), moved by (23.4, -31.7) px and 3.5 deg",
                    p(1414, 50, 23.4, -31.7, 3.5)},
                   {"paper-8m", "2828 x 2828 pixels (N = 8M), 200 levels (H = 203 x 203), moved by (41.3, -27.6) px and -2.8 deg",
                    p(2828, 200, 41.3, -27.6, -2.8)},
                   {"small", "512 x 512 pixels, 64 levels, moved by (12.4, -9.1) px and -3.1 deg", p(512, 64, 12.4, -9.1, -3.1)},
                   {"tiny", "128 x 128 pixels, 32 levels, moved by (4.6, -3.3) px and 2.5 deg (tests)", p(128, 32, 4.6, -3.3, 2.5)}};
    }
    a.variants = {"hist", "sort"};
    a.variant_settings = "hist takes acc=fixed|float (weights summed as 32-bit fixed-point integers, the default, or floats), "
                         "order=stripes|rows (the pixels' order) and hist settings for the histogram step (as soac run hist: "
                         "strategy=..., M=N, atomic=cas, ...), e.g. hist,acc=float,M=4";
    a.input_formats = {{"image", "two image files of the same size (PNG, JPEG, BMP, TGA, PGM, ... through stb_image; colour becomes "
                                 "grey): -i FIXED -i MOVING, the moving one within the capture range of the fixed one (rotated by up to "
                                 "25 degrees, shifted by up to a fifth of the smaller side along each axis); a blank or nearly blank "
                                 "image is refused (exit 3); validate takes the truth as a third -i (JSON with tx, ty, angle_deg); gen "
                                 "-o DIR writes DIR/fixed.png, DIR/moving.png, DIR/truth.json"}};
    a.run_settings = {{"levels", 0, "intensity levels (histogram side levels + 3); 0: the dataset's, or 64 for image files"}};
    a.bench_presets = {"paper-2m", "paper-8m"};
    return a;
  }

  void check_params(const nlohmann::json& params) const override { spec_of(params); }
  // What a run reads: two images of one height x width (as the manifest says, where it does), 8 to
  // 32768 pixels a side; levels and the truth are checked where they are read.
  void check_dataset(const datasets::bundle& in) const override {
    const auto shape = in.header("fixed").shape;
    for (const char* name : {"fixed", "moving"})
      if (in.header(name).shape.size() != 2 || in.header(name).shape != shape)
        throw input_error(in.path_of(name).string() + ": shape " + datasets::shape_string(in.header(name).shape) +
                          "; the fixed and moving images must both be height x width");
    for (const auto& [key, length] : {std::pair{"height", shape[0]}, std::pair{"width", shape[1]}}) {
      if (in.params().contains(key) && in.params()[key] != length)
        throw input_error(in.path_of("fixed").string() + ": shape " + datasets::shape_string(shape) + ", but the manifest says " + key +
                          " = " + in.params()[key].dump());
      if (length < 8 || length > (1 << 15))
        throw input_error(in.path_of("fixed").string() + ": shape " + datasets::shape_string(shape) + "; imgreg takes 8 to 32768 pixels a side");
    }
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
