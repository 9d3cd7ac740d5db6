// The search on the host: Nelder-Mead searches in lockstep, and the search images' smoothing,
// shrinking and contrast stretch.
// A part of the imgreg app's one translation unit (apps/imgreg/imgreg_app.cu includes them in order:
// histogram, search, engine).
#pragma once

#include "apps/imgreg/histogram.cuh"

namespace soac::apps::imgreg {
namespace {

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

}  // namespace
}  // namespace soac::apps::imgreg
