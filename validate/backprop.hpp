// Sequential reference for Rodinia's backprop (one bpnn_train step of a layer_size x 16 x 1
// network) in double precision, and the checks of a float32 result against it.
//
// Tolerance: each quantity q of the result may differ from the double reference by at most
// 2 e(q) + the smallest float, where e(q) is a first-order bound on the error of computing q in
// float32 in any order, propagated through the step (u = 2^-24, gamma(m) = m u / (1 - m u)):
//   hidden sum s_j = sum_k w_jk in_k:        e = gamma(L + 3) sum_k |w_jk in_k|   (any order)
//   hidden unit h_j = sigmoid(s_j):          e = max sigmoid' on [s_j - e, s_j + e] e(s_j) + 4u
//   output sum s_o = sum_j hw_j h_j:         e = sum_j |hw_j| e(h_j) + gamma(18) sum_j |hw_j h_j|
//   output o, delta_o = o (1 - o) (t - o),   delta_h_j = h_j (1 - h_j) delta_o hw_j, and every
//   adjusted weight w + eta delta x + momentum prev: the derivative of each formula times the
//   error of its inputs, plus a few u of its terms' magnitudes for its own roundings.
// The factor 2 covers the second-order terms the first-order bound leaves out. Weights the step
// leaves alone (hidden unit 0's inputs, output unit 0's) must be bit-exact.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <span>
#include <sstream>
#include <string>
#include <vector>

#include "validate/report.hpp"

namespace soac::validate {

inline constexpr int backprop_hidden = 16;  // Rodinia's hidden units (plus the bias unit 0)
inline constexpr double backprop_eta = 0.3, backprop_momentum = 0.3;

// The network before the step. Input weights are hidden-major: w[j * (L + 1) + k] connects input
// k (0: the bias unit, whose value input[0] is 1) to hidden unit j (row 0, the hidden bias unit's,
// is unused); hidden weights are row-major hw[j * 2 + o], hidden unit j to output o (o = 1).
struct backprop_net {
  std::int64_t layer = 0;
  std::span<const float> input, weights, prev, hidden_weights, hidden_prev, target;
};

// A result to check (the same layouts).
struct backprop_result {
  std::span<const float> weights, prev, hidden_weights, hidden_prev, hidden, hidden_delta;
  float output = 0, output_delta = 0;
};

// The reference's values (hidden layer and output) with their error bounds.
struct backprop_reference {
  double hidden[backprop_hidden + 1] = {}, e_hidden[backprop_hidden + 1] = {};
  double hidden_delta[backprop_hidden + 1] = {}, e_hidden_delta[backprop_hidden + 1] = {};
  double output = 0, e_output = 0, output_delta = 0, e_output_delta = 0;
};

inline double backprop_sigmoid(double x) { return 1.0 / (1.0 + std::exp(-x)); }

// The largest derivative of the sigmoid on [x - e, x + e], times e, plus the float evaluation.
inline double sigmoid_error(double x, double e) {
  const double nearest_zero = x - e <= 0 && x + e >= 0 ? 0.0 : std::min(std::fabs(x - e), std::fabs(x + e));
  const double s = backprop_sigmoid(nearest_zero);
  return s * (1 - s) * e + 4 * 0x1.0p-24;
}

inline backprop_reference backprop_forward(const backprop_net& net) {
  constexpr double u = 0x1.0p-24;
  auto gamma = [](double m) { return m * u / (1 - m * u); };
  const std::int64_t row = net.layer + 1;
  backprop_reference r;
  r.hidden[0] = 1;
  for (int j = 1; j <= backprop_hidden; ++j) {
    double s = 0, magnitude = 0;
    for (std::int64_t k = 0; k < row; ++k) {
      const double t = double(net.weights[std::size_t(j * row + k)]) * double(net.input[std::size_t(k)]);
      s += t;
      magnitude += std::fabs(t);
    }
    const double e_s = gamma(double(net.layer + 3)) * magnitude;
    r.hidden[j] = backprop_sigmoid(s);
    r.e_hidden[j] = sigmoid_error(s, e_s);
  }
  double so = 0, e_so = 0, magnitude = 0;
  for (int j = 0; j <= backprop_hidden; ++j) {
    const double w = net.hidden_weights[std::size_t(j * 2 + 1)];
    so += w * r.hidden[j];
    e_so += std::fabs(w) * r.e_hidden[j];
    magnitude += std::fabs(w * r.hidden[j]);
  }
  e_so += gamma(18) * magnitude;
  const double o = backprop_sigmoid(so), e_o = sigmoid_error(so, e_so), t = net.target[1];
  r.output = o;
  r.e_output = e_o;
  r.output_delta = o * (1 - o) * (t - o);
  const double slope = (std::fabs(1 - 2 * o) + 2 * e_o) * (std::fabs(t - o) + e_o) + 0.25 + e_o;
  r.e_output_delta = slope * e_o + 6 * u * (0.25 * (std::fabs(t) + 1));
  for (int j = 1; j <= backprop_hidden; ++j) {
    const double h = r.hidden[j], e_h = r.e_hidden[j], w = net.hidden_weights[std::size_t(j * 2 + 1)];
    r.hidden_delta[j] = h * (1 - h) * r.output_delta * w;
    r.e_hidden_delta[j] = (std::fabs(1 - 2 * h) + 2 * e_h) * std::fabs(r.output_delta * w) * e_h +
                          (h * (1 - h) + e_h) * std::fabs(w) * r.e_output_delta + 6 * u * std::fabs(r.hidden_delta[j]);
  }
  return r;
}

// |got - expected| <= 2 bound + the smallest float, else a mismatch described by what().
template <class What>
void check_close(report& rep, double expected, double bound, float got, What what) {
  ++rep.checked;
  if (std::fabs(double(got) - expected) <= 2 * bound + std::numeric_limits<float>::denorm_min() || same_non_finite(got, expected)) return;
  std::ostringstream s;
  s << what() << " is " << got << ", the reference " << expected << " (allowed error " << 2 * bound << ")";
  rep.mismatch(s.str());
}

// A weight adjusted by one step: w + (eta delta x + momentum prev), with delta's error e_delta.
struct adjusted {
  double weight, dw, e_weight, e_dw;
};
inline adjusted adjust(double w, double prev, double delta, double e_delta, double x) {
  constexpr double u = 0x1.0p-24;
  const double dw = backprop_eta * delta * x + backprop_momentum * prev;
  const double e_dw = backprop_eta * std::fabs(x) * e_delta + 3 * u * (backprop_eta * std::fabs(delta * x) + backprop_momentum * std::fabs(prev));
  return {w + dw, dw, e_dw + 2 * u * (std::fabs(w) + std::fabs(dw)), e_dw};
}

inline report check_backprop(const backprop_net& net, const backprop_result& got) {
  const backprop_reference r = backprop_forward(net);
  report rep;
  const std::int64_t row = net.layer + 1;
  auto named = [](std::string text) { return [text] { return text; }; };
  check_close(rep, r.output, r.e_output, got.output, named("the output unit"));
  check_close(rep, r.output_delta, r.e_output_delta, got.output_delta, named("the output delta"));
  for (int j = 0; j <= backprop_hidden; ++j) {
    const std::string at = std::to_string(j);
    check_close(rep, r.hidden[j], r.e_hidden[j], got.hidden[std::size_t(j)], named("hidden unit " + at));
    check_close(rep, r.hidden_delta[j], r.e_hidden_delta[j], got.hidden_delta[std::size_t(j)], named("hidden delta " + at));
    // Output unit 0 has no weights in use: hidden weights [j][0] stay as they were.
    const std::size_t e0 = std::size_t(j * 2), e1 = e0 + 1;
    check_close(rep, net.hidden_weights[e0], 0, got.hidden_weights[e0], named("hidden weight [" + at + "][0]"));
    check_close(rep, net.hidden_prev[e0], 0, got.hidden_prev[e0], named("hidden momentum [" + at + "][0]"));
    const adjusted a = adjust(net.hidden_weights[e1], net.hidden_prev[e1], r.output_delta, r.e_output_delta, r.hidden[j]);
    // The hidden unit's own error enters through x = h_j.
    const double e_x = backprop_eta * std::fabs(r.output_delta) * r.e_hidden[j];
    check_close(rep, a.weight, a.e_weight + e_x, got.hidden_weights[e1], named("hidden weight [" + at + "][1]"));
    check_close(rep, a.dw, a.e_dw + e_x, got.hidden_prev[e1], named("hidden momentum [" + at + "][1]"));
  }
  for (int j = 0; j <= backprop_hidden; ++j)
    for (std::int64_t k = 0; k < row; ++k) {
      const std::size_t e = std::size_t(j * row + k);
      adjusted a{net.weights[e], net.prev[e], 0, 0};
      // Hidden unit 0 (the bias) takes no inputs: its row stays.
      if (j > 0) a = adjust(net.weights[e], net.prev[e], r.hidden_delta[j], r.e_hidden_delta[j], net.input[std::size_t(k)]);
      auto where = [&](const char* what) { return [&, what] { return std::string(what) + " [" + std::to_string(k) + "][" + std::to_string(j) + "]"; }; };
      check_close(rep, a.weight, a.e_weight, got.weights[e], where("input weight"));
      check_close(rep, a.dw, a.e_dw, got.prev[e], where("input momentum"));
    }
  return rep;
}

}  // namespace soac::validate
